"""Whether the demo's router on the offline default model sends requests to the right agent:
``python -m benchmarks.local_routing``.

The router is the demo's (``build_system``: a forced ``transfer_to_agent`` whose ``agent_name`` is an enum, chosen
on a local model by ``RouteByExamples`` over the demo's ``ROUTES``) on ``local:smollm2``; the specialists are the
scripted model, so a run costs one model call and shows where the router sent it. The requests are the demo's turns
and others of each kind, none of them an example. A request for no specialist should stay with the router, which
then answers itself. The router samples at temperature 0, so a request routes the same way every time: the
figure is over requests, not seeds.
"""

from __future__ import annotations

import asyncio
import time

from batonflow.adk import Runner, collect_events
from batonflow.cli.demo import TURNS, Shop, build_system, scripted_model
from batonflow.models import load_model

REQUESTS = (
    (TURNS[0], "refund_agent"),
    (TURNS[1], "complaint_agent"),
    (TURNS[2], "product_agent"),
    (TURNS[3], "refund_agent"),
    ("My blender arrived with a cracked jug, I want my money back for order 2001.", "refund_agent"),
    ("Can I get a refund? The shoes in order 1050 do not fit.", "refund_agent"),
    ("The delivery driver left my parcel in the rain and everything got wet.", "complaint_agent"),
    ("I am unhappy: nobody answered my emails for a week.", "complaint_agent"),
    ("I wish to make a complaint about the rude staff on your hotline.", "complaint_agent"),
    ("What colours does the toaster come in?", "product_agent"),
    ("Is the espresso machine in stock?", "product_agent"),
    ("How long does the battery of the wireless keyboard last?", "product_agent"),
    # For no specialist: the router names itself (answer_self) and answers.
    ("What time do you open on Sunday?", "router"),
    ("Hello, who am I talking to?", "router"),
    ("Where is your head office?", "router"),
)


async def main() -> None:
    router_model = load_model("local:smollm2")
    right = 0
    started = time.perf_counter()
    for request, expected in REQUESTS:
        runner = Runner(build_system(scripted_model(), Shop(), router_model=router_model))
        events = await collect_events(runner.query(request))
        routed = next((e.agent_name for e in events if e.agent_name != "router"), "router")
        right += routed == expected
        mark = "right" if routed == expected else f"WRONG (expected {expected})"
        print(f"{request[:70]!r}: {routed}, {mark}", flush=True)
    seconds = time.perf_counter() - started
    print(f"\n{len(REQUESTS)} requests: {right} routed right; {seconds / len(REQUESTS):.1f} s per request")


if __name__ == "__main__":
    asyncio.run(main())

"""Whether the offline default model completes a tool-using agent: ``python -m benchmarks.local_agent [--runs 5]``.

The task is the demo's complaint turn on ``local:smollm2``: the router must transfer to ``complaint_agent``, which
must call ``file_complaint`` and then answer in words. The agents are the demo's (``build_system``) on the plain
model, with nothing between agent and model, so the figures are the defaults' own. Each run is counted as
completed (routed right, the tool ran, the run ended with a text answer), looped (the specialist kept calling
tools until its iteration limit) or wrong (anything else: a wrong route, no tool call, an error). A different seed
per run gives different samples. Model calls and wall seconds are per run; the machine's other work moves the
seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from batonflow.adk import Runner, collect_events
from batonflow.cli.demo import TURNS, Shop, build_system
from batonflow.models import ChatModel, ModelSettings, ToolChoice, load_model
from batonflow.schema import Message, MessageStream, ToolInfo

TASK = TURNS[1]  # the complaint: it needs no approval, so a run is one query


class Counting:
    """A model that counts its calls."""

    def __init__(self, model: ChatModel) -> None:
        self.model = model
        self.model_name = model.model_name
        self.calls = 0

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> Message:
        self.calls += 1
        return await self.model.generate(messages, tools=tools, tool_choice=tool_choice, settings=settings)

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> MessageStream:
        self.calls += 1
        return self.model.stream(messages, tools=tools, tool_choice=tool_choice, settings=settings)


async def one_run(seed: int) -> tuple[str, int, float]:
    """The outcome of one run (with what went wrong), its model calls and its seconds."""
    model = Counting(load_model("local:smollm2", seed=seed))
    shop = Shop()
    runner = Runner(build_system(model, shop), skip_transfer_messages=True)
    started = time.perf_counter()
    events = await collect_events(runner.query(TASK))
    seconds = time.perf_counter() - started
    result, detail = await outcome(events, shop)
    return f"{result} {detail}".strip(), model.calls, seconds


async def outcome(events: Sequence[Any], shop: Shop) -> tuple[str, str]:
    """The run's outcome and, for a wrong one, what went wrong."""
    agents = [e.agent_name for e in events]
    errors = [e.error for e in events if e.error is not None]
    if "complaint_agent" not in agents:
        return "wrong", f"routed to {agents[-1]!r}"
    if any("iteration" in str(error) for error in errors):
        return "looped", ""
    if errors:
        return "wrong", f"error: {errors[0]}"
    if not shop.complaints:
        return "wrong", "no complaint filed"
    last = events[-1].message_output
    message = await last.get_message() if last is not None else None
    if message is None or message.role != "assistant" or message.tool_calls or not message.text.strip():
        return "wrong", f"no text answer: {message!r}"
    return "completed", repr(message.text[:80])


async def main(runs: int) -> None:
    outcomes: Counter[str] = Counter()
    calls: list[int] = []
    seconds: list[float] = []
    for seed in range(runs):
        result, n, s = await one_run(seed)
        outcomes[result.split()[0]] += 1
        calls.append(n)
        seconds.append(s)
        print(f"run {seed}: {result}, {n} model calls, {s:.1f} s", flush=True)
    print(
        f"\n{runs} runs: completed {outcomes['completed']}, looped {outcomes['looped']}, wrong {outcomes['wrong']}; "
        f"model calls per run {sum(calls) / runs:.1f}, seconds per run {sum(seconds) / runs:.1f}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    asyncio.run(main(parser.parse_args().runs))

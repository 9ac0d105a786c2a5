"""What the final-answer API costs next to reading the events: ``python -m benchmarks.final_answer [--runs 2000]``.

One run is an agent on a scripted model that calls one tool and then answers (two model calls, one tool call, no
I/O), so what is measured is the framework's own work. Each row is the median over five rounds of the CPU time one
run takes (CPU, not wall time, so that other work on the machine moves it less): the events read with
``collect_events(runner.query(...))``, ``await runner.call(...)`` (traced, to count its metrics) and
``await runner.call(..., metrics=False)``; then a streamed answer of 50 chunks read with ``collect_events``, which
joins it. Runs on the code on ``PYTHONPATH``; a checkout without ``call`` shows "-" in those rows.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from batonflow import ChatModelAgent, Runner, collect_events
from batonflow.schema import Message, assistant
from batonflow.testing import FunctionModel, ScriptedModel, tool_calls
from batonflow.tools import tool


@tool(threaded=False)
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def reply(messages: Sequence[Message], *_: Any, **__: Any) -> Message:
    return assistant("done") if messages[-1].role == "tool" else tool_calls(("add", {"a": 1, "b": 2}))


async def per_run(once: Callable[[], Awaitable[object]], runs: int) -> float:
    """Median CPU µs per run of ``once`` over five rounds of ``runs``, after a warm-up."""
    for _ in range(200):
        await once()
    rounds = []
    for _ in range(5):
        started = time.process_time()
        for _ in range(runs):
            await once()
        rounds.append((time.process_time() - started) / runs * 1e6)
    return statistics.median(rounds)


async def probe(runs: int) -> dict[str, float | None]:
    runner = Runner(ChatModelAgent(name="a", model=FunctionModel(reply), tools=[add]))
    has_call = hasattr(runner, "call")
    text = " ".join(f"w{i}" for i in range(50))
    streaming = Runner(
        ChatModelAgent(name="s", model=ScriptedModel([assistant(text)] * (runs * 5 + 200))), enable_streaming=True
    )
    return {
        "collect_events(runner.query(...))": await per_run(lambda: collect_events(runner.query("x")), runs),
        "await runner.call(...)": await per_run(lambda: runner.call("x"), runs) if has_call else None,
        "await runner.call(..., metrics=False)": (
            await per_run(lambda: runner.call("x", metrics=False), runs) if has_call else None
        ),
        "a streamed answer, collect_events": await per_run(lambda: collect_events(streaming.query("x")), runs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.final_answer", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    for name, value in asyncio.run(probe(args.runs)).items():
        print(f"{name:40} {'-' if value is None else f'{value:,.0f} µs CPU per run'}")


if __name__ == "__main__":
    main()

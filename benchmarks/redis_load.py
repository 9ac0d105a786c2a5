"""Interrupting runs on one Redis checkpoint store at once: ``python -m benchmarks.redis_load [--runs 500]``.

Each run looks an order up (a tool that runs and is counted), then calls ``approve``, which waits for a human: the
run must save its checkpoint before the caller sees the interrupt. All runs start together on one
``RedisCheckpointStore``; afterwards every checkpoint id is read back. A run whose tools ran but whose checkpoint is
not there is lost: nobody can resume it. Prints the runs, the tools that ran, the checkpoints saved and lost, and the
errors the runs reported (counted by message). Runs on the code on ``PYTHONPATH``, so the figure can be taken on
another checkout (``PYTHONPATH=/path/to/src``); ``--max-connections`` is passed only when given, so the probe also
runs where the store has no such option.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import time
import uuid
from collections import Counter
from typing import Any

from batonflow.adk import ChatModelAgent, InterruptInfo, Runner
from batonflow.schema import Message, ToolInfo, assistant, user
from batonflow.store import RedisCheckpointStore
from batonflow.testing import FunctionModel, tool_calls
from batonflow.tools import ToolContext, tool


def build_agent(ran: Counter[str]) -> ChatModelAgent:
    @tool(threaded=False)
    def lookup(order_id: int) -> str:
        """Look an order up."""
        ran["lookup"] += 1
        return f"order {order_id}: 30 EUR"

    @tool(threaded=False)
    def approve(order_id: int, ctx: ToolContext) -> str:
        """Wait for a human to approve the refund."""
        if not ctx.get_interrupt_state().was_interrupted:
            ctx.interrupt(f"refund order {order_id}?")
        return "approved"

    def reply(messages: list[Message], tools: list[ToolInfo]) -> Message:
        # Stateless, so that one agent serves every run: the model's move follows from the last message.
        last = messages[-1]
        if last.role == "user":
            return tool_calls(("lookup", {"order_id": 42}))
        if last.tool_name == "lookup":
            return tool_calls(("approve", {"order_id": 42}))
        return assistant("Refund done.")

    return ChatModelAgent(name="support", model=FunctionModel(reply), tools=[lookup, approve])


async def one_run(runner: Runner, checkpoint_id: str, errors: Counter[str]) -> bool:
    """True when the run showed its interrupt (so it says its checkpoint was saved)."""
    interrupted = False
    try:
        async for event in runner.run([user("refund order 42")], checkpoint_id=checkpoint_id):
            if event.error is not None:
                errors[first_line(event.error)] += 1
            action = event.action
            if action is not None and isinstance(action.interrupted, InterruptInfo):
                interrupted = True
    except Exception as error:  # refused before it started
        errors[first_line(error)] += 1
    return interrupted


def first_line(error: BaseException) -> str:
    """The error's first line, the run's own id taken out so that runs failing alike count together."""
    text = re.sub(r"run-\d+", "run-N", f"{type(error).__name__}: {error}".splitlines()[0])
    return text if len(text) <= 160 else text[:160] + "…"


async def in_chunks(calls: list[Any], size: int = 50) -> list[Any]:
    """Await ``calls`` (coroutines) ``size`` at a time: reading back must not itself need many connections."""
    results: list[Any] = []
    for start in range(0, len(calls), size):
        results += await asyncio.gather(*calls[start : start + size])
    return results


async def probe(url: str, runs: int, options: dict[str, Any]) -> dict[str, Any]:
    prefix = f"batonflow-probe:{uuid.uuid4().hex[:12]}:"
    store = RedisCheckpointStore(url, prefix=prefix, **options)
    ran: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    runner = Runner(build_agent(ran), checkpoint_store=store)
    ids = [f"run-{i}" for i in range(runs)]
    started = time.perf_counter()
    shown = await asyncio.gather(*(one_run(runner, checkpoint_id, errors) for checkpoint_id in ids))
    seconds = time.perf_counter() - started
    check = RedisCheckpointStore(url, prefix=prefix)  # a fresh client: what any worker would find
    try:
        saved = [data is not None for data in await in_chunks([check.get(i) for i in ids])]
        await in_chunks([check.delete(i) for i in ids])
    finally:
        await check.close()
        await store.close()
    return {
        "runs": runs,
        "tools_ran": ran["lookup"],
        "interrupts_shown": sum(shown),
        "saved": sum(saved),
        "lost": sum(1 for s in saved if not s),
        "seconds": seconds,
        "errors": errors,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--max-connections", type=int, default=None, help="the store's pool size (default: its own)")
    args = parser.parse_args()
    options = {} if args.max_connections is None else {"max_connections": args.max_connections}
    result = asyncio.run(probe(args.url, args.runs, options))
    print(
        f"{result['runs']} concurrent interrupting runs on Redis ({args.url}, options {options or 'default'}): "
        f"tools ran in {result['tools_ran']}, interrupts shown {result['interrupts_shown']}, "
        f"checkpoints saved {result['saved']}, lost {result['lost']} ({result['seconds']:.2f} s)"
    )
    for message, count in result["errors"].most_common(5):
        print(f"  {count} × {message}")


if __name__ == "__main__":
    main()

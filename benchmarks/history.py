"""What keeping a run's history costs, and how fast it is read back: ``python -m benchmarks.history [--steps 2000]``.

One run on SQLite: an agent whose scripted model calls a tool again and again (each model reply and each tool call
is one step) until the run has ``--steps`` steps, then answers. It runs twice, with ``keep_history`` off and on;
the rows are the record's size per step, the run's wall time per step in each case, and, in a fresh process on the
same file, ``Runner.history`` and ``Runner.fork`` at the middle step (the fork asks the model once and answers).
Wall time, one round each: the numbers move with the machine; they are for orders of magnitude.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from batonflow import ChatModelAgent, Runner, collect_events, user
from batonflow.schema import Message, assistant
from batonflow.store import SqliteCheckpointStore, load_history
from batonflow.testing import FunctionModel, tool_calls
from batonflow.tools import tool


@tool(threaded=False)
def step(n: int) -> str:
    """One step of work."""
    return f"step {n} done"


def agent(steps: int) -> ChatModelAgent:
    def reply(messages: Sequence[Message], *_: Any, **__: Any) -> Message:
        calls = sum(1 for m in messages if m.role == "tool")
        if messages[-1].role == "user" and messages[-1].content == "fork":
            return assistant("forked")
        if calls * 2 >= steps - 1:
            return assistant("finished")
        return tool_calls(("step", {"n": calls}), id_prefix=f"c{calls}_")

    return ChatModelAgent(name="worker", model=FunctionModel(reply), tools=[step], max_iterations=steps)


async def timed_run(path: Path, steps: int, keep: bool) -> float:
    store = SqliteCheckpointStore(path=str(path))
    try:
        runner = Runner(agent(steps), checkpoint_store=store, keep_history=keep)
        start = time.perf_counter()
        await collect_events(runner.run([user("go")], checkpoint_id=f"run-{keep}"))
        return time.perf_counter() - start
    finally:
        await store.close()


async def record_size(path: Path) -> int:
    store = SqliteCheckpointStore(path=str(path))
    try:
        data = await load_history(store, "run-True")
        assert data is not None
        return len(data)
    finally:
        await store.close()


async def reading(path: str, steps: int) -> dict[str, float]:
    """What the fresh process measures: history, then a fork at the middle step."""
    store = SqliteCheckpointStore(path=path)
    try:
        runner = Runner(agent(steps), checkpoint_store=store, keep_history=True)
        start = time.perf_counter()
        history = await runner.history("run-True")
        read = time.perf_counter() - start
        middle = len(history) // 2

        def edit(state: Any) -> Any:
            state.messages.append(Message(role="user", content="fork"))
            return state

        start = time.perf_counter()
        events = await collect_events(runner.fork("run-True", at=middle, edit=edit, checkpoint_id="fork"))
        forked = time.perf_counter() - start
        assert events[-1].message_output is not None
        return {"steps": len(history), "history_s": read, "fork_s": forked, "at": middle}
    finally:
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--child", default=None)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(asyncio.run(reading(args.child, args.steps))))
        return
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "runs.db"
        off = asyncio.run(timed_run(path, args.steps, False))
        on = asyncio.run(timed_run(path, args.steps, True))
        size = asyncio.run(record_size(path))
        child = [sys.executable, "-m", "benchmarks.history", "--steps", str(args.steps), "--child", str(path)]
        fresh = json.loads(subprocess.run(child, capture_output=True, text=True, check=True).stdout)
    steps = fresh["steps"]
    print(f"{steps}-step run on SQLite")
    print(f"  record: {size} bytes, {size / steps:.0f} bytes per step")
    print(f"  run without history: {off * 1e6 / steps:.0f} µs per step ({off:.2f} s)")
    print(f"  run with history:    {on * 1e6 / steps:.0f} µs per step ({on:.2f} s)")
    print(
        f"  fresh process: history {fresh['history_s'] * 1e3:.0f} ms, fork at step {fresh['at']} "
        f"{fresh['fork_s'] * 1e3:.0f} ms"
    )


if __name__ == "__main__":
    main()

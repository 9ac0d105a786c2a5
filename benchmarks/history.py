"""What keeping a run's history costs, and how fast it is read back: ``python -m benchmarks.history [--steps 2000]
[--postgres DSN]``.

One run on SQLite (or on PostgreSQL, in a table of its own dropped afterwards, with ``--postgres``): an agent whose scripted model calls a tool again and again (each model reply and each tool call
is one step) until the run has ``--steps`` steps, then answers. It runs twice, with ``keep_history`` off and on;
the rows are the record's size per step, the run's wall time per step in each case, and, in a fresh process on the
same file, ``Runner.history`` and ``Runner.fork`` at the middle step (the fork asks the model once and answers),
and ``Runner.fork(..., replay=True)`` there (the steps to it replayed, the rest of the run's steps run again).
Wall time, the best of three runs each way (the reads: one each): the numbers move with the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from batonflow import ChatModelAgent, Runner, collect_events, user
from batonflow.schema import Message, assistant
from batonflow.store import CheckpointStore, PostgresCheckpointStore, SqliteCheckpointStore, load_history
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


def open_store(where: str) -> CheckpointStore:
    """``postgres:DSN|TABLE`` or a SQLite file's path."""
    if where.startswith("postgres:"):
        dsn, _, table = where.removeprefix("postgres:").partition("|")
        return PostgresCheckpointStore(dsn, table=table)
    return SqliteCheckpointStore(path=where)


async def timed_run(path: str, steps: int, keep: bool, rounds: int = 3) -> float:
    """The best wall time of ``rounds`` runs, with history kept or not (the first kept run is ``run-True``)."""
    store = open_store(path)
    try:
        runner = Runner(agent(steps), checkpoint_store=store, keep_history=keep)
        best = float("inf")
        for n in range(rounds):
            start = time.perf_counter()
            await collect_events(runner.run([user("go")], checkpoint_id=f"run-{keep}" + (f"-{n}" if n else "")))
            best = min(best, time.perf_counter() - start)
        return best
    finally:
        await store.close()


async def record_size(path: str) -> int:
    store = open_store(path)
    try:
        data = await load_history(store, "run-True")
        assert data is not None
        return len(data)
    finally:
        await store.close()


async def reading(path: str, steps: int) -> dict[str, float]:
    """What the fresh process measures: history, then a fork at the middle step."""
    store = open_store(path)
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

        start = time.perf_counter()
        events = await collect_events(runner.fork("run-True", at=middle, replay=True, checkpoint_id="in-place"))
        in_place = time.perf_counter() - start
        assert events[-1].message_output is not None
        assert events[-1].message_output.message.content == "finished"
        return {"steps": len(history), "history_s": read, "fork_s": forked, "in_place_s": in_place, "at": middle}
    finally:
        await store.close()


async def drop(dsn: str, table: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f"DROP TABLE IF EXISTS {table}, {table}_leases")
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--child", default=None)
    parser.add_argument("--postgres", default=None, metavar="DSN", help="measure on PostgreSQL, not SQLite")
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(asyncio.run(reading(args.child, args.steps))))
        return
    with tempfile.TemporaryDirectory() as folder:
        table = f"bf_bench_{uuid.uuid4().hex[:12]}"
        path = f"postgres:{args.postgres}|{table}" if args.postgres else str(Path(folder) / "runs.db")
        try:
            off = asyncio.run(timed_run(path, args.steps, False))
            on = asyncio.run(timed_run(path, args.steps, True))
            size = asyncio.run(record_size(path))
            child = [sys.executable, "-m", "benchmarks.history", "--steps", str(args.steps), "--child", path]
            fresh = json.loads(subprocess.run(child, capture_output=True, text=True, check=True).stdout)
        finally:
            if args.postgres:
                asyncio.run(drop(args.postgres, table))
    steps = fresh["steps"]
    print(f"{steps}-step run on {'PostgreSQL' if args.postgres else 'SQLite'}")
    print(f"  record: {size} bytes, {size / steps:.0f} bytes per step")
    print(f"  run without history: {off * 1e6 / steps:.0f} µs per step ({off:.2f} s)")
    print(f"  run with history:    {on * 1e6 / steps:.0f} µs per step ({on:.2f} s)")
    print(
        f"  fresh process: history {fresh['history_s'] * 1e3:.0f} ms, fork at step {fresh['at']} "
        f"{fresh['fork_s'] * 1e3:.0f} ms; with replay=True {fresh['in_place_s'] * 1e3:.0f} ms (the steps to it "
        "replayed, the rest of the run live)"
    )


if __name__ == "__main__":
    main()

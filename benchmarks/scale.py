"""Many concurrent runs on a pool of workers: ``python -m benchmarks.scale [--runs 400] [--workers 2]
[--concurrency 200] [--json]``.

Makes a PostgreSQL database of its own (dropped at the end), starts ``--workers`` ``batonflow worker`` processes
on it (live events on Redis), and submits ``--runs`` runs at once through ``DBOSBackend``, each read from its Redis
Stream to its ``end``. The agent is a scripted loop of ``STEPS`` tool calls of ``STEP_S`` seconds each (I/O-bound,
as model and tool calls are). Prints, beside the same runs through ``InProcessBackend`` in this process: how many
completed, p50 and p99 time to the first event (from submit), runs per second over the wall time, and how the runs
split across the workers. Needs PostgreSQL and Redis on loopback (``BATONFLOW_BENCH_POSTGRES``,
``BATONFLOW_BENCH_REDIS``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ADMIN = os.environ.get("BATONFLOW_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
REDIS = os.environ.get("BATONFLOW_BENCH_REDIS", "redis://127.0.0.1:6379/0")
ROOT = Path(__file__).resolve().parent.parent
STEPS = 3
STEP_S = 0.02


def agents() -> dict[str, Any]:
    """The agent the workers and the in-process backend run (``benchmarks.scale:agents``)."""
    from batonflow import ChatModelAgent, tool
    from batonflow.schema import assistant
    from batonflow.testing import FunctionModel, tool_calls

    @tool
    async def work(n: int) -> str:
        """One step of I/O-bound work.

        Args:
            n: the step number
        """
        await asyncio.sleep(STEP_S)
        return f"step {n}"

    def script(messages: Any, tools: Any) -> Any:
        done = sum(1 for m in messages if m.role == "tool")
        return tool_calls(("work", {"n": done + 1})) if done < STEPS else assistant("done")

    return {"looper": ChatModelAgent(name="looper", description="Loops.", model=FunctionModel(script), tools=[work])}


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _figures(first: list[float], wall: float, completed: int) -> dict[str, float]:
    return {
        "completed": completed,
        "first_event_p50_ms": round(statistics.median(first) * 1000, 1),
        "first_event_p99_ms": round(_percentile(first, 0.99) * 1000, 1),
        "runs_per_s": round(completed / wall, 1),
        "wall_s": round(wall, 2),
    }


async def in_process(runs: int) -> dict[str, float]:
    """The same runs as segments of ``InProcessBackend``, in this process: the floor the pool is measured against."""
    from batonflow.distributed import InProcessBackend, SegmentRequest
    from batonflow.schema import user
    from batonflow.store import MemoryCheckpointStore

    first: list[float] = []
    started = time.perf_counter()
    seen: set[str] = set()

    def sink_for(cid: str, begun: float) -> Any:
        async def sink(event: Any) -> None:
            if cid not in seen:
                seen.add(cid)
                first.append(time.perf_counter() - begun)

        return sink

    backends = []

    async def one(i: int) -> bool:
        cid = f"local-{i}"
        backend = InProcessBackend(agents(), MemoryCheckpointStore(), sink=sink_for(cid, time.perf_counter()))
        backends.append(backend)
        sid = await backend.submit(SegmentRequest(agent="looper", checkpoint_id=cid, messages=(user("go"),)))
        return (await backend.outcome(sid)).status == "completed"

    done = await asyncio.gather(*(one(i) for i in range(runs)))
    wall = time.perf_counter() - started
    for backend in backends:
        await backend.close()
    return _figures(first, wall, sum(done))


async def distributed(runs: int, database_url: str, store_path: str) -> tuple[dict[str, float], dict[str, int]]:
    import psycopg

    from batonflow.distributed import DBOSBackend, RedisEventLog, SegmentRequest
    from batonflow.schema import user
    from batonflow.store import SqliteCheckpointStore

    tag = uuid.uuid4().hex[:8]
    backend = DBOSBackend(SqliteCheckpointStore(store_path), database_url=database_url, events=RedisEventLog(REDIS))
    first: list[float] = []
    begin = time.perf_counter()

    async def one(i: int) -> bool:
        cid = f"bench-{tag}-{i}"
        started = time.perf_counter()
        sid = await backend.submit(SegmentRequest(agent="looper", checkpoint_id=cid, messages=(user("go"),)))
        seen = False
        async for record in backend.events(cid):
            if not seen:
                seen = True
                first.append(time.perf_counter() - started)
            if record.kind == "end" and record.segment_id == sid:
                return bool(record.data["status"] == "completed")
        return False

    done = await asyncio.gather(*(one(i) for i in range(runs)))
    wall = time.perf_counter() - begin
    await backend.close()
    with psycopg.connect(database_url) as db:
        split = {
            str(executor): int(count)
            for executor, count in db.execute(
                "SELECT executor_id, count(*) FROM dbos.workflow_status WHERE workflow_uuid LIKE %s GROUP BY 1",
                (f"bench-{tag}-%",),
            )
        }
    return _figures(first, wall, sum(done)), split


def _worker(database_url: str, store_path: str, concurrency: int, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    command = [
        sys.executable,
        "-m",
        "batonflow",
        "worker",
        "benchmarks.scale:agents",
        "--database-url",
        database_url,
        "--store",
        f"sqlite:{store_path}",
        "--concurrency",
        str(concurrency),
        "--redis-url",
        REDIS,
    ]
    with log.open("wb") as out:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale")
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=200, help="segments per worker at once")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    import psycopg

    name = f"bf_scale_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(ADMIN, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    database_url = f"{ADMIN.rpartition('/')[0]}/{name}"
    workers: list[subprocess.Popen[bytes]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            store_path = str(Path(tmp) / "checkpoints.db")
            logs = [Path(tmp) / f"worker-{i}.log" for i in range(args.workers)]
            workers = [_worker(database_url, store_path, args.concurrency, log) for log in logs]
            deadline = time.monotonic() + 60
            while not all("taking segments" in log.read_text(errors="replace") for log in logs):
                if time.monotonic() > deadline or any(w.poll() is not None for w in workers):
                    raise SystemExit("benchmarks.scale: a worker did not start:\n" + logs[0].read_text()[-2000:])
                time.sleep(0.1)
            local = asyncio.run(in_process(args.runs))
            remote, split = asyncio.run(distributed(args.runs, database_url, store_path))
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(20)
        with psycopg.connect(ADMIN, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    result = {"runs": args.runs, "workers": args.workers, "in_process": local, "dbos": remote, "split": split}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{args.runs} runs of {STEPS} tool steps ({STEP_S * 1000:g} ms each)")
        print(f"{'backend':<12} {'completed':>9} {'p50 first':>10} {'p99 first':>10} {'runs/s':>8} {'wall s':>7}")
        for label, row in (("in-process", local), (f"dbos x{args.workers}", remote)):
            print(
                f"{label:<12} {row['completed']:>9} {row['first_event_p50_ms']:>8} ms {row['first_event_p99_ms']:>7} ms"
                f" {row['runs_per_s']:>8} {row['wall_s']:>7}"
            )
        print("split across workers:", sorted(split.values(), reverse=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

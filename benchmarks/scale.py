"""Many concurrent runs on a pool of workers: ``python -m benchmarks.scale [--runs 400] [--workers 2]
[--concurrency 200] [--events redis|postgres] [--quick] [--json] [--usage]``.

Makes a PostgreSQL database of its own (dropped at the end), starts ``--workers`` ``batonflow worker`` processes
on it (live events on Redis, or with ``--events postgres`` in that database), and submits ``--runs`` runs at once
through ``DBOSBackend``, each read from its run's event log to its ``end``. The agent is a scripted loop of ``STEPS`` tool calls of ``STEP_S`` seconds each (I/O-bound,
as model and tool calls are). Prints, beside the same runs through ``InProcessBackend`` in this process: how many
completed, p50 and p99 time to the first event (from submit), runs per second over the wall time, and how the runs
split across the workers; then the first-event p50 with 1 and with 40 runs in flight on each backend, and the runs
per second of one worker alone (measured before the others start) and of all of them: the figures the
latency and throughput targets are set in. Needs PostgreSQL and Redis on loopback (``BATONFLOW_BENCH_POSTGRES``,
``BATONFLOW_BENCH_REDIS``) and the ``dbos``, ``postgres`` and ``redis`` extras: when one is missing it measures
nothing and says so (``skipped``), exiting 0, so that ``python -m benchmarks`` goes on without it. ``--usage`` adds
what the pool's batch cost per run: CPU of the workers, this process, PostgreSQL and Redis; commits; Redis commands.
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
from urllib.parse import urlsplit

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


def _figures(first: list[float], wall: float, completed: int) -> dict[str, float | None]:
    return {
        "completed": completed,
        "first_event_p50_ms": round(statistics.median(first) * 1000, 1) if first else None,
        "first_event_p99_ms": round(_percentile(first, 0.99) * 1000, 1) if first else None,
        "runs_per_s": round(completed / wall, 1),
        "wall_s": round(wall, 2),
    }


async def _one(backend: Any, cid: str, first: list[float]) -> bool:
    """One run submitted and read from its run's event log to its ``end``: whether it completed; the time from
    submit to its first record is appended to ``first``."""
    from batonflow.distributed import SegmentRequest
    from batonflow.schema import user

    begun = time.perf_counter()
    sid = await backend.submit(SegmentRequest(agent="looper", checkpoint_id=cid, messages=(user("go"),)))
    seen = False
    async for record in backend.events(cid):  # every backend's runs are followed the same way: from the log
        if not seen:
            seen = True
            first.append(time.perf_counter() - begun)
        if record.kind == "end" and record.segment_id == sid:
            return bool(record.data["status"] == "completed")
    return False


async def _batch(backend: Any, prefix: str, runs: int) -> dict[str, float | None]:
    """``runs`` runs at once: the figures of the batch."""
    first: list[float] = []
    begin = time.perf_counter()
    done = await asyncio.gather(*(_one(backend, f"{prefix}-{i}", first) for i in range(runs)))
    return _figures(first, time.perf_counter() - begin, sum(done))


async def _latency(backend: Any, prefix: str, in_flight: int, rounds: int) -> float | None:
    """p50 time to the first event (ms) with ``in_flight`` runs at a time, over ``rounds`` rounds of them."""
    first: list[float] = []
    for r in range(rounds):
        await asyncio.gather(*(_one(backend, f"{prefix}-lat{in_flight}-{r}-{i}", first) for i in range(in_flight)))
    return round(statistics.median(first) * 1000, 1) if first else None


LATENCY_ROUNDS = {1: 30, 40: 3}
"""The first-event latencies measured: runs in flight -> rounds of them (30 runs one at a time, 3 rounds of 40)."""


async def _latencies(backend: Any, prefix: str) -> dict[str, float | None]:
    await _batch(backend, f"{prefix}-warm", 5)  # connections made, code paths warm: the first run is no outlier
    return {str(n): await _latency(backend, prefix, n, rounds) for n, rounds in LATENCY_ROUNDS.items()}


async def in_process(runs: int) -> tuple[dict[str, float | None], dict[str, float | None]]:
    """The same runs as segments of ``InProcessBackend``, in this process: the floor the pool is measured against.
    The figures of ``runs`` at once, and the first-event p50 at each ``LATENCY_ROUNDS`` size."""
    from batonflow.distributed import InProcessBackend
    from batonflow.store import MemoryCheckpointStore

    backend = InProcessBackend(agents(), MemoryCheckpointStore(), keep_finished=max(runs, 200))
    try:
        latency = await _latencies(backend, "local")
        return await _batch(backend, "local", runs), latency
    finally:
        await backend.close()


def _forget(tag: str) -> None:
    """Deletes the Redis event streams (and cancel flags) of the runs tagged ``tag``: the benchmark leaves none."""
    import redis

    with redis.Redis.from_url(REDIS, socket_connect_timeout=3, socket_timeout=10) as client:
        keys = list(client.scan_iter(match=f"*-{tag}*", count=1000))
        for start in range(0, len(keys), 500):
            client.delete(*keys[start : start + 500])


async def distributed(
    runs: int,
    database_url: str,
    store_path: str,
    events_url: str,
    *,
    latency: bool = False,
    usage: list[int] | None = None,
) -> tuple[dict[str, Any], dict[str, int], dict[str, float | None]]:
    """``runs`` runs at once through ``DBOSBackend`` on the workers running now: their figures, how they split
    across the workers, and (``latency``) the first-event p50 at each ``LATENCY_ROUNDS`` size. With ``usage`` (the
    workers' process ids), the figures also say what the batch cost (``Usage``)."""
    import psycopg

    from batonflow.distributed import DBOSBackend, event_log_at
    from batonflow.store import SqliteCheckpointStore

    tag = uuid.uuid4().hex[:8]
    backend = DBOSBackend(SqliteCheckpointStore(store_path), database_url=database_url, events=event_log_at(events_url))
    try:
        latencies = await _latencies(backend, f"lat-{tag}") if latency else {}
        meter = None if usage is None else await asyncio.to_thread(Usage, usage, database_url, events_url == REDIS)
        figures: dict[str, Any] = await _batch(backend, f"bench-{tag}", runs)
        if meter is not None:
            figures["usage"] = await asyncio.to_thread(meter.per_run, runs)
    finally:
        await backend.close()
        if events_url == REDIS:
            _forget(tag)
    with psycopg.connect(database_url) as db:
        split = {
            str(executor): int(count)
            for executor, count in db.execute(
                "SELECT executor_id, count(*) FROM dbos.workflow_status WHERE workflow_uuid LIKE %s GROUP BY 1",
                (f"bench-{tag}-%",),
            )
        }
    return figures, split, latencies


class Usage:
    """What a batch costs, from its start (made) to ``per_run``: the CPU time of the workers, of this process (the
    API side: enqueues, followers), of every PostgreSQL and Redis server process of the machine (by their names
    in /proc: Linux only, nothing elsewhere), the database's committed transactions (``pg_stat_database``) and the
    Redis commands (``INFO commandstats``, the whole server's). Idle polling is in it: ``idle`` measures it first,
    over ``IDLE_S`` seconds of no runs, per second."""

    IDLE_S = 2.0

    def __init__(self, workers: list[int], database_url: str, redis: bool) -> None:
        self.workers, self.database_url, self.redis = workers, database_url, redis
        before, begun = self._read(), time.perf_counter()
        time.sleep(self.IDLE_S)
        self.idle = {k: v / (time.perf_counter() - begun) for k, v in _less(self._read(), before).items()}
        self.before, self.begun = self._read(), time.perf_counter()

    def _read(self) -> dict[str, float]:
        import psycopg

        counts = {**_cpu_seconds(self.workers), "pg_commits": 0.0, "redis_commands": 0.0}
        name = self.database_url.rpartition("/")[2]
        with psycopg.connect(self.database_url) as db:
            row = db.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = %s", (name,)).fetchone()
            counts["pg_commits"] = float(row[0]) if row else 0.0
        if self.redis:
            import redis

            with redis.Redis.from_url(REDIS, socket_timeout=10) as client:
                counts["redis_commands"] = float(sum(s["calls"] for s in client.info("commandstats").values()))
        return counts

    def per_run(self, runs: int) -> dict[str, dict[str, float]]:
        """Per run of the batch, and per second of the idle pool before it (CPU in ms)."""
        spent, wall = _less(self._read(), self.before), time.perf_counter() - self.begun
        scale = {k: 1.0 if k in ("pg_commits", "redis_commands") else 1000.0 for k in spent}
        return {
            "per_run": {k: round(v * scale[k] / runs, 2) for k, v in spent.items()},
            "idle_polling_per_run": {k: round(self.idle[k] * wall * scale[k] / runs, 2) for k in spent},
            "idle_per_s": {k: round(v * scale[k], 1) for k, v in self.idle.items()},
        }


def _less(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {k: v - before.get(k, 0.0) for k, v in after.items()}


def _cpu_seconds(workers: list[int]) -> dict[str, float]:
    """CPU seconds (user and system) used so far by ``workers``, this process, and the machine's PostgreSQL and
    Redis server processes (a backend that ended meanwhile is not counted)."""
    tick = os.sysconf("SC_CLK_TCK")
    found = {"workers_cpu": 0.0, "benchmark_cpu": 0.0, "postgres_cpu": 0.0, "redis_cpu": 0.0}
    for pid in filter(str.isdigit, os.listdir("/proc") if os.path.isdir("/proc") else ()):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        name, fields = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
        group = (
            "workers_cpu"
            if int(pid) in workers
            else "benchmark_cpu"
            if int(pid) == os.getpid()
            else "postgres_cpu"
            if name.startswith("postgres")
            else "redis_cpu"
            if name.startswith("redis-server")
            else None
        )
        if group is not None:
            found[group] += (int(fields[11]) + int(fields[12])) / tick
    return found


def _worker(
    database_url: str, store_path: str, concurrency: int, events_url: str, log: Path
) -> subprocess.Popen[bytes]:
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]  # a profiler's, say: kept after
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT), *inherited])}
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
        "--events-url",
        events_url,
    ]
    with log.open("wb") as out:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


def _where(url: str) -> str:
    """``url`` without its credentials: host, port and database (what a skip names)."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    port = f":{parts.port}" if parts.port else ""
    return f"{host}{port}{parts.path}"


def unavailable(events: str = "redis") -> str | None:
    """Why the pool cannot be measured here (an extra not installed, PostgreSQL or, for ``events`` on Redis, Redis
    not answering), or None."""
    try:
        import dbos  # noqa: F401
        import psycopg
        import redis
    except ImportError as error:
        return f"{error.name} is not installed (pip install 'batonflow[dbos,postgres,redis]')"
    try:
        psycopg.connect(ADMIN, connect_timeout=3).close()
    except psycopg.Error as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return f"no PostgreSQL at {_where(ADMIN)} ({reason})"
    if events != "redis":
        return None
    try:
        client = redis.Redis.from_url(REDIS, socket_connect_timeout=3, socket_timeout=3)
        try:
            client.ping()
        finally:
            client.close()
    except redis.RedisError as error:
        return f"no Redis at {_where(REDIS)} ({error})"
    return None


def _started(
    database_url: str, store_path: str, concurrency: int, events_url: str, logs: list[Path]
) -> list[subprocess.Popen[bytes]]:
    """Workers started, one per log, once each says it is taking segments."""
    processes = [_worker(database_url, store_path, concurrency, events_url, log) for log in logs]
    started = time.monotonic()
    while not all("taking segments" in log.read_text(errors="replace") for log in logs):
        if time.monotonic() > started + 60 or any(w.poll() is not None for w in processes):
            raise SystemExit("benchmarks.scale: a worker did not start:\n" + logs[0].read_text()[-2000:])
        time.sleep(0.1)
    return processes


def measure(runs: int, workers: int, concurrency: int, events: str = "redis", usage: bool = False) -> dict[str, Any]:
    """The runs through both backends, live events on ``events`` (``redis`` or ``postgres``): the figures of each,
    how the pool's runs split across its workers (by executor id) and the workers' process ids; the first-event
    p50 at 1 and 40 runs in flight on each backend (on all the workers); the throughput of one worker alone (the
    same runs, before the others start) and of all of them; with ``usage``, what the pool's batch cost
    (``Usage``)."""
    import psycopg

    name = f"bf_scale_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(ADMIN, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    database_url = f"{ADMIN.rpartition('/')[0]}/{name}"
    events_url = REDIS if events == "redis" else database_url
    processes: list[subprocess.Popen[bytes]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            store_path = str(Path(tmp) / "checkpoints.db")
            logs = [Path(tmp) / f"worker-{i}.log" for i in range(workers)]
            started = time.monotonic()
            processes = _started(database_url, store_path, concurrency, events_url, logs[:1])
            startup = time.monotonic() - started
            local, local_latency = asyncio.run(in_process(runs))
            alone: dict[str, float | None] | None = None
            if workers > 1:
                alone = asyncio.run(distributed(runs, database_url, store_path, events_url))[0]
                processes += _started(database_url, store_path, concurrency, events_url, logs[1:])
            remote, split, remote_latency = asyncio.run(
                distributed(
                    runs,
                    database_url,
                    store_path,
                    events_url,
                    latency=True,
                    usage=[p.pid for p in processes] if usage else None,
                )
            )
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(20)
        with psycopg.connect(ADMIN, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    return {
        "runs": runs,
        "workers": workers,
        "concurrency": concurrency,
        "events": events,
        "worker_pids": [p.pid for p in processes],
        "worker_startup_s": round(startup, 2),
        "in_process": local,
        "dbos": remote,
        "split": split,
        "first_event_p50_ms": {"in_process": local_latency, "dbos": remote_latency},
        "runs_per_s": {
            "in_process": local["runs_per_s"],
            "dbos_1_worker": (alone or remote)["runs_per_s"],
            f"dbos_{workers}_workers": remote["runs_per_s"],
        },
    }


def render(result: dict[str, Any]) -> list[str]:
    """A Markdown table: each backend's completed runs, p50 and p99 time to the first event, runs/s and wall time,
    and how the pool's runs split across its workers; or why nothing was measured."""
    if "skipped" in result:
        return [f"skipped: {result['skipped']}"]
    runs, workers = result["runs"], result["workers"]
    lines = [
        f"{runs} concurrent runs of {STEPS} tool steps ({STEP_S * 1000:g} ms each), on {workers} workers of "
        f"{result['concurrency']} segments each (DBOS, live events on {_LOGS[result.get('events', 'redis')]}) and "
        "in-process:",
        "",
        "| backend | completed | p50 first event (ms) | p99 first event (ms) | runs/s | wall (s) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, row in (("in-process", result["in_process"]), (f"dbos, {workers} workers", result["dbos"])):
        lines.append(
            f"| {label} | {row['completed']} of {runs} | {row['first_event_p50_ms']} | {row['first_event_p99_ms']} "
            f"| {row['runs_per_s']} | {row['wall_s']} |"
        )
    split = sorted(result["split"].values(), reverse=True)
    return [
        *lines,
        *_targets(result),
        *_usage(result["dbos"].get("usage")),
        "",
        f"Runs per worker: {', '.join(map(str, split))} ({len(split)} of {workers} workers took runs); the workers "
        f"started in {result['worker_startup_s']} s.",
    ]


def _targets(result: dict[str, Any]) -> list[str]:
    """The latency and throughput lines the targets are set for: first-event p50 at 1 and 40 runs in flight on
    each backend (and what DBOS adds at 1), runs/s with one worker and with all, against in-process."""
    latency, rates = result.get("first_event_p50_ms"), result.get("runs_per_s")
    if not latency or not rates:
        return []
    local, remote = latency["in_process"], latency["dbos"]
    lines = ["", "| first event p50 (ms) | " + " | ".join(f"{n} in flight" for n in local) + " |"]
    lines.append("|---|" + "---:|" * len(local))
    lines += [
        f"| {label} | " + " | ".join(str(v) for v in row.values()) + " |"
        for label, row in (("in-process", local), ("dbos", remote))
    ]
    one = [local.get("1"), remote.get("1")]
    added = f"{one[1] - one[0]:.1f} ms" if None not in one else "n/a"
    workers = result["workers"]
    pool = rates.get(f"dbos_{workers}_workers")
    ratio = f"{pool / rates['in_process']:.2f}" if pool and rates["in_process"] else "n/a"
    return [
        *lines,
        "",
        f"DBOS adds {added} to the first event at 1 in flight (target: at most 30 ms). Runs/s: in-process "
        f"{rates['in_process']}, DBOS with 1 worker {rates['dbos_1_worker']}, with {workers} workers {pool} "
        f"({ratio} of in-process; target: at least 0.5 with 2 workers).",
    ]


def _usage(usage: dict[str, dict[str, float]] | None) -> list[str]:
    """What the pool's batch cost (``--usage``), per run, and how much of it the idle pool spends as well."""
    if not usage:
        return []
    names = list(usage["per_run"])
    return [
        "",
        "| per run of the pool's batch | " + " | ".join(n.replace("_", " ") for n in names) + " |",
        "|---|" + "---:|" * len(names),
        *(
            f"| {label} | " + " | ".join(str(usage[key].get(n)) for n in names) + " |"
            for label, key in (("spent", "per_run"), ("of which an idle pool's polling", "idle_polling_per_run"))
        ),
        "",
        "CPU in ms. An idle pool spends per second: "
        + ", ".join(
            f"{v} {'ms ' if n.endswith('cpu') else ''}{n.replace('_', ' ')}" for n, v in usage["idle_per_s"].items()
        )
        + ".",
    ]


_LOGS = {"redis": "Redis", "postgres": "PostgreSQL"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, help="concurrent runs (default 400; --quick 100)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=200, help="segments per worker at once")
    parser.add_argument("--events", choices=("redis", "postgres"), default="redis", help="where live events go")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 100 runs unless --runs says otherwise")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    parser.add_argument("--usage", action="store_true", help="also what the pool's batch cost: CPU, commits, commands")
    args = parser.parse_args(argv)
    runs = args.runs if args.runs is not None else 100 if args.quick else 400
    if runs < 1 or args.workers < 1 or args.concurrency < 1:
        parser.error(
            f"expected --runs, --workers and --concurrency of 1 or more, got {runs}, {args.workers}, {args.concurrency}"
        )
    why = unavailable(args.events)
    if why is not None:
        result: dict[str, Any] = {"runs": runs, "workers": args.workers, "events": args.events, "skipped": why}
    else:
        result = measure(runs, args.workers, args.concurrency, args.events, args.usage)
    print(json.dumps(result) if args.json else "\n".join(render(result)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

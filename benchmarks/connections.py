"""How many PostgreSQL connections a deployment holds: ``python -m benchmarks.connections [--workers 3] [--apis 2]
[--runs 300] [--events redis|postgres] [--json]``.

Makes a PostgreSQL database of its own (dropped at the end), starts ``--workers`` ``batonflow worker`` processes and
``--apis`` ``batonflow serve --backend dbos`` processes on it (the agent of ``benchmarks.scale``: a loop of tool
calls), then posts ``--runs`` runs at once, spread over the API processes, each waited for to its answer. Meanwhile
it counts the database's connections (``pg_stat_activity`` rows for that database, its own sampling connection
left out) every 20 ms: idle after start-up, and the peak under load. Needs what ``benchmarks.scale`` needs
(PostgreSQL and, with ``--events redis``, Redis on loopback); skipped, saying why, when one is missing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from .scale import ADMIN, REDIS, ROOT, _started, unavailable

_COUNT = "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _api(database_url: str, store_path: str, events_url: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    command = [
        sys.executable,
        "-m",
        "batonflow",
        "serve",
        "benchmarks.scale:agents",
        "--backend",
        "dbos",
        "--store",
        f"sqlite:{store_path}",
        "--database-url",
        database_url,
        "--events-url",
        events_url,
        "--port",
        str(port),
    ]
    with log.open("wb") as out:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


class Sampler:
    """Counts the connections to ``name`` every 20 ms on a thread of its own: the latest count and the peak."""

    def __init__(self, name: str) -> None:
        import psycopg

        self.name = name
        self.peak = 0
        self.last = 0
        self._conn = psycopg.connect(ADMIN, autocommit=True)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            row = self._conn.execute(_COUNT, (self.name,)).fetchone()
            self.last = int(row[0]) if row is not None else 0
            self.peak = max(self.peak, self.last)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._conn.close()


async def _load(ports: list[int], runs: int) -> int:
    """``runs`` runs at once, round-robin over the API processes: how many completed."""
    import httpx

    async def one(client: httpx.AsyncClient, i: int) -> bool:
        port = ports[i % len(ports)]
        body = {"agent": "looper", "input": "go", "checkpoint_id": f"conn-{i}"}
        answer = await client.post(f"http://127.0.0.1:{port}/runs", json=body)
        return answer.status_code == 200 and answer.json().get("status") == "completed"

    limits = httpx.Limits(max_connections=runs, max_keepalive_connections=runs)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        return sum(await asyncio.gather(*(one(client, i) for i in range(runs))))


def _answering(ports: list[int], processes: list[subprocess.Popen[bytes]], logs: list[Path]) -> None:
    import httpx

    deadline = time.monotonic() + 60
    for port in ports:
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or any(p.poll() is not None for p in processes):
                raise SystemExit(
                    "benchmarks.connections: an API process did not start:\n" + logs[0].read_text()[-2000:]
                )
            time.sleep(0.1)


def measure(workers: int, apis: int, runs: int, events: str) -> dict[str, Any]:
    import psycopg

    name = f"bf_conn_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(ADMIN, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    database_url = f"{ADMIN.rpartition('/')[0]}/{name}"
    events_url = REDIS if events == "redis" else database_url
    processes: list[subprocess.Popen[bytes]] = []
    sampler: Sampler | None = None
    try:
        with tempfile.TemporaryDirectory() as tmp:
            store_path = str(Path(tmp) / "checkpoints.db")
            worker_logs = [Path(tmp) / f"worker-{i}.log" for i in range(workers)]
            processes += _started(database_url, store_path, 100, events_url, worker_logs)
            ports = [_free_port() for _ in range(apis)]
            api_logs = [Path(tmp) / f"api-{i}.log" for i in range(apis)]
            processes += [
                _api(database_url, store_path, events_url, port, log) for port, log in zip(ports, api_logs, strict=True)
            ]
            _answering(ports, processes, api_logs)
            sampler = Sampler(name)
            time.sleep(1.0)
            idle = sampler.last
            began = time.perf_counter()
            completed = asyncio.run(_load(ports, runs))
            wall = time.perf_counter() - began
            peak = sampler.peak
    finally:
        if sampler is not None:
            sampler.close()
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(30)
        with psycopg.connect(ADMIN, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    return {
        "workers": workers,
        "apis": apis,
        "runs": runs,
        "events": events,
        "completed": completed,
        "wall_s": round(wall, 2),
        "idle_connections": idle,
        "peak_connections": peak,
    }


def render(result: dict[str, Any]) -> str:
    if "skipped" in result:
        return f"skipped: {result['skipped']}"
    return (
        f"{result['workers']} workers + {result['apis']} API processes, live events on {result['events']}: "
        f"{result['completed']}/{result['runs']} runs completed in {result['wall_s']} s; connections to the "
        f"database: {result['idle_connections']} idle, {result['peak_connections']} at the peak"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.connections", description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--apis", type=int, default=2)
    parser.add_argument("--runs", type=int, default=300, help="runs posted at once, over the API processes")
    parser.add_argument("--events", choices=("redis", "postgres"), default="redis", help="where live events go")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args(argv)
    if args.workers < 1 or args.apis < 1 or args.runs < 1:
        parser.error(
            f"expected --workers, --apis and --runs of 1 or more, got {args.workers}, {args.apis}, {args.runs}"
        )
    why = unavailable(args.events)
    result: dict[str, Any] = (
        {"events": args.events, "skipped": why} if why else measure(args.workers, args.apis, args.runs, args.events)
    )
    print(json.dumps(result) if args.json else render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

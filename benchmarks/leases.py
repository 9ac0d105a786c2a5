"""What leases cost, per checkpoint store: ``python -m benchmarks.leases [--n 300] [--size 20000]``.

For each store (memory, SQLite, PostgreSQL and Redis on 127.0.0.1) it times, one call after another on one store:
a claim that renews the caller's own lease, ``holder``, a plain ``set`` of ``--size`` random bytes, the same
``set`` fenced by the lease (``owner=``), and ``delete``, plain and fenced, of a checkpoint that is there. Each
figure is the median of ``--n`` calls in microseconds. A store without ``holder`` or fenced writes (an earlier checkout, given by
``PYTHONPATH=<checkout>/src``) shows "-" for those, so the plain figures can be compared across checkouts.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
import redis.asyncio

from batonflow.store import (
    MemoryCheckpointStore,
    PostgresCheckpointStore,
    RedisCheckpointStore,
    SqliteCheckpointStore,
)

POSTGRES_DSN = os.environ.get("BATONFLOW_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("BATONFLOW_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


async def measure(store: Any, n: int, data: bytes) -> dict[str, float | None]:
    """The median µs of each operation, taken in rounds that call every operation once: the disk's fsync time
    drifts by a factor of ten on a shared machine, and every operation should see the same drift."""
    fenced = "owner" in inspect.signature(store.set).parameters
    calls: dict[str, Callable[[], Awaitable[object]] | None] = {
        "claim (renew)": lambda: store.claim("run-1", "bench", 300),
        "holder": (lambda: store.holder("run-1")) if hasattr(store, "holder") else None,
        "set": lambda: store.set("run-1", data),
        "set, fenced": (lambda: store.set("run-1", data, owner="bench")) if fenced else None,
        "delete": lambda: store.delete("run-1"),
        "set again": lambda: store.set("run-1", data),  # so that the fenced delete has something to delete
        "delete, fenced": (lambda: store.delete("run-1", owner="bench")) if fenced else None,
    }
    times: dict[str, list[float]] = {name: [] for name in calls}
    assert await store.claim("run-1", "bench", 300)
    for round_ in range(n + min(20, n)):  # the first rounds warm up: connections, statements, script caches
        for name, call in calls.items():
            if call is None:
                continue
            started = time.perf_counter()
            await call()
            if round_ >= min(20, n):
                times[name].append(time.perf_counter() - started)
    await store.release("run-1", "bench")
    return {name: statistics.median(t) * 1e6 if t else None for name, t in times.items() if name != "set again"}


async def main(n: int, size: int) -> None:
    data = os.urandom(size)
    token = uuid.uuid4().hex[:12]
    table, prefix = f"bf_bench_{token}", f"batonflow-bench:{token}:"
    rows: dict[str, dict[str, float | None]] = {}
    with tempfile.TemporaryDirectory(prefix="batonflow-leases-") as directory:
        stores: dict[str, Any] = {
            "memory": MemoryCheckpointStore(),
            "sqlite": SqliteCheckpointStore(Path(directory) / "c.db"),
            "postgres": PostgresCheckpointStore(POSTGRES_DSN, table=table),
            "redis": RedisCheckpointStore(REDIS_URL, prefix=prefix),
        }
        try:
            for name, store in stores.items():
                rows[name] = await measure(store, n, data)
        finally:
            for store in stores.values():
                await store.close()
            await drop(table, prefix)
    columns = list(next(iter(rows.values())))
    print(f"median µs of {n} calls; set payload {size} bytes")
    print(f"{'store':<10}" + "".join(f"{c:>16}" for c in columns))
    for name, figures in rows.items():
        cells = ("-" if figures[c] is None else f"{figures[c]:.0f}" for c in columns)
        print(f"{name:<10}" + "".join(f"{cell:>16}" for cell in cells))


async def drop(table: str, prefix: str) -> None:
    conn = await asyncpg.connect(POSTGRES_DSN)
    try:
        await conn.execute(f"DROP TABLE IF EXISTS {table}, {table}_leases")
    finally:
        await conn.close()
    client = redis.asyncio.Redis.from_url(REDIS_URL)
    try:
        keys = [key async for key in client.scan_iter(match=f"{prefix}*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300, help="calls per figure")
    parser.add_argument("--size", type=int, default=20_000, help="bytes per set")
    args = parser.parse_args()
    asyncio.run(main(args.n, args.size))

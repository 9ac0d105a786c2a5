"""Many concurrent resumes on one SQLite checkpoint store: ``python -m benchmarks.sqlite_load [--resumes 10000]
[--at-once N]``.

A resume does what the Runner does around a resumed run: claim the checkpoint's lease, read the checkpoint, save the new
one (or delete it, when the run has finished: every other resume here), release the lease. The store is pre-seeded with
one checkpoint per resume, each of 5 to 20 KB of incompressible bytes (a checkpoint is zlib compressed), then all the
resumes start at once as asyncio tasks, on distinct ids, through one ``SqliteCheckpointStore`` in a temporary directory
(with ``--at-once N``, at most N run at a time: 1 makes each commit wait for the disk alone, as a quiet store does).
Prints resumes per second and the p50 and p99 latency of one resume (from the moment all started, so it includes the
wait in the queue), and the CPU time the process took (the steadier figure when other work shares the machine), after
checking that every resume won its claim and read its checkpoint and that the file holds what they wrote. ``--option
key=value`` passes a store option (a number or a word); runs on the code on ``PYTHONPATH``, so the figure can be taken
on another checkout.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import resource
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from batonflow.store import SqliteCheckpointStore

TABLE = "batonflow_checkpoints"


def payloads(count: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    return [rng.randbytes(rng.randint(5_000, 20_000)) for _ in range(count)]


async def seed(path: Path, old: list[bytes]) -> None:
    async with SqliteCheckpointStore(path) as store:
        await store.get("warm-up")  # the tables
    with sqlite3.connect(path) as conn:  # one transaction: seeding is not what is measured
        conn.executemany(
            f"INSERT INTO {TABLE} (id, data, updated_at) VALUES (?, ?, ?)",
            [(f"ckpt-{i}", data, time.time()) for i, data in enumerate(old)],
        )


async def resume(store: SqliteCheckpointStore, i: int, new: bytes, old: bytes, started: float) -> float:
    checkpoint_id, owner = f"ckpt-{i}", f"worker-{i}"
    if not await store.claim(checkpoint_id, owner, 300):
        raise AssertionError(f"{checkpoint_id}: the claim was lost, with no other claimant")
    if await store.get(checkpoint_id) != old:
        raise AssertionError(f"{checkpoint_id}: read back something else than the seeded checkpoint")
    if i % 2:
        await store.set(checkpoint_id, new)
    else:
        await store.delete(checkpoint_id)
    await store.release(checkpoint_id, owner)
    return time.perf_counter() - started


def check_file(path: Path, new: list[bytes]) -> None:
    with sqlite3.connect(path) as conn:
        rows = dict(conn.execute(f"SELECT id, data FROM {TABLE}").fetchall())
        leases = conn.execute(f"SELECT count(*) FROM {TABLE}_leases").fetchone()[0]
    expected = {f"ckpt-{i}": data for i, data in enumerate(new) if i % 2}
    if rows != expected or leases:
        raise AssertionError(
            f"the file holds {len(rows)} checkpoints and {leases} leases, expected {len(expected)} and 0"
        )


async def probe(resumes: int, options: dict[str, Any], at_once: int | None = None) -> dict[str, float]:
    old, new = payloads(resumes, 1), payloads(resumes, 2)
    gate = asyncio.Semaphore(at_once or resumes)

    async def gated(store: SqliteCheckpointStore, i: int, started: float) -> float:
        async with gate:
            return await resume(store, i, new[i], old[i], started)

    with tempfile.TemporaryDirectory(prefix="batonflow-sqlite-load-") as folder:
        path = Path(folder) / "checkpoints.db"
        await seed(path, old)
        async with SqliteCheckpointStore(path, **options) as store:
            cpu_before = _cpu()
            started = time.perf_counter()
            latencies = await asyncio.gather(*(gated(store, i, started) for i in range(resumes)))
            seconds = time.perf_counter() - started
            cpu = _cpu() - cpu_before
        check_file(path, new)
    ordered = sorted(latencies)
    return {
        "seconds": seconds,
        "cpu": cpu,
        "per_second": resumes / seconds,
        "p50": statistics.median(ordered),
        "p99": ordered[min(len(ordered) - 1, round(0.99 * len(ordered)))],
    }


def _cpu() -> float:
    """CPU seconds of this process, all threads: steadier than wall time on a machine that is busy with other work."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def option(text: str) -> tuple[str, Any]:
    key, _, value = text.partition("=")
    try:
        return key, float(value) if "." in value else int(value)
    except ValueError:
        return key, value


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sqlite_load", description=__doc__.splitlines()[0])
    parser.add_argument("--resumes", type=int, default=10_000)
    parser.add_argument("--at-once", type=int, default=None, help="how many resumes run at a time (default: all)")
    parser.add_argument("--option", type=option, action="append", default=[], help="a store option, key=value")
    args = parser.parse_args()
    options = dict(args.option)
    result = asyncio.run(probe(args.resumes, options, args.at_once))
    at_once = f"{args.at_once} at a time" if args.at_once else "concurrent"
    print(
        f"{args.resumes} {at_once} resumes (claim, get, set or delete, release) on one SqliteCheckpointStore "
        f"(options {options or 'default'}, {os.cpu_count()} cores): {result['per_second']:,.0f} resumes/s "
        f"({result['seconds']:.2f} s, CPU {result['cpu']:.2f} s: {result['cpu'] / args.resumes * 1e6:,.0f} µs per resume), "
        f"latency p50 {result['p50'] * 1000:,.0f} ms, p99 {result['p99'] * 1000:,.0f} ms, load average "
        f"{os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()

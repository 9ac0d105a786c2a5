"""Resumes killed at random points: ``python -m benchmarks.crash_resume [--runs 500] [--stores ...] [--load]``.

Each run is started here to its approval; a child process (``benchmarks.durable``) resumes it and is sent SIGKILL
after a random delay, drawn up to twice the time a resume takes (``--spread``), so that the kill lands anywhere from before the
claim to after the end. The run is then resumed here until it finishes: a lease the dead child holds is broken (its
holder is known to be gone) or waited out. Prints, per store, the runs whose refund ran to its end more than once
(``calls``: what the framework repeated), took effect more than once (``effects``: the refund's idempotency key
came too late to help), or never took effect although the run is gone (lost).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import random
import signal
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from batonflow.errors import ResumeConflictError

from .durable import build_runner, build_store, open_ledger, refunds, resume, start
from .resume_race import Child, own_store


def _spin() -> None:
    while True:
        pass


@contextlib.contextmanager
def busy_load(on: bool) -> Iterator[None]:
    """A busy process per core while the block runs, when ``on``."""
    workers = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(os.cpu_count() or 1)] if on else []
    for worker in workers:
        worker.start()
    try:
        yield
    finally:
        for worker in workers:
            worker.kill()


async def recover(runner: Any, run: str, target: str) -> str:
    """Resume ``run`` here until it is finished; a dead child's lease is broken."""
    while True:
        try:
            outcome = await resume(runner, run, target)
            if outcome != "conflict":
                return outcome
        except ResumeConflictError:  # pragma: no cover - resume() turns it into "conflict"
            pass
        store = runner.checkpoint_store
        holder = getattr(store, "holder", None)
        lease = await holder(run) if holder is not None else None
        if lease is not None:
            await runner.break_lease(run, lease.owner)
        else:
            await asyncio.sleep(0.2)


async def crash(
    own: dict[str, Any], runs: int, directory: Path, spread: float = 2.0, part_events: int | None = None
) -> dict[str, Any]:
    kind = own["kind"]
    spec = {**own, "lease": 5.0, "part_events": part_events}
    ledger_path = str(directory / f"ledger-crash-{kind}.db")
    ledger = open_ledger(ledger_path)
    durations: list[float] = []
    repeated = duplicated = lost = 0
    kills_before_end = 0
    async with build_store(spec) as store:
        runner = build_runner(store, ledger, part_events=part_events)
        for n in range(runs):
            run = f"crash-{n}"
            target = await start(runner, run)
            child = await Child.spawn(spec, ledger_path)
            await child.send("ready")
            await child.answer()
            began = time.perf_counter()
            await child.send(f"resume {run} {target}")
            if n < 5:  # the first few run to the end: how long a resume takes
                await child.answer()
                durations.append(time.perf_counter() - began)
            else:
                await asyncio.sleep(random.uniform(0, spread * statistics.median(durations)))
                assert child.process.pid is not None
                os.kill(child.process.pid, signal.SIGKILL)
            await child.close()
            outcome = await recover(runner, run, target)
            kills_before_end += outcome == "done"
            calls, effects = refunds(ledger, run)
            repeated += calls > 1
            duplicated += effects > 1
            lost += effects == 0
    return {
        "store": kind,
        "runs": runs,
        "resume ms (median)": round(1000 * statistics.median(durations), 1),
        "killed before the end": kills_before_end,
        "refund ran twice": repeated,
        "refund took effect twice": duplicated,
        "lost": lost,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgres", "redis"])
    parser.add_argument("--load", action="store_true", help="a busy process per core while crashing")
    parser.add_argument("--spread", type=float, default=2.0, help="kill within this many resume times")
    parser.add_argument(
        "--part-events", type=int, default=None, help="Runner(history_part_events=...): 2 saves the history in parts"
    )
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bf-crash-") as directory, busy_load(options.load):
        for kind in options.stores:
            async with own_store(kind, Path(directory)) as spec:
                result = await crash(spec, options.runs, Path(directory), options.spread, options.part_events)
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    asyncio.run(main())

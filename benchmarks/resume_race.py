"""Two processes resuming one checkpoint at once: ``python -m benchmarks.resume_race [--trials 100] [--stores ...]``.

Per store, two child processes (``benchmarks.durable``) are lined up; each trial starts a run to its approval here,
then tells both children to resume it at the same moment. Exactly one may go ahead: the other must be refused
(``conflict``) or find the run finished (``gone``). Prints, per store, the trials with two winners and the refunds
that ran (``calls``) and took effect (``effects``) more than once. PostgreSQL and Redis are expected on 127.0.0.1
(as the tests expect them); ``--load`` adds a busy process per core.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from .durable import build_runner, build_store, open_ledger, refunds, start
from .leases import POSTGRES_DSN, REDIS_URL, drop

# The servers the tests use, and the same variables to point elsewhere.
ROOT = Path(__file__).resolve().parent.parent


@contextlib.asynccontextmanager
async def own_store(kind: str, directory: Path) -> AsyncIterator[dict[str, Any]]:
    """The spec of a store of ``kind``: a table or key prefix of its own in the settings' services, dropped after."""
    token = uuid.uuid4().hex[:12]
    try:
        yield store_spec(kind, directory, token)
    finally:
        if kind != "sqlite":
            await drop(f"bf_race_{token}", f"batonflow-race:{token}:")


def store_spec(kind: str, directory: Path, token: str) -> dict[str, Any]:
    args = {
        "sqlite": {"path": str(directory / "checkpoints.db")},
        "postgres": {"dsn": POSTGRES_DSN, "table": f"bf_race_{token}"},
        "redis": {"url": REDIS_URL, "prefix": f"batonflow-race:{token}:"},
    }[kind]
    return {"kind": kind, "args": args}


class Child:
    """A ``benchmarks.durable`` process, asked one line at a time."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @classmethod
    async def spawn(cls, spec: dict[str, Any], ledger: str) -> Child:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "benchmarks.durable",
            json.dumps(spec),
            ledger,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            cwd=ROOT,
        )
        return cls(process)

    async def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() + b"\n")
        await self.process.stdin.drain()

    async def answer(self) -> Any:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), 120)
        if not line:
            raise RuntimeError("a child process ended early")
        return json.loads(line)

    async def close(self) -> None:
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()


async def race(spec: dict[str, Any], trials: int, directory: Path) -> dict[str, Any]:
    kind = spec["kind"]
    ledger_path = str(directory / f"ledger-{kind}.db")
    ledger = open_ledger(ledger_path)
    children = [await Child.spawn(spec, ledger_path) for _ in range(2)]
    double = calls_over = effects_over = 0
    answers: dict[str, int] = {}
    try:
        async with build_store(spec) as store:
            runner = build_runner(store, ledger)
            for trial in range(trials):
                run = f"race-{trial}"
                target = await start(runner, run)
                for child in children:
                    await child.send("ready")
                for child in children:
                    await child.answer()
                for child in children:
                    await child.send(f"resume {run} {target}")
                said = [await child.answer() for child in children]
                for answer in said:
                    answers[answer] = answers.get(answer, 0) + 1
                calls, effects = refunds(ledger, run)
                double += said.count("done") > 1
                calls_over += calls > 1
                effects_over += effects > 1
    finally:
        for child in children:
            await child.close()
    return {
        "store": kind,
        "trials": trials,
        "two winners": double,
        "refund ran twice": calls_over,
        "refund took effect twice": effects_over,
        "answers": answers,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgres", "redis"])
    parser.add_argument("--load", action="store_true", help="a busy process per core while racing")
    options = parser.parse_args()
    from .crash_resume import busy_load

    with tempfile.TemporaryDirectory(prefix="bf-race-") as directory, busy_load(options.load):
        for kind in options.stores:
            async with own_store(kind, Path(directory)) as spec:
                print(json.dumps(await race(spec, options.trials, Path(directory))), flush=True)


if __name__ == "__main__":
    asyncio.run(main())

"""Stores behind a network partition: ``python -m benchmarks.blackhole [--cap 300] [--only postgres redis]``.

Each case puts a ``BlackholeProxy`` between a store and the real server on 127.0.0.1, makes the store connect
through it ("warm": one read first, so its pool holds a live connection; "cold": nothing yet), then cuts the
network (every byte held, every socket left open) and times one operation until it fails. It prints, per backend,
store and operation, the seconds until the failure with the store's default options, and the message; then heals
the proxy and says whether the same store object works again. Every case runs at once, each on its own proxy and
store, and none runs longer than ``--cap`` seconds. Runs on the code on ``PYTHONPATH`` (which must have
``batonflow.testing.BlackholeProxy``), so the figures can be taken on another checkout.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from batonflow.schema import user
from batonflow.store import (
    PostgresCheckpointStore,
    PostgresSessionStore,
    RedisCheckpointStore,
    RedisSessionStore,
    SessionState,
)
from batonflow.testing import BlackholeProxy

POSTGRES = ("127.0.0.1", 5432)
REDIS = ("127.0.0.1", 6379)

Operation = Callable[[Any], Awaitable[object]]

CHECKPOINT_OPERATIONS: dict[str, Operation] = {
    "get": lambda s: s.get("run-1"),
    "set": lambda s: s.set("run-1", b"x" * 10_000),
    "claim": lambda s: s.claim("run-1", "worker-a", 30),
}
SESSION_OPERATIONS: dict[str, Operation] = {
    "get": lambda s: s.get("s1"),
    "append": lambda s: s.append_messages("s1", [user("hello")]),
    "set_state": lambda s: s.set_state("s1", SessionState(pending=True)),
    "claim": lambda s: s.claim("s1", "worker-a", 30),
}


@dataclass
class Case:
    backend: str
    kind: str  # "checkpoint" or "session"
    operation: str
    warm: bool


@dataclass
class Outcome:
    seconds: float
    message: str
    healed: str


def build(case: Case, port: int, token: str) -> Any:
    if case.backend == "postgres":
        dsn = f"postgresql://postgres@127.0.0.1:{port}/test"
        table = f"bf_blackhole_{token}"
        return (PostgresCheckpointStore if case.kind == "checkpoint" else PostgresSessionStore)(dsn, table=table)
    url = f"redis://127.0.0.1:{port}/0"
    prefix = f"batonflow-blackhole:{token}:"
    return (RedisCheckpointStore if case.kind == "checkpoint" else RedisSessionStore)(url, prefix=prefix)


async def run_case(case: Case, cap: float) -> Outcome:
    operations = CHECKPOINT_OPERATIONS if case.kind == "checkpoint" else SESSION_OPERATIONS
    operation = operations[case.operation]
    token = uuid.uuid4().hex[:12]
    async with BlackholeProxy(*(POSTGRES if case.backend == "postgres" else REDIS)) as proxy:
        store = build(case, proxy.port, token)
        try:
            if case.warm:
                await operations["get"](store)
            proxy.blackhole()
            started = time.monotonic()
            try:
                await asyncio.wait_for(operation(store), cap)
                message = "no error"
            except TimeoutError as exc:
                message = f"still waiting at the cap ({cap:.0f} s)" if not str(exc) else f"TimeoutError: {exc}"
            except Exception as exc:
                message = f"{type(exc).__name__}: {exc}"
            seconds = time.monotonic() - started
            proxy.heal()
            healed = await after_heal(store, operation, cap)
        finally:
            await asyncio.wait_for(store.close(), cap)
        await cleanup(case, token)
    return Outcome(seconds, message, healed)


async def after_heal(store: Any, operation: Operation, cap: float) -> str:
    try:
        await asyncio.wait_for(operation(store), cap)
    except Exception as exc:
        return f"fails again: {type(exc).__name__}: {exc}"
    return "works again"


async def cleanup(case: Case, token: str) -> None:
    if case.backend == "postgres":
        import asyncpg

        conn = await asyncpg.connect(f"postgresql://postgres@{POSTGRES[0]}:{POSTGRES[1]}/test")
        try:
            table = f"bf_blackhole_{token}"
            await conn.execute(f"DROP TABLE IF EXISTS {table}, {table}_leases, {table}_messages")
        finally:
            await conn.close()
    else:
        import redis.asyncio

        client = redis.asyncio.Redis(host=REDIS[0], port=REDIS[1])
        try:
            keys = [key async for key in client.scan_iter(match=f"batonflow-blackhole:{token}:*")]
            if keys:
                await client.delete(*keys)
        finally:
            await client.aclose()


def cases(backends: list[str]) -> list[Case]:
    found = []
    for backend in backends:
        for kind, operations in (("checkpoint", CHECKPOINT_OPERATIONS), ("session", SESSION_OPERATIONS)):
            found += [Case(backend, kind, name, warm=True) for name in operations]
            found.append(Case(backend, kind, "get" if kind == "session" else "set", warm=False))
    return found


async def probe(backends: list[str], cap: float) -> None:
    todo = cases(backends)
    outcomes = await asyncio.gather(*(run_case(case, cap) for case in todo))
    for case, outcome in zip(todo, outcomes, strict=True):
        state = "warm" if case.warm else "cold"
        print(
            f"{case.backend:8} {case.kind:10} {case.operation:9} {state}  {outcome.seconds:6.1f} s  {outcome.message}"
        )
        print(f"{'':41}after heal: {outcome.healed}")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.blackhole", description=__doc__.splitlines()[0])
    parser.add_argument("--cap", type=float, default=300.0, help="give up on one operation after this many seconds")
    parser.add_argument("--only", nargs="+", choices=["postgres", "redis"], default=["postgres", "redis"])
    args = parser.parse_args()
    print("backend  store      operation state   until it failed, and the message (default options)")
    asyncio.run(probe(args.only, args.cap))


if __name__ == "__main__":
    main()

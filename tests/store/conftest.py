"""Fresh checkpoint stores for every test, on every backend.

PostgreSQL and Redis are expected on 127.0.0.1 (``.ci/run`` starts them). A test that cannot reach them fails: the
stores are the point of these tests, and a silent skip would hide that none of them ran.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import redis.asyncio
from tests.services import POSTGRES_DSN, REDIS_URL

from batonflow.store import (
    CheckpointStore,
    MemoryCheckpointStore,
    PostgresCheckpointStore,
    RedisCheckpointStore,
    SqliteCheckpointStore,
)

BACKENDS = ["memory", "sqlite", "postgres", "redis"]
SHARED_BACKENDS = ["sqlite", "postgres", "redis"]  # the ones two processes can share

STORE_CLASSES: dict[str, Any] = {
    "memory": MemoryCheckpointStore,
    "sqlite": SqliteCheckpointStore,
    "postgres": PostgresCheckpointStore,
    "redis": RedisCheckpointStore,
}

Spec = dict[str, Any]  # {"kind": "sqlite", "args": {...constructor keywords...}}: JSON, so a child process can use it


def build_store(spec: Spec) -> CheckpointStore:
    store: CheckpointStore = STORE_CLASSES[spec["kind"]](**spec["args"])
    return store


def new_spec(kind: str, tmp_path: Path) -> Spec:
    token = uuid.uuid4().hex[:12]
    args: dict[str, Any] = {
        "memory": {},
        "sqlite": {"path": str(tmp_path / "nested" / "dirs" / "checkpoints.db")},
        "postgres": {"dsn": POSTGRES_DSN, "table": f"bf_test_{token}"},
        "redis": {"url": REDIS_URL, "prefix": f"batonflow-test:{token}:"},
        "file": {"directory": str(tmp_path / "sessions")},  # session stores only
    }[kind]
    return {"kind": kind, "args": args}


async def drop_spec(spec: Spec) -> None:
    """Remove what a test left on the shared servers."""
    args = spec["args"]
    if spec["kind"] == "postgres":
        conn = await asyncpg.connect(args["dsn"])
        try:
            table = args["table"]
            await conn.execute(f"DROP TABLE IF EXISTS {table}, {table}_leases, {table}_messages")
        finally:
            await conn.close()
    elif spec["kind"] == "redis":
        client = redis.asyncio.Redis.from_url(REDIS_URL)
        try:
            keys = [key async for key in client.scan_iter(match=f"{args['prefix']}*")]
            if keys:
                await client.delete(*keys)
        finally:
            await client.aclose()


@pytest.fixture(params=BACKENDS)
async def spec(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Spec]:
    """A description of a fresh store; parametrize it indirectly to pick backends."""
    spec = new_spec(request.param, tmp_path)
    yield spec
    await drop_spec(spec)


@pytest.fixture
async def store(spec: Spec) -> AsyncIterator[CheckpointStore]:
    store = build_store(spec)
    yield store
    await store.close()

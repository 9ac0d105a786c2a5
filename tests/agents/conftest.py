"""Session stores for the agents' tests, on all five backends.

PostgreSQL and Redis are expected on 127.0.0.1; each test gets its own table or key prefix, removed afterwards.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import redis.asyncio
from tests.services import POSTGRES_DSN, REDIS_URL

from batonflow.store import (
    FileSessionStore,
    MemorySessionStore,
    PostgresSessionStore,
    RedisSessionStore,
    SessionStore,
    SqliteSessionStore,
)

SESSION_BACKENDS = ["memory", "sqlite", "postgres", "redis", "file"]


@dataclass
class SessionPlace:
    """One fresh place for sessions (a file, a table, a key prefix, a directory) that stores can be opened on."""

    kind: str
    args: dict[str, Any]
    _memory: MemorySessionStore | None = None

    def open(self) -> SessionStore:
        """A store on this place; for memory, the one store (a memory store is shared by sharing the object)."""
        if self.kind == "memory":
            if self._memory is None:
                self._memory = MemorySessionStore()
            return self._memory
        makers: dict[str, Callable[..., SessionStore]] = {
            "sqlite": SqliteSessionStore,
            "postgres": PostgresSessionStore,
            "redis": RedisSessionStore,
            "file": FileSessionStore,
        }
        return makers[self.kind](**self.args)

    async def drop(self) -> None:
        if self.kind == "postgres":
            conn = await asyncpg.connect(POSTGRES_DSN)
            try:
                table = self.args["table"]
                await conn.execute(f"DROP TABLE IF EXISTS {table}, {table}_messages, {table}_leases")
            finally:
                await conn.close()
        elif self.kind == "redis":
            client = redis.asyncio.Redis.from_url(REDIS_URL)
            try:
                keys = [key async for key in client.scan_iter(match=f"{self.args['prefix']}*")]
                if keys:
                    await client.delete(*keys)
            finally:
                await client.aclose()


def new_place(kind: str, tmp_path: Path) -> SessionPlace:
    token = uuid.uuid4().hex[:12]
    args: dict[str, dict[str, Any]] = {
        "memory": {},
        "sqlite": {"path": tmp_path / "sessions.db"},
        "postgres": {"dsn": POSTGRES_DSN, "table": f"bf_sess_{token}"},
        "redis": {"url": REDIS_URL, "prefix": f"batonflow-test:{token}:"},
        "file": {"directory": tmp_path / "sessions"},
    }
    return SessionPlace(kind, args[kind])


@pytest.fixture(params=SESSION_BACKENDS)
async def session_place(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionPlace]:
    place = new_place(request.param, tmp_path)
    yield place
    await place.drop()


@pytest.fixture
async def session_store(session_place: SessionPlace) -> AsyncIterator[SessionStore]:
    store = session_place.open()
    yield store
    await store.close()

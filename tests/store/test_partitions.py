"""PostgreSQL and Redis stores behind a network partition: a ``BlackholeProxy`` between the store and the real server
holds every byte while leaving every socket open, as a dead route does.

An operation must fail within its deadlines, with a message that says whether anything could have been written,
and the same store must work again once the network is back. The time bounds are generous (three times the
configured timeout): before these deadlines an operation waited 60 s.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import pytest
import redis.asyncio
from tests.services import POSTGRES_DSN, REDIS_URL

from batonflow.errors import StoreError, UserError
from batonflow.schema import user
from batonflow.store import (
    PostgresCheckpointStore,
    PostgresSessionStore,
    RedisCheckpointStore,
    RedisSessionStore,
)
from batonflow.testing import BlackholeProxy

TIMEOUT = 1.0  # both connect_timeout and timeout
WAIT = 60.0  # a guard against a hang, not a measure: the messages name the timeout that fired

CHECKPOINT_OPERATIONS: dict[str, Callable[[Any], Awaitable[object]]] = {
    "get": lambda s: s.get("run-1"),
    "set": lambda s: s.set("run-1", b"new"),
    "claim": lambda s: s.claim("run-1", "worker-a", 30),
}
WHAT = {"get": "read checkpoint 'run-1'", "set": "write checkpoint 'run-1'", "claim": "claim checkpoint 'run-1'"}


def _address(url: str, port: int) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or port


def _via(url: str, proxy: BlackholeProxy) -> str:
    parts = urlsplit(url)
    credentials, _, _ = parts.netloc.rpartition("@")
    netloc = f"{credentials}@127.0.0.1:{proxy.port}" if credentials else f"127.0.0.1:{proxy.port}"
    return parts._replace(netloc=netloc).geturl()


@pytest.fixture
async def token() -> AsyncIterator[str]:
    """A fresh table name suffix and key prefix; what the test left on the servers is removed afterwards."""
    token = uuid.uuid4().hex[:12]
    yield token
    conn = await asyncpg.connect(POSTGRES_DSN)
    try:
        table = f"bf_part_{token}"
        await conn.execute(f"DROP TABLE IF EXISTS {table}, {table}_leases, {table}_messages")
    finally:
        await conn.close()
    client = redis.asyncio.Redis.from_url(REDIS_URL)
    try:
        keys = [key async for key in client.scan_iter(match=f"batonflow-part:{token}:*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


@pytest.fixture(params=["postgres", "redis"])
async def proxied(request: pytest.FixtureRequest, token: str) -> AsyncIterator[tuple[str, BlackholeProxy]]:
    """(backend, a proxy to its server)."""
    url, port = (POSTGRES_DSN, 5432) if request.param == "postgres" else (REDIS_URL, 6379)
    async with BlackholeProxy(*_address(url, port)) as proxy:
        yield request.param, proxy


def build(backend: str, proxy: BlackholeProxy, token: str, *, sessions: bool = False) -> Any:
    options: dict[str, Any] = {"connect_timeout": TIMEOUT, "timeout": TIMEOUT}
    if backend == "postgres":
        cls: Any = PostgresSessionStore if sessions else PostgresCheckpointStore
        return cls(_via(POSTGRES_DSN, proxy), table=f"bf_part_{token}", **options)
    cls = RedisSessionStore if sessions else RedisCheckpointStore
    return cls(_via(REDIS_URL, proxy), prefix=f"batonflow-part:{token}:", **options)


def where(backend: str, proxy: BlackholeProxy, store: str = "checkpoint") -> str:
    name = "PostgreSQL" if backend == "postgres" else "Redis"
    return f"{name} {store} store at 127.0.0.1:{proxy.port}"


@pytest.mark.parametrize("operation", CHECKPOINT_OPERATIONS)
async def test_an_operation_without_an_answer_fails_within_its_timeout_and_says_the_write_may_have_landed(
    proxied: tuple[str, BlackholeProxy], token: str, operation: str
) -> None:
    backend, proxy = proxied
    async with build(backend, proxy, token) as store:
        await store.set("run-1", b"old")  # connected, tables made
        proxy.blackhole()
        accepted = proxy.accepted
        with pytest.raises(StoreError) as caught:
            await asyncio.wait_for(CHECKPOINT_OPERATIONS[operation](store), WAIT)
        landed = "" if operation == "get" else ": the write may or may not have landed"
        assert str(caught.value) == f"{where(backend, proxy)}: cannot {WHAT[operation]}: no answer within 1 s{landed}"
        assert caught.value.backend == backend
        assert proxy.accepted == accepted  # not retried, and no cancel request sent through the dead route


@pytest.mark.parametrize("operation", CHECKPOINT_OPERATIONS)
async def test_a_store_that_cannot_connect_fails_within_its_timeouts_and_says_nothing_was_written(
    proxied: tuple[str, BlackholeProxy], token: str, operation: str
) -> None:
    backend, proxy = proxied
    proxy.blackhole()  # before the first connection: its handshake gets no answer
    async with build(backend, proxy, token) as store:
        with pytest.raises(StoreError) as caught:
            await asyncio.wait_for(CHECKPOINT_OPERATIONS[operation](store), WAIT)
        message = str(caught.value)
        assert message.startswith(f"{where(backend, proxy)}: cannot {WHAT[operation]}: could not connect (")
        assert message.endswith(")" if operation == "get" else "): nothing was written")


async def test_the_same_store_works_again_after_the_partition_heals_and_reads_no_late_answer(
    proxied: tuple[str, BlackholeProxy], token: str
) -> None:
    backend, proxy = proxied
    async with build(backend, proxy, token) as store:
        await store.set("run-1", b"one")
        await store.set("run-2", b"two")
        proxy.blackhole()
        with pytest.raises(StoreError, match="no answer within 1 s"):
            await store.get("run-1")
        # That connection was closed; a new one cannot get through either, and that is known to have sent nothing.
        with pytest.raises(StoreError, match=r"could not connect \(.*\): nothing was written$"):
            await store.set("run-3", b"three")
        proxy.heal()  # the held bytes go through now: among them the late answer "one"
        # A connection that gave up must not be reused, or the next read would take the late "one" for its answer.
        assert await store.get("run-2") == b"two"
        assert await store.claim("run-2", "worker-a", 30)
        await store.set("run-4", b"four")
        assert await store.get("run-4") == b"four"


async def test_a_session_store_fails_within_its_timeout_mid_transaction_and_works_again_after(
    proxied: tuple[str, BlackholeProxy], token: str
) -> None:
    backend, proxy = proxied
    async with build(backend, proxy, token, sessions=True) as store:
        await store.append_messages("s1", [user("first")])
        proxy.blackhole()
        with pytest.raises(StoreError) as caught:
            # a transaction of several statements
            await asyncio.wait_for(store.append_messages("s1", [user("second"), user("third")]), WAIT)
        assert str(caught.value) == (
            f"{where(backend, proxy, 'session')}: cannot append to session 's1': no answer within 1 s: "
            "the write may or may not have landed"
        )
        with pytest.raises(StoreError, match=r"cannot read session 's1': could not connect \(.*\)$"):
            await store.get("s1")
        proxy.heal()
        await store.append_messages("s1", [user("fourth")])
        data = await store.get("s1")
        assert data is not None
        # The batch that got no answer landed whole or not at all: never half of it.
        assert [m.content for m in data.messages] in (["first", "fourth"], ["first", "second", "third", "fourth"])


@pytest.mark.parametrize("option", ["connect_timeout", "timeout"])
@pytest.mark.parametrize("value", [0, -1.0, float("nan"), float("inf"), True, "5"])
def test_timeouts_are_checked(option: str, value: object) -> None:
    for cls, where in (
        (PostgresCheckpointStore, POSTGRES_DSN),
        (PostgresSessionStore, POSTGRES_DSN),
        (RedisCheckpointStore, REDIS_URL),
        (RedisSessionStore, REDIS_URL),
    ):
        with pytest.raises(UserError) as caught:
            cls(where, **{option: value})
        assert str(caught.value) == f"{option} must be a finite number of seconds > 0, got {value!r}"

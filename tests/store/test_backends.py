"""What is particular to each backend: files and pragmas, table names, unreachable servers, missing drivers."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import sqlite3
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import asyncpg
import pytest
import redis.asyncio
from tests.services import REDIS_URL

from batonflow.adk import ChatModelAgent, Runner, collect_events
from batonflow.errors import LeaseLostError, RunError, StoreError, UserError
from batonflow.schema import assistant, user
from batonflow.store import (
    CheckpointStore,
    PostgresCheckpointStore,
    PostgresSessionStore,
    RedisCheckpointStore,
    RedisSessionStore,
    SessionState,
    SqliteCheckpointStore,
    SqliteSessionStore,
)
from batonflow.testing import ScriptedModel

# -- SQLite ------------------------------------------------------------------------------------------------------------


async def test_sqlite_creates_parent_directories_and_uses_wal(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "checkpoints.db"
    async with SqliteCheckpointStore(path) as store:
        await store.set("run-1", b"data")
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("SELECT data FROM batonflow_checkpoints WHERE id = 'run-1'").fetchone() == (b"data",)


async def test_sqlite_checkpoints_survive_reopening(tmp_path: Path) -> None:
    async with SqliteCheckpointStore(tmp_path / "c.db") as store:
        await store.set("run-1", b"data")
        assert await store.claim("run-1", "worker-a", 30)
    async with SqliteCheckpointStore(tmp_path / "c.db") as store:
        assert await store.get("run-1") == b"data"
        assert await store.claim("run-1", "worker-b", 30) is False


async def test_sqlite_does_not_touch_the_disk_before_first_use(tmp_path: Path) -> None:
    store = SqliteCheckpointStore(tmp_path / "lazy" / "c.db")
    await store.close()
    assert not (tmp_path / "lazy").exists()


async def test_sqlite_failure_is_a_store_error_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "not-a-dir").write_text("a file where a directory should be")
    path = tmp_path / "not-a-dir" / "c.db"
    async with SqliteCheckpointStore(path) as store:
        with pytest.raises(StoreError, match=f"^SQLite checkpoint store at {path}: cannot read checkpoint 'run-1': "):
            await store.get("run-1")


async def test_sqlite_reads_a_file_that_is_not_a_database_as_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    path.write_bytes(b"definitely not sqlite" * 100)
    async with SqliteCheckpointStore(path) as store:
        with pytest.raises(StoreError, match="file is not a database") as caught:
            await store.get("run-1")
    assert caught.value.backend == "sqlite"


def copy_files(path: Path, copy: Path) -> Path:
    copy.parent.mkdir()
    for suffix in ("", "-wal"):
        shutil.copyfile(f"{path}{suffix}", f"{copy}{suffix}")
    return copy


def log_size(path: Path) -> int:
    return Path(f"{path}-wal").stat().st_size


def write(path: str | Path, data: bytes) -> None:
    with open(path, "r+b") as file:
        file.write(data)


async def copied_while_open(tmp_path: Path) -> Path:
    """A copy of a store's files taken while the store is open, as a process that dies leaves them: the checkpoint
    it saved is in the write-ahead log still, not yet in the database file."""
    path = tmp_path / "live" / "c.db"
    async with SqliteCheckpointStore(path) as store:
        await store.set("run-1", b"a checkpoint")
        copy = copy_files(path, tmp_path / "copy" / "c.db")
    assert log_size(copy) > 0
    return copy


def resumed(path: Path) -> Any:
    runner = Runner(ChatModelAgent(name="a", model=ScriptedModel([])), checkpoint_store=SqliteCheckpointStore(path))
    return collect_events(runner.resume("run-1"))


async def test_sqlite_reads_what_a_store_left_in_its_write_ahead_log(tmp_path: Path) -> None:
    copy = await copied_while_open(tmp_path)
    async with SqliteCheckpointStore(copy) as store:
        assert await store.get("run-1") == b"a checkpoint"


async def test_sqlite_refuses_an_emptied_database_file_whose_log_holds_data_instead_of_losing_it(
    tmp_path: Path,
) -> None:
    copy = await copied_while_open(tmp_path)
    shutil.copyfile(os.devnull, copy)  # SQLite would read an empty file as a new database, and drop the log
    size = log_size(copy)
    with pytest.raises(StoreError) as caught:
        await resumed(copy)  # not "expected a pending checkpoint 'run-1' … found none"
    assert str(caught.value) == (
        f"SQLite checkpoint store at {copy}: cannot claim checkpoint 'run-1': the database file is damaged: expected "
        f"{copy} to hold the database its write-ahead log {copy}-wal adds to ({size:,} bytes), got an empty "
        "file (restore both from a backup, or move them away to start afresh)"
    )
    assert log_size(copy) == size  # left as it was


async def test_sqlite_refuses_a_write_ahead_log_without_its_header_instead_of_losing_it(tmp_path: Path) -> None:
    copy = await copied_while_open(tmp_path)
    write(f"{copy}-wal", b"\x00" * 32)
    with pytest.raises(StoreError) as caught:
        await resumed(copy)
    assert str(caught.value) == (
        f"SQLite checkpoint store at {copy}: cannot claim checkpoint 'run-1': the database file is damaged: expected "
        f"its write-ahead log {copy}-wal to begin with a log's header, got 00 00 00 00 00 00 00 00 (restore both from "
        "a backup, or move the log away to lose what it held)"
    )


async def test_sqlite_a_resume_from_a_file_that_is_not_a_database_fails_with_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    path.write_bytes(b"definitely not sqlite" * 100)
    with pytest.raises(StoreError, match="cannot claim checkpoint 'run-1': file is not a database"):
        await resumed(path)


@pytest.fixture
def sqlite_connections(monkeypatch: pytest.MonkeyPatch) -> list[sqlite3.Connection]:
    """Every SQLite connection opened from now on, usable from the test's thread too (to read its pragmas)."""
    opened: list[sqlite3.Connection] = []
    connect = sqlite3.connect

    def recording(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = connect(*args, **{**kwargs, "check_same_thread": False})
        opened.append(conn)
        return conn

    monkeypatch.setattr(sqlite3, "connect", recording)
    return opened


@pytest.mark.parametrize("kind", [SqliteCheckpointStore, SqliteSessionStore])
@pytest.mark.parametrize(
    ("options", "level"), [({}, 2), ({"synchronous": "FULL"}, 2), ({"synchronous": "NORMAL"}, 1)], ids=str
)
async def test_sqlite_waits_for_the_disk_as_synchronous_says(
    tmp_path: Path, sqlite_connections: list[sqlite3.Connection], kind: Any, options: dict[str, str], level: int
) -> None:
    async with kind(tmp_path / "c.db", **options) as store:
        assert await store.claim("run-1", "worker-a", 30)  # the writer's connection
        assert await store.holder("run-1") is not None  # the reader's
        # a lease needs no wait for the disk: the level of a save is the store's
        if kind is SqliteSessionStore:
            await store.set_state("run-1", SessionState())
        else:
            await store.set("run-2", b"saved")
        # 2 is FULL (wait for the disk at every commit), 1 NORMAL, on both connections.
        assert [conn.execute("PRAGMA synchronous").fetchone() for conn in sqlite_connections] == [(level,), (level,)]


@pytest.mark.parametrize("kind", [SqliteCheckpointStore, SqliteSessionStore])
async def test_sqlite_lease_claims_and_renewals_do_not_wait_for_the_disk(
    tmp_path: Path, sqlite_connections: list[sqlite3.Connection], kind: Any
) -> None:
    async with kind(tmp_path / "c.db") as store:  # FULL: a save waits for the disk
        assert await store.claim("run-1", "worker-a", 30)
        writer = sqlite_connections[0]  # opened by the first write
        claimed = writer.execute("PRAGMA synchronous").fetchone()
        if kind is SqliteSessionStore:
            await store.set_state("run-2", SessionState())
        else:
            await store.set("run-2", b"saved")
        saved = writer.execute("PRAGMA synchronous").fetchone()
        assert await store.renew("run-1", "worker-a", 30)
        renewed = writer.execute("PRAGMA synchronous").fetchone()
    assert (claimed, saved, renewed) == ((1,), (2,), (1,))  # NORMAL, FULL, NORMAL


@pytest.mark.parametrize("kind", [SqliteCheckpointStore, SqliteSessionStore])
@pytest.mark.parametrize("synchronous", ["OFF", "normal", "EXTRA", 1])
def test_sqlite_synchronous_is_full_or_normal(tmp_path: Path, kind: Any, synchronous: object) -> None:
    with pytest.raises(UserError) as caught:
        kind(tmp_path / "c.db", synchronous=synchronous)
    assert str(caught.value) == f"synchronous: expected 'FULL' (the default) or 'NORMAL', got {synchronous!r}"
    assert not (tmp_path / "c.db").exists()


@pytest.mark.parametrize("table", ["checkpoints; DROP TABLE x", "1abc", "", "a" * 51, "with space"])
def test_table_names_must_be_plain_identifiers(tmp_path: Path, table: str) -> None:
    with pytest.raises(UserError, match="a table name must be a plain SQL identifier"):
        SqliteCheckpointStore(tmp_path / "c.db", table=table)
    with pytest.raises(UserError, match="a table name must be a plain SQL identifier"):
        PostgresCheckpointStore("postgresql://postgres@127.0.0.1:5432/test", table=table)


# -- leases taken by the previous release --------------------------------------------------------------------------------

# The lease table as the previous release created it: no claimed_at.
OLD_SQLITE_LEASES = "CREATE TABLE {table} (id TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at REAL NOT NULL)"
OLD_POSTGRES_LEASES = "CREATE TABLE {table} (id TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at TIMESTAMPTZ NOT NULL)"


async def check_an_old_lease_still_holds(store: Any, key: str) -> None:
    """What every backend must do with a lease "old-worker" took under the previous release, 30 s ago at most."""
    assert await store.claim(key, "worker-b", 30) is False  # still exclusive
    lease = await store.holder(key)
    assert lease is not None
    assert (lease.owner, lease.held_for) == ("old-worker", 0.0)  # its start was not recorded
    assert 0 < lease.expires_in <= 30
    assert await store.break_lease(key, "worker-b") is False
    assert await store.break_lease(key, "old-worker") is True
    assert await store.claim(key, "worker-b", 30)
    lease = await store.holder(key)
    assert lease is not None and lease.owner == "worker-b"
    assert lease.held_for + lease.expires_in == pytest.approx(30, abs=0.01)


@pytest.mark.parametrize("kind", ["checkpoints", "sessions"])
async def test_sqlite_migrates_a_lease_table_of_the_previous_release(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "old.db"
    table = f"batonflow_{kind}_leases"
    with sqlite3.connect(path) as conn:
        conn.execute(OLD_SQLITE_LEASES.format(table=table))
        conn.execute(f"INSERT INTO {table} VALUES ('run-1', 'old-worker', ?)", (time.time() + 30,))
    conn.close()
    cls = SqliteCheckpointStore if kind == "checkpoints" else SqliteSessionStore
    async with cls(path) as store:
        await check_an_old_lease_still_holds(store, "run-1")
    with sqlite3.connect(path) as conn:
        columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
    conn.close()
    assert columns == ["id", "owner", "expires_at", "claimed_at"]
    async with cls(path) as store:  # opening a migrated file again changes nothing
        lease = await store.holder("run-1")
        assert lease is not None and lease.owner == "worker-b"


@pytest.mark.parametrize("spec", ["postgres"], indirect=True)
@pytest.mark.parametrize("kind", ["checkpoints", "sessions"])
async def test_postgres_migrates_a_lease_table_of_the_previous_release(spec: dict[str, Any], kind: str) -> None:
    table = f"{spec['args']['table']}_leases"
    conn = await asyncpg.connect(spec["args"]["dsn"])
    try:
        await conn.execute(OLD_POSTGRES_LEASES.format(table=table))
        await conn.execute(f"INSERT INTO {table} VALUES ('run-1', 'old-worker', now() + interval '30 seconds')")
        cls = PostgresCheckpointStore if kind == "checkpoints" else PostgresSessionStore
        async with cls(**spec["args"]) as store:
            await check_an_old_lease_still_holds(store, "run-1")
        async with cls(**spec["args"]) as store:  # opening a migrated table again changes nothing
            lease = await store.holder("run-1")
            assert lease is not None and lease.owner == "worker-b"
        columns = await conn.fetch(
            "SELECT column_name FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position", table
        )
        assert [c["column_name"] for c in columns] == ["id", "owner", "expires_at", "claimed_at"]
    finally:
        await conn.close()


@pytest.mark.parametrize("kind", ["checkpoints", "sessions"])
async def test_redis_reads_a_lease_of_the_previous_release(redis_prefix: str, kind: str) -> None:
    # The previous release kept a lease as a plain string: the owner, with an expiry.
    store: Any
    if kind == "checkpoints":
        store, key = RedisCheckpointStore(REDIS_URL, prefix=redis_prefix), f"{redis_prefix}lease:run-1"
    else:
        store, key = RedisSessionStore(REDIS_URL, prefix=redis_prefix), f"{redis_prefix}run-1:lease"
    client = redis.asyncio.Redis.from_url(REDIS_URL)
    try:
        await client.set(key, "old-worker", px=30_000)
        async with store:
            await check_an_old_lease_still_holds(store, "run-1")
            assert await client.type(key) == b"hash"
            await client.set(key, "old-worker", px=30_000)
            assert await store.claim("run-1", "old-worker", 30)  # its owner renews it in the new form
            assert await client.hgetall(key) == {b"owner": b"old-worker", b"since": ANY}
            await client.set(key, "old-worker", px=30_000)
            await store.release("run-1", "old-worker")
            assert await client.exists(key) == 0
    finally:
        await client.aclose()


async def test_redis_fences_writes_with_a_lease_of_the_previous_release(redis_prefix: str) -> None:
    key = f"{redis_prefix}lease:run-1"
    client = redis.asyncio.Redis.from_url(REDIS_URL)
    try:
        await client.set(key, "old-worker", px=30_000)
        async with RedisCheckpointStore(REDIS_URL, prefix=redis_prefix) as store:
            with pytest.raises(LeaseLostError, match=r"found it held by 'old-worker' for 0\.0 s"):
                await store.set("run-1", b"data", owner="worker-b")
            assert await store.get("run-1") is None
            await store.set("run-1", b"data", owner="old-worker")
            assert await store.get("run-1") == b"data"
    finally:
        await client.aclose()


# -- unreachable servers -------------------------------------------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


OPERATIONS: dict[str, Callable[[CheckpointStore], Awaitable[object]]] = {
    "get": lambda s: s.get("run-1"),
    "set": lambda s: s.set("run-1", b"data"),
    "delete": lambda s: s.delete("run-1"),
    "claim": lambda s: s.claim("run-1", "worker-a", 30),
    "release": lambda s: s.release("run-1", "worker-a"),
    "holder": lambda s: s.holder("run-1"),  # type: ignore[attr-defined]
    "break_lease": lambda s: s.break_lease("run-1", "worker-a"),  # type: ignore[attr-defined]
    "fenced set": lambda s: s.set("run-1", b"data", owner="worker-a"),  # type: ignore[call-arg]
    "fenced delete": lambda s: s.delete("run-1", owner="worker-a"),  # type: ignore[call-arg]
}


VERBS = {
    "get": "read",
    "set": "write",
    "fenced set": "write",
    "fenced delete": "delete",
    "holder": "read the lease of",
    "break_lease": "break the lease of",
}
READS = {"get", "holder"}  # the rest write, so their messages say that nothing was written


@pytest.mark.parametrize("operation", OPERATIONS)
async def test_unreachable_postgres_fails_fast_with_a_store_error(operation: str) -> None:
    port = _closed_port()
    store = PostgresCheckpointStore(f"postgresql://postgres:secret@127.0.0.1:{port}/test")
    with pytest.raises(StoreError) as caught:
        await asyncio.wait_for(OPERATIONS[operation](store), 60)  # a guard against a hang, not a measure
    message = str(caught.value)
    verb = VERBS.get(operation, operation)
    assert message.startswith(f"PostgreSQL checkpoint store at 127.0.0.1:{port}: cannot {verb} checkpoint 'run-1': ")
    assert ": could not connect (" in message
    assert message.endswith(")" if operation in READS else "): nothing was written")
    assert "secret" not in message
    assert caught.value.backend == "postgres"
    assert isinstance(caught.value, RunError)
    await store.close()


@pytest.mark.parametrize("operation", OPERATIONS)
async def test_unreachable_redis_fails_fast_with_a_store_error(operation: str) -> None:
    port = _closed_port()
    store = RedisCheckpointStore(f"redis://:secret@127.0.0.1:{port}/0")
    with pytest.raises(StoreError) as caught:
        await asyncio.wait_for(OPERATIONS[operation](store), 60)  # a guard against a hang, not a measure
    message = str(caught.value)
    verb = VERBS.get(operation, operation)
    assert message.startswith(f"Redis checkpoint store at 127.0.0.1:{port}: cannot {verb} checkpoint 'run-1': ")
    assert ": could not connect (" in message
    assert message.endswith(")" if operation in READS else "): nothing was written")
    assert "secret" not in message
    assert caught.value.backend == "redis"
    await store.close()


async def test_postgres_with_an_unknown_role_names_the_failure() -> None:
    async with PostgresCheckpointStore("postgresql://no_such_role_bf@127.0.0.1:5432/test") as store:
        with pytest.raises(
            StoreError,
            match=r"^PostgreSQL checkpoint store at 127\.0\.0\.1:5432: cannot read checkpoint 'run-1': could not connect \(.*role",
        ):
            await store.get("run-1")


async def test_postgres_retries_connecting_after_a_failure() -> None:
    # A failed connect leaves no broken pool behind: the next call tries again.
    store = PostgresCheckpointStore(f"postgresql://postgres@127.0.0.1:{_closed_port()}/test")
    for _ in range(2):
        with pytest.raises(StoreError, match="could not connect"):
            await store.get("run-1")
    await store.close()


# -- Redis under load ----------------------------------------------------------------------------------------------------


@pytest.fixture
async def redis_prefix() -> AsyncIterator[str]:
    """A fresh key prefix on the test server, whose keys are removed afterwards."""
    prefix = f"batonflow-test:{uuid.uuid4().hex[:12]}:"
    yield prefix
    client = redis.asyncio.Redis.from_url(REDIS_URL)
    try:
        keys = [key async for key in client.scan_iter(match=f"{prefix}*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


async def hammer(store: CheckpointStore, n: int) -> None:
    """``n`` concurrent writes, then reads, then claims, then a mix of all three: each must succeed."""
    ids = [f"run-{i}" for i in range(n)]
    await asyncio.gather(*(store.set(i, i.encode()) for i in ids))
    assert await asyncio.gather(*(store.get(i) for i in ids)) == [i.encode() for i in ids]
    assert all(await asyncio.gather(*(store.claim(i, "worker-a", 30) for i in ids)))
    mixed = [op for i in ids for op in (store.set(i, b"new"), store.get(i), store.claim(i, "worker-a", 30))]
    await asyncio.gather(*mixed)


async def test_redis_takes_500_concurrent_operations_with_its_default_pool(redis_prefix: str) -> None:
    # redis-py's own pool raised "Too many connections" past 100 commands in flight.
    async with RedisCheckpointStore(REDIS_URL, prefix=redis_prefix) as store:
        await hammer(store, 500)


async def test_redis_takes_500_concurrent_operations_through_a_pool_of_three(redis_prefix: str) -> None:
    async with RedisCheckpointStore(REDIS_URL, prefix=redis_prefix, max_connections=3) as store:
        await hammer(store, 500)
        pool = store._conn.client.connection_pool  # what the server saw: no more than three connections
        assert pool.max_connections == 3
        assert len(pool._available_connections) + len(pool._in_use_connections) <= 3


async def test_redis_session_store_takes_500_concurrent_operations(redis_prefix: str) -> None:
    async with RedisSessionStore(REDIS_URL, prefix=redis_prefix, max_connections=3) as store:
        messages = [user("question"), assistant("answer")]
        await asyncio.gather(*(store.append_messages(f"s{i}", messages) for i in range(500)))
        await asyncio.gather(*(store.set_state(f"s{i}", SessionState(pending=True)) for i in range(500)))
        read = await asyncio.gather(*(store.get(f"s{i}") for i in range(500)))
        assert all(data is not None and data.messages == messages and data.state.pending for data in read)
        assert all(await asyncio.gather(*(store.claim(f"s{i}", "worker-a", 30) for i in range(500))))


async def test_redis_waits_for_a_free_connection_at_most_pool_timeout(redis_prefix: str) -> None:
    async with RedisCheckpointStore(REDIS_URL, prefix=redis_prefix, max_connections=1, pool_timeout=0.2) as store:
        # Hold the only connection: a blocking pop on a list nobody pushes to.
        held = asyncio.create_task(store._conn.client.blpop([f"{redis_prefix}never"], timeout=2))
        await asyncio.sleep(0.1)
        started = time.monotonic()
        with pytest.raises(StoreError) as caught:
            await store.set("run-1", b"data")
        assert time.monotonic() - started > 0.15  # it waited for a connection (load only makes that longer)
        assert str(caught.value) == (
            "Redis checkpoint store at 127.0.0.1:6379: cannot write checkpoint 'run-1': no free connection, all 1 "
            "stayed busy for 0.2 s (max_connections, pool_timeout); nothing was sent"
        )
        assert await held is None  # the pop timed out; the connection is free again
        await store.set("run-1", b"data")
        assert await store.get("run-1") == b"data"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_connections": 0}, "max_connections must be a whole number of connections >= 1, got 0"),
        ({"max_connections": 2.5}, "max_connections must be a whole number of connections >= 1, got 2.5"),
        ({"pool_timeout": 0}, r"pool_timeout must be None \(wait as long as it takes\) or seconds > 0, got 0"),
        ({"pool_timeout": float("nan")}, "pool_timeout must be None .* got nan"),
    ],
)
def test_redis_pool_options_are_checked(options: dict[str, Any], message: str) -> None:
    for cls in (RedisCheckpointStore, RedisSessionStore):
        with pytest.raises(UserError, match=message):
            cls(REDIS_URL, **options)


# -- missing drivers -----------------------------------------------------------------------------------------------------


def test_postgres_without_asyncpg_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "asyncpg", None)
    with pytest.raises(ImportError, match=r"pip install 'batonflow\[postgres\]'"):
        PostgresCheckpointStore("postgresql://postgres@127.0.0.1:5432/test")


def test_redis_without_the_driver_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)
    monkeypatch.setitem(sys.modules, "redis.asyncio", None)
    with pytest.raises(ImportError, match=r"pip install 'batonflow\[redis\]'"):
        RedisCheckpointStore("redis://127.0.0.1:6379/0")

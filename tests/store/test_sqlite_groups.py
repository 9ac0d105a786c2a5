"""SQLite stores commit concurrent writes in groups: one transaction for the writes that waited together, each
write in a savepoint of its own, reads on a connection of their own.

What a group must not change is checked here: a write that fails fails alone and leaves nothing behind, no write is
reported saved unless it was committed, a claim is still won once, and reads do not wait for writes. How many
transactions there were is read from the WAL file, whose format SQLite documents: each frame's header says whether
it ends a transaction.
"""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import threading
from pathlib import Path

import pytest

from batonflow.errors import StoreError
from batonflow.schema import user
from batonflow.store import SqliteCheckpointStore, SqliteSessionStore


def commits_in_wal(path: Path) -> int:
    """Transactions in the WAL file beside ``path``: the frames whose header holds a database size (commit frames),
    up to the first frame whose salt is not the header's (what a reset WAL has left from before)."""
    data = path.with_name(path.name + "-wal").read_bytes()
    page_size, salt = int.from_bytes(data[8:12], "big"), data[16:24]
    count, offset = 0, 32
    while offset + 24 + page_size <= len(data):
        header = data[offset : offset + 24]
        if header[8:16] != salt:
            break
        count += int.from_bytes(header[4:8], "big") != 0
        offset += 24 + page_size
    return count


def refuse(path: Path, table: str, condition: str, action: str = "ABORT") -> None:
    """A trigger, made from another connection, that refuses the inserts into ``table`` matching ``condition``."""
    with sqlite3.connect(path) as conn:
        conn.execute(
            f"CREATE TRIGGER refuse_{table} BEFORE INSERT ON {table} WHEN {condition} "
            f"BEGIN SELECT RAISE({action}, 'refused by a trigger'); END"
        )


def stored(path: Path) -> dict[str, bytes]:
    with sqlite3.connect(path) as conn:
        return dict(conn.execute("SELECT id, data FROM batonflow_checkpoints").fetchall())


async def test_writes_made_together_are_committed_together(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    async with SqliteCheckpointStore(path) as store:
        await store.set("first", b"0")
        before = commits_in_wal(path)
        await asyncio.gather(*(store.set(f"run-{i}", b"x" * i) for i in range(200)))
        # One transaction per write made 200; the writes that wait while one group commits form the next group.
        assert commits_in_wal(path) - before <= 10
        assert await asyncio.gather(*(store.get(f"run-{i}") for i in range(200))) == [b"x" * i for i in range(200)]
    assert len(stored(path)) == 201


async def test_a_write_refused_by_the_database_fails_alone_in_its_group(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    async with SqliteCheckpointStore(path) as store:
        await store.set("first", b"0")
        refuse(path, "batonflow_checkpoints", "NEW.id LIKE 'bad-%'")
        before = commits_in_wal(path)
        ids = [f"bad-{i}" if i % 10 == 3 else f"good-{i}" for i in range(100)]
        outcomes = await asyncio.gather(*(store.set(i, b"data") for i in ids), return_exceptions=True)
        assert commits_in_wal(path) - before <= 10  # so the refused writes shared groups with the others
    for checkpoint_id, outcome in zip(ids, outcomes, strict=True):
        if checkpoint_id.startswith("bad"):
            assert isinstance(outcome, StoreError)
            assert str(outcome) == (
                f"SQLite checkpoint store at {path}: cannot write checkpoint {checkpoint_id!r}: refused by a trigger"
            )
        else:
            assert outcome is None
    assert sorted(stored(path)) == sorted(["first", *(i for i in ids if i.startswith("good"))])


async def test_a_failed_write_of_several_statements_is_undone_whole_in_its_group(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with SqliteSessionStore(path) as store:
        await asyncio.gather(*(store.append_messages(f"s{i}", [user("old")]) for i in range(20)))
        refuse(path, "batonflow_sessions_messages", "NEW.session_id = 's7'")
        # Replacing deletes the old messages, then inserts the new: for s7 the insert is refused.
        outcomes = await asyncio.gather(
            *(store.replace_messages(f"s{i}", [user("new"), user("newer")]) for i in range(20)), return_exceptions=True
        )
        assert [i for i, outcome in enumerate(outcomes) if outcome is not None] == [7]
        assert isinstance(outcomes[7], StoreError)
        for i in range(20):
            data = await store.get(f"s{i}")
            assert data is not None
            assert [m.content for m in data.messages] == (["old"] if i == 7 else ["new", "newer"])


async def test_a_write_that_ends_the_whole_transaction_takes_no_other_write_with_it_unreported(tmp_path: Path) -> None:
    # RAISE(ROLLBACK) rolls back the whole transaction, as SQLite itself does on a full disk: the writes of the
    # group run before it are undone with it and must fail; those after it go on in a new transaction.
    path = tmp_path / "c.db"
    async with SqliteCheckpointStore(path) as store:
        await store.set("first", b"0")
        refuse(path, "batonflow_checkpoints", "NEW.id = 'doom'", action="ROLLBACK")
        ids = [*(f"before-{i}" for i in range(50)), "doom", *(f"after-{i}" for i in range(50))]
        outcomes = await asyncio.gather(*(store.set(i, b"data") for i in ids), return_exceptions=True)
    saved = stored(path)
    for checkpoint_id, outcome in zip(ids, outcomes, strict=True):
        # Reported saved exactly when it was: never a success that was rolled back, never a failure that landed.
        assert (outcome is None) == (checkpoint_id in saved), checkpoint_id
        if outcome is not None:
            assert isinstance(outcome, StoreError)
            assert str(outcome).endswith(": refused by a trigger")
    assert "doom" not in saved
    assert all(f"after-{i}" in saved for i in range(50))


async def test_of_concurrent_claims_in_one_group_exactly_one_wins(tmp_path: Path) -> None:
    async with SqliteCheckpointStore(tmp_path / "c.db") as store:
        won = await asyncio.gather(*(store.claim("run-1", f"worker-{i}", 30) for i in range(100)))
        assert sum(won) == 1
        winner = f"worker-{won.index(True)}"
        assert await store.claim("run-1", winner, 30)  # renewing one's own lease
        await store.release("run-1", winner)
        assert await store.claim("run-1", "worker-late", 30)


async def test_reads_do_not_wait_behind_a_write_that_waits_for_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    async with SqliteCheckpointStore(path, timeout=30) as store:
        await store.set("run-1", b"data")
        assert await store.get("run-1") == b"data"
        blocker = sqlite3.connect(path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        try:
            writing = asyncio.create_task(store.set("run-2", b"more"))
            await asyncio.sleep(0.05)  # let the write reach the lock
            assert await store.get("run-1") == b"data"
            assert not writing.done()  # the read went past the write still waiting
        finally:
            blocker.execute("COMMIT")
            blocker.close()
        await writing
        assert await store.get("run-2") == b"more"


async def test_a_store_dropped_without_closing_ends_its_threads(tmp_path: Path) -> None:
    def threads() -> int:
        return sum(t.name.startswith("batonflow-sqlite") for t in threading.enumerate())

    gc.collect()
    before = threads()
    store = SqliteCheckpointStore(tmp_path / "c.db")
    await store.set("run-1", b"data")
    assert await store.get("run-1") == b"data"
    assert threads() == before + 2  # the writer and the reader
    del store
    gc.collect()
    for _ in range(500):  # the threads end on their own once they see the store is gone
        if threads() == before:
            break
        await asyncio.sleep(0.01)
    assert threads() == before


async def test_closing_runs_the_calls_already_queued(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    store = SqliteCheckpointStore(path)
    writes = [asyncio.create_task(store.set(f"run-{i}", b"data")) for i in range(50)]
    await asyncio.sleep(0)  # the writes are queued
    await store.close()
    await asyncio.gather(*writes)
    assert len(stored(path)) == 50
    with pytest.raises(StoreError, match="the store is closed"):
        await store.set("late", b"data")

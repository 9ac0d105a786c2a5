"""Checkpoints in an SQLite file: the embedded default, safe across processes and crashes.

The standard library's ``sqlite3`` runs in one worker thread per store, which owns the connection (what
``aiosqlite`` does too, without the extra dependency). Every write is one statement, hence one transaction: in WAL
mode a reader sees the previous checkpoint or the new one, and a process killed mid-write leaves the previous one
readable. Other processes on the same file contend through SQLite's locks, waiting up to ``timeout`` seconds.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from ..errors import StoreError
from ._base import StoreBase, check_table_name, check_ttl, closed_error

__all__ = ["SqliteCheckpointStore"]

R = TypeVar("R")


class SqliteCheckpointStore(StoreBase):
    """A checkpoint store in the SQLite database at ``path`` (created, with its parent directories, on first use).

    Checkpoints go in ``table``, resume leases in ``<table>_leases``. ``timeout`` is how long a write waits for
    another process's lock before it fails.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, table: str = "batonflow_checkpoints", timeout: float = 10.0
    ) -> None:
        self.path = path if path == ":memory:" else Path(path)
        self._table = check_table_name(table)
        self._leases = f"{table}_leases"
        self._timeout = timeout
        self._where = f"SQLite checkpoint store at {self.path}"
        # One thread owns the connection: sqlite3 connections must not be used from two threads at once.
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="batonflow-sqlite")
        self._conn: sqlite3.Connection | None = None  # touched only in the executor's thread

    # -- the store -----------------------------------------------------------------------------------------------

    async def get(self, checkpoint_id: str) -> bytes | None:
        def get(conn: sqlite3.Connection) -> bytes | None:
            row = conn.execute(f"SELECT data FROM {self._table} WHERE id = ?", (checkpoint_id,)).fetchone()
            return None if row is None else bytes(row[0])

        return await self._run(f"cannot read checkpoint {checkpoint_id!r}", get)

    async def set(self, checkpoint_id: str, data: bytes) -> None:
        def set_(conn: sqlite3.Connection) -> None:
            conn.execute(
                f"INSERT INTO {self._table} (id, data, updated_at) VALUES (?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at",
                (checkpoint_id, bytes(data), time.time()),
            )

        await self._run(f"cannot write checkpoint {checkpoint_id!r}", set_)

    async def delete(self, checkpoint_id: str) -> None:
        def delete(conn: sqlite3.Connection) -> None:
            conn.execute(f"DELETE FROM {self._table} WHERE id = ?", (checkpoint_id,))

        await self._run(f"cannot delete checkpoint {checkpoint_id!r}", delete)

    async def claim(self, checkpoint_id: str, owner: str, ttl: float) -> bool:
        ttl = check_ttl(ttl)

        def claim(conn: sqlite3.Connection) -> bool:
            # One conditional upsert: SQLite's write lock orders racing claims, and the loser's WHERE sees the
            # winner's row. Wall-clock time, since the processes sharing the file share the machine's clock.
            now = time.time()
            rows = conn.execute(
                f"INSERT INTO {self._leases} (id, owner, expires_at) VALUES (?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at "
                f"WHERE {self._leases}.owner = excluded.owner OR {self._leases}.expires_at <= ? "
                "RETURNING 1",
                (checkpoint_id, owner, now + ttl, now),
            ).fetchall()
            return bool(rows)

        return await self._run(f"cannot claim checkpoint {checkpoint_id!r}", claim)

    async def release(self, checkpoint_id: str, owner: str) -> None:
        def release(conn: sqlite3.Connection) -> None:
            conn.execute(f"DELETE FROM {self._leases} WHERE id = ? AND owner = ?", (checkpoint_id, owner))

        await self._run(f"cannot release checkpoint {checkpoint_id!r}", release)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True

        def close() -> None:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

        try:
            await asyncio.get_running_loop().run_in_executor(self._executor, close)
        finally:
            self._executor.shutdown(wait=False)

    # -- plumbing ------------------------------------------------------------------------------------------------

    async def _run(self, operation: str, fn: Callable[[sqlite3.Connection], R]) -> R:
        if self._closed:
            raise closed_error(self._where, "sqlite")
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, self._call, fn)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"{self._where}: {operation}: {exc}", backend="sqlite") from exc

    def _call(self, fn: Callable[[sqlite3.Connection], R]) -> R:
        if self._conn is None:
            self._conn = self._connect()
        return fn(self._conn)

    def _connect(self) -> sqlite3.Connection:
        return open_database(
            self.path,
            self._timeout,
            [
                f"CREATE TABLE IF NOT EXISTS {self._table} "
                "(id TEXT PRIMARY KEY, data BLOB NOT NULL, updated_at REAL NOT NULL)",
                f"CREATE TABLE IF NOT EXISTS {self._leases} "
                "(id TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at REAL NOT NULL)",
            ],
        )


def open_database(path: str | Path, timeout: float, schema: Sequence[str]) -> sqlite3.Connection:
    """A connection to the database at ``path`` (its folder made if needed), in WAL mode with full sync, with
    ``schema``'s statements run in one transaction.

    The connection is in autocommit mode (``isolation_level=None``), so each statement is its own transaction and
    nothing is left open; ``synchronous=FULL`` makes what a store reported saved survive a power cut, not only a
    killed process. A write waits up to ``timeout`` seconds for other connections.
    """
    if isinstance(path, Path):
        path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=timeout, isolation_level=None)
    try:
        _enable_wal(conn, timeout)
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("BEGIN IMMEDIATE")
        for statement in schema:
            conn.execute(statement)
        conn.execute("COMMIT")
    except BaseException:
        conn.close()  # rolls back what the schema had begun
        raise
    return conn


def _enable_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Switch ``conn``'s database to WAL, waiting up to ``timeout`` seconds for other connections.

    SQLite answers "database is locked" at once, without its busy handler, when another process is switching the
    same new database's journal mode at the same moment: retried here, so that processes opening a fresh file
    together all get in.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)

"""Connection plumbing for the stores: one worker thread, an SQLite connection, and (from ``_remote``) the
PostgreSQL pool and the Redis client.

A store only says what it stores: a worker thread owns blocking I/O, driver failures become ``StoreError`` messages
that name the backend, where it is and the operation, and the drivers are imported when a store is made, never
when ``batonflow.store`` is imported.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from ..errors import StoreError
from ._base import closed_error
from ._remote import PostgresPool, RedisConnection

__all__ = ["PostgresPool", "RedisConnection", "SqliteConnection", "ThreadWorker", "transaction"]

R = TypeVar("R")


class ThreadWorker:
    """One thread that runs a store's blocking calls in the order they were made.

    ``OSError`` (and any of ``errors``) raised by a call becomes a ``StoreError`` naming ``where`` and the operation.
    """

    def __init__(self, *, where: str, backend: str, name: str, errors: tuple[type[BaseException], ...] = ()) -> None:
        self.where = where
        self.backend = backend
        self._errors: tuple[type[BaseException], ...] = (OSError, *errors)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self.closed = False

    async def run(self, operation: str, fn: Callable[[], R]) -> R:
        if self.closed:
            raise closed_error(self.where, self.backend)
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, fn)
        except self._errors as exc:
            raise StoreError(f"{self.where}: {operation}: {exc}", backend=self.backend) from exc

    async def close(self, last: Callable[[], None] | None = None) -> None:
        """Stop taking calls; run ``last`` (if given) on the worker thread after the calls already queued."""
        if self.closed:
            return
        self.closed = True
        try:
            if last is not None:
                await asyncio.get_running_loop().run_in_executor(self._executor, last)
        finally:
            self._executor.shutdown(wait=False)


class SqliteConnection:
    """An SQLite connection owned by one worker thread (sqlite3 connections must not be shared between threads).

    Autocommit, WAL, ``synchronous=FULL`` (see ``_open_database``); ``schema`` statements run once, on the first
    call. A call that needs several statements to be atomic wraps them in ``transaction``.
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float, schema: Sequence[str], where: str) -> None:
        self.path: str | Path = path if path == ":memory:" else Path(path)
        self._timeout = timeout
        self._schema = tuple(schema)
        self._worker = ThreadWorker(where=where, backend="sqlite", name="batonflow-sqlite", errors=(sqlite3.Error,))
        self._conn: sqlite3.Connection | None = None  # touched only on the worker thread

    async def run(self, operation: str, fn: Callable[[sqlite3.Connection], R]) -> R:
        return await self._worker.run(operation, lambda: fn(self._connected()))

    async def close(self) -> None:
        def close() -> None:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

        await self._worker.close(close)

    def _connected(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = _open_database(self.path, self._timeout, self._schema)
        return self._conn


def _open_database(path: str | Path, timeout: float, schema: Sequence[str]) -> sqlite3.Connection:
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


@contextmanager
def transaction(conn: sqlite3.Connection, *, write: bool = True) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` (take the write lock now, so the statements inside cannot deadlock upgrading it) or a
    plain ``BEGIN`` for a consistent read; commit on success, roll back on any exception."""
    conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:  # SQLite rolls back by itself on some errors (a full disk, an interrupt)
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")

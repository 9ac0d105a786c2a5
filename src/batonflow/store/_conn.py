"""Connection plumbing for the stores: one worker thread, an SQLite connection, an asyncpg pool, a Redis client.

A store only says what it stores: a worker thread owns blocking I/O, driver failures become ``StoreError`` messages
that name the backend, where it is and the operation, and the drivers are imported when a store is made, never
when ``batonflow.store`` is imported.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from ..errors import StoreError, UserError
from ._base import closed_error

if TYPE_CHECKING:
    import asyncpg
    import redis.asyncio

__all__ = ["PostgresPool", "RedisConnection", "SqliteConnection", "ThreadWorker", "import_asyncpg", "import_redis"]

R = TypeVar("R")

Schema = str | Callable[[sqlite3.Connection], None]
"""One step of an SQLite schema: a statement, or a function of the connection (a migration)."""


def import_asyncpg(who: str) -> Any:
    try:
        import asyncpg
    except ImportError as exc:
        raise ImportError(f"{who} needs the asyncpg driver: pip install 'batonflow[postgres]'") from exc
    return asyncpg


def import_redis(who: str) -> Any:
    try:
        import redis.asyncio
        import redis.asyncio.retry
        import redis.backoff
    except ImportError as exc:
        raise ImportError(f"{who} needs the redis driver: pip install 'batonflow[redis]'") from exc
    return redis


def postgres_location(dsn: str) -> str:
    """``host:port`` (or the DSN's host list) without credentials, for messages."""
    try:
        parts = urlsplit(dsn)
        netloc = parts.netloc.rpartition("@")[2]
    except ValueError:
        return "<unparsable DSN>"
    return netloc or "localhost:5432"


def redis_location(url: str) -> str:
    """``host:port`` without credentials, for messages."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc.rpartition("@")[2]
    except ValueError:
        return "<unparsable URL>"
    return netloc or parts.path or "localhost:6379"


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

    Autocommit, WAL, ``synchronous=FULL`` (see ``_open_database``); ``schema`` runs once, on the first call: SQL
    statements, and functions of the connection for what one statement cannot say (a column added only to a table
    that lacks it). A call that needs several statements to be atomic wraps them in ``transaction``.
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float, schema: Sequence[Schema], where: str) -> None:
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


def _open_database(path: str | Path, timeout: float, schema: Sequence[Schema]) -> sqlite3.Connection:
    """A connection to the database at ``path`` (its folder made if needed), in WAL mode with full sync, with
    ``schema``'s steps run in one write transaction (so that two processes opening an old file migrate it once).

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
        for step in schema:
            if isinstance(step, str):
                conn.execute(step)
            else:
                step(conn)
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


class PostgresPool:
    """An asyncpg pool opened on first use, with ``schema`` created under an advisory lock named after
    ``lock_name`` (concurrent ``CREATE TABLE IF NOT EXISTS`` can still collide in the catalog)."""

    def __init__(
        self,
        dsn: str,
        *,
        who: str,
        what: str,
        schema: str,
        lock_name: str,
        connect_timeout: float,
        command_timeout: float | None,
        max_connections: int,
    ) -> None:
        self.driver = import_asyncpg(who)
        self.where = f"PostgreSQL {what} at {postgres_location(dsn)}"
        self.errors: tuple[type[BaseException], ...] = (
            OSError,
            TimeoutError,
            self.driver.PostgresError,
            self.driver.InterfaceError,
        )
        self._dsn = dsn
        self._schema = schema
        self._lock_key = zlib.crc32(lock_name.encode())
        self._connect_timeout = connect_timeout
        self._command_timeout = command_timeout
        self._max_connections = max_connections
        self._pool: asyncpg.Pool | None = None
        self._pool_lock = asyncio.Lock()
        self.closed = False

    async def get(self) -> asyncpg.Pool:
        if self._pool is not None:
            return self._pool
        async with self._pool_lock:
            if self.closed:
                raise closed_error(self.where, "postgres")
            if self._pool is None:
                pool = await self._open()
                if self.closed:  # close() ran while we were connecting
                    await pool.close()
                    raise closed_error(self.where, "postgres")
                self._pool = pool
        return self._pool

    async def close(self) -> None:
        self.closed = True
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    def error(self, operation: str, exc: BaseException) -> StoreError:
        detail = str(exc) or type(exc).__name__  # a TimeoutError has no message of its own
        return StoreError(f"{self.where}: {operation}: {detail}", backend="postgres")

    async def _open(self) -> asyncpg.Pool:
        try:
            pool = await self.driver.create_pool(
                self._dsn,
                min_size=1,
                max_size=self._max_connections,
                timeout=self._connect_timeout,
                command_timeout=self._command_timeout,
            )
        except self.errors as exc:
            raise self.error("cannot connect", exc) from exc
        try:
            async with pool.acquire() as conn, conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock($1)", self._lock_key)
                await conn.execute(self._schema)
        except self.errors as exc:
            await pool.close()
            raise self.error("cannot create the tables", exc) from exc
        return pool


_POOL_EXHAUSTED = "No connection available."  # redis-py's BlockingConnectionPool, when its wait runs out


class RedisConnection:
    """A Redis client that connects on its first command, with the checkpoint store's timeouts and single quick
    retry, and its error messages (an unreachable server shows up as "cannot connect" on the first command).

    Its connections come from a blocking pool of at most ``max_connections``: a command that finds them all busy
    waits for one, up to ``pool_timeout`` seconds (None: as long as it takes). redis-py's default pool instead fails
    at once past 100 commands in flight ("Too many connections"), which lost the checkpoints of runs whose tools had
    run.
    """

    def __init__(
        self,
        url: str,
        *,
        who: str,
        what: str,
        connect_timeout: float,
        command_timeout: float,
        max_connections: int,
        pool_timeout: float | None,
    ) -> None:
        driver = import_redis(who)
        self.where = f"Redis {what} at {redis_location(url)}"
        self._max_connections = check_pool_size(max_connections)
        self._pool_timeout = check_pool_timeout(pool_timeout)
        self._connection_errors: tuple[type[BaseException], ...] = (
            driver.exceptions.ConnectionError,
            driver.exceptions.TimeoutError,
            OSError,
        )
        self.errors: tuple[type[BaseException], ...] = (driver.exceptions.RedisError, OSError)
        pool = driver.asyncio.BlockingConnectionPool.from_url(
            url,
            max_connections=max_connections,
            timeout=pool_timeout,
            socket_connect_timeout=connect_timeout,
            socket_timeout=command_timeout,
            retry=driver.asyncio.retry.Retry(driver.backoff.ExponentialBackoff(cap=0.5, base=0.05), retries=1),
        )
        self.client: redis.asyncio.Redis = driver.asyncio.Redis.from_pool(pool)  # closing the client closes the pool
        self.closed = False

    def check_open(self) -> None:
        if self.closed:
            raise closed_error(self.where, "redis")

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            await self.client.aclose()

    def error(self, operation: str, exc: BaseException) -> StoreError:
        detail = str(exc) or type(exc).__name__
        if isinstance(exc, self._connection_errors) and str(exc) == _POOL_EXHAUSTED:
            # The blocking pool's wait ran out: the command was never sent.
            return StoreError(
                f"{self.where}: cannot {operation}: no free connection, all {self._max_connections} stayed busy "
                f"for {self._pool_timeout} s (max_connections, pool_timeout); nothing was sent",
                backend="redis",
            )
        if isinstance(exc, self._connection_errors):
            return StoreError(f"{self.where}: cannot connect: {detail} (while trying to {operation})", backend="redis")
        return StoreError(f"{self.where}: cannot {operation}: {detail}", backend="redis")


def check_pool_size(max_connections: int) -> int:
    if type(max_connections) is not int or max_connections < 1:
        raise UserError(f"max_connections must be a whole number of connections >= 1, got {max_connections!r}")
    return max_connections


def check_pool_timeout(pool_timeout: float | None) -> float | None:
    if pool_timeout is not None and not pool_timeout > 0:  # also refuses NaN
        raise UserError(f"pool_timeout must be None (wait as long as it takes) or seconds > 0, got {pool_timeout!r}")
    return pool_timeout

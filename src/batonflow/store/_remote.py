"""Connections to the servers a store can live on: an asyncpg pool for PostgreSQL, a redis-py client for Redis.

Both bound every operation in time, in two parts: ``connect_timeout`` for making a connection, ``timeout`` for the
operation once it has one. Both tell a failure before anything was sent ("could not connect: nothing was written")
from one after ("no answer within N s: the write may or may not have landed"), because the two call for different
things: the first can simply be retried, the second leaves the caller not knowing. A network partition usually
shows up as neither a refusal nor a reset but as silence on connections that stay open, so the deadlines are the
only thing that ends it. The drivers are imported when a store is made, never when ``batonflow.store`` is.
"""

from __future__ import annotations

import asyncio
import functools
import math
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..errors import StoreError, UserError
from ._base import closed_error

if TYPE_CHECKING:
    import asyncpg
    import redis.asyncio

__all__ = [
    "PostgresPool",
    "RedisConnection",
    "check_seconds",
    "import_asyncpg",
    "import_redis",
    "postgres_location",
    "redis_location",
]


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


def check_seconds(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise UserError(f"{name} must be a finite number of seconds > 0, got {value!r}")
    return float(value)


class NotConnected(Exception):
    """Connecting failed, so the operation was never sent. The message says why; without one, ``__cause__`` does."""


class NoAnswer(Exception):
    """The operation was sent and its answer did not come within the deadline."""


def _seconds(value: float) -> str:
    return f"{value:g} s"


def _outcome(exc: BaseException, *, read: bool, timeout: float, sent_errors: tuple[type[BaseException], ...]) -> str:
    """What ``exc`` tells the caller: connecting failed, the answer never came, the connection broke mid-way
    (``sent_errors``), or the server said no (its own message)."""
    if isinstance(exc, NotConnected):
        detail = str(exc) or _detail(exc.__cause__ or exc)
        return f"could not connect ({detail})" + ("" if read else ": nothing was written")
    if isinstance(exc, NoAnswer):
        return f"no answer within {_seconds(timeout)}" + ("" if read else ": the write may or may not have landed")
    if isinstance(exc, sent_errors):
        return f"the connection failed ({_detail(exc)})" + ("" if read else ": the write may or may not have landed")
    return _detail(exc)


def _detail(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__  # a TimeoutError has no message of its own


class PostgresPool:
    """An asyncpg pool opened on first use, with ``schema`` created under an advisory lock named after
    ``lock_name`` (concurrent ``CREATE TABLE IF NOT EXISTS`` can still collide in the catalog).

    A store method runs its statements through ``fetchval``, ``fetchrow``, ``execute`` or ``acquire``. Each waits for a free
    connection (as long as it takes: the pool is a queue of ``max_connections``), makes it if it must, within
    ``connect_timeout``, and then gives the statements it runs ``timeout`` seconds in all. At the deadline the
    connection is closed at once, rather than left to asyncpg's cancel request: in a partition that request is
    lost too, and waiting for it doubled the time to fail. A closed connection also cannot hand a late answer to
    the next statement. The server notices the close when it next reads from or writes to the connection.
    """

    def __init__(
        self,
        dsn: str,
        *,
        who: str,
        what: str,
        schema: str,
        lock_name: str,
        connect_timeout: float,
        timeout: float,
        max_connections: int,
    ) -> None:
        self.driver = import_asyncpg(who)
        self.where = f"PostgreSQL {what} at {postgres_location(dsn)}"
        self._connect_timeout = check_seconds("connect_timeout", connect_timeout)
        self.timeout = check_seconds("timeout", timeout)
        self._max_connections = check_pool_size(max_connections)
        self._driver_errors: tuple[type[BaseException], ...] = (
            OSError,
            TimeoutError,
            self.driver.PostgresError,
            self.driver.InterfaceError,
        )
        self._sent_errors: tuple[type[BaseException], ...] = (
            OSError,
            TimeoutError,
            self.driver.PostgresConnectionError,
            self.driver.InterfaceError,
        )
        self.errors: tuple[type[BaseException], ...] = (*self._driver_errors, NotConnected, NoAnswer)
        self._dsn = dsn
        self._schema = schema
        self._lock_key = zlib.crc32(lock_name.encode())
        self._pool: asyncpg.Pool | None = None
        self._pool_lock = asyncio.Lock()
        self.closed = False

    async def get(self) -> PostgresPool:
        """The pool to run statements on (this object); connecting waits for the first statement."""
        if self.closed:
            raise closed_error(self.where, "postgres")
        return self

    async def fetchval(self, query: str, *args: object) -> Any:
        async with self.acquire() as conn:
            return await conn.fetchval(query, *args)

    async def fetchrow(self, query: str, *args: object) -> Any:
        async with self.acquire() as conn:
            return await conn.fetchrow(query, *args)

    async def execute(self, query: str, *args: object) -> str:
        async with self.acquire() as conn:
            return str(await conn.execute(query, *args))

    @asynccontextmanager
    async def acquire(self) -> AsyncIterator[asyncpg.Connection]:
        """A connection of the pool, the statements run on it bounded by ``timeout`` (see the class)."""
        pool = await self._opened()
        async with self._deadline(pool) as conn:
            yield conn

    async def close(self) -> None:
        self.closed = True
        pool, self._pool = self._pool, None
        if pool is not None:
            try:  # a graceful close says goodbye on each connection, and waits for the server to answer
                await asyncio.wait_for(pool.close(), self.timeout)
            except TimeoutError:
                pool.terminate()  # asyncpg's close has begun it when it was cancelled; finish it here

    def error(self, operation: str, exc: BaseException, *, read: bool = False) -> StoreError:
        outcome = _outcome(exc, read=read, timeout=self.timeout, sent_errors=self._sent_errors)
        return StoreError(f"{self.where}: {operation}: {outcome}", backend="postgres")

    @asynccontextmanager
    async def _deadline(self, pool: asyncpg.Pool) -> AsyncIterator[asyncpg.Connection]:
        try:
            conn = await pool.acquire()  # a new connection is made within connect_timeout (create_pool's timeout)
        except self._driver_errors as exc:
            raise self._not_connected(exc) from exc
        expired = False

        def expire() -> None:
            nonlocal expired
            expired = True
            conn.terminate()  # what is waiting on it fails at once, with a connection error

        timer = asyncio.get_running_loop().call_later(self.timeout, expire)
        try:
            yield conn
        except self._driver_errors as exc:
            if expired:
                raise NoAnswer() from exc
            raise
        finally:
            try:  # still under the deadline: asyncpg resets a connection it takes back, a round trip to the server
                await pool.release(conn)
            except self._driver_errors:
                pass  # the reset failed and asyncpg closed the connection; what the statements did stands
            finally:
                timer.cancel()

    async def _opened(self) -> asyncpg.Pool:
        if self._pool is not None:
            return self._pool
        async with self._pool_lock:
            if self.closed:
                raise closed_error(self.where, "postgres")
            if self._pool is None:
                pool = await self._open()
                if self.closed:  # close() ran while we were connecting
                    pool.terminate()
                    raise closed_error(self.where, "postgres")
                self._pool = pool
        return self._pool

    async def _open(self) -> asyncpg.Pool:
        """A new pool with the tables made; any failure is a NotConnected, since the operation was not sent."""
        try:
            pool = await self.driver.create_pool(
                self._dsn,
                min_size=1,
                max_size=self._max_connections,
                timeout=self._connect_timeout,
                command_timeout=None,  # the deadline of each checkout bounds the statements
            )
        except self._driver_errors as exc:
            raise self._not_connected(exc) from exc
        try:
            async with self._deadline(pool) as conn, conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock($1)", self._lock_key)
                await conn.execute(self._schema)
        except self.errors as exc:
            pool.terminate()
            what = f"no answer within {_seconds(self.timeout)}" if isinstance(exc, NoAnswer) else _detail(exc)
            raise NotConnected(f"creating the tables: {what}") from exc
        return pool

    def _not_connected(self, exc: BaseException) -> NotConnected:
        if isinstance(exc, TimeoutError):  # asyncpg's, without a message
            return NotConnected(f"no answer within {_seconds(self._connect_timeout)}")
        return NotConnected(_detail(exc))


_POOL_EXHAUSTED = "No connection available."  # redis-py's BlockingConnectionPool, when its wait runs out


class RedisConnection:
    """A Redis client that connects on its first command, within ``connect_timeout``; each command then waits at
    most ``timeout`` for its answer, after which the connection is closed (a late answer must not be read as the
    next command's). One quick retry, only after a connection error (a connection the server had closed, a
    refused connect), never after a timeout: retrying a command that got no answer doubled the time to fail.

    Its connections come from a blocking pool of at most ``max_connections``: a command that finds them all busy
    waits for one, up to ``pool_timeout`` seconds (None: as long as it takes). redis-py's default pool instead fails
    at once past 100 commands in flight ("Too many connections"), which lost the checkpoints of runs whose tools had
    run. The pool connects a connection before handing it out, so that a failure to connect is told apart from a
    failure after a command was sent.
    """

    def __init__(
        self,
        url: str,
        *,
        who: str,
        what: str,
        connect_timeout: float,
        timeout: float,
        max_connections: int,
        pool_timeout: float | None,
    ) -> None:
        driver = import_redis(who)
        self.where = f"Redis {what} at {redis_location(url)}"
        self.timeout = check_seconds("timeout", timeout)
        self._max_connections = check_pool_size(max_connections)
        self._pool_timeout = check_pool_timeout(pool_timeout)
        self._sent_errors: tuple[type[BaseException], ...] = (
            driver.exceptions.ConnectionError,
            driver.exceptions.TimeoutError,
            OSError,
        )
        self._timeouts: tuple[type[BaseException], ...] = (driver.exceptions.TimeoutError, TimeoutError)
        self.errors: tuple[type[BaseException], ...] = (driver.exceptions.RedisError, OSError, NotConnected)
        pool = _connecting_pool(driver).from_url(
            url,
            max_connections=max_connections,
            timeout=pool_timeout,
            socket_connect_timeout=check_seconds("connect_timeout", connect_timeout),
            socket_timeout=self.timeout,
            retry=driver.asyncio.retry.Retry(
                driver.backoff.ConstantBackoff(0.05), retries=1, supported_errors=(driver.exceptions.ConnectionError,)
            ),
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

    def error(self, operation: str, exc: BaseException, *, read: bool = False) -> StoreError:
        if isinstance(exc, NotConnected) and str(exc.__cause__) == _POOL_EXHAUSTED:
            # The blocking pool's wait ran out: the command was never sent.
            return StoreError(
                f"{self.where}: cannot {operation}: no free connection, all {self._max_connections} stayed busy "
                f"for {self._pool_timeout} s (max_connections, pool_timeout); nothing was sent",
                backend="redis",
            )
        if isinstance(exc, self._timeouts):
            exc = NoAnswer()
        outcome = _outcome(exc, read=read, timeout=self.timeout, sent_errors=self._sent_errors)
        return StoreError(f"{self.where}: cannot {operation}: {outcome}", backend="redis")


@functools.cache
def _connecting_pool(driver: Any) -> Any:
    """redis-py's ``BlockingConnectionPool``, handing out only connected connections, and raising ``NotConnected``
    when it cannot: the client sends a command only on a connection the pool gave it."""
    errors = (driver.exceptions.RedisError, OSError)

    class ConnectingPool(driver.asyncio.BlockingConnectionPool):  # type: ignore[misc]
        async def get_connection(self, *args: Any, **kwargs: Any) -> Any:
            try:
                connection = await super().get_connection(*args, **kwargs)
            except errors as exc:
                raise NotConnected() from exc
            try:
                await connection.connect()  # already done by redis-py >= 5.0.1; a no-op then
            except BaseException as exc:
                await self.release(connection)
                if isinstance(exc, errors):
                    raise NotConnected() from exc
                raise
            return connection

    return ConnectingPool


def check_pool_size(max_connections: int) -> int:
    if type(max_connections) is not int or max_connections < 1:
        raise UserError(f"max_connections must be a whole number of connections >= 1, got {max_connections!r}")
    return max_connections


def check_pool_timeout(pool_timeout: float | None) -> float | None:
    if pool_timeout is not None and not pool_timeout > 0:  # also refuses NaN
        raise UserError(f"pool_timeout must be None (wait as long as it takes) or seconds > 0, got {pool_timeout!r}")
    return pool_timeout

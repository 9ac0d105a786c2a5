"""Checkpoints in PostgreSQL: shared by every worker that can reach the database (DESIGN §7).

An ``asyncpg`` pool is opened on first use. Writes are single ``INSERT … ON CONFLICT DO UPDATE`` statements, so a
reader sees a whole old checkpoint or a whole new one; a lease is a conditional upsert whose WHERE clause is
evaluated on the locked, latest row, so of two racing claims exactly one wins. Expiry uses the server's clock,
the one clock every worker shares.
"""

from __future__ import annotations

import asyncio
import zlib
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..errors import StoreError
from ._base import StoreBase, check_table_name, check_ttl, closed_error

if TYPE_CHECKING:
    import asyncpg

__all__ = ["PostgresCheckpointStore"]


def _import_asyncpg() -> Any:
    try:
        import asyncpg
    except ImportError as exc:
        raise ImportError(
            "PostgresCheckpointStore needs the asyncpg driver: pip install 'batonflow[postgres]'"
        ) from exc
    return asyncpg


class PostgresCheckpointStore(StoreBase):
    """A checkpoint store in the PostgreSQL database at ``dsn`` (``postgresql://user:password@host:port/db``).

    Checkpoints go in ``table``, resume leases in ``<table>_leases``; both are created on first use. Connecting
    gives up after ``connect_timeout`` seconds, a statement after ``command_timeout``.
    """

    def __init__(
        self,
        dsn: str,
        *,
        table: str = "batonflow_checkpoints",
        connect_timeout: float = 5.0,
        command_timeout: float | None = 30.0,
        max_connections: int = 10,
    ) -> None:
        self._asyncpg = _import_asyncpg()
        self._dsn = dsn
        self._table = check_table_name(table)
        self._leases = f"{table}_leases"
        self._connect_timeout = connect_timeout
        self._command_timeout = command_timeout
        self._max_connections = max_connections
        self._where = f"PostgreSQL checkpoint store at {_location(dsn)}"
        self._driver_errors: tuple[type[BaseException], ...] = (
            OSError,
            TimeoutError,
            self._asyncpg.PostgresError,
            self._asyncpg.InterfaceError,
        )
        self._pool: asyncpg.Pool | None = None
        self._pool_lock = asyncio.Lock()

    # -- the store -----------------------------------------------------------------------------------------------

    async def get(self, checkpoint_id: str) -> bytes | None:
        pool = await self._connected()
        try:
            data = await pool.fetchval(f"SELECT data FROM {self._table} WHERE id = $1", checkpoint_id)
        except self._driver_errors as exc:
            raise self._error(f"cannot read checkpoint {checkpoint_id!r}", exc) from exc
        return None if data is None else bytes(data)

    async def set(self, checkpoint_id: str, data: bytes) -> None:
        pool = await self._connected()
        try:
            await pool.execute(
                f"INSERT INTO {self._table} (id, data, updated_at) VALUES ($1, $2, now()) "
                "ON CONFLICT (id) DO UPDATE SET data = EXCLUDED.data, updated_at = EXCLUDED.updated_at",
                checkpoint_id,
                bytes(data),
            )
        except self._driver_errors as exc:
            raise self._error(f"cannot write checkpoint {checkpoint_id!r}", exc) from exc

    async def delete(self, checkpoint_id: str) -> None:
        pool = await self._connected()
        try:
            await pool.execute(f"DELETE FROM {self._table} WHERE id = $1", checkpoint_id)
        except self._driver_errors as exc:
            raise self._error(f"cannot delete checkpoint {checkpoint_id!r}", exc) from exc

    async def claim(self, checkpoint_id: str, owner: str, ttl: float) -> bool:
        ttl = check_ttl(ttl)
        pool = await self._connected()
        try:
            won = await pool.fetchval(
                f"INSERT INTO {self._leases} AS lease (id, owner, expires_at) "
                "VALUES ($1, $2, clock_timestamp() + make_interval(secs => $3)) "
                "ON CONFLICT (id) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at "
                "WHERE lease.owner = EXCLUDED.owner OR lease.expires_at <= clock_timestamp() "
                "RETURNING true",
                checkpoint_id,
                owner,
                ttl,
            )
        except self._driver_errors as exc:
            raise self._error(f"cannot claim checkpoint {checkpoint_id!r}", exc) from exc
        return bool(won)

    async def release(self, checkpoint_id: str, owner: str) -> None:
        pool = await self._connected()
        try:
            await pool.execute(f"DELETE FROM {self._leases} WHERE id = $1 AND owner = $2", checkpoint_id, owner)
        except self._driver_errors as exc:
            raise self._error(f"cannot release checkpoint {checkpoint_id!r}", exc) from exc

    async def close(self) -> None:
        self._closed = True
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    # -- plumbing ------------------------------------------------------------------------------------------------

    async def _connected(self) -> asyncpg.Pool:
        if self._pool is not None:
            return self._pool
        async with self._pool_lock:
            if self._closed:
                raise closed_error(self._where, "postgres")
            if self._pool is None:
                pool = await self._open_pool()
                if self._closed:  # close() ran while we were connecting
                    await pool.close()
                    raise closed_error(self._where, "postgres")
                self._pool = pool
        return self._pool

    async def _open_pool(self) -> asyncpg.Pool:
        try:
            pool = await self._asyncpg.create_pool(
                self._dsn,
                min_size=1,
                max_size=self._max_connections,
                timeout=self._connect_timeout,
                command_timeout=self._command_timeout,
            )
        except self._driver_errors as exc:
            raise self._error("cannot connect", exc) from exc
        try:
            async with pool.acquire() as conn, conn.transaction():
                # Concurrent CREATE TABLE IF NOT EXISTS can still collide in the catalog: serialise the workers
                # that start at the same moment on a transaction-scoped advisory lock named after the table.
                await conn.execute("SELECT pg_advisory_xact_lock($1)", zlib.crc32(self._table.encode()))
                await conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {self._table} "
                    "(id TEXT PRIMARY KEY, data BYTEA NOT NULL, updated_at TIMESTAMPTZ NOT NULL);"
                    f"CREATE TABLE IF NOT EXISTS {self._leases} "
                    "(id TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at TIMESTAMPTZ NOT NULL)"
                )
        except self._driver_errors as exc:
            await pool.close()
            raise self._error("cannot create the checkpoint tables", exc) from exc
        return pool

    def _error(self, operation: str, exc: BaseException) -> StoreError:
        detail = str(exc) or type(exc).__name__  # a TimeoutError has no message of its own
        return StoreError(f"{self._where}: {operation}: {detail}", backend="postgres")


def _location(dsn: str) -> str:
    """``host:port`` (or the DSN's host list) without credentials, for messages."""
    try:
        parts = urlsplit(dsn)
        netloc = parts.netloc.rpartition("@")[2]
    except ValueError:
        return "<unparsable DSN>"
    return netloc or "localhost:5432"

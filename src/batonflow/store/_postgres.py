"""Checkpoints in PostgreSQL: shared by every worker that can reach the database.

An ``asyncpg`` pool is opened on first use. Writes are single ``INSERT … ON CONFLICT DO UPDATE`` statements, so a
reader sees a whole old checkpoint or a whole new one; a lease is a conditional upsert whose WHERE clause is
evaluated on the locked, latest row, so of two racing claims exactly one wins. Expiry uses the server's clock,
the one clock every worker shares.
"""

from __future__ import annotations

from ._base import StoreBase, check_checkpoint_id, check_table_name, check_ttl
from ._codec import DEFAULT_LIMITS, DecodeLimits
from ._conn import PostgresPool
from ._lease import postgres_claim_sql, postgres_lease_table, postgres_release_sql

__all__ = ["PostgresCheckpointStore"]


class PostgresCheckpointStore(StoreBase):
    """A checkpoint store in the PostgreSQL database at ``dsn`` (``postgresql://user:password@host:port/db``).

    Checkpoints go in ``table``, resume leases in ``<table>_leases``; both are created on first use. ``connect_timeout``
    (5 s by default) bounds making a connection and ``timeout`` (10 s) the statements of one operation once it has one,
    so an operation cut off by the network fails within about their sum, plus any wait for a free connection of the
    ``max_connections``. Its ``StoreError`` says which happened: "could not connect (...): nothing was written", or "no
    answer within 10 s: the write may or may not have landed" (a read: "no answer within 10 s"). ``limits`` bound what
    decoding a checkpoint read from it may cost (``DecodeLimits``): the Runner decodes with them.
    """

    def __init__(
        self,
        dsn: str,
        *,
        table: str = "batonflow_checkpoints",
        connect_timeout: float = 5.0,
        timeout: float = 10.0,
        max_connections: int = 10,
        limits: DecodeLimits = DEFAULT_LIMITS,
    ) -> None:
        self.limits = limits
        self._table = check_table_name(table)
        self._leases = f"{table}_leases"
        self._pool = PostgresPool(
            dsn,
            who="PostgresCheckpointStore",
            what="checkpoint store",
            schema=(
                f"CREATE TABLE IF NOT EXISTS {self._table} "
                "(id TEXT PRIMARY KEY, data BYTEA NOT NULL, updated_at TIMESTAMPTZ NOT NULL);"
                + postgres_lease_table(self._leases)
            ),
            lock_name=self._table,
            connect_timeout=connect_timeout,
            timeout=timeout,
            max_connections=max_connections,
        )

    # -- the store -----------------------------------------------------------------------------------------------

    async def get(self, checkpoint_id: str) -> bytes | None:
        check_checkpoint_id(checkpoint_id)
        pool = await self._pool.get()
        try:
            data = await pool.fetchval(f"SELECT data FROM {self._table} WHERE id = $1", checkpoint_id)
        except self._pool.errors as exc:
            raise self._pool.error(f"cannot read checkpoint {checkpoint_id!r}", exc, read=True) from exc
        return None if data is None else bytes(data)

    async def set(self, checkpoint_id: str, data: bytes) -> None:
        check_checkpoint_id(checkpoint_id)
        pool = await self._pool.get()
        try:
            await pool.execute(
                f"INSERT INTO {self._table} (id, data, updated_at) VALUES ($1, $2, now()) "
                "ON CONFLICT (id) DO UPDATE SET data = EXCLUDED.data, updated_at = EXCLUDED.updated_at",
                checkpoint_id,
                bytes(data),
            )
        except self._pool.errors as exc:
            raise self._pool.error(f"cannot write checkpoint {checkpoint_id!r}", exc) from exc

    async def delete(self, checkpoint_id: str) -> None:
        check_checkpoint_id(checkpoint_id)
        pool = await self._pool.get()
        try:
            await pool.execute(f"DELETE FROM {self._table} WHERE id = $1", checkpoint_id)
        except self._pool.errors as exc:
            raise self._pool.error(f"cannot delete checkpoint {checkpoint_id!r}", exc) from exc

    async def claim(self, checkpoint_id: str, owner: str, ttl: float) -> bool:
        check_checkpoint_id(checkpoint_id)
        ttl = check_ttl(ttl)
        pool = await self._pool.get()
        try:
            won = await pool.fetchval(postgres_claim_sql(self._leases), checkpoint_id, owner, ttl)
        except self._pool.errors as exc:
            raise self._pool.error(f"cannot claim checkpoint {checkpoint_id!r}", exc) from exc
        return bool(won)

    async def release(self, checkpoint_id: str, owner: str) -> None:
        check_checkpoint_id(checkpoint_id)
        pool = await self._pool.get()
        try:
            await pool.execute(postgres_release_sql(self._leases), checkpoint_id, owner)
        except self._pool.errors as exc:
            raise self._pool.error(f"cannot release checkpoint {checkpoint_id!r}", exc) from exc

    async def close(self) -> None:
        self._closed = True
        await self._pool.close()

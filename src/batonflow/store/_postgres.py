"""Checkpoints in PostgreSQL: shared by every worker that can reach the database.

An ``asyncpg`` pool is opened on first use. Writes are single ``INSERT … ON CONFLICT DO UPDATE`` statements, so a
reader sees a whole old checkpoint or a whole new one; a lease is a conditional upsert whose WHERE clause is
evaluated on the locked, latest row, so of two racing claims exactly one wins. Expiry uses the server's clock,
the one clock every worker shares. A fenced write is one statement too: it locks the lease row, checks it, writes
only if the owner holds it, and answers with the holder it saw.
"""

from __future__ import annotations

from typing import Any

from ..codec import DEFAULT_LIMITS, DecodeLimits
from ._base import Lease, StoreBase, check_checkpoint_id, check_owner, check_table_name, check_ttl
from ._conn import PostgresPool
from ._history import KeepsHistory
from ._lease import (
    check_fence,
    postgres_break_sql,
    postgres_claim_sql,
    postgres_fence_cte,
    postgres_holder_sql,
    postgres_lease,
    postgres_lease_table,
    postgres_release_sql,
    postgres_renew_sql,
)

__all__ = ["PostgresCheckpointStore"]


class PostgresCheckpointStore(KeepsHistory, StoreBase):
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

    async def set(self, checkpoint_id: str, data: bytes, *, owner: str | None = None) -> None:
        check_checkpoint_id(checkpoint_id)
        upsert = (
            f"INSERT INTO {self._table} (id, data, updated_at) {{rows}} "
            "ON CONFLICT (id) DO UPDATE SET data = EXCLUDED.data, updated_at = EXCLUDED.updated_at"
        )
        if owner is None:
            await self._execute(
                f"cannot write checkpoint {checkpoint_id!r}",
                upsert.format(rows="VALUES ($1, $2, now())"),
                checkpoint_id,
                bytes(data),
            )
            return
        write = upsert.format(rows="SELECT $1, $3::bytea, now() FROM fence WHERE held")
        await self._fenced(checkpoint_id, check_owner(owner), write, bytes(data))

    async def delete(self, checkpoint_id: str, *, owner: str | None = None) -> None:
        check_checkpoint_id(checkpoint_id)
        if owner is None:
            sql = f"DELETE FROM {self._table} WHERE id = $1"
            await self._execute(f"cannot delete checkpoint {checkpoint_id!r}", sql, checkpoint_id)
            return
        write = f"DELETE FROM {self._table} WHERE id = $1 AND (SELECT held FROM fence)"
        await self._fenced(checkpoint_id, check_owner(owner), write)

    async def claim(self, checkpoint_id: str, owner: str, ttl: float) -> bool:
        check_checkpoint_id(checkpoint_id)
        check_owner(owner)
        ttl = check_ttl(ttl)
        sql = postgres_claim_sql(self._leases)
        return bool(await self._fetchval(f"cannot claim checkpoint {checkpoint_id!r}", sql, checkpoint_id, owner, ttl))

    async def renew(self, checkpoint_id: str, owner: str, ttl: float) -> bool:
        """Extend ``owner``'s unexpired lease; False when it lapsed or is another's (see ``_lease``)."""
        check_checkpoint_id(checkpoint_id)
        check_owner(owner)
        ttl = check_ttl(ttl)
        sql = postgres_renew_sql(self._leases)
        return bool(await self._fetchval(f"cannot renew checkpoint {checkpoint_id!r}", sql, checkpoint_id, owner, ttl))

    async def release(self, checkpoint_id: str, owner: str) -> None:
        check_checkpoint_id(checkpoint_id)
        check_owner(owner)
        sql = postgres_release_sql(self._leases)
        await self._execute(f"cannot release checkpoint {checkpoint_id!r}", sql, checkpoint_id, owner)

    async def holder(self, checkpoint_id: str) -> Lease | None:
        check_checkpoint_id(checkpoint_id)
        pool = await self._pool.get()
        try:
            row = await pool.fetchrow(postgres_holder_sql(self._leases), checkpoint_id)
        except self._pool.errors as exc:
            raise self._pool.error(f"cannot read the lease of checkpoint {checkpoint_id!r}", exc, read=True) from exc
        return postgres_lease(row)

    async def break_lease(self, checkpoint_id: str, owner: str) -> bool:
        check_checkpoint_id(checkpoint_id)
        check_owner(owner)
        sql = postgres_break_sql(self._leases)
        operation = f"cannot break the lease of checkpoint {checkpoint_id!r}"
        return bool(await self._fetchval(operation, sql, checkpoint_id, owner))

    async def _fenced(self, checkpoint_id: str, owner: str, write: str, *args: Any) -> None:
        """Run ``write`` (``$1`` the id, ``$3`` on: ``args``; it reads ``fence``) only if ``owner`` holds the lease,
        in one statement; ``LeaseLostError`` naming the holder it saw when not."""
        deleting = not args
        sql = (
            f"WITH {postgres_fence_cte(self._leases)}, written AS ({write}) "
            "SELECT held, live, owner, held_for, expires_in FROM fence"
        )
        pool = await self._pool.get()
        try:
            row = await pool.fetchrow(sql, checkpoint_id, owner, *args)
        except self._pool.errors as exc:
            verb = "delete" if deleting else "write"
            raise self._pool.error(f"cannot {verb} checkpoint {checkpoint_id!r}", exc) from exc
        if row is not None and row["held"]:
            return
        check_fence(
            checkpoint_id, owner, postgres_lease(row) if row is not None and row["live"] else None, deleting=deleting
        )

    async def _execute(self, operation: str, sql: str, *args: Any) -> None:
        pool = await self._pool.get()
        try:
            await pool.execute(sql, *args)
        except self._pool.errors as exc:
            raise self._pool.error(operation, exc) from exc

    async def _fetchval(self, operation: str, sql: str, *args: Any) -> Any:
        pool = await self._pool.get()
        try:
            return await pool.fetchval(sql, *args)
        except self._pool.errors as exc:
            raise self._pool.error(operation, exc) from exc

    async def close(self) -> None:
        self._closed = True
        await self._pool.close()

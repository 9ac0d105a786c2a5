"""Sessions in SQL: SQLite (the embedded default) and PostgreSQL (shared by every worker).

Two tables: ``<table>`` holds one state record per session, ``<table>_messages`` one row per message, in order of an
ever-growing sequence number. A batch of messages is inserted in one transaction, so a reader sees all of it or
none, and a session's writes are serialised (SQLite's write lock; a per-session advisory lock in PostgreSQL), so
two batches appended at the same time land one after the other, never interleaved. ``get`` reads messages and state
in one read transaction: a state and the messages it was saved with.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from ..codec import DEFAULT_LIMITS, DecodeLimits
from ..schema import Message
from ._base import Lease, StoreBase, check_owner, check_table_name, check_ttl
from ._conn import PostgresPool, SqliteConnection, Synchronous, transaction
from ._lease import (
    postgres_break_sql,
    postgres_claim_sql,
    postgres_holder_sql,
    postgres_lease,
    postgres_lease_table,
    postgres_release_sql,
    postgres_renew_sql,
    sqlite_break,
    sqlite_holder,
    sqlite_lease,
    sqlite_lease_schema,
    sqlite_release,
)
from ._sessions import (
    SessionData,
    SessionState,
    build_data,
    check_last,
    check_session_id,
    encode_messages,
    encode_state,
)

__all__ = ["PostgresSessionStore", "SqliteSessionStore"]


class SqliteSessionStore(StoreBase):
    """A session store in the SQLite database at ``path`` (created, with its parent directories, on first use).

    States go in ``table``, messages in ``<table>_messages``; the file may be the one a ``SqliteCheckpointStore``
    uses. ``timeout`` is how long a write waits for another process's lock before it fails. ``limits`` bound what
    decoding a stored value may cost (``DecodeLimits``). ``synchronous`` is as for ``SqliteCheckpointStore``:
    ``"FULL"`` (the default) or ``"NORMAL"``, which can lose the last saves to a power cut.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        table: str = "batonflow_sessions",
        timeout: float = 10.0,
        limits: DecodeLimits = DEFAULT_LIMITS,
        synchronous: Synchronous = "FULL",
    ) -> None:
        self.limits = limits
        self._table = check_table_name(table)
        self._messages = f"{table}_messages"
        self._leases = f"{table}_leases"
        self._conn = SqliteConnection(
            path,
            timeout=timeout,
            synchronous=synchronous,
            where=f"SQLite session store at {path}",
            schema=[
                f"CREATE TABLE IF NOT EXISTS {self._table} "
                "(id TEXT PRIMARY KEY, state BLOB NOT NULL, updated_at REAL NOT NULL)",
                # INTEGER PRIMARY KEY is the rowid: a new row's is above every existing one, hence insertion order.
                f"CREATE TABLE IF NOT EXISTS {self._messages} "
                "(seq INTEGER PRIMARY KEY, session_id TEXT NOT NULL, data BLOB NOT NULL)",
                f"CREATE INDEX IF NOT EXISTS {table}_msg_idx ON {self._messages} (session_id, seq)",
                *sqlite_lease_schema(self._leases),
            ],
        )
        self.path = self._conn.path

    async def get(self, session_id: str, *, last: int | None = None) -> SessionData | None:
        check_session_id(session_id)
        check_last(last)

        def get(conn: sqlite3.Connection) -> tuple[list[bytes], bytes | None]:
            with transaction(conn, write=False):
                rows = conn.execute(
                    f"SELECT data FROM (SELECT seq, data FROM {self._messages} WHERE session_id = ? "
                    "ORDER BY seq DESC LIMIT ?) ORDER BY seq",
                    (session_id, -1 if last is None else last),  # LIMIT -1: no limit
                ).fetchall()
                state = conn.execute(f"SELECT state FROM {self._table} WHERE id = ?", (session_id,)).fetchone()
            return [bytes(r[0]) for r in rows], None if state is None else bytes(state[0])

        messages, state = await self._conn.run(f"cannot read session {session_id!r}", get, read=True)
        return build_data(session_id, messages, state, self.limits)

    async def append_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        check_session_id(session_id)
        data = encode_messages(session_id, messages, self.limits)
        if not data:
            return

        def append(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                self._insert(conn, session_id, data)

        await self._conn.run(f"cannot append to session {session_id!r}", append)

    async def replace_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        check_session_id(session_id)
        data = encode_messages(session_id, messages, self.limits)

        def replace(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                conn.execute(f"DELETE FROM {self._messages} WHERE session_id = ?", (session_id,))
                self._insert(conn, session_id, data)

        await self._conn.run(f"cannot replace the messages of session {session_id!r}", replace)

    async def set_state(self, session_id: str, state: SessionState) -> None:
        check_session_id(session_id)
        data = encode_state(session_id, state, self.limits)

        await self._conn.run(
            f"cannot write the state of session {session_id!r}", lambda conn: self._set_state(conn, session_id, data)
        )

    async def save_session(
        self, session_id: str, state: SessionState, *, messages: Sequence[Message] = (), replace: bool = False
    ) -> None:
        """The turn's messages and the state in one transaction: one commit, one wait for the disk."""
        check_session_id(session_id)
        data = encode_messages(session_id, messages, self.limits)
        encoded = encode_state(session_id, state, self.limits)

        def save(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                if replace:
                    conn.execute(f"DELETE FROM {self._messages} WHERE session_id = ?", (session_id,))
                if data:
                    self._insert(conn, session_id, data)
                self._set_state(conn, session_id, encoded)

        await self._conn.run(f"cannot save session {session_id!r}", save)

    def _set_state(self, conn: sqlite3.Connection, session_id: str, data: bytes) -> None:
        conn.execute(
            f"INSERT INTO {self._table} (id, state, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at",
            (session_id, data, time.time()),
        )

    async def delete(self, session_id: str) -> None:
        check_session_id(session_id)

        def delete(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                conn.execute(f"DELETE FROM {self._messages} WHERE session_id = ?", (session_id,))
                conn.execute(f"DELETE FROM {self._table} WHERE id = ?", (session_id,))

        await self._conn.run(f"cannot delete session {session_id!r}", delete)

    async def claim(self, session_id: str, owner: str, ttl: float) -> bool:
        check_session_id(session_id)
        return await sqlite_lease(
            self._conn, "claim", self._leases, session_id, owner, ttl, what=f"session {session_id!r}"
        )

    async def renew(self, session_id: str, owner: str, ttl: float) -> bool:
        """Extend ``owner``'s unexpired lease; False when it lapsed or is another's."""
        check_session_id(session_id)
        return await sqlite_lease(
            self._conn, "renew", self._leases, session_id, owner, ttl, what=f"session {session_id!r}"
        )

    async def release(self, session_id: str, owner: str) -> None:
        check_session_id(session_id)
        check_owner(owner)
        await self._conn.run(
            f"cannot release session {session_id!r}",
            lambda conn: sqlite_release(conn, self._leases, session_id, owner),
            durable=False,
        )

    async def holder(self, session_id: str) -> Lease | None:
        check_session_id(session_id)
        return await self._conn.run(
            f"cannot read the lease of session {session_id!r}",
            lambda conn: sqlite_holder(conn, self._leases, session_id),
            read=True,
        )

    async def break_lease(self, session_id: str, owner: str) -> bool:
        check_session_id(session_id)
        check_owner(owner)
        return await self._conn.run(
            f"cannot break the lease of session {session_id!r}",
            lambda conn: sqlite_break(conn, self._leases, session_id, owner),
        )

    async def close(self) -> None:
        self._closed = True
        await self._conn.close()

    def _insert(self, conn: sqlite3.Connection, session_id: str, data: list[bytes]) -> None:
        conn.executemany(
            f"INSERT INTO {self._messages} (session_id, data) VALUES (?, ?)", [(session_id, d) for d in data]
        )


class PostgresSessionStore(StoreBase):
    """A session store in the PostgreSQL database at ``dsn`` (``postgresql://user:password@host:port/db``).

    States go in ``table``, messages in ``<table>_messages``; both are created on first use. ``connect_timeout`` (5 s by
    default) bounds making a connection and ``timeout`` (10 s) the statements of one operation once it has one, so an
    operation cut off by the network fails within about their sum, plus any wait for a free connection of the
    ``max_connections``. Its ``StoreError`` says which happened: "could not connect (...): nothing was written", or "no
    answer within 10 s: the write may or may not have landed" (a read: "no answer within 10 s"). ``limits`` bound what
    decoding a stored value may cost (``DecodeLimits``).
    """

    def __init__(
        self,
        dsn: str,
        *,
        table: str = "batonflow_sessions",
        connect_timeout: float = 5.0,
        timeout: float = 10.0,
        max_connections: int = 10,
        limits: DecodeLimits = DEFAULT_LIMITS,
    ) -> None:
        self.limits = limits
        self._table = check_table_name(table)
        self._messages = f"{table}_messages"
        self._leases = f"{table}_leases"
        self._db = PostgresPool(
            dsn,
            who="PostgresSessionStore",
            what="session store",
            lock_name=self._table,
            connect_timeout=connect_timeout,
            timeout=timeout,
            max_connections=max_connections,
            schema=(
                f"CREATE TABLE IF NOT EXISTS {self._table} "
                "(id TEXT PRIMARY KEY, state BYTEA NOT NULL, updated_at TIMESTAMPTZ NOT NULL);"
                f"CREATE TABLE IF NOT EXISTS {self._messages} "
                "(seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, session_id TEXT NOT NULL, data BYTEA NOT NULL);"
                f"CREATE INDEX IF NOT EXISTS {table}_msg_idx ON {self._messages} (session_id, seq);"
                + postgres_lease_table(self._leases)
            ),
        )

    async def get(self, session_id: str, *, last: int | None = None) -> SessionData | None:
        check_session_id(session_id)
        check_last(last)
        pool = await self._db.get()
        try:
            async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
                rows = await conn.fetch(
                    f"SELECT data FROM (SELECT seq, data FROM {self._messages} WHERE session_id = $1 "
                    "ORDER BY seq DESC LIMIT $2) AS latest ORDER BY seq",
                    session_id,
                    last,  # LIMIT NULL: no limit
                )
                state = await conn.fetchval(f"SELECT state FROM {self._table} WHERE id = $1", session_id)
        except self._db.errors as exc:
            raise self._db.error(f"cannot read session {session_id!r}", exc, read=True) from exc
        return build_data(session_id, [bytes(r[0]) for r in rows], None if state is None else bytes(state), self.limits)

    async def append_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        check_session_id(session_id)
        data = encode_messages(session_id, messages, self.limits)
        if not data:
            return
        pool = await self._db.get()
        try:
            async with pool.acquire() as conn, conn.transaction():
                await self._lock(conn, session_id)
                await self._insert(conn, session_id, data)
        except self._db.errors as exc:
            raise self._db.error(f"cannot append to session {session_id!r}", exc) from exc

    async def replace_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        check_session_id(session_id)
        data = encode_messages(session_id, messages, self.limits)
        pool = await self._db.get()
        try:
            async with pool.acquire() as conn, conn.transaction():
                await self._lock(conn, session_id)
                await conn.execute(f"DELETE FROM {self._messages} WHERE session_id = $1", session_id)
                await self._insert(conn, session_id, data)
        except self._db.errors as exc:
            raise self._db.error(f"cannot replace the messages of session {session_id!r}", exc) from exc

    async def set_state(self, session_id: str, state: SessionState) -> None:
        check_session_id(session_id)
        data = encode_state(session_id, state, self.limits)
        pool = await self._db.get()
        try:
            await pool.execute(
                f"INSERT INTO {self._table} (id, state, updated_at) VALUES ($1, $2, now()) "
                "ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, updated_at = EXCLUDED.updated_at",
                session_id,
                data,
            )
        except self._db.errors as exc:
            raise self._db.error(f"cannot write the state of session {session_id!r}", exc) from exc

    async def save_session(
        self, session_id: str, state: SessionState, *, messages: Sequence[Message] = (), replace: bool = False
    ) -> None:
        """The turn's messages and the state in one transaction (one commit), under the session's lock."""
        check_session_id(session_id)
        data = encode_messages(session_id, messages, self.limits)
        encoded = encode_state(session_id, state, self.limits)
        pool = await self._db.get()
        try:
            async with pool.acquire() as conn, conn.transaction():
                await self._lock(conn, session_id)
                if replace:
                    await conn.execute(f"DELETE FROM {self._messages} WHERE session_id = $1", session_id)
                if data:
                    await self._insert(conn, session_id, data)
                await conn.execute(
                    f"INSERT INTO {self._table} (id, state, updated_at) VALUES ($1, $2, now()) "
                    "ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, updated_at = EXCLUDED.updated_at",
                    session_id,
                    encoded,
                )
        except self._db.errors as exc:
            raise self._db.error(f"cannot save session {session_id!r}", exc) from exc

    async def delete(self, session_id: str) -> None:
        check_session_id(session_id)
        pool = await self._db.get()
        try:
            async with pool.acquire() as conn, conn.transaction():
                await self._lock(conn, session_id)
                await conn.execute(f"DELETE FROM {self._messages} WHERE session_id = $1", session_id)
                await conn.execute(f"DELETE FROM {self._table} WHERE id = $1", session_id)
        except self._db.errors as exc:
            raise self._db.error(f"cannot delete session {session_id!r}", exc) from exc

    async def claim(self, session_id: str, owner: str, ttl: float) -> bool:
        check_session_id(session_id)
        check_owner(owner)
        ttl = check_ttl(ttl)
        sql = postgres_claim_sql(self._leases)
        return bool(await self._fetchval(f"cannot claim session {session_id!r}", sql, session_id, owner, ttl))

    async def renew(self, session_id: str, owner: str, ttl: float) -> bool:
        """Extend ``owner``'s unexpired lease; False when it lapsed or is another's."""
        check_session_id(session_id)
        check_owner(owner)
        ttl = check_ttl(ttl)
        sql = postgres_renew_sql(self._leases)
        return bool(await self._fetchval(f"cannot renew session {session_id!r}", sql, session_id, owner, ttl))

    async def release(self, session_id: str, owner: str) -> None:
        check_session_id(session_id)
        check_owner(owner)
        pool = await self._db.get()
        try:
            await pool.execute(postgres_release_sql(self._leases), session_id, owner)
        except self._db.errors as exc:
            raise self._db.error(f"cannot release session {session_id!r}", exc) from exc

    async def holder(self, session_id: str) -> Lease | None:
        check_session_id(session_id)
        pool = await self._db.get()
        try:
            row = await pool.fetchrow(postgres_holder_sql(self._leases), session_id)
        except self._db.errors as exc:
            raise self._db.error(f"cannot read the lease of session {session_id!r}", exc, read=True) from exc
        return postgres_lease(row)

    async def break_lease(self, session_id: str, owner: str) -> bool:
        check_session_id(session_id)
        check_owner(owner)
        operation = f"cannot break the lease of session {session_id!r}"
        return bool(await self._fetchval(operation, postgres_break_sql(self._leases), session_id, owner))

    async def _fetchval(self, operation: str, sql: str, *args: Any) -> Any:
        pool = await self._db.get()
        try:
            return await pool.fetchval(sql, *args)
        except self._db.errors as exc:
            raise self._db.error(operation, exc) from exc

    async def close(self) -> None:
        self._closed = True
        await self._db.close()

    async def _lock(self, conn: Any, session_id: str) -> None:
        # Identity values are handed out as rows are inserted, not at commit: without this lock two batches
        # appended at once could interleave, and an append racing a replace could land before the new list.
        await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", f"{self._table}:{session_id}")

    async def _insert(self, conn: Any, session_id: str, data: list[bytes]) -> None:
        if data:
            await conn.executemany(
                f"INSERT INTO {self._messages} (session_id, data) VALUES ($1, $2)", [(session_id, d) for d in data]
            )

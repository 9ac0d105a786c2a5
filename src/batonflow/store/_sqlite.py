"""Checkpoints in an SQLite file: the embedded default, safe across processes and crashes.

The standard library's ``sqlite3`` runs in two threads per store, each owning a connection (what ``aiosqlite``
does too, without the extra dependency): a writer, which commits the writes waiting for it in one transaction, each
in a savepoint of its own so that it succeeds or fails alone, and a reader. Every write is one statement: in WAL
mode a reader sees the previous checkpoint or the new one, and a process killed mid-write leaves the previous one
readable. Other processes on the same file contend through SQLite's locks, waiting up to ``timeout`` seconds. A
fenced write reads the lease and writes in one ``BEGIN IMMEDIATE`` transaction: it holds the write lock from the
start, so no claim can come between the check and the write.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager

from ..codec import DEFAULT_LIMITS, DecodeLimits
from ._base import Lease, StoreBase, check_checkpoint_id, check_owner, check_table_name
from ._conn import SqliteConnection, Synchronous, transaction
from ._history import KeepsHistory
from ._lease import (
    check_fence,
    sqlite_break,
    sqlite_holder,
    sqlite_lease,
    sqlite_lease_schema,
    sqlite_release,
)

__all__ = ["SqliteCheckpointStore"]


class SqliteCheckpointStore(KeepsHistory, StoreBase):
    """A checkpoint store in the SQLite database at ``path`` (created, with its parent directories, on first use).

    Checkpoints go in ``table``, resume leases in ``<table>_leases``. ``timeout`` is how long a write waits for
    another process's lock before it fails. ``limits`` bound what decoding a checkpoint read from it may cost
    (``DecodeLimits``): the Runner decodes with them.

    ``synchronous="FULL"`` (the default) waits for the disk at every commit, so a checkpoint reported saved
    survives a power cut. ``"NORMAL"`` waits less: a killed process still loses nothing, but a power cut or a crash
    of the machine can undo the last checkpoints saved before it (a resume then finds the one before, or none).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        table: str = "batonflow_checkpoints",
        timeout: float = 10.0,
        limits: DecodeLimits = DEFAULT_LIMITS,
        synchronous: Synchronous = "FULL",
    ) -> None:
        self.limits = limits
        self._table = check_table_name(table)
        self._leases = f"{table}_leases"
        self._db = SqliteConnection(
            path,
            timeout=timeout,
            synchronous=synchronous,
            schema=[
                f"CREATE TABLE IF NOT EXISTS {self._table} "
                "(id TEXT PRIMARY KEY, data BLOB NOT NULL, updated_at REAL NOT NULL)",
                *sqlite_lease_schema(self._leases),
            ],
            where=f"SQLite checkpoint store at {path}",
        )
        self.path = self._db.path

    # -- the store -----------------------------------------------------------------------------------------------

    async def get(self, checkpoint_id: str) -> bytes | None:
        check_checkpoint_id(checkpoint_id)

        def get(conn: sqlite3.Connection) -> bytes | None:
            row = conn.execute(f"SELECT data FROM {self._table} WHERE id = ?", (checkpoint_id,)).fetchone()
            return None if row is None else bytes(row[0])

        return await self._db.run(f"cannot read checkpoint {checkpoint_id!r}", get, read=True)

    async def set(self, checkpoint_id: str, data: bytes, *, owner: str | None = None) -> None:
        check_checkpoint_id(checkpoint_id)
        if owner is not None:
            check_owner(owner)

        def set_(conn: sqlite3.Connection) -> None:
            with self._fenced(conn, checkpoint_id, owner):
                conn.execute(
                    f"INSERT INTO {self._table} (id, data, updated_at) VALUES (?, ?, ?) "
                    "ON CONFLICT (id) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at",
                    (checkpoint_id, bytes(data), time.time()),
                )

        await self._db.run(f"cannot write checkpoint {checkpoint_id!r}", set_)

    async def delete(self, checkpoint_id: str, *, owner: str | None = None) -> None:
        check_checkpoint_id(checkpoint_id)
        if owner is not None:
            check_owner(owner)

        def delete(conn: sqlite3.Connection) -> None:
            with self._fenced(conn, checkpoint_id, owner, deleting=True):
                conn.execute(f"DELETE FROM {self._table} WHERE id = ?", (checkpoint_id,))

        await self._db.run(f"cannot delete checkpoint {checkpoint_id!r}", delete)

    async def claim(self, checkpoint_id: str, owner: str, ttl: float) -> bool:
        check_checkpoint_id(checkpoint_id)
        what = f"checkpoint {checkpoint_id!r}"
        return await sqlite_lease(self._db, "claim", self._leases, checkpoint_id, owner, ttl, what=what)

    async def renew(self, checkpoint_id: str, owner: str, ttl: float) -> bool:
        """Extend ``owner``'s unexpired lease; False when it lapsed or is another's (see ``_lease``)."""
        check_checkpoint_id(checkpoint_id)
        what = f"checkpoint {checkpoint_id!r}"
        return await sqlite_lease(self._db, "renew", self._leases, checkpoint_id, owner, ttl, what=what)

    async def release(self, checkpoint_id: str, owner: str) -> None:
        check_checkpoint_id(checkpoint_id)
        check_owner(owner)

        def release(conn: sqlite3.Connection) -> None:
            sqlite_release(conn, self._leases, checkpoint_id, owner)

        await self._db.run(f"cannot release checkpoint {checkpoint_id!r}", release)

    async def holder(self, checkpoint_id: str) -> Lease | None:
        check_checkpoint_id(checkpoint_id)
        return await self._db.run(
            f"cannot read the lease of checkpoint {checkpoint_id!r}",
            lambda conn: sqlite_holder(conn, self._leases, checkpoint_id),
            read=True,
        )

    async def break_lease(self, checkpoint_id: str, owner: str) -> bool:
        check_checkpoint_id(checkpoint_id)
        check_owner(owner)
        return await self._db.run(
            f"cannot break the lease of checkpoint {checkpoint_id!r}",
            lambda conn: sqlite_break(conn, self._leases, checkpoint_id, owner),
        )

    @contextmanager
    def _fenced(
        self, conn: sqlite3.Connection, checkpoint_id: str, owner: str | None, *, deleting: bool = False
    ) -> Iterator[None]:
        """Nothing around an unfenced write (one statement is atomic); a write transaction that first checks the
        lease around a fenced one, rolled back by the ``LeaseLostError`` when ``owner`` does not hold it."""
        if owner is None:
            yield
            return
        with transaction(conn):
            check_fence(checkpoint_id, owner, sqlite_holder(conn, self._leases, checkpoint_id), deleting=deleting)
            yield

    async def close(self) -> None:
        self._closed = True
        await self._db.close()

"""Leases: the one conditional write each backend makes so that, of two workers resuming the same thing at once,
exactly one goes ahead, and what the backends share to show, break and fence with them.

A lease names its owner, the moment that owner claimed it, and when it expires; it expires on its own, so a worker
that dies holding one blocks nobody for longer than its ttl. Claiming succeeds when the lease is free, has expired,
or is already the claimant's (which renews it and keeps its start); releasing and breaking delete it only for its
owner. Renewing (``renew``) is stricter than claiming: it extends a lease its owner holds *unexpired*, and nothing
else, so a holder that was paused past its ttl cannot take its lapsed lease back unnoticed (a runner's owner token
is fresh for each claim: the token is the lease's generation, and a lapsed one is never renewed). A fenced write checks that its owner holds the lease in the same atomic step as the write. Checkpoint
stores lease checkpoints, session stores lease conversations; both use what is here, so each rule is written once
per backend: a dict for memory, conditional statements for SQLite and PostgreSQL, Lua scripts for Redis
(``_lease_redis``).

A lease taken by the previous release has no start: SQL tables gain the column when a store opens them, and such
a lease shows ``held_for`` 0 until it ends.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from ..errors import LeaseLostError
from ._base import Lease, check_owner, check_ttl

if TYPE_CHECKING:
    from ._sqlite_conn import SqliteConnection

__all__ = [
    "MemoryLeases",
    "check_fence",
    "postgres_break_sql",
    "postgres_claim_sql",
    "postgres_fence_cte",
    "postgres_holder_sql",
    "postgres_lease",
    "postgres_lease_table",
    "postgres_release_sql",
    "postgres_renew_sql",
    "sqlite_break",
    "sqlite_claim",
    "sqlite_holder",
    "sqlite_lease",
    "sqlite_lease_schema",
    "sqlite_release",
    "sqlite_renew",
]


def check_fence(checkpoint_id: str, owner: str, holder: Lease | None, *, deleting: bool = False) -> None:
    """Nothing when ``owner`` is ``holder``; else the ``LeaseLostError`` of a fenced write, which names the lease's
    holder now (``holder``, as read in the write's own atomic step)."""
    if holder is not None and holder.owner == owner:
        return
    verb, done = ("delete", "deleted") if deleting else ("write", "written")
    found = "it free" if holder is None else f"it held by {holder.owner!r} for {holder.held_for:.1f} s"
    raise LeaseLostError(
        f"cannot {verb} checkpoint {checkpoint_id!r} for {owner!r}: expected {owner!r} to hold its lease, found "
        f"{found} (the lease lapsed or was broken); nothing was {done}",
        checkpoint_id=checkpoint_id,
        owner=owner,
        holder=None if holder is None else holder.owner,
        held_for=None if holder is None else holder.held_for,
    )


class MemoryLeases:
    """Leases in this process's memory; each call finishes without awaiting, hence is atomic for the event loop."""

    def __init__(self) -> None:
        self._held: dict[str, tuple[str, float, float]] = {}  # key -> (owner, monotonic start, monotonic expiry)

    def claim(self, key: str, owner: str, ttl: float) -> bool:
        now = time.monotonic()
        held = self._held.get(key)
        if held is not None and held[2] > now:
            if held[0] != owner:
                return False
            start = held[1]  # a renewal keeps the start
        else:
            start = now
        self._held[key] = (owner, start, now + ttl)
        return True

    def renew(self, key: str, owner: str, ttl: float) -> bool:
        """Extend ``owner``'s unexpired lease by ``ttl``; False (nothing changed) when it lapsed or is another's."""
        now = time.monotonic()
        held = self._held.get(key)
        if held is None or held[0] != owner or held[2] <= now:
            return False
        self._held[key] = (owner, held[1], now + ttl)
        return True

    def release(self, key: str, owner: str) -> None:
        self.break_lease(key, owner)

    def holder(self, key: str) -> Lease | None:
        now = time.monotonic()
        held = self._held.get(key)
        if held is None or held[2] <= now:
            return None
        return Lease(owner=held[0], held_for=now - held[1], expires_in=held[2] - now)

    def break_lease(self, key: str, owner: str) -> bool:
        held = self._held.get(key)
        if held is None or held[0] != owner:
            return False
        del self._held[key]
        return held[2] > time.monotonic()


# -- SQLite ----------------------------------------------------------------------------------------------------------


def sqlite_lease_schema(table: str) -> list[str | Callable[[sqlite3.Connection], None]]:
    """The lease table, and the column the previous release's table lacks (``claimed_at``, NULL in its rows).

    Wall-clock times (``time.time()``), since the processes sharing the file share the machine's clock.
    """

    def add_claimed_at(conn: sqlite3.Connection) -> None:
        columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        if "claimed_at" not in columns:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN claimed_at REAL")

    return [
        f"CREATE TABLE IF NOT EXISTS {table} "
        "(id TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at REAL NOT NULL, claimed_at REAL)",
        add_claimed_at,
    ]


def sqlite_claim(conn: sqlite3.Connection, table: str, key: str, owner: str, ttl: float) -> bool:
    # One conditional upsert: SQLite's write lock orders racing claims, and the loser's WHERE sees the winner's
    # row. The start is kept only when the owner renews a lease that has not lapsed.
    now = time.time()
    rows = conn.execute(
        f"INSERT INTO {table} (id, owner, expires_at, claimed_at) VALUES (:id, :owner, :expires, :now) "
        "ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at, "
        f"claimed_at = CASE WHEN {table}.owner = excluded.owner AND {table}.expires_at > :now "
        f"THEN {table}.claimed_at ELSE excluded.claimed_at END "
        f"WHERE {table}.owner = excluded.owner OR {table}.expires_at <= :now "
        "RETURNING 1",
        {"id": key, "owner": owner, "expires": now + ttl, "now": now},
    ).fetchall()
    return bool(rows)


def sqlite_renew(conn: sqlite3.Connection, table: str, key: str, owner: str, ttl: float) -> bool:
    """Extend ``owner``'s unexpired lease; False when it lapsed or is another's (a lapsed lease is never renewed)."""
    now = time.time()
    rows = conn.execute(
        f"UPDATE {table} SET expires_at = :expires WHERE id = :id AND owner = :owner AND expires_at > :now RETURNING 1",
        {"id": key, "owner": owner, "expires": now + ttl, "now": now},
    ).fetchall()
    return bool(rows)


async def sqlite_lease(
    db: SqliteConnection, write: Literal["claim", "renew"], table: str, key: str, owner: str, ttl: float, *, what: str
) -> bool:
    """``owner``'s claim or renewal (``write``) of its lease on ``key`` in ``table`` of ``db``, ``what`` naming it
    in an error. Neither waits for the disk (``durable=False``): whoever holds a lease is on this machine, and does
    not outlive a power cut either; the write is in the log at once (a killed process loses nothing), and on the
    disk with the next save."""
    check_owner(owner)
    ttl = check_ttl(ttl)
    step = sqlite_claim if write == "claim" else sqlite_renew
    return await db.run(f"cannot {write} {what}", lambda conn: step(conn, table, key, owner, ttl), durable=False)


def sqlite_release(conn: sqlite3.Connection, table: str, key: str, owner: str) -> None:
    conn.execute(f"DELETE FROM {table} WHERE id = ? AND owner = ?", (key, owner))


def sqlite_holder(conn: sqlite3.Connection, table: str, key: str) -> Lease | None:
    now = time.time()
    row = conn.execute(
        f"SELECT owner, claimed_at, expires_at FROM {table} WHERE id = ? AND expires_at > ?", (key, now)
    ).fetchone()
    if row is None:
        return None
    owner, claimed_at, expires_at = row
    held_for = 0.0 if claimed_at is None else max(0.0, now - claimed_at)  # the clock may have stepped back
    return Lease(owner=owner, held_for=held_for, expires_in=expires_at - now)


def sqlite_break(conn: sqlite3.Connection, table: str, key: str, owner: str) -> bool:
    row = conn.execute(
        f"DELETE FROM {table} WHERE id = ? AND owner = ? RETURNING expires_at > ?", (key, owner, time.time())
    ).fetchone()
    return row is not None and bool(row[0])


# -- PostgreSQL ------------------------------------------------------------------------------------------------------


def postgres_lease_table(table: str) -> str:
    """The lease table, and the column the previous release's table lacks (``claimed_at``, NULL in its rows).

    The column is added only when it is missing: ``ALTER TABLE`` takes the table's strongest lock even when it has
    nothing to do, and every store runs this when it opens.
    """
    return (
        f"CREATE TABLE IF NOT EXISTS {table} "
        "(id TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at TIMESTAMPTZ NOT NULL, claimed_at TIMESTAMPTZ);"
        "DO $$ BEGIN "
        f"IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = '{table}'::regclass "
        "AND attname = 'claimed_at' AND NOT attisdropped) THEN "
        f"ALTER TABLE {table} ADD COLUMN claimed_at TIMESTAMPTZ; "
        "END IF; END $$;"
    )


def postgres_claim_sql(table: str) -> str:
    """``$1`` key, ``$2`` owner, ``$3`` ttl in seconds; returns true when the claim won.

    The WHERE clause of ``ON CONFLICT DO UPDATE`` is evaluated on the locked, latest row, so of two racing claims
    exactly one wins. Expiry uses the server's clock, the one clock every worker shares. In the SET list,
    ``lease.*`` is the row before the update: the start is kept when the owner renews a lease that has not lapsed.
    """
    return (
        f"INSERT INTO {table} AS lease (id, owner, expires_at, claimed_at) "
        "VALUES ($1, $2, clock_timestamp() + make_interval(secs => $3), clock_timestamp()) "
        "ON CONFLICT (id) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at, "
        "claimed_at = CASE WHEN lease.owner = EXCLUDED.owner AND lease.expires_at > clock_timestamp() "
        "THEN lease.claimed_at ELSE EXCLUDED.claimed_at END "
        "WHERE lease.owner = EXCLUDED.owner OR lease.expires_at <= clock_timestamp() "
        "RETURNING true"
    )


def postgres_renew_sql(table: str) -> str:
    """``$1`` key, ``$2`` owner, ``$3`` ttl in seconds; true when ``$2`` held the lease unexpired and now holds it
    ``$3`` seconds more, no row when it lapsed or is another's (the row lock orders it with a racing claim)."""
    return (
        f"UPDATE {table} SET expires_at = clock_timestamp() + make_interval(secs => $3) "
        "WHERE id = $1 AND owner = $2 AND expires_at > clock_timestamp() RETURNING true"
    )


def postgres_release_sql(table: str) -> str:
    """``$1`` key, ``$2`` owner."""
    return f"DELETE FROM {table} WHERE id = $1 AND owner = $2"


def postgres_break_sql(table: str) -> str:
    """``$1`` key, ``$2`` owner; returns true when it deleted a live lease, false for a lapsed one, no row else."""
    return f"DELETE FROM {table} WHERE id = $1 AND owner = $2 RETURNING expires_at > clock_timestamp()"


# The holder's figures, from a row of (owner, claimed_at, expires_at, now); a NULL start counts as 0.
_FIGURES = (
    "owner, coalesce(extract(epoch FROM now - claimed_at)::float8, 0) AS held_for, "
    "extract(epoch FROM expires_at - now)::float8 AS expires_in"
)


def postgres_holder_sql(table: str) -> str:
    """``$1`` key; one row (owner, held_for, expires_in) for a live lease, none else."""
    return (
        f"SELECT {_FIGURES} FROM (SELECT *, clock_timestamp() AS now FROM {table} WHERE id = $1) AS lease "
        "WHERE expires_at > now"
    )


def postgres_fence_cte(table: str) -> str:
    """The ``WITH`` list of a fenced write: ``$1`` key, ``$2`` owner.

    ``fence`` has one row when the id has a lease row, with ``held`` (true when ``$2`` holds it unexpired) and the
    holder's figures, computed once, so that the write and its answer agree. ``FOR SHARE`` locks the lease row
    until the statement ends: a claim racing the write waits for it, then finds the lease as the write left it.
    """
    return (
        f"lease AS (SELECT owner, claimed_at, expires_at FROM {table} WHERE id = $1 FOR SHARE), "
        "fence AS (SELECT owner = $2 AND expires_at > now AS held, expires_at > now AS live, "
        f"{_FIGURES} FROM (SELECT *, clock_timestamp() AS now FROM lease) AS timed)"
    )


def postgres_lease(row: Any) -> Lease | None:
    """The ``Lease`` in a row of (owner, held_for, expires_in) and maybe more; None for no row."""
    if row is None:
        return None
    return Lease(owner=row["owner"], held_for=max(0.0, row["held_for"]), expires_in=row["expires_in"])

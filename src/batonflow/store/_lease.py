"""Leases: the one conditional write each backend makes so that, of two workers resuming the same thing at once,
exactly one goes ahead.

A lease names its owner and expires on its own, so a worker that dies holding one blocks nobody for longer than
its ttl. Claiming succeeds when the lease is free, has expired, or is already the claimant's (which renews it);
releasing deletes it only for its owner. Checkpoint stores lease checkpoints, session stores lease conversations;
both use what is here, so the rule is written once per backend: a dict for memory, a conditional upsert for SQLite
and PostgreSQL, a Lua script for Redis.
"""

from __future__ import annotations

import sqlite3
import time

__all__ = [
    "REDIS_CLAIM",
    "REDIS_RELEASE",
    "MemoryLeases",
    "postgres_claim_sql",
    "postgres_lease_table",
    "postgres_release_sql",
    "redis_ttl_ms",
    "sqlite_claim",
    "sqlite_lease_table",
    "sqlite_release",
]


class MemoryLeases:
    """Leases in this process's memory; each call finishes without awaiting, hence is atomic for the event loop."""

    def __init__(self) -> None:
        self._held: dict[str, tuple[str, float]] = {}  # key -> (owner, monotonic expiry)

    def claim(self, key: str, owner: str, ttl: float) -> bool:
        now = time.monotonic()
        held = self._held.get(key)
        if held is not None and held[0] != owner and held[1] > now:
            return False
        self._held[key] = (owner, now + ttl)
        return True

    def release(self, key: str, owner: str) -> None:
        held = self._held.get(key)
        if held is not None and held[0] == owner:
            del self._held[key]


# -- SQLite ----------------------------------------------------------------------------------------------------------


def sqlite_lease_table(table: str) -> str:
    return f"CREATE TABLE IF NOT EXISTS {table} (id TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at REAL NOT NULL)"


def sqlite_claim(conn: sqlite3.Connection, table: str, key: str, owner: str, ttl: float) -> bool:
    # One conditional upsert: SQLite's write lock orders racing claims, and the loser's WHERE sees the winner's
    # row. Wall-clock time, since the processes sharing the file share the machine's clock.
    now = time.time()
    rows = conn.execute(
        f"INSERT INTO {table} (id, owner, expires_at) VALUES (?, ?, ?) "
        "ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at "
        f"WHERE {table}.owner = excluded.owner OR {table}.expires_at <= ? "
        "RETURNING 1",
        (key, owner, now + ttl, now),
    ).fetchall()
    return bool(rows)


def sqlite_release(conn: sqlite3.Connection, table: str, key: str, owner: str) -> None:
    conn.execute(f"DELETE FROM {table} WHERE id = ? AND owner = ?", (key, owner))


# -- PostgreSQL ------------------------------------------------------------------------------------------------------


def postgres_lease_table(table: str) -> str:
    return f"CREATE TABLE IF NOT EXISTS {table} (id TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at TIMESTAMPTZ NOT NULL)"


def postgres_claim_sql(table: str) -> str:
    """``$1`` key, ``$2`` owner, ``$3`` ttl in seconds; returns true when the claim won.

    The WHERE clause of ``ON CONFLICT DO UPDATE`` is evaluated on the locked, latest row, so of two racing claims
    exactly one wins. Expiry uses the server's clock, the one clock every worker shares.
    """
    return (
        f"INSERT INTO {table} AS lease (id, owner, expires_at) "
        "VALUES ($1, $2, clock_timestamp() + make_interval(secs => $3)) "
        "ON CONFLICT (id) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at "
        "WHERE lease.owner = EXCLUDED.owner OR lease.expires_at <= clock_timestamp() "
        "RETURNING true"
    )


def postgres_release_sql(table: str) -> str:
    """``$1`` key, ``$2`` owner."""
    return f"DELETE FROM {table} WHERE id = $1 AND owner = $2"


# -- Redis -----------------------------------------------------------------------------------------------------------

# A lease is a key with a server-side expiry, so an expired lease simply no longer exists.
# KEYS[1] = lease key, ARGV[1] = owner, ARGV[2] = ttl in milliseconds. Re-claiming one's own lease renews it.
REDIS_CLAIM = """
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""

# KEYS[1] = lease key, ARGV[1] = owner. Another owner's lease is left alone.
REDIS_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


def redis_ttl_ms(ttl: float) -> int:
    return max(1, round(ttl * 1000))

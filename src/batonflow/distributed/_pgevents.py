"""Live events without Redis: ``PostgresEventLog``, the event log of ``RedisEventLog``'s API on a PostgreSQL
database (it may be the DBOS database), for deployments that run no Redis.

- **Records** are rows of ``<prefix>_events``: the run, an id from one identity column, the event's ``seq``, its
  kind, its segment, its data (the codec's JSON, as text), and its number and attempt (``Numbering``: a record lost
  leaves a hole in the numbers). A record's id, written ``<id>-0``, is what
  ``Last-Event-ID`` names, in the same shape as a Redis stream id.
- **One writer at a time per run.** A publish first updates the run's row of ``<prefix>_event_runs`` (its length
  and expiry), which holds that row's lock until it commits; so within a run, ids are taken in commit order, and a
  reader that has seen id N never misses a record below it committed later.
- **Readers wake on NOTIFY.** Each publish notifies ``<prefix>_events`` with the run as payload, at its commit. One
  listening connection per log (per process) relays the notifications to the followers of each run, who then query
  for what is new; a follower holds a connection only while it queries. A follower listens before it queries, so a
  record committed in between wakes it. A follower also looks again every ``block`` seconds, should a notification
  be lost (the listening connection broke: it is made again on the next wait, and wakes everyone).
- **Bounds.** A run keeps its last ``maxlen`` records (a publish past it deletes the oldest) and lapses ``ttl``
  seconds after its last write: a lapsed run reads as empty at once, its rows are deleted by the next publish to it
  or by the sweep a publish runs every ``expire_every`` seconds (``expire``), a batch of runs at a time.
- **Cancel flags** are rows of ``<prefix>_event_cancels`` with an expiry; a request notifies ``<prefix>_cancels``,
  so a worker's ``watch_cancel`` stops its segment at once, and polls every ``every`` seconds in case.

Needs psycopg 3 (the ``dbos`` extra brings it); never pickles.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any, TypeAlias

from ..codec import decode_json, encode_json
from ..errors import UserError
from ._checks import count, seconds
from ._events import EventRecord, Kind, Numbering

if TYPE_CHECKING:
    from psycopg import AsyncConnection

    Connection: TypeAlias = AsyncConnection[tuple[Any, ...]]

__all__ = ["PostgresEventLog"]

_log = logging.getLogger("batonflow.distributed")

_PREFIX = re.compile(r"[a-z_][a-z0-9_]{0,39}")
_RECORD_ID = re.compile(r"(\d{1,20})-\d{1,20}")
_MAX_ID = 2**63 - 1  # a bigint
_MAX_PAYLOAD = 7000  # NOTIFY's payload must stay under 8000 bytes: a longer key wakes every follower instead
_BATCH = 256  # records a follower reads per query
_EXPIRE_BATCH = 1000  # lapsed runs one sweep deletes

_SCHEMA = """
CREATE TABLE IF NOT EXISTS {p}_events (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run text NOT NULL,
    seq bigint NOT NULL,
    kind text NOT NULL CHECK (kind IN ('event', 'end')),
    segment text NOT NULL,
    data text NOT NULL
);
CREATE INDEX IF NOT EXISTS {p}_events_run ON {p}_events (run, id);
CREATE TABLE IF NOT EXISTS {p}_event_runs (
    run text PRIMARY KEY,
    length bigint NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS {p}_event_runs_expiry ON {p}_event_runs (expires_at);
CREATE TABLE IF NOT EXISTS {p}_event_cancels (
    segment text PRIMARY KEY,
    expires_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS {p}_event_cancels_expiry ON {p}_event_cancels (expires_at);
ALTER TABLE {p}_events ADD COLUMN IF NOT EXISTS n bigint NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS attempt text NOT NULL DEFAULT '';
"""

# The run's row, locked until the publish commits: its length counts the records it keeps (1 again once it lapsed).
_CLAIM_RUN = """
INSERT INTO {p}_event_runs AS r (run, length, expires_at) VALUES (%(run)s, 1, now() + make_interval(secs => %(ttl)s))
ON CONFLICT (run) DO UPDATE SET
    length = CASE WHEN r.expires_at <= now() THEN 1 ELSE r.length + 1 END,
    expires_at = excluded.expires_at
RETURNING length
"""

# The record, after what a lapsed run left (length 1) or the oldest past maxlen (excess > 0); notified at commit.
_APPEND = """
WITH lapsed AS (
    DELETE FROM {p}_events WHERE run = %(run)s AND %(length)s = 1
), trimmed AS (
    DELETE FROM {p}_events WHERE id IN (
        SELECT id FROM {p}_events WHERE run = %(run)s ORDER BY id LIMIT %(excess)s
    )
), capped AS (
    UPDATE {p}_event_runs SET length = %(maxlen)s WHERE run = %(run)s AND %(excess)s > 0
), added AS (
    INSERT INTO {p}_events (run, seq, kind, segment, data, n, attempt)
    VALUES (%(run)s, %(seq)s, %(kind)s, %(segment)s, %(data)s, %(n)s, %(attempt)s) RETURNING id
)
SELECT id, pg_notify(%(channel)s, %(payload)s) FROM added
"""

_READ = """
SELECT e.id, e.seq, e.kind, e.segment, e.data, e.n, e.attempt
FROM {p}_events e JOIN {p}_event_runs r ON r.run = e.run
WHERE e.run = %s AND e.id > %s AND r.expires_at > now()
ORDER BY e.id LIMIT %s
"""

_LAST = """
SELECT e.id, e.seq, e.kind, e.segment, e.data, e.n, e.attempt
FROM {p}_events e JOIN {p}_event_runs r ON r.run = e.run
WHERE e.run = %s AND r.expires_at > now()
ORDER BY e.id DESC LIMIT 1
"""

_EXPIRE = """
WITH gone AS (
    DELETE FROM {p}_event_runs WHERE run IN (
        SELECT run FROM {p}_event_runs WHERE expires_at <= now() ORDER BY expires_at LIMIT %(batch)s
        FOR UPDATE SKIP LOCKED
    ) RETURNING run
), records AS (
    DELETE FROM {p}_events e USING gone WHERE e.run = gone.run
), flags AS (
    DELETE FROM {p}_event_cancels WHERE segment IN (
        SELECT segment FROM {p}_event_cancels WHERE expires_at <= now() LIMIT %(batch)s FOR UPDATE SKIP LOCKED
    )
)
SELECT count(*) FROM gone
"""

_REQUEST_CANCEL = """
WITH flag AS (
    INSERT INTO {p}_event_cancels (segment, expires_at) VALUES (%(segment)s, now() + make_interval(secs => %(ttl)s))
    ON CONFLICT (segment) DO UPDATE SET expires_at = excluded.expires_at
    RETURNING segment
)
SELECT pg_notify(%(channel)s, %(payload)s) FROM flag
"""

_CANCEL_REQUESTED = "SELECT EXISTS (SELECT 1 FROM {p}_event_cancels WHERE segment = %s AND expires_at > now())"


class PostgresEventLog:
    """Runs' live records and cancel flags in the PostgreSQL database at ``url``: one listening connection, and at
    most ``max_connections`` more for statements (a follower holds one only while it queries)."""

    def __init__(
        self,
        url: str,
        *,
        maxlen: int = 10_000,
        ttl: float = 3600.0,
        prefix: str = "batonflow",
        max_connections: int = 10,
        connect_timeout: float = 10.0,
        expire_every: float = 60.0,
    ) -> None:
        self.ttl = seconds("ttl", ttl)
        count("maxlen", maxlen)
        count("max_connections", max_connections)
        if not isinstance(prefix, str) or _PREFIX.fullmatch(prefix) is None:
            raise UserError(
                f"prefix: expected lower-case letters, digits and '_' (a table name's start, 40 at most), "
                f"got {prefix!r}"
            )
        self.url = _libpq_url(url)
        self.maxlen = maxlen
        self.prefix = prefix
        self.max_connections = max_connections
        self.connect_timeout = seconds("connect_timeout", connect_timeout)
        self.expire_every = seconds("expire_every", expire_every)
        self.events_channel = f"{prefix}_events"
        self.cancels_channel = f"{prefix}_cancels"
        self._sql = {name: text.format(p=prefix) for name, text in _STATEMENTS.items()}
        self._idle: list[Connection] = []
        self._slots = asyncio.Semaphore(max_connections)
        self._schema_made = False
        self._schema_lock = asyncio.Lock()
        self._listen_lock = asyncio.Lock()
        self._listener: Connection | None = None  # the listening connection, while it listens
        self._relay: asyncio.Task[None] | None = None
        self._waiters: dict[tuple[str, str], set[asyncio.Event]] = {}
        self._next_expiry = time.monotonic() + self.expire_every
        self._closed = False
        self.numbering = Numbering()

    async def publish(self, run: str, segment_id: str, seq: int, kind: Kind, data: dict[str, Any]) -> str:
        """Append a record to ``run``'s records; its id (``<n>-0``)."""
        if kind not in ("event", "end"):
            raise UserError(f"kind: expected 'event' or 'end', got {kind!r}")
        text = encode_json(data, what="event")
        attempt, number = self.numbering.next(segment_id, kind)
        async with self._connection() as conn, conn.transaction():
            claimed = await conn.execute(self._sql["claim"], {"run": run, "ttl": self.ttl})
            (length,) = _one(await claimed.fetchone())
            added = await conn.execute(
                self._sql["append"],
                {
                    "run": run,
                    "length": length,
                    "excess": max(0, length - self.maxlen),
                    "maxlen": self.maxlen,
                    "seq": seq,
                    "kind": kind,
                    "segment": segment_id,
                    "data": text,
                    "n": number,
                    "attempt": attempt,
                    "channel": self.events_channel,
                    "payload": _payload(run),
                },
            )
            record_id, _ = _one(await added.fetchone())
        if time.monotonic() >= self._next_expiry:
            self._next_expiry = time.monotonic() + self.expire_every
            try:
                await self.expire()
            except Exception:  # the sweep is housekeeping: the next one tries again, and lapsed runs read as empty
                _log.warning("event log: deleting lapsed runs failed; trying again later", exc_info=True)
        return f"{record_id}-0"

    async def read(self, run: str, after: str = "0-0", *, block: float = 10.0) -> AsyncIterator[EventRecord]:
        """``run``'s records after record id ``after``, then the new ones as they come, up to and with the next
        ``end`` record (read again after it for the next segment's). ``block``: the longest a follower waits for a
        notification before it looks again anyway."""
        last = _record_number(after)
        wait = seconds("block", block)
        async with self._waiting("events", run) as woken:
            while True:
                await self._listening()
                woken.clear()  # before the query: a record committed from here on sets it again
                async with self._connection() as conn:
                    rows = await (await conn.execute(self._sql["read"], (run, last, _BATCH))).fetchall()
                for row in rows:
                    record = _record(row)
                    last = int(row[0])
                    yield record
                    if record.kind == "end":
                        return
                if not rows:
                    await _nap(woken, wait)

    async def last(self, run: str) -> EventRecord | None:
        """``run``'s latest record, None when it has none (or they lapsed)."""
        async with self._connection() as conn:
            row = await (await conn.execute(self._sql["last"], (run,))).fetchone()
        return None if row is None else _record(row)

    async def request_cancel(self, segment_id: str) -> None:
        """Flag ``segment_id`` cancelled (for ``ttl`` seconds) and tell the watchers."""
        params = {
            "segment": segment_id,
            "ttl": self.ttl,
            "channel": self.cancels_channel,
            "payload": _payload(segment_id),
        }
        async with self._connection() as conn:
            await conn.execute(self._sql["request_cancel"], params)

    async def cancel_requested(self, segment_id: str) -> bool:
        async with self._connection() as conn:
            found = await conn.execute(self._sql["cancel_requested"], (segment_id,))
            return bool(_one(await found.fetchone())[0])

    async def watch_cancel(self, segment_id: str, task: asyncio.Task[Any], *, every: float = 5.0) -> None:
        """Cancel ``task`` once a cancel of ``segment_id`` is requested (runs until cancelled itself): woken by the
        request's notification, and looking every ``every`` seconds in case one was lost."""
        wait = seconds("every", every)
        async with self._waiting("cancels", segment_id) as woken:
            while not task.done():
                await self._listening()
                woken.clear()
                if await self.cancel_requested(segment_id):
                    task.cancel()
                    return
                await _nap(woken, wait)

    async def expire(self) -> int:
        """Delete the runs that lapsed (up to a batch of them) with their records, and lapsed cancel flags; how
        many runs went. ``publish`` calls it every ``expire_every`` seconds."""
        async with self._connection() as conn:
            gone = await conn.execute(self._sql["expire"], {"batch": _EXPIRE_BATCH})
            return int(_one(await gone.fetchone())[0])

    async def close(self) -> None:
        """Close the listening connection and the idle ones; a follower still waiting is woken, and fails."""
        self._closed = True
        relay, self._relay = self._relay, None
        if relay is not None:
            relay.cancel()
            await asyncio.gather(relay, return_exceptions=True)
        listener, self._listener = self._listener, None
        if listener is not None:
            await listener.close()
        idle, self._idle = self._idle, []
        for conn in idle:
            await conn.close()
        self._wake_all()

    # The connections.

    async def _connect(self) -> Connection:
        if self._closed:
            raise UserError("event log: expected an open PostgresEventLog, got one that was closed")
        psycopg = _import_psycopg()
        conn: Connection = await psycopg.AsyncConnection.connect(
            self.url, autocommit=True, connect_timeout=max(1, round(self.connect_timeout))
        )
        try:
            # Live events are not a run's record (its checkpoint is): a crash of the server may cost the last
            # few ms of them, and a publish need not wait for the WAL to reach the disk.
            await conn.execute("SET synchronous_commit TO off")
            await self._made_schema(conn)
        except BaseException:
            await conn.close()
            raise
        return conn

    async def _made_schema(self, conn: Connection) -> None:
        """The tables, made once, under an advisory lock (concurrent ``CREATE … IF NOT EXISTS`` collide). Tables that
        are there are left alone: even ``CREATE INDEX IF NOT EXISTS`` locks its table against writes, and with a
        publish under way that is a deadlock."""
        if self._schema_made:
            return
        async with self._schema_lock:
            if self._schema_made:
                return
            if not await self._schema_exists(conn):
                async with conn.transaction():
                    await conn.execute("SELECT pg_advisory_xact_lock(%s)", (zlib.crc32(self._sql["schema"].encode()),))
                    if not await self._schema_exists(conn):  # another process may have made them meanwhile
                        await conn.execute(self._sql["schema"])
            self._schema_made = True

    async def _schema_exists(self, conn: Connection) -> bool:
        """Whether the tables are there as this release needs them: the records numbered (their last column)."""
        found = await conn.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attname = 'attempt' "
            "AND NOT attisdropped)",
            (f"{self.prefix}_events",),
        )
        return bool(_one(await found.fetchone())[0])

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[Connection]:
        """A connection for statements: an idle one, or a new one while fewer than ``max_connections`` are out (else
        the wait for one). One that failed, or was cancelled mid-statement, is closed rather than kept."""
        async with self._slots:
            conn = self._idle.pop() if self._idle else await self._connect()
            try:
                yield conn
            except BaseException:
                await conn.close()
                raise
            if conn.closed or self._closed:
                await conn.close()
            else:
                self._idle.append(conn)

    async def _listening(self) -> None:
        """Make sure a connection listens on both channels (and relays what it hears), making one if it must."""
        if self._listener is not None:
            return
        async with self._listen_lock:
            if self._listener is not None:
                return
            conn = await self._connect()
            try:
                await conn.execute(f"LISTEN {self.events_channel}")
                await conn.execute(f"LISTEN {self.cancels_channel}")
            except BaseException:
                await conn.close()
                raise
            self._listener = conn
            self._relay = asyncio.ensure_future(self._relay_notifications(conn))

    async def _relay_notifications(self, conn: Connection) -> None:
        """Wake the followers of each notified run (or segment). When the connection fails, everyone is woken: each
        looks for itself, and its next wait listens again."""
        try:
            async for note in conn.notifies():
                kind = "events" if note.channel == self.events_channel else "cancels"
                if note.payload:
                    for woken in self._waiters.get((kind, note.payload), ()):
                        woken.set()
                else:
                    self._wake_all(kind)
        except Exception as error:
            _log.warning("event log: the listening connection failed (%s); listening again on the next wait", error)
        finally:
            if self._listener is conn:
                self._listener = None
            self._wake_all()
            await conn.close()

    @asynccontextmanager
    async def _waiting(self, kind: str, key: str) -> AsyncIterator[asyncio.Event]:
        """An event the relay sets whenever ``key`` (a run, or a segment) is notified on ``kind``'s channel."""
        woken = asyncio.Event()
        waiters = self._waiters.setdefault((kind, key), set())
        waiters.add(woken)
        try:
            yield woken
        finally:
            waiters.discard(woken)
            if not waiters:
                self._waiters.pop((kind, key), None)

    def _wake_all(self, kind: str | None = None) -> None:
        for (which, _), waiters in self._waiters.items():
            if kind is None or which == kind:
                for woken in waiters:
                    woken.set()


_STATEMENTS = {
    "schema": _SCHEMA,
    "claim": _CLAIM_RUN,
    "append": _APPEND,
    "read": _READ,
    "last": _LAST,
    "expire": _EXPIRE,
    "request_cancel": _REQUEST_CANCEL,
    "cancel_requested": _CANCEL_REQUESTED,
}


async def _nap(woken: asyncio.Event, seconds: float) -> None:
    """Until ``woken`` is set, or ``seconds`` have passed."""
    with suppress(TimeoutError):
        await asyncio.wait_for(woken.wait(), seconds)


def _import_psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise ImportError("PostgresEventLog needs psycopg 3: pip install 'batonflow[dbos]'") from exc
    return psycopg


def _libpq_url(url: object) -> str:
    """``url`` as libpq takes it: a SQLAlchemy URL's driver (``postgresql+psycopg://``) dropped."""
    if not isinstance(url, str):
        raise UserError(f"url: expected a PostgreSQL URL (postgresql://…), got {type(url).__name__}")
    scheme, sep, rest = url.partition("://")
    base = scheme.partition("+")[0]
    if not sep or base not in ("postgresql", "postgres"):
        raise UserError(f"url: expected a PostgreSQL URL (postgresql://…), got one of scheme {scheme!r}")
    return f"{base}://{rest}"


def _record_number(after: object) -> int:
    """The number of record id ``after`` (``<n>-<m>``: what follows it has an id above ``n``)."""
    found = _RECORD_ID.fullmatch(after) if isinstance(after, str) else None
    if found is None or int(found[1]) > _MAX_ID:
        raise UserError(f"after: expected a record id such as '42-0' (digits, '-', digits), got {after!r}")
    return int(found[1])


def _payload(key: str) -> str:
    """The notification's payload: the key, or '' (everyone looks) when it is too long for NOTIFY."""
    return key if len(key.encode("utf-8")) <= _MAX_PAYLOAD else ""


def _one(row: Any) -> Any:
    if row is None:  # each statement returns a row; a database that answers none is not one we know
        raise UserError("event log: expected a row from PostgreSQL, got none")
    return row


def _record(row: Any) -> EventRecord:
    record_id, seq, kind, segment, data, number, attempt = row
    return EventRecord(
        stream_id=f"{record_id}-0",
        seq=int(seq),
        kind=kind,
        segment_id=segment,
        data=decode_json(data, what="event"),
        number=int(number),
        attempt=attempt,
    )

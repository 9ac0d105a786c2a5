"""Live events across processes: the worker running a segment appends each event to its run's event log, and any
API process reads it from there — from the start, or after the last record id a client saw. ``EventLog`` is what
DBOSBackend, DBOSWorker and the server need of one; ``RedisEventLog`` keeps it on a Redis Stream per run (this
module), ``PostgresEventLog`` in PostgreSQL tables, for deployments without Redis (``_pgevents``).

- One stream per run (``batonflow:events:<checkpoint id>``): all its segments, in order, each closed by an ``end``
  record that carries the segment's outcome.
- Each record is a frame (``_frames``: what the server sends as one SSE event, ``{"event": name, "data": json}``) and
  has its event's ``seq``, so a client can drop the few events a crashed segment's retry sends again.
- Each record is numbered: ``number`` counts the records one attempt of a segment published (from 1), ``attempt``
  names that attempt (a fresh token each time a process starts publishing a segment). The number is taken before
  the write is tried, so a record lost to an outage, or trimmed by ``maxlen``, leaves a hole in the numbers that a
  follower reports (the server's ``gap`` event) instead of skipping it silently.
- The stream is bounded (``maxlen``: each append past it drops the oldest record) and expires ``ttl`` seconds after
  its last write (within a tenth of it: ``PublishBatch`` renews the expiry with a segment's ``end``, and otherwise
  once a tenth of the ttl has passed): the durable record of a run is its checkpoint and session, not its live
  stream.
- Cancellation travels the other way: ``request_cancel`` sets a key the worker polls while the segment runs.
- Round trips are shared: the records a process publishes at the same moment (its segments' events) go to Redis
  in one pipeline, each publish still awaiting its own record (``PublishBatch``), and one ``MGET`` every pace looks at
  the cancel flags of all the segments the process watches (``CancelWatch``). A worker running 200 segments
  made a round trip per record and five cancel looks a second per segment before.

Events are written as the codec's JSON (a message is a registered type), never pickled.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from ..codec import decode_json, encode_json
from ..errors import UserError
from ._checks import count, seconds
from ._redis_shared import CancelWatch, PublishBatch, driver_options

__all__ = [
    "END_RETRIES",
    "EventLog",
    "EventRecord",
    "Numbering",
    "RedisEventLog",
    "event_log_at",
    "publish_end",
    "watch_cancels",
]

_log = logging.getLogger("batonflow.distributed")

Kind = Literal["event", "end"]


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One entry of a run's stream: ``stream_id`` (the log's record id, ``<n>-<m>``, what ``Last-Event-ID`` names),
    the event's ``seq``, ``kind`` (``event``, or ``end`` with the segment's outcome), and ``data``; ``number`` and
    ``attempt`` place it among the records of its segment's attempt (``Numbering``; 0 and '' for a record written
    by an earlier release, which has none)."""

    stream_id: str
    seq: int
    kind: Kind
    segment_id: str
    data: dict[str, Any]
    number: int = 0
    attempt: str = ""


class Numbering:
    """The numbers a log gives the records it publishes: per segment, 1, 2, 3… under an attempt token made when this
    process publishes the segment's first record, forgotten at its ``end``. Only one process runs a segment at a
    time (a retry elsewhere is a new attempt), so the numbers need no coordination. At most ``keep`` segments are
    remembered (the least recently published forgotten first): one forgotten mid-run starts a new attempt, which a
    follower takes as a restart, never as a gap."""

    def __init__(self, keep: int = 10_000) -> None:
        self.keep = count("keep", keep)
        self._segments: OrderedDict[str, tuple[str, int]] = OrderedDict()

    def next(self, segment_id: str, kind: Kind) -> tuple[str, int]:
        """The attempt and number of ``segment_id``'s next record (taken whether or not its write succeeds)."""
        held = self._segments.pop(segment_id, None)
        attempt, number = held if held is not None else (secrets.token_hex(4), 0)
        number += 1
        if kind != "end":
            self._segments[segment_id] = (attempt, number)
            while len(self._segments) > self.keep:
                self._segments.popitem(last=False)
        return attempt, number


@runtime_checkable
class EventLog(Protocol):
    """Where runs' live records and cancel flags travel between processes. Record ids are ``<n>-<m>`` (digits), in
    the order of the records: ``read`` after one gives what came later."""

    async def publish(self, run: str, segment_id: str, seq: int, kind: Kind, data: dict[str, Any]) -> str:
        """Append a record to ``run``'s records; its id."""
        ...

    def read(self, run: str, after: str = "0-0") -> AsyncIterator[EventRecord]:
        """``run``'s records after record id ``after``, then the new ones as they come, up to and with the next
        ``end`` record."""
        ...

    async def last(self, run: str) -> EventRecord | None:
        """``run``'s latest record, None when it has none (or they lapsed)."""
        ...

    async def request_cancel(self, segment_id: str) -> None: ...

    async def cancel_requested(self, segment_id: str) -> bool: ...

    async def watch_cancel(self, segment_id: str, task: asyncio.Task[Any]) -> None:
        """Cancel ``task`` once a cancel of ``segment_id`` is requested (runs until cancelled itself)."""
        ...

    async def close(self) -> None: ...


async def watch_cancels(log: EventLog, segment_id: str, task: asyncio.Task[Any], *, retry: float = 1.0) -> None:
    """``log.watch_cancel`` for as long as ``task`` runs, started again ``retry`` seconds after it failed (the log
    away: a Redis or PostgreSQL outage), so that a cancel requested after the log came back still stops the task.
    The first failure of each watch is logged."""
    wait = seconds("retry", retry)
    failed = False
    while not task.done():
        try:
            await log.watch_cancel(segment_id, task)
            return
        except Exception as error:
            if not failed:
                failed = True
                _log.warning(
                    "segment %s: cannot watch for its cancel (%s): trying again every %g s", segment_id, error, wait
                )
            await asyncio.sleep(wait)


END_RETRIES = (0.25, 0.5, 1.0, 2.0)
"""The waits before an ``end`` record whose publish failed is published again (``publish_end``)."""


async def publish_end(
    log: EventLog, run: str, segment_id: str, seq: int, data: dict[str, Any], *, waits: tuple[float, ...] = END_RETRIES
) -> bool:
    """Publish ``segment_id``'s ``end`` record, again after each of ``waits`` while the publish fails (a log just
    back from an outage, a connection lost): it is the record that ends the segment's followers with its outcome,
    where a lost event costs them only a ``gap``. Each failure is logged; False when every try failed (the followers
    then make up the end from the backend's outcome, ``end_record: lost``). A retried end is numbered as the first
    record of a new attempt (the first try ended the segment's numbering), which a follower takes as a restart."""
    for wait in (*waits, None):
        try:
            await log.publish(run, segment_id, seq, "end", data)
            return True
        except Exception as error:
            again = "" if wait is None else f"; again in {wait:g} s"
            _log.warning("segment %s: its end record was not published (%s)%s", segment_id, error, again)
            if wait is None:
                return False
            await asyncio.sleep(wait)
    return False


def event_log_at(url: str, *, max_connections: int | None = None) -> EventLog:
    """The event log at ``url``, by its scheme: ``redis://`` (or ``rediss://``, ``unix://``) a ``RedisEventLog``,
    ``postgresql://`` (or ``postgres://``) a ``PostgresEventLog``, each with its default bounds; with
    ``max_connections``, that many connections for its commands or statements at most (its default when None)."""
    if not isinstance(url, str):
        raise UserError(f"events URL: expected a string, got {type(url).__name__}")
    scheme, sep, _ = url.partition("://")
    kind = scheme.partition("+")[0] if sep else ""
    if kind in ("redis", "rediss", "unix"):
        return RedisEventLog(url) if max_connections is None else RedisEventLog(url, max_connections=max_connections)
    if kind in ("postgresql", "postgres"):
        from ._pgevents import PostgresEventLog

        return (
            PostgresEventLog(url) if max_connections is None else PostgresEventLog(url, max_connections=max_connections)
        )
    found = f"one of scheme {scheme!r}" if sep else "no scheme"  # not the URL: it may hold a password
    raise UserError(f"events URL: expected redis://… or postgresql://…, got {found}")


class RedisEventLog:
    """Runs' live streams and cancel flags in the Redis at ``url``, over at most ``max_connections`` connections for
    commands, and one more on which a single blocking read serves every follower of this log (``_Followers``). A
    command that gets no answer within ``timeout`` seconds fails (a Redis paused, or a network that drops packets,
    costs a publish ``timeout`` seconds, never a hang)."""

    def __init__(
        self,
        url: str,
        *,
        maxlen: int = 10_000,
        ttl: float = 3600.0,
        prefix: str = "batonflow",
        max_connections: int = 500,
        timeout: float = 5.0,
    ) -> None:
        self.max_connections = count("max_connections", max_connections)
        self.timeout = seconds("timeout", timeout)
        self.url = url
        self.numbering = Numbering()
        self.maxlen = count("maxlen", maxlen)
        self.ttl = seconds("ttl", ttl)
        self.prefix = prefix
        self._client: Any = None
        self._followers: _Followers | None = None
        self._batch: PublishBatch | None = None
        self._watch: CancelWatch | None = None

    def _redis(self) -> Any:
        if self._client is None:  # made on first use, in the loop that uses it (a worker's is DBOS's)
            from redis.asyncio import BlockingConnectionPool, Redis

            # Past max_connections a command waits for a free connection rather than failing; followers do not
            # hold one while they wait (they share the followers' read).
            pool = BlockingConnectionPool.from_url(
                self.url,
                max_connections=self.max_connections,
                timeout=None,
                socket_timeout=self.timeout,
                socket_connect_timeout=self.timeout,
                **driver_options(),
            )
            self._client = Redis(connection_pool=pool)
        return self._client

    def stream_key(self, run: str) -> str:
        return f"{self.prefix}:events:{run}"

    def _cancel_key(self, segment_id: str) -> str:
        return f"{self.prefix}:cancel:{segment_id}"

    async def publish(self, run: str, segment_id: str, seq: int, kind: Kind, data: dict[str, Any]) -> str:
        """Append a record to ``run``'s stream; its stream id."""
        redis = self._redis()
        key = self.stream_key(run)
        text = encode_json(data, what="event")
        attempt, number = self.numbering.next(segment_id, kind)
        fields = {"seq": str(seq), "kind": kind, "segment": segment_id, "data": text, "n": str(number), "a": attempt}
        if self._batch is None:
            self._batch = PublishBatch(redis, self.maxlen, int(self.ttl * 1000))
        return await self._batch.add(key, fields)

    async def read(self, run: str, after: str = "0-0", *, block: float = 10.0) -> AsyncIterator[EventRecord]:
        """``run``'s records after stream id ``after``, then the new ones as they come, up to and with the next
        ``end`` record (read again after it for the next segment's). What is there already is read at once; then the
        follower waits on the log's one blocking read of every followed stream, and looks for itself after ``block``
        seconds without a record (a safety net: the shared read wakes it first)."""
        wait = seconds("block", block)
        key = self.stream_key(run)
        while True:
            answer = await self._redis().xread({key: after}, count=256)  # no BLOCK: what is there now
            entries = [entry for _, found in answer or () for entry in found]
            for raw_id, fields in entries:
                record = _record(raw_id, fields)
                after = record.stream_id
                yield record
                if record.kind == "end":
                    return
            if entries:
                continue
            async with self._shared().follow(key, after) as queue:
                while True:
                    try:
                        async with asyncio.timeout(wait):  # not wait_for: no task of its own for each record
                            item = await queue.get()
                    except TimeoutError:
                        break  # look for itself
                    if isinstance(item, BaseException):
                        raise item
                    after = item.stream_id
                    yield item
                    if item.kind == "end":
                        return

    async def _wake(self, key: str) -> None:
        """An entry on the followers' wake stream ``key`` (``_Followers``), from the command pool."""
        async with self._redis().pipeline(transaction=False) as pipe:
            pipe.xadd(key, {"w": "1"}, maxlen=1, approximate=False)
            pipe.pexpire(key, 60_000)
            await pipe.execute()

    def _shared(self) -> _Followers:
        if self._followers is None:
            self._followers = _Followers(self.url, self.timeout, self._wake, self.prefix)
        return self._followers

    async def last(self, run: str) -> EventRecord | None:
        """``run``'s latest record, None when its stream is empty or gone."""
        entries = await self._redis().xrevrange(self.stream_key(run), count=1)
        return _record(*entries[0]) if entries else None

    async def request_cancel(self, segment_id: str) -> None:
        await self._redis().set(self._cancel_key(segment_id), b"1", px=int(self.ttl * 1000))

    async def cancel_requested(self, segment_id: str) -> bool:
        return bool(await self._redis().exists(self._cancel_key(segment_id)))

    async def watch_cancel(self, segment_id: str, task: asyncio.Task[Any], *, every: float = 0.2) -> None:
        """Cancel ``task`` once a cancel of ``segment_id`` is requested, looked for at least every ``every``
        seconds (by the one look of every segment this log watches); returns once ``task`` is done. A look that
        fails raises here."""
        pace = seconds("every", every)
        if self._watch is None:
            self._watch = CancelWatch(self._redis())
        await self._watch.until_cancelled(self._cancel_key(segment_id), task, pace)

    async def close(self) -> None:
        for part in (self._batch, self._watch):
            if part is not None:
                await part.close()
        self._batch = self._watch = None
        if self._followers is not None:
            followers, self._followers = self._followers, None
            await followers.close()
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()


class _Follower:
    __slots__ = ("after", "queue")

    def __init__(self, after: str) -> None:
        self.after = _stream_number(after)
        self.queue: asyncio.Queue[EventRecord | BaseException] = asyncio.Queue()


class _Followers:
    """One ``XREAD BLOCK`` over every stream this process follows, on a connection of its own, handing each new
    record to the followers of its stream that have not seen it: a thousand clients following runs cost one
    connection, not a thousand. A follower joins at the last id it read, so nothing published meanwhile is missed;
    a Redis error reaches every follower, which raises it.

    A follower that joins while a read is under way without its stream would wait for that read to end (up to
    ``WAIT_MS``): so the join adds an entry to this process's wake stream (``wake_key``, one entry kept, lapsing a
    minute after), which every read includes, and the read returns at once to start again with the new stream."""

    WAIT_MS = 100
    """How long one read waits: a safety net, should a wake be lost (a join wakes the read at once)."""

    def __init__(
        self,
        url: str,
        timeout: float = 5.0,
        wake: Callable[[str], Awaitable[Any]] | None = None,
        prefix: str = "batonflow",
    ) -> None:
        self.url = url
        self.timeout = timeout
        self.wake_key = f"{prefix}:wake:{secrets.token_hex(8)}"
        self._send_wake = wake
        self._waking = False
        self._wake_task: asyncio.Future[None] | None = None
        self._wake_after = "0-0"
        self._reading: set[str] = set()  # the streams of the read under way
        self._streams: dict[str, list[_Follower]] = {}
        self._task: asyncio.Task[None] | None = None
        self._client: Any = None

    @asynccontextmanager
    async def follow(self, key: str, after: str) -> AsyncIterator[asyncio.Queue[EventRecord | BaseException]]:
        follower = _Follower(after)
        self._streams.setdefault(key, []).append(follower)
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._read())
        elif key not in self._reading:
            self._wake()
        try:
            yield follower.queue
        finally:
            followers = self._streams.get(key, [])
            if follower in followers:
                followers.remove(follower)
            if not followers:
                self._streams.pop(key, None)

    def _wake(self) -> None:
        """Make the read under way return, once for all the followers joining meanwhile."""
        wake = self._send_wake
        if self._waking or wake is None:
            return
        self._waking = True

        async def send() -> None:
            try:
                await wake(self.wake_key)
            except Exception:
                pass  # the read ends within WAIT_MS all the same
            finally:
                self._waking = False

        self._wake_task = asyncio.ensure_future(send())

    async def _read(self) -> None:
        if self._client is None:
            from redis.asyncio import Redis

            wait = self.timeout + self.WAIT_MS / 1000  # a blocking read takes WAIT_MS of its own
            self._client = Redis.from_url(
                self.url,
                max_connections=1,
                socket_timeout=wait,
                socket_connect_timeout=self.timeout,
                **driver_options(),
            )
        while self._streams:
            streams = {key: _stream_id(min(f.after for f in fs)) for key, fs in self._streams.items() if fs}
            self._reading = set(streams)
            if self._send_wake is not None:
                streams[self.wake_key] = self._wake_after
            try:
                answer = await self._client.xread(streams, block=self.WAIT_MS, count=256)
            except Exception as error:
                for followers in self._streams.values():
                    for follower in followers:
                        follower.queue.put_nowait(error)
                return
            finally:
                self._reading = set()
            for raw_key, entries in answer or ():
                key = raw_key.decode() if isinstance(raw_key, bytes) else str(raw_key)
                if key == self.wake_key:
                    last = entries[-1][0]
                    self._wake_after = last.decode() if isinstance(last, bytes) else str(last)
                    continue
                for raw_id, fields in entries:
                    record = _record(raw_id, fields)
                    number = _stream_number(record.stream_id)
                    for follower in self._streams.get(key, ()):
                        if number > follower.after:
                            follower.after = number
                            follower.queue.put_nowait(record)

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()


def _stream_number(stream_id: str) -> tuple[int, int]:
    ms, _, n = stream_id.partition("-")
    return int(ms), int(n or 0)


def _stream_id(number: tuple[int, int]) -> str:
    return f"{number[0]}-{number[1]}"


def _record(raw_id: Any, fields: dict[bytes, bytes]) -> EventRecord:
    text = {k.decode(): v.decode() for k, v in fields.items()}
    kind = text["kind"]
    if kind not in ("event", "end"):
        raise UserError(f"event stream record: expected kind 'event' or 'end', got {kind!r}")
    return EventRecord(
        stream_id=raw_id.decode() if isinstance(raw_id, bytes) else str(raw_id),
        seq=int(text["seq"]),
        kind=kind,  # type: ignore[arg-type]
        segment_id=text["segment"],
        data=decode_json(text["data"], what="event"),
        number=int(text.get("n", "0")),
        attempt=text.get("a", ""),
    )

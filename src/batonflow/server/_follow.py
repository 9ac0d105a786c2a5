"""Following a run: the records of its segment read from its run's log, each sent with its record's id (what a
client's ``Last-Event-ID`` gives back, to resume after it), and who follows each run this process started. A run
that is not detached goes on while somebody follows it, and is cancelled once its last follower has been gone
``reconnect_grace`` seconds: time for that client to reconnect.

A follower ends when its run is over, even when the log lost the run's ``end`` record (an outage of Redis): after
``END_CHECK`` seconds without a record (then at growing intervals, up to ``END_CHECK_MAX``), or while the log cannot
be read, it asks the backend for the segment's
status, and once that says the segment is over and the log holds nothing more, it ends with an ``end`` that says
the record was lost (``"end_record": "lost"``) and carries the outcome the backend gives. A log that cannot be read
is tried again (with backoff) while the run goes. Records lost on the way (their numbers missing: an outage, a
stream trimmed past its bound) are reported as a ``gap`` event naming the missing numbers, never skipped silently;
a record written twice (a retried write) is sent once.
"""

import asyncio
import logging
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..distributed import EventRecord, EventsGoneError, LiveBackend, SegmentOutcome
from ..errors import SegmentFailedError
from ._errors import ApiError, shown
from ._wire import json_text, summary

__all__ = [
    "END_CHECK",
    "END_CHECK_MAX",
    "Followers",
    "Run",
    "parse_event_id",
    "record_key",
    "segment_batches",
    "segment_records",
    "sent",
    "sent_text",
]

END_CHECK = 2.0
"""Seconds a follower goes without a record before it asks the backend whether the segment is over; while the
segment goes on, each further look waits twice as long, up to ``END_CHECK_MAX`` (a model call of a minute costs a
follower a few status queries, not thirty)."""
END_CHECK_MAX = 16.0
_RETRY = (0.25, 2.0)  # the first and the longest wait before a log that failed is read again
_OUTCOME_WAIT = 30.0  # the longest a follower waits for the outcome of a segment the backend says is over
_RUNNING = ("ENQUEUED", "PENDING")
_log = logging.getLogger("batonflow.server")

_RECORD_ID_LIMIT = 2**63 - 1  # each part of a record id: PostgreSQL's bigint (Redis allows 2**64 - 1)


@dataclass(slots=True)
class Run:
    """A run this API process started: the segment, its run's key in the log, who follows it."""

    segment_id: str
    run: str
    agent: str
    key: tuple[str, str]
    detached: bool
    followers: int = 0
    timer: asyncio.TimerHandle | None = None
    watcher: "asyncio.Task[None] | None" = field(default=None, repr=False)


class Followers:
    """Who follows the runs this process started (``active``, by segment id), and the cancel of a run nobody
    follows: at once (``grace`` 0), or once ``grace`` seconds have passed without a follower coming back."""

    def __init__(self, backend: LiveBackend, active: Mapping[str, Run], grace: float) -> None:
        self.backend = backend
        self.active = active
        self.grace = grace
        self.tasks: set[asyncio.Task[Any]] = set()

    def attach(self, run: Run | None) -> None:
        """One more follower of ``run`` (None: a run another process started, which nobody here cancels)."""
        if run is None:
            return
        run.followers += 1
        if run.timer is not None:
            run.timer.cancel()
            run.timer = None

    def detach(self, run: Run | None) -> None:
        """The last follower of a run that is not detached went away: cancel it, after the grace."""
        if run is None:
            return
        run.followers -= 1
        if run.followers or run.detached or run.segment_id not in self.active:
            return
        if self.grace <= 0:
            self.cancel_later(run.segment_id)
        else:
            run.timer = asyncio.get_running_loop().call_later(self.grace, self._alone, run)

    def _alone(self, run: Run) -> None:
        run.timer = None
        if not run.followers and run.segment_id in self.active:
            self.cancel_later(run.segment_id)

    def cancel_later(self, sid: str) -> None:
        """Cancel the run without waiting for it (the follower that lets it go is done); the task is kept till it ends."""
        task = asyncio.ensure_future(self.backend.cancel(sid))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)


async def segment_records(
    backend: LiveBackend, run_key: str, sid: str, after: str, *, check_every: float = END_CHECK
) -> AsyncGenerator[EventRecord, None]:
    """The records of segment ``sid`` in its run's log after ``after``, up to its ``end`` (a run's log holds all
    its segments, a conversation's all its turns: the others' are skipped), with ``gap`` records where some were
    lost, and a made-up ``end`` when the segment is over and its own was lost (``segment_batches``)."""
    async for batch in segment_batches(backend, run_key, sid, after, check_every=check_every):
        for record in batch:
            yield record


async def segment_batches(
    backend: LiveBackend,
    run_key: str,
    sid: str,
    after: str,
    *,
    check_every: float = END_CHECK,
    history: bool = False,
) -> AsyncGenerator[list[EventRecord], None]:
    """``segment_records``, in the batches the log gives them in; with ``history``, the records of the segments
    before ``sid`` in the log too (each up to its own ``end``): a run's one at a time, so every record before
    ``sid``'s first belongs to an earlier segment, and none after its ``end`` is read. ``EventsGoneError`` when the
    log no longer has the records after ``after``; any other failure of the log is waited out while the segment
    goes on. A read that brings nothing for ``check_every`` seconds is let go (nothing was taken from it) and made
    again after ``after`` once the backend says the segment still goes."""
    sequence = _Sequence(from_start=record_key(after) == (0, 0))
    delay, quiet = _RETRY[0], check_every
    while True:
        reader = aiter(backend.batches(run_key, after))
        idle = False
        try:
            while True:
                try:
                    async with asyncio.timeout(quiet):
                        batch = await anext(reader)
                except TimeoutError:
                    idle = True
                    break
                except StopAsyncIteration:  # another segment's end: read on after it
                    break
                delay, quiet = _RETRY[0], check_every
                after = batch[-1].stream_id
                mine = sequence.checked([record for record in batch if history or record.segment_id == sid])
                if mine:
                    yield mine
                    if mine[-1].kind == "end" and mine[-1].segment_id == sid:  # a log's batch ends at an end
                        return
        except EventsGoneError:
            raise
        except Exception as error:  # the log is down: the segment may end meanwhile, or the log come back
            reason = f"the event log cannot be read ({type(error).__name__}: {error})"
            lost = await _lost_end(backend, run_key, sid, after, sequence.seq, reason)
            if lost is not None:
                yield [lost]
                return
            _log.info("run %s: %s; reading again in %g s", sid, reason, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, _RETRY[1])
        finally:
            close = getattr(reader, "aclose", None)
            if close is not None:
                await close()
        if idle:  # nothing for a while: is the segment over, its end lost?
            lost = await _lost_end(backend, run_key, sid, after, sequence.seq, None)
            if lost is not None:
                yield [lost]
                return
            quiet = min(quiet * 2, max(check_every, END_CHECK_MAX))


async def _lost_end(
    backend: LiveBackend, run_key: str, sid: str, after: str, seq: int, reason: str | None
) -> EventRecord | None:
    """The ``end`` to send for a segment that is over and whose own ``end`` the log lost, None while the segment
    goes (or its status cannot be read). A worker writes the ``end`` before the engine records the segment over: a
    log that answers and holds nothing past ``after`` has lost it. ``reason``: why the log is not asked."""
    try:
        status = await backend.status(sid)
    except Exception:
        return None
    if status in _RUNNING:
        return None
    if reason is None:
        try:
            last = await backend.last(run_key)
        except Exception as error:
            last, reason = None, f"the event log cannot be read ({type(error).__name__}: {error})"
        if last is not None and record_key(last.stream_id) > record_key(after):
            return None  # more records are there: the read brings them
    outcome = await _outcome(backend, sid, status)
    data = {**outcome.payload(), "end_record": "lost", "reason": reason or "the event log has no end record"}
    return EventRecord(stream_id="", seq=seq, kind="end", segment_id=sid, data=data)


async def _outcome(backend: LiveBackend, sid: str, status: str) -> SegmentOutcome:
    """How the segment ended, as the backend has it (it said the segment is over)."""
    if status == "CANCELLED":
        return SegmentOutcome(segment_id=sid, status="cancelled")
    try:
        return await asyncio.wait_for(backend.outcome(sid), _OUTCOME_WAIT)
    except SegmentFailedError as error:
        return SegmentOutcome(segment_id=sid, status="failed", error=str(error))
    except Exception as error:
        return SegmentOutcome(segment_id=sid, status="failed", error=f"{type(error).__name__}: {error}")


class _Sequence:
    """Where a follower stands in its segment's numbered records: the segment, the attempt, the last number and
    ``seq`` seen. ``checked`` puts a ``gap`` record before a record whose number skips some, and drops a number seen
    already. A follower that starts after a record id (a client reconnecting) takes its first record's number as
    where it stands: the record it resumes after is not read again, so its number is not known. A follower of a
    run's history goes from one segment to the next: each has attempts of its own, and counts ``seq`` from 1."""

    __slots__ = ("attempt", "number", "segment", "seq")

    def __init__(self, *, from_start: bool) -> None:
        self.attempt: str | None = None if from_start else ""
        self.number = 0
        self.segment = ""
        self.seq = 0

    def checked(self, records: list[EventRecord]) -> list[EventRecord]:
        out: list[EventRecord] = []
        for record in records:
            if record.segment_id != self.segment:
                self.segment, self.seq = record.segment_id, 0
            if record.number > 0:  # records of an earlier release have none
                if self.attempt == "":  # resumed after an id: where it stands is this record
                    self.attempt, self.number = record.attempt, record.number - 1
                elif record.attempt != self.attempt:  # a new attempt (the segment re-run) numbers from 1 again
                    self.attempt, self.number = record.attempt, 0
                if record.number <= self.number:
                    continue
                if record.number > self.number + 1:
                    out.append(self._gap(record.segment_id, self.number + 1, record.number - 1))
                self.number = record.number
            self.seq = max(self.seq, record.seq) if record.kind == "event" else record.seq
            out.append(record)
        return out

    def _gap(self, sid: str, first: int, last: int) -> EventRecord:
        body = {
            "run_id": sid,
            "missing": {"from": first, "to": last},
            "count": last - first + 1,
            "after_seq": self.seq,
            "reason": "records lost from the event log (an outage, or trimmed past its bound)",
        }
        data = {"event": "gap", "data": json_text(body)}
        return EventRecord(stream_id="", seq=self.seq, kind="event", segment_id=sid, data=data)


def sent(record: EventRecord, sid: str, agent: str) -> bytes:
    """The SSE event of a record of segment ``sid`` (run by ``agent``, when known) or of an earlier segment of its
    run: its id, its frame's name, its JSON text (one line: JSON escapes line breaks). A ``gap`` or a lost record's
    ``end`` was never a record of the log: it has no id (a client's ``Last-Event-ID`` stays the last record's)."""
    return sent_text(record, sid, agent).encode()


def sent_text(record: EventRecord, sid: str, agent: str) -> str:
    """``sent``, as text: a batch's events are joined, then encoded once."""
    if record.kind == "end":
        own = record.segment_id == sid
        body = summary(record.segment_id, SegmentOutcome.from_payload(record.data), agent if own else "")
        if record.data.get("end_record") == "lost":
            body = {**body, "end_record": "lost", "reason": record.data["reason"]}
        event, data = "end", json_text(body)
    else:
        event, data = record.data["event"], record.data["data"]
    head = f"id: {record.stream_id}\r\n" if record.stream_id else ""
    return f"{head}event: {event}\r\ndata: {data}\r\n\r\n"


def parse_event_id(text: str) -> str:
    """A ``Last-Event-ID``: an event log's record id (``"42-0"``, a Redis stream id such as
    ``"1733059200000-0"``); anything else is a 400 that says what an id looks like. The ``"7.2"`` ids of earlier
    releases named frames of runs that lived in one process's memory, gone with it: no client can hold one of a run
    that still exists, so they are refused like any other."""
    stripped = text.strip()
    number, sep, rest = stripped.partition("-")
    if not (
        sep
        and number.isdigit()
        and rest.isdigit()
        and len(number) <= 19
        and len(rest) <= 19
        and int(number) <= _RECORD_ID_LIMIT
        and int(rest) <= _RECORD_ID_LIMIT
    ):
        raise ApiError(
            400,
            "invalid_event_id",
            f"Last-Event-ID: expected a record id such as '42-0' or '1733059200000-0', got {shown(text)}",
            expected="<digits>-<digits>, each at most 2**63 - 1: the id of an SSE event this server sent",
            found=shown(text),
        )
    return stripped


def record_key(record_id: str) -> tuple[int, int]:
    number, _, rest = record_id.partition("-")
    return int(number), int(rest or 0)

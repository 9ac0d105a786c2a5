"""The seam between batonflow and a durable-execution engine: ``DurableBackend``, whose unit of work is a run
segment, ``LiveBackend``, one whose runs' frames can be followed as they are made (what the server runs every run
through), and ``InProcessBackend``, the default: each segment runs in this process, as a task, its frames in a
``MemoryEventLog``.

A backend promises one thing beyond running segments: a segment id runs at most once at a time and, once it has
ended, never again — a second ``submit`` of the same segment attaches to the first and gets its outcome. That is
what makes a double start or two concurrent resumes of one checkpoint safe on any backend. The first request of a
segment claims it: a second one asking the same (the same ``request_digest``: a retry) attaches, one asking
something else (another answer to the same pause, other input under a used checkpoint id) is refused with
``SegmentClaimedError``, which says what is known of the winner (``SegmentClaim``).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from ..adk import Agent
from ..errors import CheckpointNotFoundError, SegmentError
from ..store import CheckpointStore, HistoryRetention, SessionStore
from ._checks import count
from ._events import EventRecord
from ._frames import Frame
from ._memevents import EventsGoneError, MemoryEventLog
from ._segment import (
    SegmentClaim,
    SegmentOutcome,
    SegmentRequest,
    claimed,
    rejoined,
    request_digest,
    request_id,
    run_segment,
)

__all__ = ["DurableBackend", "InProcessBackend", "LiveBackend", "PausedRun"]


@runtime_checkable
class DurableBackend(Protocol):
    """Runs run segments durably: ``submit`` hands one over and names it, ``outcome`` waits for how it ended,
    ``cancel`` stops it, ``close`` lets go of what the backend holds."""

    async def submit(self, request: SegmentRequest) -> str:
        """The segment's id, once the backend has it; the same segment submitted twice runs once."""
        ...

    async def outcome(self, segment_id: str) -> SegmentOutcome:
        """How the segment ended, once it has (bound the wait with ``asyncio.timeout``)."""
        ...

    async def cancel(self, segment_id: str) -> None:
        """Stop the segment; the Runner keeps its checkpoint and journal, so it can be resumed later."""
        ...

    async def close(self) -> None: ...


@runtime_checkable
class LiveBackend(DurableBackend, Protocol):
    """A backend whose segments run elsewhere and whose events any process can read as they happen (what a
    stateless API process serves runs from)."""

    def events(self, checkpoint_id: str, after: str = "0-0") -> AsyncIterator[EventRecord]:
        """The run's records after stream id ``after``, up to and with the next ``end`` record."""
        ...

    def batches(self, checkpoint_id: str, after: str = "0-0") -> AsyncIterator[list[EventRecord]]:
        """``events``, in batches of the records that came together (what a server writes at once)."""
        ...

    async def last(self, checkpoint_id: str) -> EventRecord | None:
        """The run's latest record (None when it has none): what a ``Last-Event-ID`` may name at most."""
        ...

    async def status(self, segment_id: str) -> str:
        """The engine's status of the segment (``ENQUEUED``, ``PENDING``, ``SUCCESS``, ``ERROR``, ``CANCELLED``)."""
        ...

    async def paused(self, checkpoint_id: str | None = None) -> list[PausedRun]:
        """The runs paused (the last segment of each ended interrupted, and none resumes it yet), newest first:
        checkpoints, then conversations (``session_id`` set); the checkpoint ``checkpoint_id`` only when given."""
        ...

    async def claim(self, checkpoint_id: str) -> SegmentClaim | None:
        """What is known of the latest segment submitted under ``checkpoint_id`` (None when none is known): the
        winner a late resume, once the checkpoint it answered is gone, is told about."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class PausedRun:
    """A run waiting for an answer with no process holding it: its checkpoint (in the shared store; a
    conversation's session id, with ``session_id`` set to it), the agent that runs it, the segment that paused it
    and when (seconds since the epoch), and the interrupt ids a resume answers (``interrupts``: as the API shows
    them, with what each asked)."""

    checkpoint_id: str
    agent: str
    segment_id: str
    interrupt_ids: tuple[str, ...]
    paused_at: float
    session_id: str | None = None
    interrupts: tuple[Mapping[str, Any], ...] = ()


class InProcessBackend:
    """Segments run here, each as an asyncio task of this event loop: no queue, no other process. Their frames go
    to ``events`` (a ``MemoryEventLog`` when None), where ``events()`` follows them; conversations' turns run on
    ``sessions``. The last ``keep_finished`` ended segments are remembered (their outcomes, and that they ran): a
    segment submitted again after that runs again, as the checkpoint it names allows."""

    def __init__(
        self,
        agents: Mapping[str, Agent],
        checkpoint_store: CheckpointStore,
        *,
        sessions: SessionStore | None = None,
        events: MemoryEventLog | None = None,
        keep_finished: int = 1_024,
        keep_history: bool | HistoryRetention = False,
    ) -> None:
        self.agents = dict(agents)
        self.keep_history = keep_history  # the Runner's option, for every run (docs/history.md)
        self.store = checkpoint_store
        self.sessions = sessions
        self.event_log = MemoryEventLog() if events is None else events
        self.keep_finished = count("keep_finished", keep_finished)
        self._tasks: dict[str, asyncio.Task[SegmentOutcome]] = {}
        self._finished: OrderedDict[str, None] = OrderedDict()
        self._asked: set[str] = set()  # segments a cancel was asked for (not the backend closing)
        self._paused: dict[tuple[str, str], PausedRun] = {}
        self._running: dict[str, SegmentRequest] = {}  # submitted, not ended yet
        self._claims: dict[str, SegmentClaim] = {}  # segment -> its first request's claim (its status as accepted)
        self._latest: dict[str, str] = {}  # checkpoint id -> the latest segment submitted under it

    async def submit(self, request: SegmentRequest) -> str:
        try:
            sid = await request_id(request, self.store, self.sessions)
        except CheckpointNotFoundError as error:
            claim = None if request.session_id is not None else await self.claim(request.checkpoint_id)
            return rejoined(claim, request, error)
        if sid in self._tasks:  # a second submit of the same segment attaches to the first, if it asks the same
            claim = self._claim(sid)
            if claim.request_digest != request_digest(request):
                raise claimed(claim, request)
        else:
            pause = self._paused.pop(_key(request), None)  # a run being resumed no longer waits
            self._claims[sid] = SegmentClaim(
                segment_id=sid,
                request_digest=request_digest(request),
                accepted_at=time.time(),
                status="running",
                agent=request.agent,
                answered=pause.interrupts if pause is not None and request.resumes else (),
            )
            if request.session_id is None:
                self._latest[request.checkpoint_id] = sid
            self._running[sid] = request
            self._tasks[sid] = asyncio.create_task(self._run(request, sid), name=f"batonflow {sid}")
        return sid

    async def _run(self, request: SegmentRequest, sid: str) -> SegmentOutcome:
        log, run = self.event_log, request.run_key

        async def sink(frame: Frame) -> None:
            log.append(run, sid, frame.seq, "event", frame.record())

        try:
            outcome = await run_segment(
                self.agents,
                self.store,
                request,
                sid=sid,
                sink=sink,
                sessions=self.sessions,
                keep_history=self.keep_history,
            )
        except asyncio.CancelledError:
            asked = sid in self._asked
            cancelled = SegmentOutcome(segment_id=sid, status="cancelled", agent=request.agent)
            self._ended(request, cancelled)
            if asked:
                return cancelled
            raise  # the backend is closing: the task ends cancelled
        except Exception as error:  # a segment that could not run (an unknown agent, a held checkpoint): raised
            failed = f"{type(error).__name__}: {error}"
            log.append(run, sid, 0, "event", Frame("error", {"seq": 1, "error": _error(error)}).record())
            self._ended(request, SegmentOutcome(segment_id=sid, status="failed", error=failed, agent=request.agent))
            raise
        self._ended(request, outcome)
        return outcome

    def _ended(self, request: SegmentRequest, outcome: SegmentOutcome) -> None:
        """The segment's ``end`` record; the run paused (or no longer) as it ended; the oldest ended ones let go."""
        sid = outcome.segment_id
        self._running.pop(sid, None)
        last = self.event_log.latest(request.run_key)
        self.event_log.append(request.run_key, sid, last.seq if last is not None else 0, "end", outcome.payload())
        key = _key(request)
        if outcome.status == "interrupted":
            self._paused[key] = PausedRun(
                checkpoint_id=request.run_key,
                agent=request.agent,
                segment_id=sid,
                interrupt_ids=outcome.interrupt_ids,
                paused_at=time.time(),
                session_id=request.session_id,
                interrupts=outcome.interrupts,
            )
            self._paused[key] = self._paused.pop(key)  # the newest last
        self._asked.discard(sid)
        self._finished[sid] = None
        while len(self._finished) > self.keep_finished:
            gone = self._finished.popitem(last=False)[0]
            self._tasks.pop(gone, None)
            self._claims.pop(gone, None)
            run = gone.rpartition("@")[0]
            if self._latest.get(run) == gone:
                del self._latest[run]

    async def claim(self, checkpoint_id: str) -> SegmentClaim | None:
        sid = self._latest.get(checkpoint_id)
        return None if sid is None else self._claim(sid)

    def _claim(self, sid: str) -> SegmentClaim:
        task = self._tasks[sid]
        if not task.done():
            return self._claims[sid]
        return replace(self._claims[sid], status=_ended_as(task))

    async def outcome(self, segment_id: str) -> SegmentOutcome:
        task = self._task(segment_id)
        try:
            return await asyncio.shield(task)  # a caller that stops waiting leaves the segment be
        except asyncio.CancelledError:
            if not task.cancelled():
                raise  # the caller was cancelled, not the segment
            return SegmentOutcome(segment_id=segment_id, status="cancelled")

    async def status(self, segment_id: str) -> str:
        """``PENDING`` while the segment runs, then ``SUCCESS`` (its outcome says how it ended)."""
        return "SUCCESS" if self._task(segment_id).done() else "PENDING"

    def events(self, checkpoint_id: str, after: str = "0-0") -> AsyncIterator[EventRecord]:
        return self.event_log.read(checkpoint_id, after)

    def batches(self, checkpoint_id: str, after: str = "0-0") -> AsyncIterator[list[EventRecord]]:
        return self.event_log.batches(checkpoint_id, after)

    async def last(self, checkpoint_id: str) -> EventRecord | None:
        return await self.event_log.last(checkpoint_id)

    def events_gone(self, checkpoint_id: str, after: str = "0-0") -> EventsGoneError | None:
        """What ``batches`` would refuse at once (records after ``after`` dropped), None when it would read them;
        known without waiting (the log is in memory), which a server asks before it answers with a stream."""
        return self.event_log.gone(checkpoint_id, after)

    async def paused(self, checkpoint_id: str | None = None) -> list[PausedRun]:
        """The runs this backend's segments left paused, newest first (a run whose last segment ended interrupted,
        and that no segment resumes yet); a checkpoint the store no longer holds (or a conversation no longer
        pending) is let go."""
        found: list[PausedRun] = []
        for key, run in reversed(list(self._paused.items())):
            if checkpoint_id is not None and key != ("checkpoint", checkpoint_id):
                continue
            if not await self._still_paused(run):
                self._paused.pop(key, None)
                continue
            found.append(run)
        return sorted(found, key=lambda run: run.session_id is not None)

    async def _still_paused(self, run: PausedRun) -> bool:
        if run.session_id is None:
            return await self.store.get(run.checkpoint_id) is not None
        data = None if self.sessions is None else await self.sessions.get(run.session_id, last=1)
        return data is not None and data.state.pending

    async def forget(self, session_id: str) -> None:
        """Let go of what the backend holds of a conversation that was deleted."""
        self._paused.pop(("session", session_id), None)

    async def cancel(self, segment_id: str) -> None:
        task = self._task(segment_id)
        if not task.done():
            self._asked.add(segment_id)
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        self._unstarted(segment_id)

    def _unstarted(self, sid: str) -> None:
        """A segment cancelled before its task began ends here: its followers get its ``end`` all the same."""
        request = self._running.get(sid)
        if request is not None:
            self._ended(request, SegmentOutcome(segment_id=sid, status="cancelled", agent=request.agent))

    async def close(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)
        for sid in list(self._running):
            self._unstarted(sid)
        await self.event_log.close()

    def _task(self, segment_id: str) -> asyncio.Task[SegmentOutcome]:
        task = self._tasks.get(segment_id)
        if task is None:
            raise SegmentError(
                f"segment: expected the id of a segment submitted to this backend (running, or among the last "
                f"{self.keep_finished} ended), got {segment_id!r}",
                segment_id=segment_id,
            )
        return task


def _ended_as(task: asyncio.Task[SegmentOutcome]) -> str:
    """How an ended segment's task ended, as a status."""
    if task.cancelled():
        return "cancelled"
    return "failed" if task.exception() is not None else task.result().status


def _key(request: SegmentRequest) -> tuple[str, str]:
    """Where a run waits: a checkpoint and a conversation of one id are different runs."""
    return ("session" if request.session_id is not None else "checkpoint", request.run_key)


def _error(error: BaseException) -> dict[str, str]:
    return {"type": type(error).__name__, "message": str(error)}

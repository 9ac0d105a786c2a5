"""The seam between batonflow and a durable-execution engine: ``DurableBackend``, whose unit of work is a run
segment, and ``InProcessBackend``, today's behaviour (the segment runs in this process, as a task), the default.

A backend promises one thing beyond running segments: a segment id runs at most once at a time and, once it has
ended, never again — a second ``submit`` of the same segment attaches to the first and gets its outcome. That is
what makes a double start or two concurrent resumes of one checkpoint safe on any backend.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..adk import Agent
from ..errors import SegmentError
from ..store import CheckpointStore, SessionStore
from ._events import EventRecord
from ._segment import EventSink, SegmentOutcome, SegmentRequest, request_id, run_segment

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

    async def status(self, segment_id: str) -> str:
        """The engine's status of the segment (``ENQUEUED``, ``PENDING``, ``SUCCESS``, ``ERROR``, ``CANCELLED``)."""
        ...

    async def paused(self, checkpoint_id: str | None = None) -> list[PausedRun]:
        """The runs paused on the workers (the last segment of each ended interrupted, and none resumes it yet),
        newest first; those of ``checkpoint_id`` only when given."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class PausedRun:
    """A run waiting for an answer with no process holding it: its checkpoint (in the shared store), the agent
    that runs it, the segment that paused it and when (seconds since the epoch), and the interrupt ids a resume
    answers."""

    checkpoint_id: str
    agent: str
    segment_id: str
    interrupt_ids: tuple[str, ...]
    paused_at: float


class InProcessBackend:
    """Segments run here, each as an asyncio task of this event loop: no queue, no other process. ``sink`` gets
    every event of every segment (None: nobody listens live); conversations' turns run on ``sessions``."""

    def __init__(
        self,
        agents: Mapping[str, Agent],
        checkpoint_store: CheckpointStore,
        *,
        sink: EventSink | None = None,
        sessions: SessionStore | None = None,
    ) -> None:
        self.agents = dict(agents)
        self.store = checkpoint_store
        self.sink = sink
        self.sessions = sessions
        self._tasks: dict[str, asyncio.Task[SegmentOutcome]] = {}

    async def submit(self, request: SegmentRequest) -> str:
        sid = await request_id(request, self.store, self.sessions)
        if sid not in self._tasks:  # a second submit of the same segment attaches to the first
            segment = run_segment(self.agents, self.store, request, sid=sid, sink=self.sink, sessions=self.sessions)
            self._tasks[sid] = asyncio.create_task(segment, name=f"batonflow {sid}")
        return sid

    async def outcome(self, segment_id: str) -> SegmentOutcome:
        return await asyncio.shield(self._task(segment_id))  # a caller that stops waiting leaves the segment be

    async def cancel(self, segment_id: str) -> None:
        task = self._task(segment_id)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    async def close(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    def _task(self, segment_id: str) -> asyncio.Task[SegmentOutcome]:
        task = self._tasks.get(segment_id)
        if task is None:
            raise SegmentError(
                f"segment: expected the id of a segment submitted to this backend, got {segment_id!r}",
                segment_id=segment_id,
            )
        return task

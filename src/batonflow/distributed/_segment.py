"""A run segment: the unit of durable work. It loads the checkpoint (or starts afresh), runs until an interrupt or
the end, and saves — all of it through the Runner, so that the batonflow checkpoint stays the source of truth and
a backend's own records are plumbing.

A segment is named by its checkpoint id and its *generation*: ``start`` for a run's first segment, else a digest
of the checkpoint bytes it resumes. Two requests for the same segment get the same id, so a backend can attach the
second to the first (or refuse it) instead of running it twice; a resume after the checkpoint changed is a new
generation, hence a new segment.

A conversation's turn is a segment too, named by its session id and ``turn-`` plus a digest of where the
conversation stands (its last message and pending run) and of what the turn brings (its input, or the resume
targets of its pending run): the same turn asked twice before it ran is one turn, and every later turn is a new one.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import deque
from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, Literal

from ..adk import Agent, AgentEvent, Capture, InterruptInfo, PendingCheckpoint, read_pending
from ..agents import Runner
from ..codec import encode_json
from ..errors import (
    CheckpointExistsError,
    CheckpointNotFoundError,
    CodecError,
    ResumeConflictError,
    SegmentClaimedError,
    UnknownAgentError,
    UserError,
)
from ..schema import Message, Stream
from ..store import CheckpointStore, HistoryRetention, SessionStore, check_checkpoint_id, check_session_id
from ..trace import TraceEvent
from ._frames import Framer, FrameSink, state_json

__all__ = [
    "EventSink",
    "SegmentClaim",
    "SegmentOutcome",
    "SegmentRequest",
    "claimed",
    "request_digest",
    "run_segment",
    "segment_id",
]

Status = Literal["completed", "interrupted", "failed", "cancelled"]
EventSink = FrameSink
"""Where a segment's frames go as they are made (its run's event log); awaited before the next one."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SegmentRequest:
    """One segment to run: a start of ``agent`` on ``messages`` under ``checkpoint_id``, or (no messages) a resume of
    the checkpoint with ``targets``. With ``session_id`` instead of a checkpoint id, a turn of that conversation on
    ``messages``, or (no messages) the resume of its pending run with ``targets``. ``session_values`` are the run's
    (as ``Runner.run`` takes them).

    ``run_id`` is a start's run id (``Runner.run(run_id=...)``), made with the request and carried with it, so that
    a start cut off before its first checkpoint (its worker died) runs again with the same idempotency keys: a
    tool that keys its side effect by ``ToolContext.idempotency_key`` makes it once. A resume's run id is its
    checkpoint's; a conversation's turn has its own on each run.

    ``stream``: the run streams its messages, and its frames carry their chunks (``delta``); ``trace``: its trace
    events are frames too. Neither changes what the segment is (nor its id)."""

    agent: str
    checkpoint_id: str = ""
    messages: tuple[Message, ...] = ()
    targets: Mapping[str, Any] = field(default_factory=dict)
    session_id: str | None = None
    session_values: Mapping[str, Any] = field(default_factory=dict)
    run_id: str = field(default_factory=lambda: os.urandom(16).hex())
    stream: bool = False
    trace: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.agent, str) or not self.agent:
            raise UserError(f"SegmentRequest.agent: expected a non-empty agent name, got {self.agent!r}")
        if self.session_id is None:
            check_checkpoint_id(self.checkpoint_id)
        elif self.checkpoint_id:
            raise UserError(
                "SegmentRequest: expected a checkpoint_id (a run) or a session_id (a conversation's turn), got both"
            )
        else:
            check_session_id(self.session_id)
        if not all(isinstance(m, Message) for m in self.messages):
            raise UserError(
                f"SegmentRequest.messages: expected Messages, got {[type(m).__name__ for m in self.messages]}"
            )
        if self.messages and self.targets:
            raise UserError("SegmentRequest: expected messages (a start) or targets (a resume), got both")
        if not isinstance(self.session_values, Mapping):
            raise UserError(
                f"SegmentRequest.session_values: expected a mapping, got {type(self.session_values).__name__}"
            )
        if not isinstance(self.run_id, str) or _RUN_ID.fullmatch(self.run_id) is None:
            raise UserError(f"SegmentRequest.run_id: expected 32 lowercase hex digits, got {self.run_id!r:.60}")

    @property
    def resumes(self) -> bool:
        return not self.messages

    @property
    def run_key(self) -> str:
        """What names the run across its segments: its checkpoint id, or a conversation's session id."""
        return self.checkpoint_id if self.session_id is None else self.session_id

    def payload(self) -> dict[str, Any]:
        """The request as a value the codec can write (what a queue carries)."""
        return {
            "agent": self.agent,
            "checkpoint_id": self.checkpoint_id,
            "messages": list(self.messages),
            "targets": dict(self.targets),
            "session_id": self.session_id,
            "session_values": dict(self.session_values),
            "run_id": self.run_id,
            "stream": self.stream,
            "trace": self.trace,
        }

    @classmethod
    def from_payload(cls, payload: Any) -> SegmentRequest:
        """The request ``payload`` wrote; one written without a run id (by an earlier release) gets a fresh one."""
        keys = set(payload) if isinstance(payload, dict) else set()
        if not isinstance(payload, dict) or not _KEYS <= keys <= _KEYS | _OPTIONAL:
            shape = sorted(payload) if isinstance(payload, dict) else type(payload).__name__
            raise UserError(
                "segment payload: expected agent, checkpoint_id, messages and targets (and session_id, "
                f"session_values, run_id, stream, trace), got {shape}"
            )
        extra = {key: payload[key] for key in ("run_id", "stream", "trace") if key in payload}
        return cls(
            agent=payload["agent"],
            checkpoint_id=payload["checkpoint_id"],
            messages=tuple(payload["messages"]),
            targets=payload["targets"],
            session_id=payload.get("session_id"),
            session_values=payload.get("session_values") or {},
            **extra,
        )


_KEYS = {"agent", "checkpoint_id", "messages", "targets"}
_OPTIONAL = {"session_id", "session_values", "run_id", "stream", "trace"}
_RUN_ID = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True, slots=True, kw_only=True)
class SegmentOutcome:
    """How a segment ended: ``completed`` (the run's answer in ``text``), ``interrupted`` (its checkpoint saved,
    ``interrupt_ids`` to resume by), ``failed`` (``error`` says why; the checkpoint, if any, is kept), or
    ``cancelled`` (asked to stop; what finished is kept, as when it fails). ``agent`` ran it; ``interrupts`` are
    the interrupts as the API shows them (id, address, kind, info: what a resume's answer is checked against);
    ``usage`` the tokens its model calls took."""

    segment_id: str
    status: Status
    text: str = ""
    interrupt_ids: tuple[str, ...] = ()
    error: str | None = None
    agent: str = ""
    interrupts: tuple[Mapping[str, Any], ...] = ()
    usage: Mapping[str, int] = field(default_factory=dict)

    def payload(self) -> dict[str, Any]:
        return {
            "segment_id": self.segment_id,
            "status": self.status,
            "text": self.text,
            "interrupt_ids": list(self.interrupt_ids),
            "error": self.error,
            "agent": self.agent,
            "interrupts": [dict(i) for i in self.interrupts],
            "usage": dict(self.usage),
        }

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> SegmentOutcome:
        """The outcome ``payload`` wrote; one of an earlier release (no agent, interrupts or usage) reads too."""
        return cls(
            segment_id=payload["segment_id"],
            status=payload["status"],
            text=payload["text"],
            interrupt_ids=tuple(payload["interrupt_ids"]),
            error=payload["error"],
            agent=payload.get("agent", ""),
            interrupts=tuple(payload.get("interrupts") or ({"id": i} for i in payload["interrupt_ids"])),
            usage=payload.get("usage") or {},
        )


def request_digest(request: SegmentRequest) -> str:
    """What a segment's request asks, as a digest (SHA-256 of its canonical JSON): the run it names, and its input
    (a start's agent, messages and session values) or its resume targets; not how it is watched (``stream``,
    ``trace``) nor its run id. Two requests of one digest are the same request: a retry."""
    asked: dict[str, Any] = {"run": request.run_key, "session": request.session_id is not None}
    if request.resumes:
        asked["targets"] = dict(request.targets)
    else:
        asked |= {"agent": request.agent, "input": list(request.messages), "values": dict(request.session_values)}
    return hashlib.sha256(encode_json(asked, what="segment request").encode()).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class SegmentClaim:
    """What a backend knows of the request that claimed a segment first (the winner of two resumes of one pause,
    or the first start under a checkpoint id): the segment, the digest of its request, when the backend accepted it
    (seconds since the epoch, 0 when unknown) and its status: ``running``, or how it ended. ``agent`` ran it;
    ``answered`` are the interrupts a resume answered (as the API shows them; empty for a start, or unknown)."""

    segment_id: str
    request_digest: str
    accepted_at: float
    status: str
    agent: str = ""
    answered: tuple[Mapping[str, Any], ...] = ()

    @property
    def ended(self) -> bool:
        return self.status != "running"

    def payload(self) -> dict[str, Any]:
        """The claim as the API shows it (``run_id`` is the segment id)."""
        return {
            "run_id": self.segment_id,
            "request_digest": self.request_digest,
            "status": self.status,
            "accepted_at": self.accepted_at or None,
            "ended": self.ended,
            "agent": self.agent,
        }


def claimed(claim: SegmentClaim, request: SegmentRequest) -> SegmentClaimedError:
    """The refusal of ``request``, whose segment ``claim`` holds for another request."""
    what = "resume" if request.resumes else "start"
    return SegmentClaimedError(
        f"segment {claim.segment_id}: claimed by another {what} (request {claim.request_digest[:12]}, "
        f"{claim.status}), got a {what} asking something else (request {request_digest(request)[:12]})",
        segment_id=claim.segment_id,
        claim=claim,
    )


def rejoined(claim: SegmentClaim | None, request: SegmentRequest, error: CheckpointNotFoundError) -> str:
    """The segment a resume whose checkpoint is gone attaches to: the latest resume of it, when that asked the same
    (a retry of the resume that ended it); refused when it asked something else; else ``error`` stands."""
    if claim is None or not request.resumes or claim.segment_id.endswith("@start"):
        raise error
    if claim.request_digest != request_digest(request):
        raise claimed(claim, request)
    return claim.segment_id


def segment_id(checkpoint_id: str, checkpoint: bytes | None) -> str:
    """The id of the segment that starts under ``checkpoint_id`` (``checkpoint`` None) or resumes ``checkpoint``."""
    generation = "start" if checkpoint is None else hashlib.sha256(checkpoint).hexdigest()[:24]
    return f"{checkpoint_id}@{generation}"


async def request_id(request: SegmentRequest, store: CheckpointStore, sessions: SessionStore | None = None) -> str:
    """The segment id of ``request``: a resume's reads the checkpoint's current generation from ``store``, a
    conversation turn's where the conversation stands from ``sessions``."""
    if request.session_id is not None:
        return await turn_id(request, _sessions(sessions, request.session_id))
    if not request.resumes:
        return segment_id(request.checkpoint_id, None)
    data = await store.get(request.checkpoint_id)
    if data is None:
        raise CheckpointNotFoundError.in_store(request.checkpoint_id, store)
    return segment_id(request.checkpoint_id, data)


async def turn_id(request: SegmentRequest, sessions: SessionStore) -> str:
    """The segment id of a conversation's turn: its session id, and a digest of the conversation's last message
    and pending run and of the turn's input or resume targets."""
    assert request.session_id is not None
    data = await sessions.get(request.session_id, last=1)
    state = data.state if data is not None else None
    snapshot = state.snapshot if state is not None else None
    where = {
        "last": data.messages[-1:] if data is not None else [],
        "pending": bool(state and state.pending),
        "snapshot": hashlib.sha256(snapshot).hexdigest() if snapshot is not None else None,
        "messages": list(request.messages),
        "targets": dict(request.targets),
    }
    digest = hashlib.sha256(encode_json(where, what="conversation turn").encode()).hexdigest()[:24]
    return f"{request.session_id}@turn-{digest}"


def _sessions(sessions: SessionStore | None, session_id: str) -> SessionStore:
    if sessions is None:
        raise UserError(f"session {session_id!r}: a conversation's turn needs the session store, got none")
    return sessions


async def run_segment(
    agents: Mapping[str, Agent],
    store: CheckpointStore,
    request: SegmentRequest,
    *,
    sid: str,
    sink: EventSink | None = None,
    resume_lease: float = 300.0,
    sessions: SessionStore | None = None,
    keep_history: bool | HistoryRetention = False,
) -> SegmentOutcome:
    """Run ``request`` with the agent it names among ``agents``, its checkpoint in ``store``; its frames go to
    ``sink`` (a ``run`` frame first, then its events', and with ``request.trace`` its trace events'). A run that
    fails ends ``failed`` with the reason (the Runner kept the checkpoint); an agent this process does not serve
    raises ``UnknownAgentError``; one whose checkpoint another runner holds, before it ran anything, raises
    ``ResumeConflictError`` (a retry may find it free). ``resume_lease`` is the Runner's lease ttl on the
    checkpoint (or conversation): how soon a segment whose process died can be run again elsewhere. A
    conversation's turn runs on ``sessions``. The last frame is ``state``, the run's session values as the
    segment left them, when it holds any. ``keep_history`` is the Runner's (a run's record kept in ``store``)."""
    agent = agents.get(request.agent)
    if agent is None:
        raise UnknownAgentError(
            f"segment {sid}: expected an agent among {sorted(agents)}, got {request.agent!r}", segment_id=sid
        )
    framer = Framer(sink, deltas=request.stream)
    traced: deque[TraceEvent] = deque()
    capture = Capture(metrics=False)
    events = _events(agent, store, request, sessions, resume_lease, traced, capture, keep_history, sid)
    head = {
        "run_id": sid,
        "agent": request.agent,
        "checkpoint_id": request.checkpoint_id or None,
        "session_id": request.session_id,
        "resumed": request.resumes,
    }
    await framer.send("run", head)
    error, interrupts = await _run(events, traced, framer, store, request)
    if capture.ctx is not None and capture.ctx.session.values:
        await framer.send("state", {"run_id": sid, **state_json(capture.ctx.session.values)})
    status: Status = "failed" if error else "interrupted" if interrupts else "completed"
    return SegmentOutcome(
        segment_id=sid,
        status=status,
        text=framer.text,
        interrupt_ids=interrupts,
        error=error,
        agent=request.agent,
        interrupts=tuple(framer.interrupts) if interrupts else (),
        usage=dict(framer.usage),
    )


async def _run(
    events: Stream[AgentEvent],
    traced: deque[TraceEvent],
    framer: Framer,
    store: CheckpointStore,
    request: SegmentRequest,
) -> tuple[str | None, tuple[str, ...]]:
    """Run ``events`` to their end, each (and each trace event) into ``framer``: the segment's error, if it
    failed, and the ids of the interrupts it paused on."""
    error, started = None, False
    interrupts: tuple[str, ...] = ()
    try:
        async for item in _interleaved(events, traced):
            if isinstance(item, TraceEvent):
                await framer.trace(item)
                continue
            started = True
            await framer.event(item)
            action = item.action
            if action is not None and isinstance(action.interrupted, InterruptInfo):
                interrupts = tuple(c.id for c in action.interrupted.interrupt_contexts)
            if item.error is not None:
                error = f"{type(item.error).__name__}: {item.error}"
    except ResumeConflictError as raised:
        if not started:
            raise  # held by another runner before anything ran here: the caller may try again
        error = f"{type(raised).__name__}: {raised}"
    except CheckpointExistsError as raised:
        saved = await _saved_by_this_start(store, request)
        if saved is None:
            error = f"{type(raised).__name__}: {raised}"
        else:  # this start ran before, and its process died after saving the checkpoint: it paused there
            interrupts = saved.interrupt_ids
            framer.interrupts = [{"id": i} for i in interrupts]
    except Exception as raised:  # a run that could not start (a taken id): an outcome, not a crash
        error = f"{type(raised).__name__}: {raised}"
        await framer.send(
            "error", {"seq": framer.last_seq + 1, "error": {"type": type(raised).__name__, "message": str(raised)}}
        )
    finally:
        await events.aclose()
    return error, interrupts


async def _interleaved(events: Stream[AgentEvent], traced: deque[TraceEvent]) -> AsyncIterator[AgentEvent | TraceEvent]:
    """The run's events, each after the trace events made before it (the Runner's callbacks fill ``traced``)."""
    async with aclosing(events):
        async for event in events:
            while traced:
                yield traced.popleft()
            yield event
    while traced:
        yield traced.popleft()


def _events(
    agent: Agent,
    store: CheckpointStore,
    request: SegmentRequest,
    sessions: SessionStore | None,
    resume_lease: float,
    traced: deque[TraceEvent],
    capture: Capture,
    keep_history: bool | HistoryRetention = False,
    sid: str = "",
) -> Stream[AgentEvent]:
    """The events of the run ``request`` asks for: a conversation's turn, a checkpoint's resume, or a start;
    ``capture`` is handed its run context. Under ``keep_history`` a turn keeps its record under its segment id
    ``sid`` (what the API calls its run id), in ``store``."""
    options: dict[str, Any] = {
        "resume_lease": resume_lease,
        "enable_streaming": request.stream,
        "keep_history": keep_history,
    }
    if request.trace:
        options["callbacks"] = (traced.append,)
    if request.session_id is not None:
        conversation = _sessions(sessions, request.session_id)
        runner = Runner(agent, session_store=conversation, checkpoint_store=store, **options)
        return runner.run(
            list(request.messages),
            session_id=request.session_id,
            session_values=dict(request.session_values),
            targets=dict(request.targets),
            capture=capture,
            history_id=sid or None,  # kept only under keep_history
        )
    runner = Runner(agent, checkpoint_store=store, **options)
    if request.resumes:
        return runner.resume(request.checkpoint_id, dict(request.targets), capture=capture)
    return runner.run(
        list(request.messages),
        checkpoint_id=request.checkpoint_id,
        session_values=dict(request.session_values),
        run_id=request.run_id,
        capture=capture,
    )


async def _saved_by_this_start(store: CheckpointStore, request: SegmentRequest) -> PendingCheckpoint | None:
    """The pending checkpoint an earlier run of this very start saved (the same run id), if that is what took it."""
    if request.resumes or request.session_id is not None:
        return None
    try:
        saved = await read_pending(store, request.checkpoint_id)
    except CodecError:  # not a checkpoint this release can read: not this start's
        return None
    return saved if saved is not None and saved.run_id == request.run_id and saved.interrupt_ids else None

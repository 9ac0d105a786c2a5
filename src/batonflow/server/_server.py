"""What the routes share: the agents, the stores, the limits and the runs, and the steps every run endpoint takes
(check the input, start the run on a Runner made for it, answer as JSON, SSE or 202)."""

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, fields
from typing import Any

from fastapi import Request
from pydantic import BaseModel
from sse_starlette import EventSourceResponse, ServerSentEvent

from ..adk import AgentEvent, FlowAgent
from ..agents import HITLDecision, Runner
from ..errors import UserError
from ..graph import FlowEngine, Graph
from ..schema import Message, Stream, user
from ..store import CheckpointStore, SessionStore
from ..trace import TraceEvent
from ._distributed import Distributed
from ._errors import ApiError, shown
from ._models import InputMessage, check_body
from ._runs import Frame, Key, RunRecord, Runs
from ._wire import JSONAnswer, json_text

__all__ = [
    "Server",
    "ServerLimits",
    "answer",
    "check_targets",
    "checked",
    "finished",
    "pending_session",
    "result",
    "sse",
    "state",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerLimits:
    """What one request and one run may take. Each bound answers a 4xx that names it when it is passed.

    ``reconnect_grace``: seconds a run that is not detached keeps going after its last client went away, for that
    client to reconnect with ``Last-Event-ID``; 0 cancels it at once. ``max_value_depth``: how deeply the values a
    run keeps (``session_values``, resume ``targets``, a flow's ``variables``) may nest; the stores write them with
    a recursive codec, which fails on values nested a few hundred levels deep, so deeper ones are a 400 at once
    rather than a run that fails when it saves. ``max_active_runs`` counts flow evaluations too.
    """

    max_body_bytes: int = 1_048_576
    max_messages: int = 256
    max_message_chars: int = 100_000
    buffer_events: int = 2_048
    keep_finished_runs: int = 1_024
    max_active_runs: int = 4_096
    heartbeat: float = 15.0
    reconnect_grace: float = 0.0
    max_value_depth: int = 100

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            kind = float if f.name in ("heartbeat", "reconnect_grace") else int
            if type(value) is bool or not isinstance(value, kind) or value < (0 if kind is float else 1):
                minimum = "a number >= 0" if kind is float else "an int >= 1"
                raise UserError(f"ServerLimits.{f.name}: expected {minimum}, got {value!r}")


class Server:
    """What the routes share: the agents, the stores, the limits and the runs."""

    def __init__(
        self,
        agents: dict[str, FlowAgent],
        checkpoints: CheckpointStore,
        sessions: SessionStore,
        limits: ServerLimits,
        engine: FlowEngine,
        flows: dict[str, Graph],
        distributed: Distributed | None = None,
    ) -> None:
        self.distributed = distributed
        self.agents = agents
        self.engine = engine
        self.flows = flows
        self.checkpoints = checkpoints
        self.sessions = sessions
        self.limits = limits
        self.runs = Runs(
            buffer=limits.buffer_events,
            keep_finished=limits.keep_finished_runs,
            max_active=limits.max_active_runs,
            grace=limits.reconnect_grace,
        )

    def agent(self, name: str) -> FlowAgent:
        agent = self.agents.get(name)
        if agent is None:
            raise ApiError(
                404,
                "unknown_agent",
                f"agent: expected one of {sorted(self.agents)}, got {shown(name)}",
                expected=sorted(self.agents),
                found=name,
            )
        return agent

    def messages(self, given: str | Sequence[InputMessage], where: str = "input") -> list[Message]:
        """The prompt as messages, within the limits."""
        limits = self.limits
        items = [(m.role, m.content) for m in given] if not isinstance(given, str) else [("user", given)] * bool(given)
        if len(items) > limits.max_messages:
            raise ApiError(
                422,
                "too_many_messages",
                f"{where}: expected at most {limits.max_messages} messages, got {len(items)}",
                expected=f"<= {limits.max_messages} messages",
                found=len(items),
            )
        for i, (_, content) in enumerate(items):
            if len(content) > limits.max_message_chars:
                raise ApiError(
                    422,
                    "message_too_long",
                    f"{where}[{i}]: expected at most {limits.max_message_chars} characters, got {len(content)}",
                    expected=f"<= {limits.max_message_chars} characters",
                    found=len(content),
                )
        return [user(c) if r == "user" else Message(role=r, content=c) for r, c in items]  # type: ignore[arg-type]

    def start(
        self,
        name: str,
        run: Callable[[Runner], Stream[AgentEvent]],
        *,
        stream: bool,
        trace: bool,
        detached: bool,
        checkpoint_id: str | None,
        session_id: str | None,
        resumed: bool,
    ) -> RunRecord:
        """Start ``run`` on a Runner of agent ``name`` made for it (streaming or not, traced or not)."""
        agent = self.agent(name)

        def events() -> AsyncIterator[AgentEvent | TraceEvent]:
            pending: deque[TraceEvent] = deque()
            runner = Runner(
                agent,
                enable_streaming=stream,
                checkpoint_store=self.checkpoints,
                session_store=self.sessions,
                callbacks=(pending.append,) if trace else (),
            )
            return _interleaved(lambda: run(runner), pending)

        return self.runs.start(
            name,
            events,
            detached=detached,
            deltas=stream,
            checkpoint_id=checkpoint_id,
            session_id=session_id,
            resumed=resumed,
        )

    def check(self, body: BaseModel, *nested: str) -> None:
        """Refuse a body whose text is not Unicode, or whose ``nested`` fields nest deeper than the limit."""
        check_body(body, nested=nested, max_depth=self.limits.max_value_depth)

    def busy(self, kind: str, key: str) -> None:
        """Refuse a run on the conversation (``kind`` ``"session"``) or checkpoint ``key`` while one goes on it."""
        if any(record.key == (kind, key) for record in self.runs.active.values()):
            raise ApiError(
                409,
                "run_in_progress",
                f"{kind} {shown(key)}: expected no run going on it, got one; wait for it to end",
                expected="no active run",
                found="an active run",
            )


async def _interleaved(
    start: Callable[[], Stream[AgentEvent]], pending: deque[TraceEvent]
) -> AsyncIterator[AgentEvent | TraceEvent]:
    events = start()
    async with aclosing(events):
        async for event in events:
            while pending:
                yield pending.popleft()
            yield event
    while pending:
        yield pending.popleft()


def checked(check: Callable[[str], str], value: str, what: str) -> str:
    try:
        return check(value)
    except UserError as error:
        raise ApiError(422, f"invalid_{what}", str(error), expected=f"a valid {what}", found=shown(value)) from None


def sse(record: RunRecord, after: Key, heartbeat: float) -> EventSourceResponse:
    """The run's frames after ``after`` as an SSE stream, with comment heartbeats every ``heartbeat`` seconds."""

    async def frames() -> AsyncIterator[bytes]:
        async with aclosing(record.follow(after)) as followed:
            async for batch in followed:
                yield b"".join(_sent(frame).encode() for frame in batch)

    headers = {"X-Run-Id": record.run_id, "Cache-Control": "no-store"}
    return EventSourceResponse(frames(), ping=heartbeat, headers=headers)


def _sent(frame: Frame) -> ServerSentEvent:
    return ServerSentEvent(data=json_text(frame.data), event=frame.event, id=frame.id)


_DISCONNECT_POLL = 0.2  # seconds between looks at whether the client of a JSON answer is still there


async def finished(record: RunRecord, request: Request) -> None:
    """Wait for the run to end for a JSON answer. A client that goes away meanwhile (or a request cancelled)
    cancels the run, as a streamed one's does: nobody would read the answer."""
    waiter = asyncio.ensure_future(record.finished.wait())
    try:
        while not waiter.done():
            await asyncio.wait([waiter], timeout=_DISCONNECT_POLL)
            if not waiter.done() and await request.is_disconnected():
                record.cancel()
                await waiter
    except BaseException:
        record.cancel()
        raise
    finally:
        waiter.cancel()


def result(record: RunRecord) -> dict[str, Any]:
    events = [f.data for f in record.frames if f.key[1] == 0 and f.event not in ("run", "message_start")]
    return {**record.summary(), "events": events}


def answer(record: RunRecord, stream: bool, detached: bool, server: Server) -> Any:
    if stream:
        return sse(record, (0, 0), server.limits.heartbeat)
    if detached:
        headers = {"Location": f"/runs/{record.run_id}", "X-Run-Id": record.run_id}
        return JSONAnswer(record.summary(), status_code=202, headers=headers)
    return None


async def pending_session(server: Server, session_id: str, targets: Mapping[str, Any]) -> dict[str, Any]:
    """Refuse to resume a conversation that has no pending run, or with targets that match none of its interrupts."""
    data = await server.sessions.get(session_id, last=1)
    if data is None or not data.state.pending or data.state.snapshot is None:
        server.runs.pending_sessions.pop(session_id, None)
        raise ApiError(
            409,
            "nothing_pending",
            f"session {shown(session_id)}: expected a pending run to resume (no input given), got none",
            expected="a session with a pending run, or an input",
            found="no pending run" if data is not None else "no such session",
        )
    entry = server.runs.pending_sessions.get(session_id)
    return dict(targets) if entry is None else check_targets(entry.interrupts, targets)


def check_targets(interrupts: list[dict[str, Any]], targets: Mapping[str, Any]) -> dict[str, Any]:
    """``targets`` checked against the interrupts they answer, an approval's decisions made ``HITLDecision``s."""
    known = {i["id"]: i for i in interrupts}
    unknown = sorted(set(targets) - set(known))
    if unknown:
        raise ApiError(
            422,
            "unknown_targets",
            f"targets: expected interrupt ids among {list(known)}, got {[shown(u) for u in unknown]}, which match no "
            "interrupt",
            expected=list(known),
            found=unknown,
        )
    return {
        key: _decisions(key, known[key], value) if known[key].get("kind") == "approval" else value
        for key, value in targets.items()
    }


_ACTIONS = ("approve", "reject", "skip")


def _decisions(key: str, interrupt: dict[str, Any], value: Any) -> dict[str, HITLDecision]:
    """An approval's answer: one action for every call (``"approve"``), or a decision per call id
    (``{"call_1": {"action": "reject", "comment": "too much"}}``)."""
    calls = [task["call_id"] for task in interrupt["info"]["tasks"]]
    if isinstance(value, str):
        value = {call: {"action": value} for call in calls}
    expected = (
        f"one of {list(_ACTIONS)}, or a decision per call id {calls} "
        "({'action': ..., 'comment'?, 'modified_args'?, 'always_allow'?})"
    )
    if not isinstance(value, dict) or not set(value) <= set(calls):
        raise ApiError(
            422,
            "invalid_decision",
            f"targets[{key!r}]: expected {expected}, got {shown(value)}",
            expected=expected,
            found=shown(value),
        )
    decisions = {}
    for call_id, decision in value.items():
        fields_ = {"action", "comment", "modified_args", "always_allow"}
        if (
            not isinstance(decision, dict)
            or decision.get("action") not in _ACTIONS
            or not set(decision) <= fields_
            or not isinstance(decision.get("modified_args") or {}, dict)
        ):
            raise ApiError(
                422,
                "invalid_decision",
                f"targets[{key!r}][{call_id!r}]: expected {expected}, got {shown(decision)}",
                expected=expected,
                found=shown(decision),
            )
        decisions[call_id] = HITLDecision(
            action=decision["action"],
            comment=None if decision.get("comment") is None else str(decision["comment"]),
            modified_args=decision.get("modified_args"),
            always_allow=bool(decision.get("always_allow", False)),
        )
    return decisions


async def state(request: Request) -> Server:
    """The app's ``Server`` (a dependency of every route; a coroutine, so that FastAPI does not run it on a thread)."""
    server = request.app.state.batonflow
    assert isinstance(server, Server)
    return server

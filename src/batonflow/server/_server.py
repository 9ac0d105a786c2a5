"""What the routes share: the agents, the stores, the limits and the backend every run goes through, and the steps
every run endpoint takes (check the input, submit the run's segment, answer as JSON, SSE or 202).

A run is a segment of the backend (``batonflow.distributed``): its id is the segment id, its frames are records of
its run's event log (the checkpoint id, or a conversation's session id, names that), each SSE event's id is the
record's id, so ``Last-Event-ID`` replays from the log what a client missed, on every backend alike. The server
keeps only what this API process needs of the runs it started: how many go at once, and who follows each (a run
that is not detached is cancelled once its last follower has been gone ``reconnect_grace`` seconds; ``_follow``).
"""

import asyncio
from collections import OrderedDict
from collections.abc import AsyncGenerator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import Any
from urllib.parse import quote

from fastapi import Request
from pydantic import BaseModel
from sse_starlette import ServerSentEvent

from ..adk import FlowAgent
from ..distributed import (
    EventRecord,
    EventsGoneError,
    LiveBackend,
    SegmentClaim,
    SegmentOutcome,
    SegmentRequest,
    body_of,
)
from ..errors import (
    CheckpointNotFoundError,
    SegmentClaimedError,
    SegmentError,
    SegmentFailedError,
    UserError,
)
from ..graph import FlowEngine, Graph
from ..schema import Message, user
from ..store import CheckpointStore, SessionStore
from ._errors import ApiError, shown
from ._follow import Followers, Run, parse_event_id, record_key, segment_batches, segment_records, sent_text
from ._models import InputMessage, check_body
from ._refusals import Bounded, claimed, no_checkpoint, no_run
from ._sse import EventStream
from ._targets import check_targets
from ._wire import JSONAnswer, json_text, paused_json, summary

__all__ = [
    "Server",
    "ServerLimits",
    "checked",
    "pending_session",
    "state",
]

_AGENT_FRAMES = frozenset({"message", "interrupt", "error", "transfer", "action"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerLimits:
    """What one request and one run may take. Each bound answers a 4xx that names it when it is passed.

    ``buffer_events``: the frames the default backend's event log keeps of each run (what a reconnect can replay);
    ``keep_finished_runs``: the ended runs it remembers (their outcome, and their frames).
    ``reconnect_grace``: seconds a run that is not detached keeps going after its last client went away, for that
    client to reconnect with ``Last-Event-ID``; 0 cancels it at once. ``max_value_depth``: how deeply the values a
    run keeps (``session_values``, resume ``targets``, a flow's ``variables``) may nest; the stores write them with
    a recursive codec, which fails on values nested a few hundred levels deep, so deeper ones are a 400 at once
    rather than a run that fails when it saves. ``max_active_runs`` counts flow evaluations too.
    ``backend_timeout``: seconds each call a request makes to the backend may take (enqueueing, a status, an
    outcome read, a listing); past it, or when the backend's database refuses, the answer is a 503
    ``backend_unavailable`` with ``Retry-After`` (waiting for a run to end is not such a call).
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
    backend_timeout: float = 10.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            seconds = f.name in ("heartbeat", "reconnect_grace", "backend_timeout")
            kind = (int, float) if seconds else int
            if type(value) is bool or not isinstance(value, kind) or value < (0 if seconds else 1):
                minimum = "a number >= 0" if seconds else "an int >= 1"
                raise UserError(f"ServerLimits.{f.name}: expected {minimum}, got {value!r}")
        if self.backend_timeout == 0:
            raise UserError(
                f"ServerLimits.backend_timeout: expected a number of seconds > 0, got {self.backend_timeout!r}"
            )


class Server:
    """What the routes share: the agents, the stores, the limits, the backend, and the runs this process started."""

    def __init__(
        self,
        agents: dict[str, FlowAgent],
        checkpoints: CheckpointStore,
        sessions: SessionStore,
        limits: ServerLimits,
        engine: FlowEngine,
        flows: dict[str, Graph],
        backend: LiveBackend,
    ) -> None:
        self.agents = agents
        self.engine = engine
        self.flows = flows
        self.checkpoints = checkpoints
        self.sessions = sessions
        self.limits = limits
        self.backend = backend
        self.active: dict[str, Run] = {}
        self.conversations: OrderedDict[str, None] = OrderedDict()  # the sessions this process's runs took part in
        self.evals = 0  # flow evaluations going: they take a place among max_active_runs as runs do
        self.followers = Followers(backend, self.active, limits.reconnect_grace)

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

    def check(self, body: BaseModel, *nested: str) -> None:
        """Refuse a body whose text is not Unicode, or whose ``nested`` fields nest deeper than the limit."""
        check_body(body, nested=nested, max_depth=self.limits.max_value_depth)

    def busy(self, kind: str, key: str) -> None:
        """Refuse a run on the conversation (``kind`` ``"session"``) or checkpoint ``key`` while one this process
        started goes on it."""
        if any(run.key == (kind, key) for run in self.active.values()):
            raise ApiError(
                409,
                "run_in_progress",
                f"{kind} {shown(key)}: expected no run going on it, got one; wait for it to end",
                expected="no active run",
                found="an active run",
            )

    def check_room(self) -> None:
        """Refuse one more run (or flow evaluation) when ``max_active_runs`` are going."""
        going = len(self.active) + self.evals
        if going >= self.limits.max_active_runs:
            raise ApiError(
                429,
                "too_many_runs",
                f"runs: expected fewer than {self.limits.max_active_runs} running at once (runs and flow "
                f"evaluations), got {going}; retry later",
                expected=f"< {self.limits.max_active_runs} active runs",
                found=going,
                headers={"Retry-After": "1"},
            )

    @contextmanager
    def evaluating(self) -> Iterator[None]:
        """A place among the active runs for one flow evaluation, while it goes."""
        self.check_room()
        self.evals += 1
        try:
            yield
        finally:
            self.evals -= 1

    # -- runs ---------------------------------------------------------------------------------------------------

    async def submit(
        self, request: SegmentRequest, *, detached: bool, idempotency_key: str | None = None
    ) -> tuple[Run, str]:
        """Submit ``request``'s segment; the run, and the record id its frames come after in its run's log (the
        start, when the segment was there already: a second submit of the same request attaches to it). A request
        that asks something else than the one that claimed the segment is a 409 (a 422 under an
        ``idempotency_key``) saying what is known of the winner."""
        self.check_room()
        run_key = request.run_key
        async with self.bounded("enqueueing the run"):
            before = await self._last(run_key)
            try:
                sid = await self.backend.submit(request)
            except CheckpointNotFoundError as error:
                raise no_checkpoint(run_key, str(error)) from None
            except SegmentClaimedError as error:
                raise claimed(request, error.claim, idempotency_key) from None
        after = "0-0" if before is None or before.segment_id == sid else before.stream_id
        if request.session_id is not None:
            self.conversations[request.session_id] = None
            self.conversations.move_to_end(request.session_id)
            while len(self.conversations) > self.limits.keep_finished_runs:
                self.conversations.popitem(last=False)
        run = self.active.get(sid)
        if run is None:
            kind = "checkpoint" if request.session_id is None else "session"
            run = Run(sid, run_key, request.agent, (kind, run_key), detached)
            self.active[sid] = run
            run.watcher = asyncio.create_task(self._watch(run), name=f"batonflow-watch {sid}")
        return run, after

    async def _last(self, run_key: str) -> EventRecord | None:
        try:
            return await self.backend.last(run_key)
        except Exception:  # an event log that is down: the run goes on, its frames from the start
            return None

    async def _watch(self, run: Run) -> None:
        """Until the run has ended: then it no longer counts among this process's."""
        try:
            await self.final(run.segment_id)
        except Exception:
            pass  # the outcome says why, to whoever asks for it
        finally:
            if run.timer is not None:
                run.timer.cancel()
            self.active.pop(run.segment_id, None)

    def ended(self, sid: str) -> None:
        """The run's ``end`` was read from its log: it no longer counts among this process's, at once (its watcher,
        which may learn it a moment later from the backend, is let go)."""
        run = self.active.pop(sid, None)
        if run is not None:
            if run.timer is not None:
                run.timer.cancel()
            if run.watcher is not None:
                run.watcher.cancel()

    async def outcome(self, sid: str) -> SegmentOutcome | None:
        """How the run ``sid`` ended, None while it goes; ``unknown_run`` when the backend has no such segment."""
        try:
            async with self.bounded("reading the run's status"):
                status = await self.backend.status(sid)
        except SegmentError:
            raise no_run(sid) from None
        if status == "CANCELLED":
            return SegmentOutcome(segment_id=sid, status="cancelled")
        if status not in ("SUCCESS", "ERROR"):
            return None
        async with self.bounded("reading the run's outcome"):
            return await self.final(sid)

    async def final(self, sid: str) -> SegmentOutcome:
        """How the run ``sid`` ended, once it has."""
        try:
            return await self.backend.outcome(sid)
        except SegmentFailedError as error:
            return SegmentOutcome(segment_id=sid, status="failed", error=str(error))
        except Exception as error:  # a segment that could not run at all (the backend raised why)
            return SegmentOutcome(segment_id=sid, status="failed", error=f"{type(error).__name__}: {error}")

    async def summary(self, sid: str) -> dict[str, Any]:
        return summary(sid, await self.outcome(sid), self._agent(sid))

    def _agent(self, sid: str) -> str:
        run = self.active.get(sid)
        return "" if run is None else run.agent

    async def cancel(self, sid: str) -> dict[str, Any]:
        """Cancel the run (its frames end with its ``end``); its summary once it has stopped."""
        try:
            async with self.bounded("cancelling the run"):
                await self.backend.cancel(sid)
        except SegmentError:
            raise no_run(sid) from None
        run = self.active.get(sid)
        if run is not None and run.watcher is not None:
            await asyncio.wait([run.watcher], timeout=5.0)  # its end reached the log: the summary says so
        found = await self.summary(sid)
        if found["status"] == "running":  # a backend that stops it a moment later
            found["status"] = "cancelled"
        return found

    # -- following ----------------------------------------------------------------------------------------------

    async def check_after(self, run_key: str, last_event_id: str | None) -> str:
        """The record id a stream starts after: ``Last-Event-ID`` checked to name a record the run has sent."""
        if last_event_id is None:
            return "0-0"
        after = parse_event_id(last_event_id)
        last = await self._last(run_key)
        latest = "0-0" if last is None else last.stream_id
        if record_key(after) > record_key(latest):
            raise ApiError(
                400,
                "future_event_id",
                f"Last-Event-ID: expected an id this run has sent (at most {latest!r}), got {after!r}",
                expected=f"at most {latest}",
                found=after,
            )
        return after

    async def sse(self, sid: str, run_key: str, after: str, *, history: bool = False) -> EventStream:
        """The run's frames after record id ``after`` as an SSE stream, with comment heartbeats (with ``history``,
        those of the segments before it in its log first, each from its ``run`` to its ``end``). A log that has
        dropped the frames after ``after`` says so at once (a 410) or, when a follower falls behind while it reads,
        with an ``error`` frame that ends the stream; so does a log that cannot be read."""
        records = segment_batches(self.backend, run_key, sid, after, history=history)
        first, gone = await self._first(records, run_key, after)
        if gone is not None:
            await records.aclose()
            raise ApiError(
                410,
                "events_gone",
                f"Last-Event-ID: {gone}",
                expected="an id of a record the log still keeps",
                found=after,
            )
        server = self

        async def frames() -> AsyncGenerator[bytes, None]:
            run = server.active.get(sid)
            server.followers.attach(run)
            try:
                batch = await (first if first is not None else anext(records))
                agent = server._agent(sid)
                while True:
                    over = batch[-1].kind == "end" and batch[-1].segment_id == sid
                    if over:  # sent once the backend has recorded it, as a JSON answer is
                        server.ended(sid)
                        await server.final(sid)
                    yield "".join([sent_text(record, sid, agent) for record in batch]).encode()
                    if over:
                        break
                    batch = await anext(records)
            except StopAsyncIteration:
                pass
            except EventsGoneError as error:
                body = {"error": {"type": "EventsGone", "message": str(error)}}
                yield ServerSentEvent(data=json_text(body), event="error").encode()
            except Exception as error:  # the event log is down: say so, and where the outcome can still be read
                message = (
                    f"events: the run's live events cannot be read ({type(error).__name__}: {error}); the run goes "
                    f"on: GET /runs/{quote(sid, safe='/@')} gives its outcome"
                )
                body = {"error": {"type": "EventsUnavailable", "message": message}}
                yield ServerSentEvent(data=json_text(body), event="error").encode()
            finally:
                if first is not None:
                    first.cancel()
                await records.aclose()
                server.followers.detach(run)

        headers = {"X-Run-Id": quote(sid, safe="/@"), "Cache-Control": "no-store"}
        return EventStream(frames(), ping=self.limits.heartbeat, headers=headers)

    async def _first(
        self, records: AsyncGenerator[list[EventRecord], None], run_key: str, after: str
    ) -> tuple["asyncio.Future[list[EventRecord]] | None", EventsGoneError | None]:
        """Whether the log has dropped the records after ``after`` (what a stream refuses with a 410 before it
        starts), once the loop has turned: a run just submitted takes its first step, and a log that has the
        answer at hand gives it. A backend that knows it without waiting (``events_gone``: its log is in memory)
        is asked; of any other, the first read of ``records`` is started, for the stream to await."""
        known = getattr(self.backend, "events_gone", None)
        first = None if known is not None else asyncio.ensure_future(anext(records))
        await asyncio.sleep(0)
        if first is None:
            assert known is not None
            error = known(run_key, after)
        else:
            error = first.exception() if first.done() else None
        return first, error if isinstance(error, EventsGoneError) else None

    async def result(self, run: Run, after: str, request: Request) -> dict[str, Any]:
        """Wait for the run to end, for a JSON answer: its summary and its agent events. A client that goes away
        meanwhile (or a request cancelled) cancels the run, as a streamed one's does: nobody would read it."""
        events: list[dict[str, Any]] = []
        ended: list[SegmentOutcome] = []

        async def read() -> None:
            try:
                async for record in segment_records(self.backend, run.run, run.segment_id, after):
                    if record.kind == "end":
                        ended.append(SegmentOutcome.from_payload(record.data))
                        self.ended(run.segment_id)
                    elif record.data["event"] in _AGENT_FRAMES:
                        events.append(body_of(record.data))
            except Exception:  # the log dropped them, or is down: the outcome is the backend's all the same
                ended.append(await self.final(run.segment_id))

        reader = asyncio.ensure_future(read())
        try:
            while not reader.done():
                await asyncio.wait([reader], timeout=_DISCONNECT_POLL)
                if not reader.done() and await request.is_disconnected():
                    self.followers.cancel_later(run.segment_id)
                    await asyncio.wait([reader], timeout=5.0)
                    break
        except BaseException:
            self.followers.cancel_later(run.segment_id)
            raise
        finally:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
        # The backend's word, once it has recorded it (DBOS does a moment after the worker sends the end): what
        # the answer says is what GET /runs/{id} and GET /checkpoints say from then on.
        outcome = await self.final(run.segment_id) if ended else await self.outcome(run.segment_id)
        return {**summary(run.segment_id, outcome, run.agent), "events": events}

    def accepted(self, run: Run) -> JSONAnswer:
        """The 202 of a detached run: where its state is."""
        location = f"/runs/{quote(run.segment_id, safe='/@')}"
        headers = {"Location": location, "X-Run-Id": quote(run.segment_id, safe="/@")}
        return JSONAnswer(summary(run.segment_id, None, run.agent), status_code=202, headers=headers)

    async def answer(self, run: Run, after: str, stream: bool, detached: bool, request: Request) -> Any:
        if stream:
            return await self.sse(run.segment_id, run.run, after)
        if detached:
            return self.accepted(run)
        return await self.result(run, after, request)

    async def paused(self, checkpoint_id: str | None = None) -> list[dict[str, Any]]:
        """The runs waiting for an answer, as ``GET /checkpoints`` lists them (the backend's word)."""
        async with self.bounded("listing the paused runs"):
            return [paused_json(run) for run in await self.backend.paused(checkpoint_id)]

    async def claim(self, checkpoint_id: str) -> SegmentClaim | None:
        """What the backend knows of the latest segment under ``checkpoint_id`` (the winner of its last resume)."""
        async with self.bounded("reading the checkpoint's latest run"):
            return await self.backend.claim(checkpoint_id)

    def bounded(self, what: str) -> Bounded:
        """A backend call within ``limits.backend_timeout``: past it, or with the backend's database away, a 503
        ``backend_unavailable`` with ``Retry-After``."""
        return Bounded(what, self.limits.backend_timeout)

    async def close(self) -> None:
        """Stop watching (the app is shutting down); the backend cancels what it runs when it is closed."""
        tasks = [run.watcher for run in self.active.values() if run.watcher is not None] + list(self.followers.tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


_DISCONNECT_POLL = 0.2  # seconds between looks at whether the client of a JSON answer is still there


def checked(check: Any, value: str, what: str) -> str:
    try:
        return str(check(value))
    except UserError as error:
        raise ApiError(422, f"invalid_{what}", str(error), expected=f"a valid {what}", found=shown(value)) from None


async def pending_session(server: Server, session_id: str, targets: Mapping[str, Any]) -> dict[str, Any]:
    """Refuse to resume a conversation that has no pending run, or with targets that match none of its interrupts."""
    data = await server.sessions.get(session_id, last=1)
    if data is None or not data.state.pending or data.state.snapshot is None:
        raise ApiError(
            409,
            "nothing_pending",
            f"session {shown(session_id)}: expected a pending run to resume (no input given), got none",
            expected="a session with a pending run, or an input",
            found="no pending run" if data is not None else "no such session",
        )
    entry = next((p for p in await server.backend.paused() if p.session_id == session_id), None)
    return dict(targets) if entry is None or not entry.interrupts else check_targets(entry.interrupts, targets)


async def state(request: Request) -> Server:
    """The app's ``Server`` (a dependency of every route; a coroutine, so that FastAPI does not run it on a thread)."""
    server = request.app.state.batonflow
    assert isinstance(server, Server)
    return server

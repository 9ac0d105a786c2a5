"""Runs the app started: each a task that turns a run's events into frames, a bounded buffer of them, and whoever
follows it.

A frame is what one SSE event carries. Its id orders it in the run: an agent event's frame has the event's ``seq``
as id (``"7"``); the frames that come after it and before the next agent event — its streamed deltas, the joined
message, trace events, the end — have ``"7.1"``, ``"7.2"``, … So a client that reconnects with ``Last-Event-ID``
gets exactly the frames after the last one it saw, from the buffer, as long as the buffer still holds them.

A run belongs to the requests that follow it: when the last one goes away (the client disconnected), the run is
cancelled after ``grace`` seconds unless a client reconnected meanwhile, or it was started ``detached``.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from contextlib import aclosing, contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from ..adk import AgentEvent, InterruptInfo
from ..schema import Message
from ..trace import TraceEvent
from ._errors import ApiError, shown
from ._wire import error_json, event_json, event_kind, interrupt_json, trace_json

__all__ = ["Frame", "Pending", "RunRecord", "Runs", "parse_event_id"]

Key = tuple[int, int]
Status = Literal["running", "completed", "interrupted", "failed", "cancelled"]

_EVENT_ID = re.compile(r"(\d{1,18})(?:\.(\d{1,18}))?")


def parse_event_id(text: str) -> Key:
    """A frame id (``"7"`` or ``"7.2"``) as its key; anything else is a 400 that says what an id looks like."""
    match = _EVENT_ID.fullmatch(text.strip())
    if match is None:
        raise ApiError(
            400,
            "invalid_event_id",
            f"Last-Event-ID: expected an event id such as '7' or '7.2', got {shown(text)}",
            expected="<seq> or <seq>.<n>, digits only",
            found=shown(text),
        )
    return int(match.group(1)), int(match.group(2) or 0)


def _id(key: Key) -> str:
    return str(key[0]) if key[1] == 0 else f"{key[0]}.{key[1]}"


@dataclass(slots=True)
class Frame:
    key: Key
    event: str
    data: dict[str, Any]

    @property
    def id(self) -> str:
        return _id(self.key)


@dataclass(slots=True)
class Pending:
    """A checkpoint this app's runs left waiting for an answer (stores cannot list theirs)."""

    checkpoint_id: str
    agent: str
    interrupts: list[dict[str, Any]]
    session_id: str | None = None
    run_id: str = ""
    created: float = field(default_factory=time.time)

    def json(self) -> dict[str, Any]:
        return {
            "checkpoint_id": self.checkpoint_id,
            "agent": self.agent,
            "session_id": self.session_id,
            "run_id": self.run_id,
            "created": self.created,
            "interrupts": self.interrupts,
        }


class RunRecord:
    """One run: what it has said so far (a bounded buffer of frames), how it ended, and who follows it."""

    def __init__(
        self,
        runs: Runs,
        agent: str,
        *,
        detached: bool,
        checkpoint_id: str | None,
        session_id: str | None,
        resumed: bool,
        buffer: int,
    ) -> None:
        self.runs = runs
        self.run_id = f"run-{uuid.uuid4().hex}"
        self.agent = agent
        self.detached = detached
        self.checkpoint_id = checkpoint_id
        self.session_id = session_id
        self.resumed = resumed
        self.created = time.time()
        self.status: Status = "running"
        self.text = ""
        self.interrupts: list[dict[str, Any]] = []
        self.error: dict[str, Any] | None = None
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        self.task: asyncio.Task[None] | None = None
        self.frames: deque[Frame] = deque(maxlen=buffer)
        self.first_pos = 0  # the position of frames[0] among all the frames the run made
        self.evicted: Key | None = None  # the key of the last frame the buffer dropped
        self.last_seq = 0
        self._aux = 0
        self._wake = asyncio.Event()
        self.finished = asyncio.Event()
        self._followers = 0
        self._cancel_timer: asyncio.TimerHandle | None = None

    @property
    def key(self) -> tuple[str, str] | None:
        """Where the run's pending state lives: ``("session", id)`` for a conversation's turn, else
        ``("checkpoint", id)``. Kinds apart: a conversation and a checkpoint may share an id, and are different
        things."""
        if self.session_id is not None:
            return "session", self.session_id
        return None if self.checkpoint_id is None else ("checkpoint", self.checkpoint_id)

    @property
    def last_key(self) -> Key:
        return self.frames[-1].key if self.frames else (self.evicted or (0, 0))

    def summary(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "agent": self.agent,
            "status": self.status,
            "text": self.text,
            "checkpoint_id": self.checkpoint_id if self.session_id is None else None,
            "session_id": self.session_id,
            "interrupts": self.interrupts,
            "error": self.error,
            "usage": self.usage,
            "detached": self.detached,
            "last_event_id": _id(self.last_key),
        }

    # -- making frames ----------------------------------------------------------------------------------------

    def add(self, event: str, data: dict[str, Any], seq: int | None = None) -> Frame:
        if seq is not None and seq > self.last_seq:
            self.last_seq, self._aux = seq, 0
            key = (seq, 0)
        else:
            self._aux += 1
            key = (self.last_seq, self._aux)
        frame = Frame(key, event, data)
        if len(self.frames) == self.frames.maxlen:
            self.evicted = self.frames[0].key
            self.first_pos += 1
        self.frames.append(frame)
        self._wake.set()
        self._wake = asyncio.Event()
        return frame

    async def agent_event(self, event: AgentEvent, *, deltas: bool) -> None:
        variant = event.message_output
        message: Message | None = None
        if variant is not None and variant.is_streaming and variant.message_stream is not None and deltas:
            head = {"seq": event.seq, "agent": event.agent_name, "role": variant.role, "tool_name": variant.tool_name}
            self.add("message_start", head, event.seq)
            try:
                async with aclosing(variant.message_stream) as chunks:
                    async for chunk in chunks:
                        if chunk.content or chunk.reasoning_content:
                            delta = {"seq": event.seq, "content": chunk.content}
                            if chunk.reasoning_content:
                                delta["reasoning"] = chunk.reasoning_content
                            self.add("delta", delta)
                message = await variant.get_message()
            except Exception:
                message = None  # the agent reports why in an error event of its own
            self.add(event_kind(event), event_json(event, message))
        else:
            if variant is not None:
                try:
                    message = await variant.get_message()
                except Exception:
                    message = None
            self.add(event_kind(event), event_json(event, message), event.seq)
        self._note(event, message)

    def _note(self, event: AgentEvent, message: Message | None) -> None:
        """What the summary keeps of an event: the answer so far, tokens, the interrupt, the error."""
        if message is not None and message.role == "assistant":
            if not message.tool_calls and message.content:
                self.text = message.content
            usage = message.response_meta.usage if message.response_meta is not None else None
            if usage is not None:
                self.usage["prompt_tokens"] += usage.prompt_tokens
                self.usage["completion_tokens"] += usage.completion_tokens
                self.usage["total_tokens"] += usage.total_tokens
        action = event.action
        if action is not None and isinstance(action.interrupted, InterruptInfo):
            self.interrupts = [interrupt_json(c) for c in action.interrupted.interrupt_contexts]
        if event.error is not None:
            self.error = error_json(event.error)

    def trace(self, event: TraceEvent) -> None:
        self.add("trace", trace_json(event))

    # -- following ----------------------------------------------------------------------------------------------

    def check_resumable(self, after: Key) -> None:
        """Refuse a ``Last-Event-ID`` the client cannot have seen, or one whose successors the buffer dropped."""
        if after > self.last_key:
            raise ApiError(
                400,
                "future_event_id",
                f"Last-Event-ID: expected an id this run has sent (at most {_id(self.last_key)!r}), got {_id(after)!r}",
                expected=f"at most {_id(self.last_key)}",
                found=_id(after),
            )
        if self.evicted is not None and after < self.evicted:
            first = self.frames[0].id
            found = "none (the events from the start)" if after == (0, 0) else repr(_id(after))
            raise ApiError(
                410,
                "events_gone",
                f"Last-Event-ID: expected an id from {_id(self.evicted)!r} on (the buffer keeps the last "
                f"{self.frames.maxlen} events; the oldest kept is {first!r}), got {found}",
                expected=f"at least {_id(self.evicted)}",
                found=_id(after),
            )

    async def follow(self, after: Key = (0, 0)) -> AsyncGenerator[list[Frame], None]:
        """The frames after ``after``, then the new ones as they come, until the run ends; the run is cancelled when
        the last follower of a run that is not detached goes away.

        Frames come in batches, all that were there when the follower looked: a busy server (or a burst of deltas)
        sends them in one write rather than a write each. A follower that falls behind the buffer — one that reads
        slower than the run writes, or one that starts after the frames it wants were dropped — gets an in-band
        ``Overrun`` error and the end of its stream, never a stream with a hole in it."""
        self._attach()
        try:
            start = next((i for i, f in enumerate(self.frames) if f.key > after), len(self.frames))
            behind = self.evicted is not None and after < self.evicted
            pos = self.first_pos - 1 if behind else self.first_pos + start
            while True:
                wake = self._wake
                offset = pos - self.first_pos
                if offset < 0:
                    yield [Frame(self.last_key, "error", {"error": {"type": "Overrun", "message": "fell behind"}})]
                    return
                batch = list(itertools.islice(self.frames, offset, None))
                if batch:
                    pos += len(batch)
                    yield batch
                if self.finished.is_set() and pos - self.first_pos >= len(self.frames):
                    return
                await wake.wait()
        finally:
            self._detach()

    def _attach(self) -> None:
        self._followers += 1
        if self._cancel_timer is not None:
            self._cancel_timer.cancel()
            self._cancel_timer = None

    def _detach(self) -> None:
        self._followers -= 1
        if self._followers or self.detached or self.task is None or self.task.done():
            return
        if self.runs.grace <= 0:
            self.task.cancel()
        else:
            self._cancel_timer = asyncio.get_running_loop().call_later(self.runs.grace, self._cancel_if_alone)

    def _cancel_if_alone(self) -> None:
        self._cancel_timer = None
        if not self._followers and self.task is not None:
            self.task.cancel()

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()


class Runs:
    """The runs of one app: running and recently finished ones, the flow evaluations going, and what they left
    pending: checkpoints in ``pending``, conversations in ``pending_sessions`` (apart, since ids may meet)."""

    def __init__(self, *, buffer: int, keep_finished: int, max_active: int, grace: float) -> None:
        self.buffer = buffer
        self.keep_finished = keep_finished
        self.max_active = max_active
        self.grace = grace
        self.active: dict[str, RunRecord] = {}
        self.finished: OrderedDict[str, RunRecord] = OrderedDict()
        self.pending: dict[str, Pending] = {}
        self.pending_sessions: dict[str, Pending] = {}
        self.sessions: OrderedDict[str, None] = OrderedDict()
        self.evals = 0  # flow evaluations going: they take a place among max_active as runs do

    def check_room(self) -> None:
        """Refuse one more run (or flow evaluation) when ``max_active`` are going."""
        going = len(self.active) + self.evals
        if going >= self.max_active:
            raise ApiError(
                429,
                "too_many_runs",
                f"runs: expected fewer than {self.max_active} running at once (runs and flow evaluations), got "
                f"{going}; retry later",
                expected=f"< {self.max_active} active runs",
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

    def get(self, run_id: str) -> RunRecord:
        record = self.active.get(run_id) or self.finished.get(run_id)
        if record is None:
            raise ApiError(
                404,
                "unknown_run",
                f"run: expected the id of a run of this server (running, or among the last {self.keep_finished} "
                f"finished), got {shown(run_id)}",
                expected="a run id from POST /runs",
                found=shown(run_id),
            )
        return record

    def start(
        self,
        agent: str,
        events: Callable[[], AsyncIterator[AgentEvent | TraceEvent]],
        *,
        detached: bool,
        deltas: bool,
        checkpoint_id: str | None,
        session_id: str | None,
        resumed: bool,
    ) -> RunRecord:
        self.check_room()
        record = RunRecord(
            self,
            agent,
            detached=detached,
            checkpoint_id=checkpoint_id,
            session_id=session_id,
            resumed=resumed,
            buffer=self.buffer,
        )
        if session_id is not None:
            self.sessions[session_id] = None
            self.sessions.move_to_end(session_id)
        self.active[record.run_id] = record
        record.add(
            "run",
            {
                "run_id": record.run_id,
                "agent": agent,
                "checkpoint_id": checkpoint_id,
                "session_id": session_id,
                "resumed": resumed,
            },
        )
        record.task = asyncio.create_task(self._pump(record, events, deltas), name=f"batonflow {record.run_id}")
        return record

    async def _pump(
        self, record: RunRecord, events: Callable[[], AsyncIterator[AgentEvent | TraceEvent]], deltas: bool
    ) -> None:
        try:
            async with aclosing(events()) as items:  # type: ignore[type-var]
                async for item in items:
                    if isinstance(item, AgentEvent):
                        await record.agent_event(item, deltas=deltas)
                    else:
                        record.trace(item)
            record.status = "failed" if record.error else "interrupted" if record.interrupts else "completed"
        except asyncio.CancelledError:
            record.status = "cancelled"
            raise
        except Exception as error:  # a run that could not start (a taken checkpoint id, a conflict): in-band
            record.error = error_json(error)
            record.status = "failed"
            record.add("error", {"seq": record.last_seq + 1, "error": record.error})
        finally:
            self._ended(record)

    def _ended(self, record: RunRecord) -> None:
        record.add("end", record.summary())
        key = record.key
        if key is not None:
            kind, key_id = key
            pending = self.pending_sessions if kind == "session" else self.pending
            if record.status == "interrupted":
                pending[key_id] = Pending(
                    key_id, record.agent, record.interrupts, session_id=record.session_id, run_id=record.run_id
                )
            elif record.status == "completed":
                pending.pop(key_id, None)
        self.active.pop(record.run_id, None)
        self.finished[record.run_id] = record
        while len(self.finished) > self.keep_finished:
            self.finished.popitem(last=False)
        record.finished.set()

    async def close(self) -> None:
        """Cancel every run still going and wait for them (the app is shutting down)."""
        tasks = [r.task for r in self.active.values() if r.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

"""What a run keeps when its Runner keeps history: the record of its steps, written to the checkpoint store.

A run given a checkpoint id under ``Runner(keep_history=...)`` carries a ``HistoryRecorder`` as the first link of
its step log (``batonflow.adk.loop``): every model reply and tool result the run's steps record — the same values a
resume's journal keeps, under the same keys — is appended to the run's ``RunRecord`` in the order it finished,
with the agent's address. The Runner adds what the step log does not see, from the events: transfers,
interrupts (their ids) and the answers a resume was given. Each step notes how long the session's history was and
what the session values were once it was done (taken when the next step comes, so that the event of the step's
own message is in), which is how ``Runner.history`` rebuilds the state after any step without storing it per step.

The record is saved when a run segment ends — an interrupt (before the caller sees it), the end, a failure — and
the resume of a paused run appends to it. Replay reads it back: ``ReplaySteps`` is the step log of a replay, giving
the recorded value for each key and raising ``ReplayMismatchError`` for a key it has not.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from ..codec import decode, encode_async, register_type
from ..errors import ReplayMismatchError, RunHistoryError
from ..schema import Message
from ..store import HistoryRetention, load_history, save_history
from ._checkpoint import Checkpoint, keeps_parts, limits_of
from ._context import RunSession
from ._events import AgentEvent
from ._interrupt import InterruptInfo
from .loop import Replies, ToolResult

__all__ = [
    "HistoryRecorder",
    "PrefixSteps",
    "ReplaySteps",
    "RunRecord",
    "StepEntry",
    "history_target",
    "read_record",
    "recorded",
    "resume_recorder",
]

T = TypeVar("T")
_log = logging.getLogger("batonflow.adk")


@dataclass(slots=True, kw_only=True)
class StepEntry:
    """One step of a run as kept: what it was, where, its value, and how the run stood after it."""

    kind: str
    """``model``, ``tool``, ``transfer``, ``interrupt`` or ``answer``."""
    address: str
    agent_name: str
    segment: int = 0
    """Which segment of the run (0: the run, 1: its first resume, ...) the step is in."""
    key: str = ""
    """The step log's key (model and tool steps): what a replay looks the value up by."""
    value: Any = None
    """The model's reply, the ``ToolResult``, the transfer's target, the interrupts (id: address) or the answers."""
    arguments: str = ""
    """A tool call's arguments, as the model gave them."""
    events: int = -1
    """How many events the session's history held after the step (-1 until the next step comes)."""
    values: dict[str, Any] | None = None
    """The session values after the step, when they changed since the step before (None: unchanged)."""


@dataclass(slots=True, kw_only=True)
class RunRecord:
    """A run's kept history: its input, its starting session values, its steps, and the messages of its session."""

    run_id: str
    root_messages: list[Message] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)
    enable_streaming: bool = False
    steps: list[StepEntry] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    """The messages of the session's history, as far as the last save."""
    segments: int = 1


register_type(StepEntry, name="HistoryStepEntry")
register_type(RunRecord, name="RunRecord")


def _agent_of(address: str) -> str:
    """The innermost agent of a formatted address (``agent:a;agent:b;tool:t:1`` → ``b``)."""
    names = [part[6:] for part in address.split(";") if part.startswith("agent:")]
    return names[-1] if names else address


class HistoryRecorder(Replies):
    """The first link of a run's step log under ``keep_history``: records every step, replays none."""

    __slots__ = ("_last_values", "kept", "retention", "session", "store")

    def __init__(self, record: RunRecord, store: Any, retention: HistoryRetention) -> None:
        super().__init__()
        self.kept = record
        self.store = store
        self.retention = retention
        self.session: RunSession | None = None
        self._last_values: dict[str, Any] = dict(record.values)
        for step in record.steps:
            if step.values is not None:
                self._last_values = step.values

    # -- the step log ----------------------------------------------------------------------------------------

    async def recall(self, key: str, kind: type[T]) -> T | None:
        return None

    async def record_step(self, kind: str, address: str, value: Any, key: str = "", arguments: str = "") -> None:
        """Append a step at ``address``; the steps before it learn how long the history is now."""
        self._settle()
        self.kept.steps.append(
            StepEntry(
                kind=kind,
                address=address,
                agent_name=_agent_of(address),
                segment=self.kept.segments - 1,
                key=key,
                value=value,
                arguments=arguments,
                values=self._values(),
            )
        )

    async def record(self, key: str, value: Message | ToolResult) -> None:
        kind, address = key.split("|", 2)[:2]
        arguments = ""
        if isinstance(value, ToolResult):
            arguments = self._arguments(value.message.tool_call_id)
        await self.record_step(kind, address, value, key, arguments)

    def check(self) -> None:
        return None

    async def flush(self) -> None:
        return None

    # -- what the events say ---------------------------------------------------------------------------------

    async def observe(self, event: AgentEvent) -> None:
        """A transfer or an interrupt, as a step (the interrupt's root ids as its value)."""
        action = event.action
        if action is None:
            return
        address = ";".join(f"agent:{step.agent_name}" for step in event.run_path) or f"agent:{event.agent_name}"
        if action.transfer_to_agent is not None:
            await self.record_step("transfer", address, action.transfer_to_agent.dest_agent_name)
        if isinstance(action.interrupted, InterruptInfo):
            ids = {c.id: c.address for c in action.interrupted.interrupt_contexts if c.is_root_cause}
            await self.record_step("interrupt", address, ids)

    async def answered(self, targets: dict[str, Any], root: str) -> None:
        """A resume starts: a new segment, whose first step is the answers it was given."""
        self.kept.segments += 1
        await self.record_step("answer", f"agent:{root}", dict(targets))

    async def save(self) -> None:
        """Write the record as it stands (a segment ended)."""
        self._settle()
        if self.session is not None:
            self.kept.messages = [await event.get_message() for event in self.session.history()]
        data = await encode_async(self.kept, limits=limits_of(self.store))
        await save_history(self.store, self.kept.run_id, data, self.retention)

    # -- helpers ---------------------------------------------------------------------------------------------

    def _settle(self) -> None:
        """The history's length after the steps still waiting for it: the session's as it is now."""
        if self.session is None:
            return
        size = len(self.session.history())
        for step in reversed(self.kept.steps):
            if step.events >= 0:
                break
            step.events = size

    def _values(self) -> dict[str, Any] | None:
        """The session values now, when they changed since the last step (a tool's changes are in by its record)."""
        values = self.session.values if self.session is not None else self._last_values
        if values == self._last_values:
            return None
        self._last_values = dict(values)
        return self._last_values

    def _arguments(self, call_id: str) -> str:
        for step in reversed(self.kept.steps):
            if step.kind == "model" and isinstance(step.value, Message):
                for call in step.value.tool_calls:
                    if call.id == call_id:
                        return call.function.arguments
        return ""


def history_target(store: Any, checkpoint_id: str | None) -> tuple[Any, str] | None:
    """Where a run under ``keep_history`` keeps its record, and under which id: the store's ``history_target``
    when it names one (a conversation's session snapshot, which keeps no record, names the Runner's checkpoint
    store and the turn's id), else the checkpoint store under the checkpoint id; None when neither is given."""
    target = getattr(store, "history_target", None)
    if target is not None:
        return cast("tuple[Any, str]", target)
    if checkpoint_id is None or store is None or not keeps_parts(store):
        return None
    return store, checkpoint_id


async def read_record(store: Any, run_id: str) -> RunRecord:
    """The record ``store`` keeps of ``run_id``; ``RunHistoryError`` when it keeps none."""
    data = await load_history(store, run_id)
    if data is None:
        raise RunHistoryError(
            f"history of run {run_id!r}: expected a run kept with Runner(..., keep_history=True) in the "
            f"{type(store).__name__}, found none (the run is unknown, kept no history, or retention dropped it)",
            run_id=run_id,
        )
    record = decode(data, limits=limits_of(store))
    if not isinstance(record, RunRecord):
        raise RunHistoryError(
            f"history of run {run_id!r}: expected a RunRecord, found a {type(record).__name__}", run_id=run_id
        )
    return record


async def resume_recorder(
    retention: HistoryRetention | None,
    store: Any,
    checkpoint_id: str,
    checkpoint: Checkpoint,
    targets: dict[str, Any],
    root: str,
) -> HistoryRecorder | None:
    """The recorder of a resume under ``keep_history`` (None when off): the run's record so far, a new segment
    begun with the resume's answers. A run paused before history was kept, or dropped by retention, is kept from
    here on."""
    if retention is None:
        return None
    try:
        record = await read_record(store, checkpoint_id)
    except RunHistoryError:
        record = RunRecord(run_id=checkpoint_id, root_messages=checkpoint.root_messages, values=checkpoint.values)
        record.segments = 0
    recorder = HistoryRecorder(record, store, retention)
    await recorder.answered(targets, root)
    return recorder


class ReplaySteps(Replies):
    """The step log of a replay: each model and tool step gives its recorded value; a step the record does not
    have (the agent tree changed) raises ``ReplayMismatchError``, kept in ``error`` too (an agent may turn it into
    an error event)."""

    __slots__ = ("_available", "_waiting", "error", "kept", "segment")

    def __init__(self, record: RunRecord) -> None:
        super().__init__()
        self.kept = record
        self.segment = -1
        self.error: ReplayMismatchError | None = None
        self._available: dict[str, int] = {}
        self._waiting: list[str] = []

    def begin(self, segment: int) -> None:
        """Segment ``segment`` of the run is replayed next (its replies are counted afresh, as they were)."""
        self._counts.clear()
        self.segment = segment
        self._available = {
            s.key: i for i, s in enumerate(self.kept.steps) if s.segment == segment and s.kind in ("model", "tool")
        }
        self._waiting = [
            address
            for s in self.kept.steps
            if s.segment == segment and s.kind == "interrupt"
            for address in s.value.values()
        ]

    async def recall(self, key: str, kind: type[T]) -> T | None:
        index = self._available.pop(key, None)
        if index is None and self._interrupted(key):
            return None  # the tool that asked a human: it runs again, to interrupt again, as in a resume
        if index is None:
            raise self.mismatch(_agent_of(key.split("|", 2)[1]), f"asked for a step the record has not ({key})")
        value = self.kept.steps[index].value
        if not isinstance(value, kind):
            raise self.mismatch(self.kept.steps[index].agent_name, f"step {key} holds another kind of result")
        return value

    async def record(self, key: str, value: Message | ToolResult) -> None:
        return None

    def check(self) -> None:
        return None

    async def flush(self) -> None:
        return None

    def _interrupted(self, key: str) -> bool:
        """Whether ``key`` is a tool call the segment ended interrupted in (a tool's result is never recorded)."""
        if not key.startswith("tool|"):
            return False
        _, agent, _, call_id = key.split("|", 3)
        return any(
            address.startswith(f"{agent};tool:") and address.endswith(f":{call_id}") for address in self._waiting
        )

    def end(self) -> None:
        """The segment's replay ended: a recorded step it never reached is a difference."""
        if self._available:
            first = min(self._available.values())
            step = self.kept.steps[first]
            raise self.mismatch(step.agent_name, f"did not reach the recorded {step.kind} step", at=first)

    def mismatch(self, agent_name: str, what: str, at: int | None = None) -> ReplayMismatchError:
        """The error for a replay that left its record at step ``at`` (the first step not replayed, when None)."""
        if at is None:
            at = min(self._available.values(), default=self._next_index())
        self.error = ReplayMismatchError(
            f"replay of run {self.kept.run_id!r} differs from its record at step {at}: agent {agent_name!r} "
            f"{what}; expected the agent tree the run had (an agent or tool missing, renamed or added since)",
            run_id=self.kept.run_id,
            step=at,
            agent_name=agent_name,
        )
        return self.error

    def _next_index(self) -> int:
        later = [i for i, s in enumerate(self.kept.steps) if s.segment > self.segment]
        return later[0] if later else len(self.kept.steps)


class PrefixSteps(ReplaySteps):
    """The step log of a fork that replays its run up to step ``upto`` (``Runner.fork(..., replay=True)``): each
    model and tool step to it gives its recorded value, as in a replay; from there on every step runs. A step
    recorded after ``upto`` (a later call of the same tool batch, say) runs too; a step the record has not, asked
    before the prefix is through, is a ``ReplayMismatchError``."""

    __slots__ = ("_later", "last_segment", "upto")

    def __init__(self, record: RunRecord, upto: int) -> None:
        super().__init__(record)
        self.upto = upto
        self.last_segment = record.steps[upto].segment
        """The segment step ``upto`` is in: those before it replay whole, it up to the step, none after it."""
        self._later: set[str] = set()

    def begin(self, segment: int) -> None:
        super().begin(segment)
        self._later = {key for key, index in self._available.items() if index > self.upto}
        self._available = {key: index for key, index in self._available.items() if index <= self.upto}

    async def recall(self, key: str, kind: type[T]) -> T | None:
        if key in self._later or (self.segment == self.last_segment and not self._available):
            return None  # the step comes after the prefix: it runs
        return await super().recall(key, kind)

    def end(self) -> None:
        if self.segment < self.last_segment:  # its resume is what comes next: it must have replayed whole
            super().end()


async def recorded(recorder: HistoryRecorder, events: AsyncIterator[AgentEvent]) -> AsyncGenerator[AgentEvent, None]:
    """``events``, each transfer and interrupt noted; the record saved when the segment ends — at an interrupt
    before the caller sees it (a resume may start at once), else when the events end or are closed. A save that
    fails is logged: the run's own outcome does not depend on its history."""
    saved = False
    try:
        async with aclosing(events) as source:  # type: ignore[type-var]
            async for event in source:
                await recorder.observe(event)
                if event.action is not None and isinstance(event.action.interrupted, InterruptInfo):
                    saved = await _saved(recorder)
                yield event
    finally:
        if not saved:
            await _saved(recorder)


async def _saved(recorder: HistoryRecorder) -> bool:
    try:
        await recorder.save()
    except Exception:
        _log.warning("could not save the history of run %r", recorder.kept.run_id, exc_info=True)
    return True

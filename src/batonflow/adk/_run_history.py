"""A kept run seen step by step (``Runner.history``), run again from its record (``Runner.replay``), and continued
from any step as a new run (``Runner.fork``).

The record (``_run_record``) holds each step's value and how the run stood after it; a history step's ``state`` is
rebuilt from it: the run's input and the messages its session's history held then, and its session values. A
replay runs the same agent tree with a step log that answers every model and tool step from the record, and a
paused run's segments are resumed with the recorded answers, in a store of its own (the original is not
touched). A fork is a new run whose input is the state after the step, edited. ``KeptRuns`` is the Runner's side.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Self, cast

from ..errors import RunHistoryError, UserError
from ..schema import Message, Stream
from ..store import CheckpointStore, HistoryRetention, MemoryCheckpointStore, check_checkpoint_id
from ..trace import TraceCallback
from ._builtin import EXIT_TOOL_NAME, TRANSFER_TOOL_NAME
from ._events import AgentEvent
from ._flow import FlowAgent
from ._interrupt import InterruptInfo
from ._run_record import PrefixSteps, ReplaySteps, RunRecord, StepEntry, read_record
from .loop import StepLog, ToolResult

if TYPE_CHECKING:
    from ._runner import Runner

__all__ = [
    "HistoryStep",
    "KeptRuns",
    "RunHistory",
    "RunState",
    "fork_input",
    "forked",
    "read_history",
    "replayed",
]


@dataclass(slots=True, kw_only=True)
class RunState:
    """How a run stood after a step: the messages so far (its input, then its session's history) and its session
    values. What ``Runner.fork`` starts a new run from."""

    messages: list[Message] = field(default_factory=list)
    session_values: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class HistoryStep:
    """One step of a kept run: its place, its kind (``model``, ``tool``, ``transfer``, ``interrupt``,
    ``answer``), the agent and address it happened at, a one-line summary, its value, and the state after it."""

    index: int
    kind: str
    agent_name: str
    address: str
    summary: str
    value: Any = None
    arguments: str = ""
    _record: RunRecord = field(repr=False, compare=False)
    _events: int = field(default=0, repr=False)
    _values: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def state(self) -> RunState:
        """The run's state after this step (a new list and dict each time: editing them changes nothing kept)."""
        messages = [*self._record.root_messages, *self._record.messages[: self._events]]
        return RunState(messages=messages, session_values=dict(self._values))

    def payload(self) -> dict[str, Any]:
        """The step as plain data: its place, kind, agent, address, summary, tool arguments and the session values
        after it (one entry of ``RunHistory.payload``)."""
        return {
            "index": self.index,
            "kind": self.kind,
            "agent_name": self.agent_name,
            "address": self.address,
            "summary": self.summary,
            "arguments": self.arguments,
            "session_values": dict(self._values),
        }


@dataclass(slots=True, kw_only=True)
class RunHistory:
    """The steps of a kept run, in the order they happened: a sequence of ``HistoryStep``s."""

    run_id: str
    steps: list[HistoryStep]
    segments: int = 1
    """The run's segments: 1, and one more for each resume."""

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self) -> Iterator[HistoryStep]:
        return iter(self.steps)

    def __getitem__(self, index: int) -> HistoryStep:
        return self.steps[index]

    @property
    def root_agent(self) -> str | None:
        """The agent the run started at: the first agent of its steps' addresses (None for a run of no steps)."""
        for step in self.steps:
            first = step.address.split(";", 1)[0]
            if first.startswith("agent:"):
                return first[len("agent:") :]
        return None

    def payload(self) -> dict[str, Any]:
        """The steps as plain data (what ``GET /runs/{id}/history`` and ``batonflow runs history`` show): each
        step's place, kind, agent, address, summary, tool arguments and session values after it."""
        return {"run_id": self.run_id, "segments": self.segments, "steps": [step.payload() for step in self.steps]}


def _summary(step: StepEntry) -> str:
    value = step.value
    if step.kind == "model" and isinstance(value, Message):
        calls = ", ".join(call.function.name for call in value.tool_calls)
        return f"calls {calls}" if calls else _cut(value.content)
    if step.kind == "tool" and isinstance(value, ToolResult):
        return f"{value.message.tool_name}({_cut(step.arguments, 40)}) -> {_cut(value.message.content, 40)}"
    if step.kind == "transfer":
        return f"transfers to {value}"
    if step.kind == "interrupt":
        return f"interrupted: {', '.join(value)}"
    if step.kind == "answer":
        return f"resumed with answers for {', '.join(sorted(value)) or 'none'}"
    return step.kind


def _cut(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def history_of(record: RunRecord) -> RunHistory:
    """The history ``record`` holds, each step with the state after it."""
    steps = []
    values = record.values
    size = 0
    for index, entry in enumerate(record.steps):
        values = values if entry.values is None else entry.values
        size = size if entry.events < 0 else entry.events
        steps.append(
            HistoryStep(
                index=index,
                kind=entry.kind,
                agent_name=entry.agent_name,
                address=entry.address,
                summary=_summary(entry),
                value=entry.value,
                arguments=entry.arguments,
                _record=record,
                _events=size,
                _values=values,
            )
        )
    return RunHistory(run_id=record.run_id, steps=steps, segments=record.segments)


async def read_history(store: Any, run_id: str) -> RunHistory:
    """The history ``store`` keeps of ``run_id`` (``RunHistoryError`` when none)."""
    return history_of(await read_record(store, run_id))


Edit = Callable[[RunState], RunState] | Mapping[str, Any] | None


def fork_input(history: RunHistory, at: int, edit: Edit) -> RunState:
    """The state a fork at step ``at`` starts from, edited; ``RunHistoryError`` for a step the run has not."""
    if type(at) is not int or not 0 <= at < len(history):
        raise RunHistoryError(
            f"fork of run {history.run_id!r}: expected a step from 0 to {len(history) - 1}, got {at!r}",
            run_id=history.run_id,
            step=at if type(at) is int else None,
        )
    state = history[at].state
    if edit is None:
        return state
    if callable(edit):
        edited = edit(state)
        if not isinstance(edited, RunState):
            raise UserError(f"fork edit: expected a function returning a RunState, got {type(edited).__name__}")
        return edited
    unknown = sorted(set(edit) - {"messages", "session_values"})
    if unknown:
        raise UserError(f"fork edit: expected the keys 'messages' and 'session_values', got {unknown}")
    return RunState(
        messages=list(edit.get("messages", state.messages)),
        session_values={**state.session_values, **dict(edit.get("session_values", {}))},
    )


def _check_tree(steps: ReplaySteps, root: FlowAgent, upto: int | None = None) -> None:
    """Each recorded step's agent (to step ``upto``) is in the tree, with the tool it called: a tool's result is
    replayed by its call id, so a tool renamed or removed since would replay without this. Agents inside a tool
    (an agent tool's run) are not in the tree, and are not checked."""
    agents = {flow.name: flow.agent for flow in root.walk()}
    kept = steps.kept.steps
    for index, step in enumerate(kept if upto is None else kept[: upto + 1]):
        if step.kind not in ("model", "tool") or ";tool:" in step.address:
            continue
        agent = agents.get(step.agent_name)
        if agent is None:
            raise steps.mismatch(step.agent_name, "is not in the agent tree", at=index)
        tools = getattr(agent, "tools", None)
        if step.kind == "tool" and isinstance(step.value, ToolResult) and tools is not None:
            name = step.value.message.tool_name
            if name not in {tool.info.name for tool in tools} | _BUILT_IN:
                raise steps.mismatch(step.agent_name, f"has no tool {name!r}", at=index)


_BUILT_IN = {TRANSFER_TOOL_NAME, EXIT_TOOL_NAME}


async def replayed(runner: Runner, store: Any, run_id: str) -> AsyncIterator[AgentEvent]:
    """The events of ``run_id`` run again from its record by ``runner``'s agent tree, no model or tool called."""
    record = await read_record(store, run_id)
    steps = ReplaySteps(record)
    _check_tree(steps, runner.agent)
    private = runner.replaying(steps)
    async for event in _segments(private, steps, record, range(record.segments), "replay", record.values):
        yield event


async def _segments(
    runner: Runner, steps: ReplaySteps, record: RunRecord, segments: range, checkpoint_id: str, values: dict[str, Any]
) -> AsyncIterator[AgentEvent]:
    """The events of ``record``'s ``segments`` run again by ``runner`` under ``checkpoint_id``: the run on its
    input and ``values``, then each resume with the answers it was given (the interrupts' new ids put in)."""
    answers = [s for s in record.steps if s.kind == "answer"]
    interrupts = [s for s in record.steps if s.kind == "interrupt"]
    renamed: dict[str, str] = {}
    for segment in segments:
        steps.begin(segment)
        if segment == 0:
            events = runner.run(record.root_messages, session_values=values, checkpoint_id=checkpoint_id)
        else:
            targets = {renamed.get(k, k): v for k, v in answers[segment - 1].value.items()}
            events = runner.resume(checkpoint_id, targets)
        async with aclosing(events) as source:
            async for event in source:
                if steps.error is not None:  # an agent may have made it an error event: raised, not shown
                    raise steps.error
                action = event.action
                if action is not None and isinstance(action.interrupted, InterruptInfo) and segment < len(interrupts):
                    ids = [c.id for c in action.interrupted.interrupt_contexts if c.is_root_cause]
                    renamed.update(zip(interrupts[segment].value, ids, strict=False))
                yield event
        if steps.error is not None:
            raise steps.error
        steps.end()


async def forked(
    runner: Runner, store: Any, run_id: str, at: int, edit: Edit, checkpoint_id: str | None
) -> AsyncIterator[AgentEvent]:
    """The events of a new run by ``runner`` from the state after step ``at`` of ``run_id``, edited."""
    state = fork_input(await read_history(store, run_id), at, edit)
    messages, values = state.messages, state.session_values
    events = runner.run(messages, session_values=values, checkpoint_id=checkpoint_id, checkpoint_store=store)
    async with aclosing(events) as source:
        async for event in source:
            yield event


async def forked_in_place(
    runner: Runner, store: Any, run_id: str, at: int, edit: Edit, checkpoint_id: str
) -> AsyncIterator[AgentEvent]:
    """The events of a new run by ``runner`` that replays ``run_id`` to step ``at`` and runs on from there, with
    the session values after the step (``edit``'s merged in)."""
    record = await read_record(store, run_id)
    state = fork_input(history_of(record), at, None)
    if edit is not None and (callable(edit) or set(edit) - {"session_values"}):
        raise UserError(
            "fork with replay=True: expected edit={'session_values': {...}} or none (the run's messages up to the "
            f"step are replayed as they were), got {edit!r}"
        )
    values = {**state.session_values, **dict((edit or {}).get("session_values", {}))}
    steps = PrefixSteps(record, at)
    _check_tree(steps, runner.agent, upto=at)
    twin = runner.forking(steps, store)
    async for event in _segments(twin, steps, record, range(steps.last_segment + 1), checkpoint_id, values):
        yield event


class KeptRuns:
    """What a Runner does with the runs it kept (``Runner(keep_history=...)``), in any process on the same store."""

    checkpoint_store: CheckpointStore | None
    keep_history: HistoryRetention | None
    _replaying: StepLog | None
    callbacks: tuple[TraceCallback, ...]

    def _history_store(self, store: CheckpointStore | None) -> CheckpointStore:
        store = self.checkpoint_store if store is None else store
        if store is None:
            raise UserError("run history: expected Runner(..., checkpoint_store=...), got no store")
        return store

    async def history(self, run_id: str, *, checkpoint_store: CheckpointStore | None = None) -> RunHistory:
        """The steps of the run kept under ``run_id`` (its checkpoint id), each with the state after it: from any
        process that reaches the store. ``RunHistoryError`` when the store keeps no history of it."""
        check_checkpoint_id(run_id)
        return await read_history(self._history_store(checkpoint_store), run_id)

    def replay(self, run_id: str, *, checkpoint_store: CheckpointStore | None = None) -> Stream[AgentEvent]:
        """The events of the kept run ``run_id``, produced again by this Runner's agent tree from the run's record:
        no model or tool is called. ``ReplayMismatchError`` (naming the agent and the step) where the tree asks
        for a step the record has not, or leaves one of its steps out."""
        check_checkpoint_id(run_id)
        return Stream.from_async_iter(replayed(cast("Runner", self), self._history_store(checkpoint_store), run_id))

    def replaying(self, steps: StepLog) -> Self:
        """A private copy of this Runner that answers every step from ``steps``, in a store of its own."""
        twin = self.forking(steps, MemoryCheckpointStore())
        twin.keep_history, twin.callbacks = None, ()
        return twin

    def forking(self, steps: StepLog, store: CheckpointStore) -> Self:
        """A copy of this Runner whose runs answer the steps ``steps`` holds from it, in ``store``: a fork that
        replays its run's prefix (its own history kept as this Runner keeps it)."""
        twin = copy.copy(self)
        twin.checkpoint_store, twin._replaying = store, steps
        return twin

    def fork(
        self,
        run_id: str,
        *,
        at: int,
        edit: Edit = None,
        checkpoint_id: str | None = None,
        checkpoint_store: CheckpointStore | None = None,
        replay: bool = False,
    ) -> Stream[AgentEvent]:
        """A new run from the state after step ``at`` of the kept run ``run_id``: its messages so far and session
        values, changed by ``edit`` (a function of the ``RunState``, or ``{"messages": ..., "session_values":
        ...}``, the values merged). The original and its history are left as they are; ``checkpoint_id`` names
        the new run (kept too, under ``keep_history``). ``RunHistoryError`` for a step the run has not.

        With ``replay``, the new run starts where the step left the run rather than at the root: it replays the
        run's steps up to ``at`` from the record (no model or tool called; its interrupts answered as they were),
        inside the agent that was running, then goes on live; ``edit`` may only merge ``session_values`` into
        those after the step. Its events begin with the replayed ones. ``ReplayMismatchError`` where the agent
        tree parts from the record before the step."""
        check_checkpoint_id(run_id)
        if checkpoint_id == run_id:
            raise UserError(f"fork of run {run_id!r}: expected a new checkpoint_id, got the original's")
        store = self._history_store(checkpoint_store)
        runner = cast("Runner", self)
        if replay:
            new_id = checkpoint_id if checkpoint_id is not None else f"fork-{uuid.uuid4().hex}"
            return Stream.from_async_iter(forked_in_place(runner, store, run_id, at, edit, new_id))
        return Stream.from_async_iter(forked(runner, store, run_id, at, edit, checkpoint_id))

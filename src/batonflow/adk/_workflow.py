"""Workflow agents: sub-agents in sequence, in a loop, or in parallel (Eino's workflow agents).

Sub-agents cannot transfer back to the workflow; a transfer inside one is forwarded but changes nothing here.
An interrupt below becomes the workflow's own composite interrupt, with the position to resume from: the
index in the sequence, the loop's iteration and index, or the parallel branches still interrupted (branches
that finished are not run again).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field, replace

from ..codec import register_type
from ..errors import ResumeError, UserError
from ..schema import RunStep, Stream
from ..tools import InterruptSignal
from ._agent import Agent
from ._context import RunContext, SessionEvent
from ._events import AgentEvent, AgentInput
from ._fanout import Branch, BranchDispatcher, branch_of, check_branch, dispatch
from ._flow import FlowAgent, agent_with_options
from ._interrupt import ResumeInfo, interrupted_action

__all__ = ["LoopAgent", "ParallelAgent", "SequentialAgent", "WorkflowAgent"]


@dataclass(slots=True, kw_only=True)
class SequentialState:
    interrupt_index: int


@dataclass(slots=True, kw_only=True)
class LoopState:
    loop_iterations: int
    sub_agent_index: int


@dataclass(slots=True, kw_only=True)
class ParallelState:
    """Every branch's lane of events; on resume the interrupted branches continue on theirs."""

    lanes: dict[int, list[SessionEvent]] = field(default_factory=dict)


# Each is saved as the interrupt state of its workflow agent.
register_type(SequentialState, name="SequentialState")
register_type(LoopState, name="LoopState")
register_type(ParallelState, name="ParallelState")


class WorkflowAgent:
    """The common part of the workflow agents: a name, a description, and sub-agents kept in their place."""

    kind = "Workflow"

    def __init__(self, *, name: str, description: str = "", sub_agents: Sequence[Agent]) -> None:
        if not name:
            raise UserError(f"{type(self).__name__} needs a name: expected a non-empty string, got ''")
        self.name = name
        self.description = description
        self.sub_agents: list[FlowAgent] = []
        names = [a.name for a in sub_agents]
        repeated = sorted({n for n in names if names.count(n) > 1 or n == name})
        if repeated:
            raise UserError(f"sub-agents of '{name}': expected unique names, got {repeated} more than once")
        for sub in sub_agents:
            flow = agent_with_options(sub, disallow_transfer_to_parent=True)
            if flow.parent is not None:
                raise UserError("agent has already been set as a sub-agent of another agent")
            for hook in ("on_set_as_sub_agent", "on_disallow_transfer_to_parent"):
                method = getattr(flow.agent, hook, None)
                if method is not None:
                    method(*((self,) if hook == "on_set_as_sub_agent" else ()))
            self.sub_agents.append(flow)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, sub_agents={[s.name for s in self.sub_agents]})"

    def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        return self._run(_own(ctx, self.name, input), None)

    def resume(self, info: ResumeInfo, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        return self._run(_own(ctx, self.name), info)

    def _run(self, ctx: RunContext, info: ResumeInfo | None) -> AsyncIterator[AgentEvent]:
        raise NotImplementedError

    def _interrupt(
        self, ctx: RunContext, info: str, state: object, *subs: InterruptSignal, at: AgentEvent | None = None
    ) -> AgentEvent:
        """The workflow's composite interrupt; it stands where ``at`` (the sub-agent's interrupt) stood, or, for a
        gathering of several, at the workflow itself."""
        signal = InterruptSignal(info, address=ctx.address, state=state, subs=subs, id=ctx.interrupt_id(ctx.address))
        return AgentEvent(
            agent_name=at.agent_name if at is not None else self.name,
            run_path=at.run_path if at is not None else ctx.run_path,
            action=interrupted_action(signal, info),
        )

    async def _step(
        self, sub: FlowAgent, ctx: RunContext, resuming: ResumeInfo | None
    ) -> AsyncGenerator[tuple[str, AgentEvent], None]:
        """Run (or resume) one sub-agent; yields ("event", e) to forward and finally ("last", action event)."""
        assert ctx.root_input is not None
        events = sub.resume(resuming, ctx) if resuming is not None else sub.run(ctx.root_input, ctx)
        held: AgentEvent | None = None
        async with aclosing(events) as source:  # type: ignore[type-var]
            async for event in source:
                if event.error is not None:
                    yield "error", event
                    return
                # Only the last action matters: an event with an action waits until we know it is the last.
                if held is not None:
                    yield "event", held
                    held = None
                if event.action is not None:
                    held = event
                    continue
                yield "event", event
        if held is not None:
            yield "last", held


def _own(ctx: RunContext | None, name: str, input: AgentInput | None = None) -> RunContext:
    """A workflow is normally run by its flow agent, which extends the path and sets the root input; standing
    alone it does both itself."""
    if ctx is not None:
        return ctx
    streaming = input.enable_streaming if input is not None else False
    return RunContext(root_input=input, enable_streaming=streaming).child(name)


def _after(ctx: RunContext, *names: str) -> RunContext:
    """The context for the next sub-agent: the run path grows with each one that ran (so that later agents see
    earlier agents' events as history), the address does not."""
    return replace(ctx, run_path=(*ctx.run_path, *(RunStep(n) for n in names)))


class SequentialAgent(WorkflowAgent):
    """Runs its sub-agents one after the other; stops at an error, an exit or an interrupt."""

    kind = "Sequential"

    async def _run(self, ctx: RunContext, info: ResumeInfo | None) -> AsyncIterator[AgentEvent]:
        start = 0
        if info is not None:
            state = info.interrupt_state
            if not isinstance(state, SequentialState):
                yield AgentEvent(error=_bad_state(self, state))
                return
            start = state.interrupt_index
        step_ctx = _after(ctx, *(s.name for s in self.sub_agents[:start]))
        for index in range(start, len(self.sub_agents)):
            sub = self.sub_agents[index]
            resuming = (
                ResumeInfo(enable_streaming=ctx.enable_streaming) if info is not None and index == start else None
            )
            outcome = self._step(sub, step_ctx, resuming)
            step_ctx = _after(step_ctx, sub.name)
            async with aclosing(outcome) as steps:
                async for kind, event in steps:
                    if kind != "last":
                        yield event
                        if kind == "error":
                            return
                        continue
                    action = event.action
                    assert action is not None
                    if action.signal is not None:
                        wrapped = self._interrupt(
                            ctx,
                            "Sequential workflow interrupted",
                            SequentialState(interrupt_index=index),
                            action.signal,
                            at=event,
                        )
                        yield wrapped
                        return
                    yield event
                    if action.exit:
                        return


class LoopAgent(WorkflowAgent):
    """Runs its sub-agents in order, again and again: ``max_iterations`` times, or until broken (0 = no limit).

    A sub-agent's ``break_loop`` action ends the innermost loop after that sub-agent; exit ends everything.
    """

    kind = "Loop"

    def __init__(
        self, *, name: str, description: str = "", sub_agents: Sequence[Agent], max_iterations: int = 0
    ) -> None:
        # Checked first: the base class marks the sub-agents as placed, which a failed construction must not do.
        if max_iterations < 0:
            raise UserError(f"max_iterations: expected 0 (no limit) or more, got {max_iterations}")
        super().__init__(name=name, description=description, sub_agents=sub_agents)
        self.max_iterations = max_iterations

    async def _run(self, ctx: RunContext, info: ResumeInfo | None) -> AsyncIterator[AgentEvent]:
        if not self.sub_agents:
            return
        start_iteration = start_index = 0
        if info is not None:
            state = info.interrupt_state
            if not isinstance(state, LoopState):
                yield AgentEvent(error=_bad_state(self, state))
                return
            start_iteration, start_index = state.loop_iterations, state.sub_agent_index
        names = [s.name for s in self.sub_agents]
        step_ctx = _after(ctx, *(names * start_iteration), *names[:start_index])
        iteration = start_iteration
        while self.max_iterations == 0 or iteration < self.max_iterations:
            for index in range(start_index, len(self.sub_agents)):
                sub = self.sub_agents[index]
                resuming = None
                if info is not None:
                    resuming, info = ResumeInfo(enable_streaming=ctx.enable_streaming), None
                outcome = self._step(sub, step_ctx, resuming)
                step_ctx = _after(step_ctx, sub.name)
                broken = False
                async with aclosing(outcome) as steps:
                    async for kind, event in steps:
                        broken = _mark_break(event, iteration) or broken
                        if kind != "last":
                            yield event
                            if kind == "error":
                                return
                            continue
                        action = event.action
                        assert action is not None
                        if action.signal is not None:
                            state = LoopState(loop_iterations=iteration, sub_agent_index=index)
                            wrapped = self._interrupt(ctx, "Loop workflow interrupted", state, action.signal, at=event)
                            yield wrapped
                            return
                        yield event
                        if action.exit:
                            return
                if broken:
                    return
            start_index = 0
            iteration += 1


def _mark_break(event: AgentEvent, iteration: int) -> bool:
    """Claim a break-loop action for this loop (the innermost one); outer loops then ignore it."""
    action = event.action
    if action is None or action.break_loop is None or action.break_loop.done:
        return False
    action.break_loop.done = True
    action.break_loop.current_iterations = iteration
    return True


class ParallelAgent(WorkflowAgent):
    """Runs its sub-agents at the same time. Each sees the history from before the fork plus its own events;
    their events reach the caller as they come and join the session by time when all are done.

    ``distribute=True`` runs each branch on the worker pool of the run, when it has one (a segment on
    ``DBOSWorker``): a branch's events then reach the caller when that branch ends. Without a pool the branches
    run here, as they do by default."""

    kind = "Parallel"

    def __init__(
        self, *, name: str, description: str = "", sub_agents: Sequence[Agent], distribute: bool = False
    ) -> None:
        if not isinstance(distribute, bool):
            raise UserError(f"ParallelAgent '{name}': distribute: expected True or False, got {distribute!r}")
        super().__init__(name=name, description=description, sub_agents=sub_agents)
        self.distribute = distribute

    async def _run(self, ctx: RunContext, info: ResumeInfo | None) -> AsyncIterator[AgentEvent]:
        if not self.sub_agents:
            return
        state = ParallelState()
        branches = range(len(self.sub_agents))
        if info is not None:
            saved = info.interrupt_state
            if not isinstance(saved, ParallelState):
                yield AgentEvent(error=_bad_state(self, saved))
                return
            state = saved
            pending = set(ctx.resume.next_steps(ctx.address)) if ctx.resume is not None else set()
            branches = [i for i in branches if self.sub_agents[i].name in pending]  # type: ignore[assignment]
        contexts = {}
        for i in range(len(self.sub_agents)):
            session = ctx.session.fork()
            session.events = list(state.lanes.get(i, []))
            contexts[i] = replace(ctx, session=session)
        resuming = ResumeInfo(enable_streaming=ctx.enable_streaming) if info is not None else None
        dispatcher = ctx.dispatcher if self.distribute else None
        if dispatcher is None:
            streams = [Stream.from_async_iter(self._branch(i, contexts[i], resuming)) for i in branches]
        else:
            streams = [
                Stream.from_async_iter(self._elsewhere(dispatcher, i, contexts[i], info is not None)) for i in branches
            ]
        signals: list[InterruptSignal] = []
        async with aclosing(Stream.merge(streams)) as merged:
            async for event in merged:
                if event.action is not None and event.action.signal is not None:
                    signals.append(event.action.signal)
                    continue
                yield event
        lanes = {i: contexts[i].session.events for i in range(len(self.sub_agents))}
        if signals:
            for lane in lanes.values():
                for recorded in lane:
                    await recorded.get_message()  # a checkpoint holds whole messages, never streams
            wrapped = self._interrupt(ctx, "Parallel workflow interrupted", ParallelState(lanes=lanes), *signals)
            yield wrapped
            return
        joined = sorted((e for lane in lanes.values() for e in lane), key=lambda e: e.ts)
        ctx.session.events.extend(joined)

    async def _elsewhere(
        self, dispatcher: BranchDispatcher, index: int, ctx: RunContext, resuming: bool
    ) -> AsyncGenerator[AgentEvent, None]:
        """Branch ``index`` run by ``dispatcher``: its events, once it has ended."""
        branch = await branch_of(ctx, name=self.sub_agents[index].name, resuming=resuming, index=index)
        async with aclosing(dispatch(dispatcher, ctx, branch)) as source:
            async for event in source:
                yield event

    def branch_events(self, branch: Branch, ctx: RunContext) -> AsyncGenerator[AgentEvent, None]:
        """Run the branch a dispatcher sent here (``BranchHost``)."""
        names = [s.name for s in self.sub_agents]
        check_branch(self, branch, names, names[branch.index] if 0 <= branch.index < len(names) else None)
        return self._branch(branch.index, ctx, ResumeInfo() if branch.resume_records is not None else None)

    async def _branch(
        self, index: int, ctx: RunContext, resuming: ResumeInfo | None
    ) -> AsyncGenerator[AgentEvent, None]:
        sub = self.sub_agents[index]
        assert ctx.root_input is not None
        events = sub.resume(resuming, ctx) if resuming is not None else sub.run(ctx.root_input, ctx)
        async with aclosing(events) as source:  # type: ignore[type-var]
            async for event in source:
                yield event
                if event.action is not None and event.action.signal is not None:
                    return  # the branch stops forwarding at its interrupt


def _bad_state(agent: WorkflowAgent, state: object) -> ResumeError:
    return ResumeError(
        f"{agent.kind} agent '{agent.name}' cannot resume: expected its saved position, got {type(state).__name__}"
    )

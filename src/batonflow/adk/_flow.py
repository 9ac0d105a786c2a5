"""The flow agent: a sub-agent tree with transfer of control, history rewriting and run paths (Eino's ``flowAgent``).

Every agent in a tree is wrapped in a ``FlowAgent``. It extends the run path, rebuilds the agent's input from
the root input plus the run's history, records the agent's own events, and, when the agent's last action is a
transfer, runs the named sub-agent or parent. Control does not come back by itself: a run ends when an agent
ends without transferring.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import replace
from typing import Any

from ..errors import ResumeError, TransferError, UserError
from ._agent import Agent
from ._builtin import transfer_failed_text, transfer_tool_output
from ._context import RunContext
from ._events import AgentAction, AgentEvent, AgentInput, event_from_message
from ._history import HistoryEntry, HistoryRewriter, default_history_rewriter
from ._history_policy import HistoryPolicy, as_history_policy
from ._interrupt import ResumeInfo

__all__ = ["FlowAgent", "agent_with_options", "set_sub_agents"]


class FlowAgent:
    """An agent placed in a tree. Build trees with ``set_sub_agents``; wrappers are copied, inner agents shared."""

    def __init__(
        self,
        agent: Agent,
        *,
        disallow_transfer_to_parent: bool = False,
        history_rewriter: HistoryRewriter | None = None,
    ) -> None:
        self.agent = agent
        self.sub_agents: list[FlowAgent] = []
        self.parent: FlowAgent | None = None
        self.disallow_transfer_to_parent = disallow_transfer_to_parent
        self.history_rewriter: HistoryRewriter = history_rewriter or default_history_rewriter(agent.name)
        # The default rewriter keeps the user's input as it is: with no history yet, the input is the root input.
        self._default_rewriter = history_rewriter is None

    @property
    def name(self) -> str:
        return self.agent.name

    @property
    def description(self) -> str:
        return self.agent.description

    def __repr__(self) -> str:
        subs = ", ".join(s.name for s in self.sub_agents)
        return f"FlowAgent({self.name!r}, sub_agents=[{subs}])"

    def _copy(self) -> FlowAgent:
        """A copy of this wrapper and of the wrappers below it (inner agents shared), parents relinked."""
        new = FlowAgent.__new__(FlowAgent)
        new.agent = self.agent
        new.parent = self.parent
        new.disallow_transfer_to_parent = self.disallow_transfer_to_parent
        new.history_rewriter = self.history_rewriter
        new._default_rewriter = self._default_rewriter
        new.sub_agents = []
        for sub in self.sub_agents:
            copied = sub._copy()
            copied.parent = new
            new.sub_agents.append(copied)
        return new

    def _use(self, policy: HistoryPolicy) -> None:
        self.history_rewriter = policy.rewriter(self.name)
        self._default_rewriter = False

    def find_agent(self, name: str) -> FlowAgent | None:
        """A transfer target: a sub-agent, or the parent unless transfer to it is disallowed."""
        for sub in self.sub_agents:
            if sub.name == name:
                return sub
        if self.parent is not None and self.parent.name == name and not self.disallow_transfer_to_parent:
            return self.parent
        return None

    def walk(self) -> list[FlowAgent]:
        """This agent and every agent below it (workflow agents' sub-agents included)."""
        found = [self]
        for sub in [*self.sub_agents, *getattr(self.agent, "sub_agents", ())]:
            found.extend(sub.walk())
        return found

    def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        ctx = (ctx if ctx is not None else RunContext(enable_streaming=input.enable_streaming)).child(self.name)
        if len(ctx.run_path) == 1:
            ctx.root_input = input
        # Not a generator itself, so that an untraced run pays no extra layer per event.
        events = self._drive(None, ctx)
        return events if ctx.trace is None else _traced(self.name, events, ctx)

    async def _start(self, ctx: RunContext) -> AsyncIterator[AgentEvent]:
        return self.agent.run(await self._agent_input(ctx), ctx)

    def resume(self, info: ResumeInfo, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        """Go down the saved interrupt's path and resume the agent that was interrupted, as Eino does."""
        ctx = (ctx if ctx is not None else RunContext()).child(self.name)
        return self._resume(info, ctx) if ctx.trace is None else _traced(self.name, self._resume(info, ctx), ctx)

    async def _resume(self, info: ResumeInfo, ctx: RunContext) -> AsyncIterator[AgentEvent]:
        state = ctx.get_interrupt_state()
        if state.was_interrupted:
            resume = getattr(self.agent, "resume", None)
            if resume is None:
                yield self._error(
                    ResumeError(
                        f"failed to resume agent: agent '{self.name}' is an interrupt point but is not a ResumableAgent"
                    ),
                    ctx,
                )
                return
            target = ctx.get_resume_context()
            inner_info = ResumeInfo(
                enable_streaming=ctx.enable_streaming,
                was_interrupted=True,
                interrupt_state=state.state,
                is_resume_target=target.is_resume_target,
                resume_data=target.data,
            )
            async with aclosing(self._drive(_consumed_after(resume(inner_info, ctx), ctx), ctx)) as events:
                async for event in events:
                    yield event
            return
        steps = ctx.resume.next_steps(ctx.address) if ctx.resume is not None else []
        if not steps:
            yield self._error(ResumeError("no child agents leading to interrupted agent were found"), ctx)
            return
        if len(steps) > 1:
            yield self._error(
                ResumeError(
                    "agent has multiple child agents leading to interruption, but concurrent transfer is not supported"
                ),
                ctx,
            )
            return
        dest = self.find_agent(steps[0])
        source: AsyncIterator[AgentEvent]
        if dest is None and not self.sub_agents:
            source = self._wrapped_resume(ctx)
        elif dest is None:
            yield self._error(
                ResumeError(f"failed to resume agent: sub-agent '{steps[0]}' not found in agent '{self.name}'"), ctx
            )
            return
        else:
            source = dest.resume(info, ctx)
        async with aclosing(source) as forwarded:  # type: ignore[type-var]
            async for event in forwarded:
                yield event

    def _wrapped_resume(self, ctx: RunContext) -> AsyncIterator[AgentEvent]:
        """The resume of an agent that wraps another under its own name and has no sub-agents (Eino's "named
        agent"): the interrupt lies below the agent it runs, so the resume goes to the wrapper, which passes it on."""
        resume = getattr(self.agent, "resume", None)
        if resume is None:
            return _single(
                self._error(
                    ResumeError(
                        f"failed to resume agent: agent '{self.name}' (type {type(self.agent).__name__}) has no "
                        "sub-agents and does not implement ResumableAgent interface. To support resume, your custom "
                        "agent wrapper must implement the ResumableAgent interface"
                    ),
                    ctx,
                )
            )
        target = ctx.get_resume_context()
        info = ResumeInfo(enable_streaming=ctx.enable_streaming, is_resume_target=target.is_resume_target)
        return self._drive(resume(info, ctx), ctx)

    def _honest_transfer(self, event: AgentEvent, dest: str) -> AgentEvent:
        """``event``, unless it reports a transfer to an agent that is not there as done (a deterministic
        transfer's result, or an agent's own): then the same event saying that the transfer failed, as the
        transfer tool says, since the run ends on that error."""
        variant = event.output.message_output if event.output is not None else None
        message = variant.message if variant is not None and not variant.is_streaming else None
        if message is None or message.content != transfer_tool_output(dest) or self.find_agent(dest) is not None:
            return event
        failed = replace(message, content=transfer_failed_text(dest, self.name))
        honest = event_from_message(failed, role=message.role, tool_name=message.tool_name)
        honest.action, honest.agent_name, honest.run_path = event.action, event.agent_name, event.run_path
        return honest

    async def _drive(
        self, inner: AsyncIterator[AgentEvent] | None, ctx: RunContext
    ) -> AsyncGenerator[AgentEvent, None]:
        """Forward the inner agent's events (a new run of it when ``inner`` is None), record its own, and follow its
        last action (a transfer, say)."""
        last_action: AgentAction | None = None
        run_path = ctx.run_path
        if inner is None:
            try:
                inner = await self._start(ctx)
            except Exception as error:
                yield self._error(error, ctx)
                return
        try:
            async with aclosing(inner) as events:  # type: ignore[type-var]
                async for event in events:
                    # The run path is set once, here, by the framework; events that already carry one (forwarded
                    # from an agent tool, say) keep theirs and are neither recorded nor acted on.
                    if not event.run_path:
                        event.agent_name = self.name
                        event.run_path = run_path
                        own = True
                    else:
                        own = event.run_path == run_path
                    if own:
                        if event.action is not None and event.action.transfer_to_agent is not None:
                            event = self._honest_transfer(event, event.action.transfer_to_agent.dest_agent_name)
                        if event.action is None or event.action.interrupted is None:
                            ctx.record(event)
                        last_action = event.action
                    yield event
        except Exception as error:
            yield self._error(error, ctx)
            return
        if last_action is None or last_action.interrupted is not None or last_action.exit:
            return
        transfer = last_action.transfer_to_agent
        if transfer is None:
            return
        dest = self.find_agent(transfer.dest_agent_name)
        if dest is None:
            yield self._error(
                TransferError(
                    f"transfer failed: agent '{transfer.dest_agent_name}' not found when transferring from '{self.name}'"
                ),
                ctx,
            )
            return
        root_input = ctx.root_input
        assert root_input is not None
        async with aclosing(dest.run(root_input, ctx)) as events:  # type: ignore[type-var]
            async for event in events:
                yield event

    def _error(self, error: BaseException, ctx: RunContext) -> AgentEvent:
        return AgentEvent(agent_name=self.name, run_path=ctx.run_path, error=error)

    async def _agent_input(self, ctx: RunContext) -> AgentInput:
        """The root input plus the run's history, through this agent's history rewriter."""
        root = ctx.root_input
        assert root is not None
        history = ctx.session.history()
        if not history and self._default_rewriter:
            return AgentInput(messages=list(root.messages), enable_streaming=root.enable_streaming)
        entries = [HistoryEntry(message=m, is_user_input=True) for m in root.messages]
        for recorded in history:
            action = recorded.action
            if ctx.skip_transfer_messages and action is not None and action.transfer_to_agent is not None:
                # The transfer tool result goes, and the assistant call to the tool before it.
                message = recorded.message
                if message is not None and message.role == "tool" and entries:
                    entries.pop()
                continue
            entries.append(HistoryEntry(message=await recorded.get_message(), agent_name=recorded.agent_name))
        messages = self.history_rewriter(entries)
        if inspect.isawaitable(messages):
            messages = await messages
        return AgentInput(messages=list(messages), enable_streaming=root.enable_streaming)


async def _traced(name: str, events: AsyncIterator[AgentEvent], ctx: RunContext) -> AsyncIterator[AgentEvent]:
    """``events`` (not started yet) between the agent's ``AgentStart`` and ``AgentEnd`` trace events."""
    assert ctx.trace is not None
    ctx.trace = scope = await ctx.trace.enter_agent(name, ctx.run_path)
    async with aclosing(scope.traced_agent(events)) as traced:
        async for event in traced:
            yield event


async def _single(event: AgentEvent) -> AsyncIterator[AgentEvent]:
    yield event


async def _consumed_after(events: AsyncIterator[AgentEvent], ctx: RunContext) -> AsyncIterator[AgentEvent]:
    """Forward a resumed agent's events; once it is done, its saved interrupts are spent."""
    async with aclosing(events) as source:  # type: ignore[type-var]
        async for event in source:
            yield event
    if ctx.resume is not None:
        ctx.resume.consume(ctx.address)


def _as_flow(agent: Agent) -> FlowAgent:
    return agent._copy() if isinstance(agent, FlowAgent) else FlowAgent(agent)


def _hook(agent: Agent, name: str, *args: Any) -> None:
    hook = getattr(agent, name, None)
    if hook is not None:
        hook(*args)


def set_sub_agents(
    agent: Agent,
    sub_agents: Sequence[Agent],
    *,
    history: Mapping[str, HistoryPolicy | HistoryRewriter] | None = None,
) -> FlowAgent:
    """``agent`` with ``sub_agents`` below it, as a new tree; the agents themselves are shared, not copied.

    ``history`` gives sub-agents, by name, their own history policy (``HistoryPolicy``, or a function taken as
    ``HistoryPolicy.custom``); the others keep theirs.
    """
    parent = _as_flow(agent)
    if parent.sub_agents:
        raise UserError("agent's sub-agents has already been set")
    names = [a.name for a in sub_agents]
    policies = _policies(parent.name, names, history or {})
    repeated = sorted({n for n in names if names.count(n) > 1 or n == parent.name})
    if repeated:
        raise UserError(
            f"sub-agents of '{parent.name}': expected names unique in the tree, got {repeated} more than once"
        )
    ancestors = {id(a.agent) for a in _ancestors(parent)}
    for sub in sub_agents:
        inner = sub.agent if isinstance(sub, FlowAgent) else sub
        if id(inner) in ancestors or inner is parent.agent:
            raise UserError(f"sub-agents of '{parent.name}': '{sub.name}' is above it in the tree, expected no cycle")
    _hook(parent.agent, "on_set_sub_agents", list(sub_agents))
    for sub in sub_agents:
        child = _as_flow(sub)
        if child.parent is not None:
            raise UserError("agent has already been set as a sub-agent of another agent")
        _hook(child.agent, "on_set_as_sub_agent", parent.agent)
        if child.disallow_transfer_to_parent:
            _hook(child.agent, "on_disallow_transfer_to_parent")
        if child.name in policies:
            child._use(policies[child.name])
        child.parent = parent
        parent.sub_agents.append(child)
    return parent


def _policies(parent: str, names: list[str], history: Mapping[str, object]) -> dict[str, HistoryPolicy]:
    """The history policies given to ``set_sub_agents``, checked before the tree is touched."""
    unknown = sorted(set(history) - set(names))
    if unknown:
        raise UserError(
            f"history of the sub-agents of '{parent}': expected names among {names}, got {unknown} "
            "(give other agents a policy with agent_with_options)"
        )
    return {name: as_history_policy(value, f"history of sub-agent '{name}'") for name, value in history.items()}


def _ancestors(agent: FlowAgent) -> list[FlowAgent]:
    found = []
    node = agent.parent
    while node is not None:
        found.append(node)
        node = node.parent
    return found


def agent_with_options(
    agent: Agent,
    *,
    disallow_transfer_to_parent: bool = False,
    history_rewriter: HistoryRewriter | None = None,
    history: HistoryPolicy | HistoryRewriter | None = None,
) -> FlowAgent:
    """``agent`` wrapped with flow options: no transfer back to its parent, its own history policy (``history``), or
    its own history rewriter (Eino's option: the function's messages are used as they are, unchecked)."""
    if history is not None and history_rewriter is not None:
        raise UserError(f"agent_with_options of '{agent.name}': expected history or history_rewriter, got both")
    policy = None if history is None else as_history_policy(history, f"history of agent '{agent.name}'")
    flow = _as_flow(agent)
    if disallow_transfer_to_parent:
        flow.disallow_transfer_to_parent = True
    if history_rewriter is not None:
        flow.history_rewriter = history_rewriter
        flow._default_rewriter = False
    if policy is not None:
        flow._use(policy)
    return flow

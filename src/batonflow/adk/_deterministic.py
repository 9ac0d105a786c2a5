"""Deterministic transfer: after an agent finishes, control goes to given agents, no model asked.

As Eino's ``AgentWithDeterministicTransferTo``, the transfer is appended as the pair of events a model-made
transfer leaves (the assistant call and the tool result with the transfer action), unless the agent ended by
interrupting or exiting. The flow agent acts on the last action only, so of several names the last one wins. An
agent with its own sub-agents runs on an isolated session (values shared, history its own), its events copied into
the caller's history.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field, replace

from ..codec import register_type
from ..errors import ResumeError
from ..tools import InterruptSignal
from ._agent import Agent
from ._builtin import gen_transfer_messages
from ._context import RunContext, RunSession, SessionEvent
from ._events import AgentEvent, AgentInput, event_from_message, transfer_action
from ._flow import FlowAgent
from ._interrupt import ResumeInfo, interrupted_action

__all__ = ["DeterministicTransferState", "with_deterministic_transfer"]


@dataclass(slots=True, kw_only=True)
class DeterministicTransferState:
    """The isolated history of a wrapped agent tree that was interrupted."""

    events: list[SessionEvent] = field(default_factory=list)


register_type(DeterministicTransferState, name="DeterministicTransferState")


class _DeterministicTransfer:
    def __init__(self, agent: Agent, to: Sequence[str]) -> None:
        self.agent = agent
        self.to = list(to)

    @property
    def name(self) -> str:
        return self.agent.name

    @property
    def description(self) -> str:
        return self.agent.description

    def __repr__(self) -> str:
        return f"with_deterministic_transfer({self.agent!r}, to={self.to})"

    async def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        ctx = ctx if ctx is not None else RunContext()
        if isinstance(self.agent, FlowAgent):
            isolated = replace(ctx, session=RunSession(values=ctx.session.values, visits=ctx.session.visits))
            events = self._isolated(self.agent.run(input, isolated), ctx, isolated)
        else:
            events = self._append(self.agent.run(input, ctx))
        async with aclosing(events) as source:  # type: ignore[type-var]
            async for event in source:
                yield event

    async def resume(self, info: ResumeInfo, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        ctx = ctx if ctx is not None else RunContext()
        if isinstance(self.agent, FlowAgent):
            state = info.interrupt_state
            if not isinstance(state, DeterministicTransferState):
                yield AgentEvent(
                    error=ResumeError("invalid interrupt state for flowAgent resume in deterministic transfer")
                )
                return
            isolated = replace(
                ctx,
                session=RunSession(values=ctx.session.values, events=list(state.events), visits=ctx.session.visits),
            )
            events = self._isolated(self.agent.resume(info, isolated), ctx, isolated)
        else:
            resume = getattr(self.agent, "resume", None)
            if resume is None:
                yield AgentEvent(
                    error=ResumeError(
                        f"failed to resume agent: agent '{self.name}' is an interrupt point but is not a ResumableAgent"
                    )
                )
                return
            events = self._append(resume(info, ctx))
        async with aclosing(events) as source:  # type: ignore[type-var]
            async for event in source:
                yield event

    async def _append(self, events: AsyncIterator[AgentEvent]) -> AsyncIterator[AgentEvent]:
        last: AgentEvent | None = None
        async with aclosing(events) as source:  # type: ignore[type-var]
            async for event in source:
                yield event
                last = event
        if not _ended(last):
            for event in _transfer_events(self.to):
                yield event

    async def _isolated(
        self, events: AsyncIterator[AgentEvent], ctx: RunContext, isolated: RunContext
    ) -> AsyncIterator[AgentEvent]:
        last: AgentEvent | None = None
        async with aclosing(events) as source:  # type: ignore[type-var]
            async for event in source:
                action = event.action
                if action is None or action.interrupted is None:
                    ctx.record(event)
                if action is not None and action.signal is not None:
                    last = event
                    continue
                yield event
                last = event
        if last is not None and last.action is not None and last.action.signal is not None:
            history = isolated.session.history()
            for recorded in history:
                await recorded.get_message()
            signal = InterruptSignal(
                "deterministic transfer wrapper interrupted",
                address=ctx.address,
                state=DeterministicTransferState(events=history),
                subs=(last.action.signal,),
                id=ctx.interrupt_id(ctx.address),
            )
            yield AgentEvent(action=interrupted_action(signal, signal.info))
            return
        if not _ended(last):
            for event in _transfer_events(self.to):
                yield event


def _ended(last: AgentEvent | None) -> bool:
    action = last.action if last is not None else None
    return action is not None and (action.interrupted is not None or action.exit)


def _transfer_events(names: Sequence[str]) -> list[AgentEvent]:
    events = []
    for name in names:
        call, result = gen_transfer_messages(name)
        events.append(event_from_message(call))
        transfer = event_from_message(result, role="tool", tool_name=result.tool_name)
        transfer.action = transfer_action(name)
        events.append(transfer)
    return events


def with_deterministic_transfer(agent: Agent, *, to: Sequence[str]) -> Agent:
    """``agent``, followed by a transfer to ``to`` whenever it ends without interrupting or exiting."""
    return _DeterministicTransfer(agent, to)

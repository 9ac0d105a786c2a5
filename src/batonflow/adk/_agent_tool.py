"""An agent used as a tool by another agent (Eino's ``NewAgentTool``).

The inner agent runs as a run of its own: it shares the caller's session values, not its history. Its answer
(the text of its last message) is the tool's result. Only interrupts get out: an exit, a transfer or a
break-loop inside stays inside. Streamed answers inside reach the caller as they are produced, whatever the
nesting; with ``emit_internal_events`` every inner event does. Run paths of forwarded events are the caller's
path followed by the inner one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from typing import Any

from ..codec import register_type
from ..errors import RunError, UserError
from ..schema import Message, user
from ..tools import ToolContext, ToolInfo
from ._agent import Agent
from ._builtin import gen_transfer_messages, parse_tool_argument
from ._context import RunContext, RunSession, SessionEvent
from ._events import AgentEvent, AgentInput
from ._flow import FlowAgent
from ._history import rewrite_message
from ._interrupt import ResumeInfo

__all__ = ["AgentTool", "AgentToolState"]

_REQUEST = {
    "type": "object",
    "properties": {"request": {"type": "string", "description": "request to be processed"}},
    "required": ["request"],
}


@dataclass(slots=True, kw_only=True)
class AgentToolState:
    """The inner run of an interrupted agent tool: its input and history, saved with the caller's checkpoint."""

    messages: list[Message]
    events: list[SessionEvent] = field(default_factory=list)
    enable_streaming: bool = False


register_type(AgentToolState, name="AgentToolState")


class AgentTool:
    """``agent`` as a tool named after it. The model passes a ``request`` (or, with ``input_schema``, arguments
    of that JSON Schema, given to the agent as the user message); with ``full_chat_history`` the agent also gets
    the caller's conversation so far."""

    emits_events = True

    def __init__(
        self,
        agent: Agent,
        *,
        full_chat_history: bool = False,
        input_schema: dict[str, Any] | None = None,
        emit_internal_events: bool = False,
    ) -> None:
        if not agent.description:
            raise UserError(f"agent tool '{agent.name}': expected the agent to have a description, got ''")
        self.agent = agent if isinstance(agent, FlowAgent) else FlowAgent(agent)
        self.full_chat_history = full_chat_history
        self.emit_internal_events = emit_internal_events
        self.info = ToolInfo(name=agent.name, description=agent.description, parameters=input_schema or _REQUEST)
        self._custom_input = input_schema is not None

    def __repr__(self) -> str:
        return f"AgentTool({self.agent.name!r})"

    async def invoke(self, arguments: str, ctx: ToolContext | None = None) -> str:
        ctx = ctx if ctx is not None else ToolContext(tool_name=self.info.name)
        parent: RunContext = ctx.run if isinstance(ctx.run, RunContext) else RunContext()
        saved = ctx.get_interrupt_state()
        if saved.was_interrupted:
            state = saved.state
            if not isinstance(state, AgentToolState):
                raise RunError(f"agent tool '{self.info.name}' interrupt has happened, but cannot find interrupt state")
        else:
            state = AgentToolState(
                messages=self._input(arguments, ctx, parent), enable_streaming=parent.enable_streaming
            )
        inner = RunContext(
            session=RunSession(values=parent.session.values, events=list(state.events), visits=parent.session.visits),
            root_input=AgentInput(messages=state.messages, enable_streaming=state.enable_streaming),
            enable_streaming=state.enable_streaming,
            address=ctx.address,
            resume=parent.resume if saved.was_interrupted else None,
            run_id=parent.run_id,
            steps=parent.steps,
            dispatcher=parent.dispatcher,
            scope=parent.scope,
        )
        events = (
            self.agent.resume(ResumeInfo(enable_streaming=state.enable_streaming), inner)
            if saved.was_interrupted
            else self.agent.run(inner.root_input, inner)  # type: ignore[arg-type]
        )
        last: AgentEvent | None = None
        async with aclosing(self._forward(events, ctx, parent)) as forwarded:  # type: ignore[type-var]
            async for event in forwarded:
                if event.error is not None:
                    raise event.error
                last = event
        if last is None:
            raise RunError("no event returned")
        action = last.action
        if action is not None and action.signal is not None:
            history = inner.session.history()
            for recorded in history:
                await recorded.get_message()  # a checkpoint holds whole messages, never streams
            saved_state = AgentToolState(
                messages=state.messages, events=history, enable_streaming=state.enable_streaming
            )
            ctx.composite_interrupt("agent tool interrupt", saved_state, action.signal)
        variant = last.message_output
        return "" if variant is None else (await variant.get_message()).content

    async def _forward(
        self, events: AsyncIterator[AgentEvent], ctx: ToolContext, parent: RunContext
    ) -> AsyncIterator[AgentEvent]:
        """The inner events; those the caller should see are sent on (streams copied: we read the last one)."""
        emit: Callable[[Any], object] | None = ctx.emit
        async with aclosing(events) as source:  # type: ignore[type-var]
            async for event in source:
                variant = event.message_output
                streaming = variant is not None and variant.is_streaming and variant.message_stream is not None
                if emit is not None and (self.emit_internal_events or streaming):
                    shown = replace(event, run_path=(*parent.run_path, *event.run_path))
                    if streaming:
                        assert variant is not None and variant.message_stream is not None
                        variant.message_stream, kept = variant.message_stream.copy(2)
                        shown.output = replace(event.output, message_output=replace(variant, message_stream=kept))  # type: ignore[type-var]
                    emit(shown)
                yield event

    def _input(self, arguments: str, ctx: ToolContext, parent: RunContext) -> list[Message]:
        if self.full_chat_history:
            # The caller's conversation, as if it had transferred to this agent (Eino's WithFullChatHistoryAsInput).
            caller = parent.run_path[-1].agent_name if parent.run_path else ""
            history = [*ctx.history[:-1], *gen_transfer_messages(self.info.name)]
            return [
                rewrite_message(m, caller) if m.role in ("assistant", "tool") else m
                for m in history
                if m.role != "system"
            ]
        if self._custom_input:
            return [user(arguments)]
        return [user(parse_tool_argument(self.info.name, arguments, "request"))]

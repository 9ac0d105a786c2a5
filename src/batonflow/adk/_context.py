"""Per-run state: the run session shared by every agent of a run, and each agent's view of it.

Agents are definitions; a run's state lives here (reference §A.5, "Session"). ``RunContext`` is passed
explicitly to ``Agent.run``; tools reach it through ``ToolContext.run``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..schema import Message
from ._events import AgentAction, AgentEvent, AgentInput, RunStep

__all__ = ["RunContext", "RunSession", "SessionEvent"]


@dataclass(slots=True, kw_only=True)
class SessionEvent:
    """An event recorded in the run's history: whose it was, its message, and its action."""

    agent_name: str
    run_path: tuple[RunStep, ...]
    message: Message | None = None
    # A streamed message still being produced; resolved before anyone reads the history.
    pending: asyncio.Future[Message] | None = None
    action: AgentAction | None = None
    ts: int = field(default_factory=time.monotonic_ns)

    async def get_message(self) -> Message:
        if self.message is None:
            assert self.pending is not None
            self.message = await self.pending
            self.pending = None
        return self.message


@dataclass(slots=True, kw_only=True)
class RunSession:
    """What every agent of one run shares: session values and the recorded event history."""

    values: dict[str, Any] = field(default_factory=dict)
    events: list[SessionEvent] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class RunContext:
    """One agent's view of a run: the shared session plus where this agent stands (its run path).

    ``child(name)`` gives the context for an agent one step further down; the session stays shared.
    """

    session: RunSession = field(default_factory=RunSession)
    run_path: tuple[RunStep, ...] = ()
    root_input: AgentInput | None = None
    enable_streaming: bool = False
    skip_transfer_messages: bool = False

    def child(self, agent_name: str) -> RunContext:
        return replace(self, run_path=(*self.run_path, RunStep(agent_name)))

    # -- session values (Eino's AddSessionValue & co.) ----------------------------------------------------------

    def add_session_value(self, key: str, value: Any) -> None:
        self.session.values[key] = value

    def add_session_values(self, values: Mapping[str, Any]) -> None:
        self.session.values.update(values)

    def get_session_value(self, key: str, default: Any = None) -> Any:
        return self.session.values.get(key, default)

    def get_session_values(self) -> dict[str, Any]:
        """A copy: changing it does not change the session."""
        return dict(self.session.values)

    # -- history -------------------------------------------------------------------------------------------------

    def record(self, event: AgentEvent) -> None:
        """Add ``event`` to the session history (the flow agent decides which events belong there)."""
        variant = event.output.message_output if event.output is not None else None
        if variant is None:
            return
        entry = SessionEvent(agent_name=event.agent_name, run_path=event.run_path, action=event.action)
        if not variant.is_streaming:
            entry.message = variant.message
        elif variant._joined is not None:
            entry.pending = variant._joined
        else:
            # Someone else's stream: keep a copy of every chunk for the history.
            assert variant.message_stream is not None
            variant.message_stream, kept = variant.message_stream.copy(2)
            entry.pending = asyncio.ensure_future(_join(kept))
        self.session.events.append(entry)


async def _join(stream: Any) -> Message:
    from ..schema import concat_message_stream

    return await concat_message_stream(stream)

"""The state of one agent's loop: its transcript, its turn budget, and the tool calls under way.

One object serves the engine, the policies and the middlewares alike — what a hook changes is what the loop goes
on with — and it is what a checkpoint saves when a tool interrupts, so that a resume continues the loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...codec import register_type
from ...schema import Message, ToolInfo
from .._events import AgentAction

__all__ = ["ChatModelAgentState", "ReactState", "ToolResult"]


@dataclass(slots=True, kw_only=True)
class ToolResult:
    """A finished tool call: its result message and the action it asked for (a transfer, an exit)."""

    message: Message
    action: AgentAction | None = None


@dataclass(slots=True, kw_only=True)
class ReactState:
    """Where a loop stands.

    ``messages`` is the transcript the next model call is sent, ``remaining`` the model calls left and ``turn`` the
    calls made. ``pending`` is the assistant message whose tool calls are running and ``completed`` the results
    of those that finished, by call id: on resume only the others run. ``corrections`` counts consecutive empty
    answers sent back to the model (Solon's format correction). ``visit`` numbers the loops started at the agent's
    address in the run (1 for the first; 0 in checkpoints of releases before it was counted). ``tools`` are the tools the next call is offered;
    they come from the agent, so they are not saved (a resumed loop gets the agent's tools again).
    """

    messages: list[Message]
    remaining: int
    pending: Message | None = None
    completed: dict[str, ToolResult] = field(default_factory=dict)
    turn: int = 0
    corrections: int = 0
    visit: int = 0
    tools: list[ToolInfo] = field(default_factory=list, init=False, repr=False)


# Saved in checkpoints under these names since the first release.
register_type(ToolResult, name="ToolResult")
register_type(ReactState, name="ReactState")

ChatModelAgentState = ReactState
"""Eino's name for what a middleware sees of a ChatModelAgent's loop: the loop state itself."""

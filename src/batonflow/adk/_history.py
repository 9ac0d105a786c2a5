"""What an agent sees after a transfer: the root input plus everyone's messages, rewritten as Eino does.

An agent's own messages are kept verbatim; other agents' messages become one user message each, in the exact
"For context:" form of the original, so that a model does not mistake another agent's words for its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from ..schema import Message, user

__all__ = ["HistoryEntry", "HistoryRewriter", "default_history_rewriter", "rewrite_message"]


@dataclass(slots=True, kw_only=True)
class HistoryEntry:
    """One message of the run so far: the user's input or an agent's message."""

    message: Message
    agent_name: str = ""
    is_user_input: bool = False


HistoryRewriter = Callable[[list[HistoryEntry]], Sequence[Message] | Awaitable[Sequence[Message]]]


def rewrite_message(message: Message, agent_name: str) -> Message:
    """Another agent's message as context for this one."""
    text = ["For context:"]
    if message.role == "assistant":
        if message.content:
            text.append(f" [{agent_name}] said: {message.content}.")
        for call in message.tool_calls:
            text.append(
                f" [{agent_name}] called tool: `{call.function.name}` with arguments: {call.function.arguments}."
            )
    elif message.role == "tool" and message.content:
        text.append(f" [{agent_name}] `{message.tool_name}` tool returned result: {message.content}.")
    rewritten = user("".join(text))
    rewritten.parts = list(message.parts)
    return rewritten


def default_history_rewriter(agent_name: str) -> Callable[[list[HistoryEntry]], list[Message]]:
    def rewrite(entries: list[HistoryEntry]) -> list[Message]:
        return [
            e.message if e.is_user_input or e.agent_name == agent_name else rewrite_message(e.message, e.agent_name)
            for e in entries
        ]

    return rewrite

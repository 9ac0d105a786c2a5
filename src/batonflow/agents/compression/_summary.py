"""The summary message that stands in for what a compression removed, and how a strategy's model reads messages."""

from __future__ import annotations

from ...schema import Message

__all__ = ["is_summary", "render", "summary_message", "summary_text"]

# Solon tags its summary message `_compressed`; here the tag lives in `extra`, which checkpoints keep and providers
# never see, so that a later compression recognises the summary and folds it into the next one.
_SUMMARY_TAG = "compressed"
_SUMMARY_HEADER = "[Summary of the earlier conversation, compressed to save context]"


def summary_message(text: str) -> Message:
    # A user message: strict chat templates accept a system message only at the start.
    return Message(role="user", content=f"{_SUMMARY_HEADER}\n{text}", extra={_SUMMARY_TAG: True})


def is_summary(message: Message) -> bool:
    return message.extra.get(_SUMMARY_TAG) is True


def summary_text(message: Message) -> str:
    return message.content.removeprefix(_SUMMARY_HEADER).strip()


def render(message: Message) -> str:
    """One message as a strategy's model reads it."""
    if is_summary(message):
        return f"summary of earlier messages: {summary_text(message)}"
    label: str = message.role
    if message.role == "tool":
        label = f"tool result ({message.tool_name})" if message.tool_name else "tool result"
    lines = [f"{label}: {message.text}".rstrip()]
    lines.extend(f"  calls {call.function.name}({call.function.arguments})" for call in message.tool_calls)
    return "\n".join(lines)

"""Messages: the one data type that flows between models, tools and agents.

Plain slotted dataclasses (cheap to create per stream chunk); pydantic is kept for the boundaries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ..errors import UserError

__all__ = [
    "ROLES",
    "AudioPart",
    "ContentPart",
    "FunctionCall",
    "ImagePart",
    "Message",
    "ResponseMeta",
    "Role",
    "TextPart",
    "ToolCall",
    "Usage",
    "assistant",
    "system",
    "tool_message",
    "user",
]

Role: TypeAlias = Literal["system", "user", "assistant", "tool"]
ROLES: frozenset[str] = frozenset(("system", "user", "assistant", "tool"))


@dataclass(slots=True, kw_only=True)
class FunctionCall:
    """The function a tool call names, with its arguments as the raw JSON text the model produced."""

    name: str = ""
    arguments: str = ""


@dataclass(slots=True, kw_only=True)
class ToolCall:
    """One tool call of an assistant message.

    ``index`` identifies the call across stream chunks: chunks with the same index are merged by
    ``concat_messages``; chunks without an index are kept as they are.
    """

    index: int | None = None
    id: str = ""
    type: str = "function"
    function: FunctionCall = field(default_factory=FunctionCall)
    extra: dict[str, Any] | None = None


@dataclass(slots=True, kw_only=True)
class Usage:
    """Token counts of one model response."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0


@dataclass(slots=True, kw_only=True)
class ResponseMeta:
    finish_reason: str = ""
    usage: Usage | None = None
    logprobs: list[Any] | None = None


@dataclass(slots=True, kw_only=True)
class TextPart:
    text: str
    type: Literal["text"] = "text"


@dataclass(slots=True, kw_only=True)
class ImagePart:
    """An image given by URL (``https://…`` or a ``data:`` URL)."""

    url: str
    detail: Literal["auto", "low", "high"] = "auto"
    type: Literal["image_url"] = "image_url"


@dataclass(slots=True, kw_only=True)
class AudioPart:
    """Base64 audio data in a format the provider accepts (``wav``, ``mp3``)."""

    data: str
    format: str = "wav"
    type: Literal["input_audio"] = "input_audio"


ContentPart: TypeAlias = TextPart | ImagePart | AudioPart


@dataclass(slots=True, kw_only=True)
class Message:
    """A chat message, or one chunk of a streamed message.

    ``parts`` holds multimodal content; ``content`` the text. A tool message carries the ``tool_call_id`` it
    answers and the ``tool_name`` it came from.
    """

    role: Role
    content: str = ""
    reasoning_content: str = ""
    parts: list[ContentPart] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str = ""
    tool_name: str = ""
    name: str = ""
    response_meta: ResponseMeta | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise UserError(
                f"unknown message role: expected one of 'system', 'user', 'assistant', 'tool', got {self.role!r}"
            )

    @property
    def text(self) -> str:
        """The text of the message: ``content`` plus the text of any text parts."""
        if not self.parts:
            return self.content
        texts = [self.content] if self.content else []
        texts.extend(p.text for p in self.parts if isinstance(p, TextPart))
        return "\n".join(texts)


def system(content: str) -> Message:
    return Message(role="system", content=content)


def user(content: str | list[ContentPart], *, name: str = "") -> Message:
    """A user message; give a list of parts for multimodal input."""
    if isinstance(content, str):
        return Message(role="user", content=content, name=name)
    return Message(role="user", parts=list(content), name=name)


def assistant(content: str = "", *, tool_calls: list[ToolCall] | None = None, name: str = "") -> Message:
    return Message(role="assistant", content=content, tool_calls=tool_calls or [], name=name)


def tool_message(content: str, *, tool_call_id: str, tool_name: str = "") -> Message:
    """The result of a tool call, answering the call ``tool_call_id``."""
    return Message(role="tool", content=content, tool_call_id=tool_call_id, tool_name=tool_name)

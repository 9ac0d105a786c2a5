"""The chat model interface: one call for a whole answer, one for a stream of chunks.

A ``ChatModel`` is stateless configuration (safe to share across concurrent runs). ``stream()`` is a plain
method that returns a lazy stream: nothing is requested until the first read, and every failure reaches the
reader in-stream as a typed ``ModelError``, so a caller has one place to handle errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from ..errors import UserError
from ..schema import Message, MessageStream, ToolInfo

__all__ = ["ChatModel", "ForcedTool", "ModelSettings", "ToolChoice", "check_tool_choice", "merge_settings"]


@dataclass(frozen=True, slots=True)
class ForcedTool:
    """A tool choice that makes the model call the tool ``name``."""

    name: str


ToolChoice: TypeAlias = Literal["auto", "none", "required"] | ForcedTool


@dataclass(slots=True, kw_only=True)
class ModelSettings:
    """Sampling settings for one call; ``None`` leaves the provider's default.

    ``extra`` holds provider-specific request fields (``{"top_k": 20}``, ``{"repeat_penalty": 1.1}``).
    """

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    stop: list[str] | None = None
    seed: int | None = None
    extra: dict[str, Any] | None = None


def merge_settings(base: ModelSettings | None, override: ModelSettings | None) -> ModelSettings:
    """``override``'s fields where set, ``base``'s otherwise; ``extra`` dicts are merged key by key."""
    if base is None or override is None:
        return override or base or ModelSettings()
    values = {f.name: getattr(base, f.name) for f in fields(ModelSettings)}
    for f in fields(ModelSettings):
        value = getattr(override, f.name)
        if value is not None:
            values[f.name] = value
    if base.extra and override.extra:
        values["extra"] = {**base.extra, **override.extra}
    return ModelSettings(**values)


@runtime_checkable
class ChatModel(Protocol):
    """A chat model. Retries, fallbacks and instrumentation wrap one of these and are one themselves."""

    model_name: str

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> Message:
        """The whole answer as one assistant message."""
        ...

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> MessageStream:
        """The answer as assistant message chunks; the request is made on the first read."""
        ...


def check_tool_choice(tools: Sequence[ToolInfo] | None, tool_choice: ToolChoice | None) -> None:
    """Refuse a tool choice that can never work (raised at call time: these are developer mistakes)."""
    if tool_choice is None:
        return
    if not tools:
        raise UserError(f"tool_choice {tool_choice!r} needs tools: expected at least one tool, got none")
    if isinstance(tool_choice, ForcedTool):
        names = [t.name for t in tools]
        if tool_choice.name not in names:
            raise UserError(f"tool_choice forces an unknown tool: expected one of {names}, got {tool_choice.name!r}")
    elif tool_choice not in ("auto", "none", "required"):
        raise UserError(
            f"unknown tool_choice: expected 'auto', 'none', 'required' or ForcedTool(name), got {tool_choice!r}"
        )

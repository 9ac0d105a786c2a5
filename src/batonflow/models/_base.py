"""The chat model interface: one call for a whole answer, one for a stream of chunks.

A ``ChatModel`` is stateless configuration (safe to share across concurrent runs). ``stream()`` is a plain
method that returns a lazy stream: nothing is requested until the first read, and every failure reaches the
reader in-stream as a typed ``ModelError``, so a caller has one place to handle errors.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from ..errors import UserError
from ..schema import Message, MessageStream, ToolInfo

__all__ = [
    "ChatModel",
    "ForcedTool",
    "JSONSchemaFormat",
    "ModelSettings",
    "ToolChoice",
    "answer_format",
    "check_tool_choice",
    "merge_settings",
]


@dataclass(frozen=True, slots=True)
class ForcedTool:
    """A tool choice that makes the model call the tool ``name``."""

    name: str


ToolChoice: TypeAlias = Literal["auto", "none", "required"] | ForcedTool


_FORMAT_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True, slots=True)
class JSONSchemaFormat:
    """Ask for an answer that is one JSON value fitting ``schema``, through the provider's structured output.

    OpenAI-compatible servers get it as ``response_format`` (``name`` and ``strict`` are OpenAI's: ``strict`` holds
    the model to the schema exactly, and OpenAI then accepts only schemas whose objects list every property as
    required and forbid others); llama.cpp turns the schema into a grammar, which always holds. A model that
    cannot constrain its output ignores it, so a caller still says in the prompt what it wants and checks the
    answer. It applies to an answer in words only: see ``answer_format``.
    """

    schema: Mapping[str, Any]
    name: str = "answer"
    strict: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.schema, Mapping):
            raise UserError(f"JSONSchemaFormat schema: expected a JSON Schema dict, got {self.schema!r}")
        if not isinstance(self.name, str) or not _FORMAT_NAME.fullmatch(self.name):
            raise UserError(
                "JSONSchemaFormat name: expected 1 to 64 letters, digits, '_' or '-' (OpenAI's rule), "
                f"got {self.name!r}"
            )


@dataclass(slots=True, kw_only=True)
class ModelSettings:
    """Sampling settings for one call; ``None`` leaves the provider's default.

    ``response_format`` asks for a JSON answer fitting a schema (``JSONSchemaFormat``). ``extra`` holds
    provider-specific request fields (``{"top_k": 20}``, ``{"repeat_penalty": 1.1}``).
    """

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    stop: list[str] | None = None
    seed: int | None = None
    response_format: JSONSchemaFormat | None = None
    extra: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.response_format is not None and not isinstance(self.response_format, JSONSchemaFormat):
            raise UserError(
                "ModelSettings response_format: expected a JSONSchemaFormat(schema, name=..., strict=...), "
                f"got {self.response_format!r}"
            )


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


def answer_format(
    settings: ModelSettings, tools: Sequence[ToolInfo] | None, tool_choice: ToolChoice | None
) -> JSONSchemaFormat | None:
    """The structured output a call asks for: ``settings.response_format``, unless the model may call a tool.

    A schema constrains an answer in words. Sent together with tools it means different things to different
    servers: OpenAI applies it to the text only, a server whose guided decoding constrains the whole output
    (vLLM's) leaves the model no way to write a tool call, llama-cpp-python's function-calling handler drops it. So a call that offers
    tools (with any tool choice but ``"none"``) is made without it, on every provider alike, and the caller's
    prompt and check cover that answer.
    """
    if settings.response_format is None or (tools and tool_choice != "none"):
        return None
    return settings.response_format


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

"""Joining stream chunks into one message, by Eino's rules (its ``schema.ConcatMessages``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import ConcatError, UserError
from ._messages import ContentPart, FunctionCall, Message, ResponseMeta, ToolCall, Usage
from ._stream import Stream

__all__ = ["concat_message_stream", "concat_messages"]

_USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens", "reasoning_tokens")


def concat_messages(messages: Sequence[Message]) -> Message:
    """One message from its chunks.

    Role, name, tool call id and tool name must agree where set; content and reasoning are concatenated; tool
    calls are merged by index with their arguments concatenated (calls without an index are kept as they are);
    the last non-empty finish reason wins; usage is the maximum of each counter, since providers report running
    totals, not increments.
    """
    if not messages:
        raise UserError("cannot concat messages: expected at least one message, got none")
    first = messages[0]
    role, name, call_id, tool_name = first.role, first.name, first.tool_call_id, first.tool_name
    content: list[str] = []
    rest = _Rest()
    for msg in messages:
        if msg.role != role:
            raise ConcatError(f"cannot concat messages with different roles: {role!r} and {msg.role!r}")
        content.append(msg.content)
        if msg.name:
            name = _same("names", name, msg.name)
        if msg.tool_call_id:
            call_id = _same("tool call ids", call_id, msg.tool_call_id)
        if msg.tool_name:
            tool_name = _same("tool names", tool_name, msg.tool_name)
        if msg.reasoning_content or msg.tool_calls or msg.parts or msg.extra or msg.response_meta is not None:
            rest.add(msg)  # a text chunk, as most are, has nothing else to merge
    return Message(
        role=role,
        content="".join(content),
        reasoning_content="".join(rest.reasoning),
        parts=rest.parts,
        tool_calls=_concat_tool_calls(rest.calls) if rest.calls else [],
        tool_call_id=call_id,
        tool_name=tool_name,
        name=name,
        response_meta=rest.meta(),
        extra=rest.extra,
    )


class _Rest:
    """What chunks carry besides their text: reasoning, parts, tool calls, extras, and the response meta (the last
    finish reason, the largest counts, every logprob)."""

    __slots__ = ("calls", "extra", "finish_reason", "logprobs", "parts", "reasoning", "seen", "usage")

    def __init__(self) -> None:
        self.reasoning: list[str] = []
        self.parts: list[ContentPart] = []
        self.calls: list[ToolCall] = []
        self.extra: dict[str, Any] = {}
        self.seen = False
        self.finish_reason = ""
        self.usage: Usage | None = None
        self.logprobs: list[Any] | None = None

    def add(self, msg: Message) -> None:
        if msg.reasoning_content:
            self.reasoning.append(msg.reasoning_content)
        if msg.parts:
            self.parts.extend(msg.parts)
        if msg.tool_calls:
            self.calls.extend(msg.tool_calls)
        if msg.extra:
            _merge_extra(self.extra, msg.extra)
        meta = msg.response_meta
        if meta is None:
            return
        self.seen = True
        if meta.finish_reason:
            self.finish_reason = meta.finish_reason
        if meta.usage is not None:
            self.usage = meta.usage if self.usage is None else _max_usage(self.usage, meta.usage)
        if meta.logprobs:
            self.logprobs = [*(self.logprobs or []), *meta.logprobs]

    def meta(self) -> ResponseMeta | None:
        if not self.seen:
            return None
        return ResponseMeta(finish_reason=self.finish_reason, usage=self.usage, logprobs=self.logprobs)


async def concat_message_stream(stream: Stream[Message]) -> Message:
    """Drain ``stream``, close it, and join its chunks."""
    return concat_messages(await stream.collect())


def _same(what: str, current: str, new: str) -> str:
    if not new or new == current:
        return current
    if not current:
        return new
    raise ConcatError(f"cannot concat messages with different {what}: {current!r} and {new!r}")


def _concat_tool_calls(chunks: list[ToolCall]) -> list[ToolCall]:
    merged: list[ToolCall] = []
    by_index: dict[int, list[ToolCall]] = {}
    for chunk in chunks:
        if chunk.index is None:
            merged.append(chunk)
        else:
            by_index.setdefault(chunk.index, []).append(chunk)
    for index in sorted(by_index):
        group = by_index[index]
        call_id = type_ = fn_name = ""
        extra: dict[str, Any] | None = None
        for chunk in group:
            call_id = _same_call("ids", index, call_id, chunk.id)
            type_ = _same_call("types", index, type_, chunk.type)
            fn_name = _same_call("function names", index, fn_name, chunk.function.name)
            if chunk.extra:
                extra = _merge_extra(extra if extra is not None else {}, chunk.extra)
        arguments = "".join(c.function.arguments for c in group)
        merged.append(
            ToolCall(
                index=index,
                id=call_id,
                type=type_ or "function",
                function=FunctionCall(name=fn_name, arguments=arguments),
                extra=extra,
            )
        )
    return merged


def _same_call(what: str, index: int, current: str, new: str) -> str:
    if not new or new == current:
        return current
    if not current:
        return new
    raise ConcatError(f"cannot concat tool calls at index {index} with different {what}: {current!r} and {new!r}")


def _max_usage(a: Usage, b: Usage) -> Usage:
    return Usage(**{f: max(getattr(a, f), getattr(b, f)) for f in _USAGE_FIELDS})


def _merge_extra(into: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """Strings concatenate, lists extend, dicts merge recursively; any other value is replaced by the later one."""
    for key, value in new.items():
        old = into.get(key)
        if isinstance(old, str | list) and type(old) is type(value):
            into[key] = old + value  # type: ignore[operator]  # same type, checked above
        elif isinstance(old, dict) and isinstance(value, dict):
            into[key] = _merge_extra(dict(old), value)
        else:
            into[key] = value
    return into

"""Conversion between batonflow messages and Anthropic's Messages API, on plain dicts.

Anthropic keeps the system prompt apart from the turns, answers a tool call in a ``tool_result`` block of a user
turn, and has no JSON mode: a call that asks for a ``JSONSchemaFormat`` gets one tool whose input schema is the
answer's, forced, and the tool's input comes back as the answer's text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import UserError
from ..schema import FunctionCall, ImagePart, Message, ResponseMeta, TextPart, ToolCall, ToolInfo, Usage
from ._base import ForcedTool, JSONSchemaFormat, ModelSettings, ToolChoice, answer_format

__all__ = ["StreamState", "anthropic_request", "message_from_anthropic", "usage_from_anthropic"]

# Anthropic's stop reasons, told as OpenAI's finish reasons (what the rest of batonflow reads).
_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls"}


def anthropic_request(
    messages: Sequence[Message],
    *,
    tools: Sequence[ToolInfo] | None,
    tool_choice: ToolChoice | None,
    settings: ModelSettings,
    max_tokens: int,
) -> tuple[dict[str, Any], JSONSchemaFormat | None]:
    """The request's body (without ``model`` and ``stream``), and the answer format it forces as a tool."""
    system = "\n\n".join(m.text for m in messages if m.role == "system")
    body: dict[str, Any] = {"messages": _turns(m for m in messages if m.role != "system")}
    if system:
        body["system"] = system
    body["max_tokens"] = settings.max_tokens or max_tokens
    for ours, theirs in (("temperature", "temperature"), ("top_p", "top_p"), ("stop", "stop_sequences")):
        value = getattr(settings, ours)
        if value is not None:
            body[theirs] = value
    wanted = answer_format(settings, tools, tool_choice)
    if wanted is not None:
        body["tools"] = [{"name": wanted.name, "description": "Give the answer.", "input_schema": dict(wanted.schema)}]
        body["tool_choice"] = {"type": "tool", "name": wanted.name}
        return body, wanted
    if tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)} for t in tools
        ]
    if tool_choice is not None:
        body["tool_choice"] = _tool_choice(tool_choice)
    return body, None


def _tool_choice(choice: ToolChoice) -> dict[str, Any]:
    if isinstance(choice, ForcedTool):
        return {"type": "tool", "name": choice.name}
    return {"type": {"auto": "auto", "required": "any", "none": "none"}[choice]}


def _turns(messages: Any) -> list[dict[str, Any]]:
    """The turns, a tool result as a user turn's block; consecutive turns of one role are one turn's blocks."""
    turns: list[dict[str, Any]] = []
    for message in messages:
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return turns


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [{"type": "tool_result", "tool_use_id": message.tool_call_id, "content": message.text}]
    blocks: list[dict[str, Any]] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    for part in message.parts:
        if isinstance(part, TextPart):
            blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            blocks.append({"type": "image", "source": _image_source(part.url)})
        else:
            raise UserError(f"Anthropic models take text and images: expected no audio part, got {part.type!r}")
    for call in message.tool_calls:
        blocks.append({"type": "tool_use", "id": call.id, "name": call.function.name, "input": _input(call)})
    return blocks


def _image_source(url: str) -> dict[str, str]:
    if url.startswith("data:"):
        header, _, data = url.partition(",")
        return {"type": "base64", "media_type": header[5:].split(";")[0], "data": data}
    return {"type": "url", "url": url}


def _input(call: ToolCall) -> Any:
    try:
        return json.loads(call.function.arguments or "{}")
    except ValueError:
        # A call whose arguments were not JSON was already refused in the run; its text is kept for the record.
        return {"arguments": call.function.arguments}


# -- responses -------------------------------------------------------------------------------------------------


def usage_from_anthropic(raw: Mapping[str, Any] | None) -> Usage | None:
    """Anthropic counts the cached prompt apart: the prompt is all three of its input counts."""
    if not raw:
        return None
    cached = raw.get("cache_read_input_tokens") or 0
    prompt = (raw.get("input_tokens") or 0) + cached + (raw.get("cache_creation_input_tokens") or 0)
    completion = raw.get("output_tokens") or 0
    return Usage(
        prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion, cached_tokens=cached
    )


def message_from_anthropic(data: Mapping[str, Any], answer: JSONSchemaFormat | None) -> Message:
    """A ``message`` object as one assistant message; with ``answer``, its forced tool's input is the text."""
    texts: list[str] = []
    reasoning: list[str] = []
    calls: list[ToolCall] = []
    for block in data.get("content") or ():
        kind = block.get("type")
        if kind == "text":
            texts.append(block.get("text") or "")
        elif kind == "thinking":
            reasoning.append(block.get("thinking") or "")
        elif kind == "tool_use" and answer is not None and block.get("name") == answer.name:
            texts.append(json.dumps(block.get("input"), ensure_ascii=False))
        elif kind == "tool_use":
            arguments = json.dumps(block.get("input") or {}, ensure_ascii=False)
            calls.append(
                ToolCall(
                    index=len(calls),
                    id=block.get("id") or "",
                    function=FunctionCall(name=block.get("name") or "", arguments=arguments),
                )
            )
    finish = _finish(data.get("stop_reason"), answer)
    return Message(
        role="assistant",
        content="".join(texts),
        reasoning_content="".join(reasoning),
        tool_calls=calls,
        response_meta=ResponseMeta(finish_reason=finish, usage=usage_from_anthropic(data.get("usage"))),
    )


def _finish(stop_reason: Any, answer: JSONSchemaFormat | None) -> str:
    if stop_reason == "tool_use" and answer is not None:
        return "stop"  # the forced answer tool is the answer, not a call to make
    return _FINISH.get(stop_reason or "", stop_reason or "")


@dataclass(slots=True)
class StreamState:
    """Folds Anthropic's stream events into batonflow chunks: a tool block's index, its name, the input tokens of
    ``message_start`` (``message_delta`` carries the output tokens)."""

    answer: JSONSchemaFormat | None = None
    calls: dict[int, int] = field(default_factory=dict)
    answer_blocks: set[int] = field(default_factory=set)
    start_usage: dict[str, Any] = field(default_factory=dict)
    with_input: set[int] = field(default_factory=set)
    finished: bool = False

    def chunk(self, event: Mapping[str, Any]) -> Message | None:
        """The chunk ``event`` carries, or None for one that carries nothing."""
        kind = event.get("type")
        if kind == "message_start":
            self.start_usage = dict((event.get("message") or {}).get("usage") or {})
        elif kind == "content_block_start":
            return self._block_start(event.get("index", 0), event.get("content_block") or {})
        elif kind == "content_block_delta":
            return self._delta(event.get("index", 0), event.get("delta") or {})
        elif kind == "content_block_stop":
            return self._block_stop(event.get("index", 0))
        elif kind == "message_delta":
            self.finished = True
            usage = {**self.start_usage, **{k: v for k, v in (event.get("usage") or {}).items() if v is not None}}
            finish = _finish((event.get("delta") or {}).get("stop_reason"), self.answer)
            meta = ResponseMeta(finish_reason=finish, usage=usage_from_anthropic(usage))
            return Message(role="assistant", response_meta=meta)
        return None

    def _block_start(self, index: int, block: Mapping[str, Any]) -> Message | None:
        if block.get("type") != "tool_use":
            return None
        if self.answer is not None and block.get("name") == self.answer.name:
            self.answer_blocks.add(index)
            return None
        position = self.calls.setdefault(index, len(self.calls))
        call = ToolCall(index=position, id=block.get("id") or "", function=FunctionCall(name=block.get("name") or ""))
        return Message(role="assistant", tool_calls=[call])

    def _block_stop(self, index: int) -> Message | None:
        # A call without arguments streams no input at all; its arguments are still a JSON object.
        if index not in self.calls or index in self.with_input:
            return None
        call = ToolCall(index=self.calls[index], function=FunctionCall(arguments="{}"))
        return Message(role="assistant", tool_calls=[call])

    def _delta(self, index: int, delta: Mapping[str, Any]) -> Message | None:
        kind = delta.get("type")
        if kind == "text_delta":
            return Message(role="assistant", content=delta.get("text") or "")
        if kind == "thinking_delta":
            return Message(role="assistant", reasoning_content=delta.get("thinking") or "")
        if kind == "input_json_delta" and delta.get("partial_json"):
            self.with_input.add(index)
            if index in self.answer_blocks:
                return Message(role="assistant", content=delta["partial_json"])
            if index in self.calls:
                call = ToolCall(index=self.calls[index], function=FunctionCall(arguments=delta["partial_json"]))
                return Message(role="assistant", tool_calls=[call])
        return None

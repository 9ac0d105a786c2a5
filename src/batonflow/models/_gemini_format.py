"""Conversion between batonflow messages and Gemini's ``generateContent``, on the plain dicts the
``google-genai`` SDK takes (``ContentDict``, ``GenerateContentConfigDict``) and its responses dumped to dicts.

Gemini's roles are ``user`` and ``model``; a tool result is a ``function_response`` part of a user turn, which
names the function it answers, not only the call. A function call's ``thought_signature`` (Gemini's reasoning
state, which thinking models require back with the call) is kept in ``ToolCall.extra`` as base64.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from ..schema import FunctionCall, ImagePart, Message, ResponseMeta, TextPart, ToolCall, ToolInfo, Usage
from ._base import ForcedTool, ModelSettings, ToolChoice, answer_format

__all__ = ["check_shape", "gemini_config", "gemini_contents", "message_from_gemini", "usage_from_gemini"]

# Gemini's finish reasons, told as OpenAI's (what the rest of batonflow reads); the others are kept as they are.
_FINISH = {"STOP": "stop", "MAX_TOKENS": "length", "SAFETY": "content_filter", "RECITATION": "content_filter"}
_SIGNATURE = "thought_signature"


def gemini_contents(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The turns (system messages are the config's ``system_instruction``); consecutive turns of one role merge."""
    names = {call.id: call.function.name for m in messages for call in m.tool_calls if call.id}
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        role = "model" if message.role == "assistant" else "user"
        parts = _parts(message, names)
        if not parts:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["parts"].extend(parts)
        else:
            turns.append({"role": role, "parts": parts})
    return turns


def _parts(message: Message, names: Mapping[str, str]) -> list[dict[str, Any]]:
    if message.role == "tool":
        name = message.tool_name or names.get(message.tool_call_id, "")
        response: dict[str, Any] = {"name": name, "response": {"result": message.text}}
        if message.tool_call_id and not message.tool_call_id.startswith(_MADE_UP):
            response["id"] = message.tool_call_id
        return [{"function_response": response}]
    parts: list[dict[str, Any]] = []
    if message.content:
        parts.append({"text": message.content})
    for part in message.parts:
        if isinstance(part, TextPart):
            parts.append({"text": part.text})
        elif isinstance(part, ImagePart):
            parts.append(_image(part.url))
        else:
            parts.append({"inline_data": {"mime_type": f"audio/{part.format}", "data": base64.b64decode(part.data)}})
    for call in message.tool_calls:
        parts.append(_call_part(call))
    return parts


def _image(url: str) -> dict[str, Any]:
    if url.startswith("data:"):
        header, _, data = url.partition(",")
        return {"inline_data": {"mime_type": header[5:].split(";")[0], "data": base64.b64decode(data)}}
    return {"file_data": {"file_uri": url}}


def _call_part(call: ToolCall) -> dict[str, Any]:
    try:
        args = json.loads(call.function.arguments or "{}")
    except ValueError:
        args = {"arguments": call.function.arguments}  # refused in the run already; kept for the record
    function: dict[str, Any] = {"name": call.function.name, "args": args if isinstance(args, dict) else {}}
    if call.id and not call.id.startswith(_MADE_UP):
        function["id"] = call.id
    part: dict[str, Any] = {"function_call": function}
    signature = (call.extra or {}).get(_SIGNATURE)
    if signature:
        part[_SIGNATURE] = base64.b64decode(signature)
    return part


def gemini_config(
    messages: Sequence[Message],
    *,
    tools: Sequence[ToolInfo] | None,
    tool_choice: ToolChoice | None,
    settings: ModelSettings,
) -> dict[str, Any]:
    """The call's ``GenerateContentConfig`` as a dict: system instruction, tools and their mode, sampling, schema."""
    config: dict[str, Any] = {}
    system = "\n\n".join(m.text for m in messages if m.role == "system")
    if system:
        config["system_instruction"] = system
    sampling = {
        "temperature": settings.temperature,
        "top_p": settings.top_p,
        "max_output_tokens": settings.max_tokens,
        "stop_sequences": settings.stop,
        "seed": settings.seed,
    }
    config.update({key: value for key, value in sampling.items() if value is not None})
    if tools:
        declarations = [
            {"name": t.name, "description": t.description, "parameters_json_schema": dict(t.parameters)} for t in tools
        ]
        config["tools"] = [{"function_declarations": declarations}]
        # Gemini's SDK would otherwise call Python functions itself; batonflow runs the tools.
        config["automatic_function_calling"] = {"disable": True}
    if tool_choice is not None:
        config["tool_config"] = {"function_calling_config": _mode(tool_choice)}
    wanted = answer_format(settings, tools, tool_choice)
    if wanted is not None:
        config["response_mime_type"] = "application/json"
        config["response_json_schema"] = dict(wanted.schema)
    config.update(settings.extra or {})
    return config


def _mode(choice: ToolChoice) -> dict[str, Any]:
    if isinstance(choice, ForcedTool):
        return {"mode": "ANY", "allowed_function_names": [choice.name]}
    return {"mode": {"auto": "AUTO", "required": "ANY", "none": "NONE"}[choice]}


# -- responses -------------------------------------------------------------------------------------------------

# Gemini API calls carry no id unless the model gives one: batonflow makes one up, and does not send it back.
_MADE_UP = "gemini-call-"


def usage_from_gemini(raw: Mapping[str, Any] | None) -> Usage | None:
    if not raw:
        return None
    prompt = raw.get("prompt_token_count") or 0
    thoughts = raw.get("thoughts_token_count") or 0
    completion = (raw.get("candidates_token_count") or 0) + thoughts
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=raw.get("total_token_count") or prompt + completion,
        cached_tokens=raw.get("cached_content_token_count") or 0,
        reasoning_tokens=thoughts,
    )


def message_from_gemini(data: Mapping[str, Any], first_call: int = 0) -> Message:
    """A response (or a streamed chunk of one) as an assistant message; its calls are numbered from ``first_call``
    (a stream's calls arrive whole, each chunk after the calls before it)."""
    candidates = data.get("candidates") or [{}]
    candidate = candidates[0] or {}
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[ToolCall] = []
    for part in (candidate.get("content") or {}).get("parts") or ():
        function = part.get("function_call")
        if function:
            calls.append(_tool_call(function, part.get(_SIGNATURE), first_call + len(calls)))
        elif part.get("text"):
            (thoughts if part.get("thought") else texts).append(part["text"])
    finish = candidate.get("finish_reason") or ""
    finish = str(getattr(finish, "value", finish))
    finish = "tool_calls" if finish == "STOP" and calls else _FINISH.get(finish, finish.lower())
    message = Message(role="assistant", content="".join(texts), reasoning_content="".join(thoughts), tool_calls=calls)
    usage = usage_from_gemini(data.get("usage_metadata"))
    if finish or usage:
        message.response_meta = ResponseMeta(finish_reason=finish, usage=usage)
    return message


def _tool_call(function: Mapping[str, Any], signature: bytes | None, index: int) -> ToolCall:
    call = ToolCall(
        index=index,
        id=function.get("id") or f"{_MADE_UP}{uuid.uuid4().hex[:16]}",
        function=FunctionCall(
            name=function.get("name") or "", arguments=json.dumps(function.get("args") or {}, ensure_ascii=False)
        ),
    )
    if signature:
        call.extra = {_SIGNATURE: base64.b64encode(signature).decode()}
    return call


def check_shape(data: object) -> bool:
    """True for a dumped response that has what an answer has (candidates, or the usage of a last chunk)."""
    return isinstance(data, Mapping) and bool(data.get("candidates") or data.get("usage_metadata"))

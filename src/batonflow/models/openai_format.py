"""Conversion between batonflow messages and the OpenAI chat completions wire format, on plain dicts.

Plain dicts rather than SDK types, so that every OpenAI-shaped source shares one converter: the ``openai`` SDK
(through ``.model_dump()``) and llama-cpp-python, which returns the same shapes in-process. Public for the same
reason: an adapter for another OpenAI-compatible engine needs nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ..schema import ContentPart, FunctionCall, ImagePart, Message, ResponseMeta, TextPart, ToolCall, ToolInfo, Usage
from ._base import ForcedTool, JSONSchemaFormat, ModelSettings, ToolChoice, answer_format

__all__ = [
    "chat_request",
    "chunk_to_message",
    "completion_to_message",
    "message_to_openai",
    "response_format_to_openai",
    "settings_to_openai",
    "tool_choice_to_openai",
    "tool_to_openai",
    "usage_from_openai",
]


# -- requests --------------------------------------------------------------------------------------------------


def chat_request(
    messages: Sequence[Message],
    *,
    tools: Sequence[ToolInfo] | None,
    tool_choice: ToolChoice | None,
    settings: ModelSettings,
) -> dict[str, Any]:
    """The body of a chat completions request, without ``model``, ``stream`` and ``settings.extra``.

    ``settings.response_format`` is sent only where ``answer_format`` says it applies (no tool call can follow).
    """
    body: dict[str, Any] = {"messages": [message_to_openai(m) for m in messages]}
    if tools:
        body["tools"] = [tool_to_openai(t) for t in tools]
    if tool_choice is not None:
        body["tool_choice"] = tool_choice_to_openai(tool_choice)
    body.update(settings_to_openai(settings))
    wanted = answer_format(settings, tools, tool_choice)
    if wanted is not None:
        body["response_format"] = response_format_to_openai(wanted)
    return body


def message_to_openai(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role}
    if message.role == "user" and message.parts:
        parts = [TextPart(text=message.content), *message.parts] if message.content else message.parts
        out["content"] = [_part_to_openai(p) for p in parts]
    elif message.role == "assistant" and message.tool_calls:
        # OpenAI wants null, not "", as the content of an assistant turn that only calls tools.
        out["content"] = message.text or None
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": call.type or "function",
                "function": {"name": call.function.name, "arguments": call.function.arguments},
            }
            for call in message.tool_calls
        ]
    else:
        out["content"] = message.text
    if message.role == "tool":
        out["tool_call_id"] = message.tool_call_id
    elif message.name:
        out["name"] = message.name
    return out


def _part_to_openai(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImagePart):
        return {"type": "image_url", "image_url": {"url": part.url, "detail": part.detail}}
    return {"type": "input_audio", "input_audio": {"data": part.data, "format": part.format}}


def tool_to_openai(tool: ToolInfo) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
    }


def tool_choice_to_openai(choice: ToolChoice) -> str | dict[str, Any]:
    if isinstance(choice, ForcedTool):
        return {"type": "function", "function": {"name": choice.name}}
    return choice


def response_format_to_openai(
    wanted: JSONSchemaFormat, kind: Literal["json_schema", "json_object"] = "json_schema"
) -> dict[str, Any]:
    """``response_format`` as OpenAI has it (``json_schema``), or as llama-cpp-python has it (``json_object``
    with the schema beside the type: its server and its in-process API know no other form)."""
    if kind == "json_object":
        return {"type": "json_object", "schema": dict(wanted.schema)}
    return {
        "type": "json_schema",
        "json_schema": {"name": wanted.name, "schema": dict(wanted.schema), "strict": wanted.strict},
    }


def settings_to_openai(settings: ModelSettings) -> dict[str, Any]:
    """The standard sampling fields that are set; ``extra`` is left to the caller (SDKs take it differently)."""
    fields = {
        "temperature": settings.temperature,
        "top_p": settings.top_p,
        "max_tokens": settings.max_tokens,
        "stop": settings.stop,
        "seed": settings.seed,
    }
    return {key: value for key, value in fields.items() if value is not None}


# -- responses -------------------------------------------------------------------------------------------------


def completion_to_message(data: Mapping[str, Any]) -> Message:
    """A ``chat.completion`` object as one assistant message (the first choice)."""
    choices = data.get("choices") or [{}]
    choice = choices[0]
    raw = choice.get("message") or {}
    return Message(
        role="assistant",
        content=raw.get("content") or "",
        reasoning_content=_reasoning(raw),
        tool_calls=[_tool_call(call, position) for position, call in enumerate(raw.get("tool_calls") or ())],
        response_meta=ResponseMeta(
            finish_reason=choice.get("finish_reason") or "",
            usage=usage_from_openai(data.get("usage")),
            logprobs=_logprobs(choice),
        ),
    )


def chunk_to_message(data: Mapping[str, Any]) -> Message | None:
    """A ``chat.completion.chunk`` as an assistant message chunk; None for a chunk that carries nothing.

    Tool call deltas keep their ``index``: that is how ``concat_messages`` puts the pieces of parallel calls
    back together. Usage comes in a last chunk without choices when ``stream_options.include_usage`` is set.
    """
    choices = data.get("choices") or [{}]
    choice = choices[0]
    delta = choice.get("delta") or {}
    usage = usage_from_openai(data.get("usage"))
    finish_reason = choice.get("finish_reason") or ""
    logprobs = _logprobs(choice)
    message = Message(
        role="assistant",
        content=delta.get("content") or "",
        reasoning_content=_reasoning(delta),
        tool_calls=[_tool_call(call, None) for call in delta.get("tool_calls") or ()],
    )
    if finish_reason or usage or logprobs:
        message.response_meta = ResponseMeta(finish_reason=finish_reason, usage=usage, logprobs=logprobs)
    elif not (message.content or message.reasoning_content or message.tool_calls):
        return None
    return message


def usage_from_openai(raw: Mapping[str, Any] | None) -> Usage | None:
    if not raw:
        return None
    prompt_details = raw.get("prompt_tokens_details") or {}
    completion_details = raw.get("completion_tokens_details") or {}
    return Usage(
        prompt_tokens=raw.get("prompt_tokens") or 0,
        completion_tokens=raw.get("completion_tokens") or 0,
        total_tokens=raw.get("total_tokens") or 0,
        cached_tokens=prompt_details.get("cached_tokens") or 0,
        reasoning_tokens=completion_details.get("reasoning_tokens") or 0,
    )


def _tool_call(raw: Mapping[str, Any], position: int | None) -> ToolCall:
    function = raw.get("function") or {}
    index = raw.get("index")
    return ToolCall(
        index=index if index is not None else position,
        id=raw.get("id") or "",
        type=raw.get("type") or "function",
        function=FunctionCall(name=function.get("name") or "", arguments=function.get("arguments") or ""),
    )


def _reasoning(raw: Mapping[str, Any]) -> str:
    # DeepSeek and llama.cpp send ``reasoning_content``; newer vLLM releases call it ``reasoning``.
    return str(raw.get("reasoning_content") or raw.get("reasoning") or "")


def _logprobs(choice: Mapping[str, Any]) -> list[Any] | None:
    raw = choice.get("logprobs")
    if isinstance(raw, Mapping):
        content = raw.get("content")
        return list(content) if content else None
    return None

"""Agent and trace events as JSON: what the HTTP API sends for each event, and how a value that is not JSON gets
there (dataclasses and pydantic models by their fields, exceptions by type and message, anything else by ``str``).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import re
from collections.abc import Mapping
from typing import Any

from fastapi.responses import JSONResponse
from pydantic import BaseModel

from ..adk import AgentEvent, InterruptCtx, InterruptInfo
from ..agents import HITLPending
from ..schema import Message, RunStep
from ..trace import TraceEvent

__all__ = [
    "JSONAnswer",
    "error_json",
    "event_json",
    "event_kind",
    "interrupt_json",
    "json_text",
    "jsonable",
    "message_json",
    "trace_json",
]

_DEPTH = 32
_SURROGATE = re.compile("[\ud800-\udfff]")


def json_text(data: Any) -> str:
    """``data`` as JSON text that UTF-8 can carry: other characters as themselves, but when some text holds a lone
    surrogate (a tool's output or a model's can), every non-ASCII character escaped (``"\\ud800"``), which is
    what JSON has for it. Never an answer or an SSE stream cut short by a ``UnicodeEncodeError``."""
    text = json.dumps(data, ensure_ascii=False)
    return json.dumps(data) if not text.isascii() and _SURROGATE.search(text) else text


class JSONAnswer(JSONResponse):
    """The API's JSON answers: FastAPI's, but a body with a lone surrogate is escaped (``json_text``), not a 500."""

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            return json.dumps(content, allow_nan=False, separators=(",", ":")).encode("ascii")


def jsonable(value: Any, depth: int = 0) -> Any:
    """``value`` made of JSON types only. Deep or cyclic values stop at ``_DEPTH`` levels, as their ``str``."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if depth > _DEPTH:
        return str(value)
    if isinstance(value, BaseException):
        return error_json(value)
    if isinstance(value, Message):
        return message_json(value)
    if isinstance(value, RunStep):
        return value.agent_name
    if isinstance(value, enum.Enum):
        return jsonable(value.value, depth + 1)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, BaseModel):
        return jsonable(value.model_dump(mode="json"), depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: jsonable(getattr(value, f.name), depth + 1)
            for f in dataclasses.fields(value)
            if not f.name.startswith("_")
        }
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v, depth + 1) for v in value]
    return str(value)


def error_json(error: BaseException) -> dict[str, Any]:
    return {"type": type(error).__name__, "message": str(error)}


def message_json(message: Message) -> dict[str, Any]:
    """A message as the API shows it: the fields that are set, tool calls as id, name and arguments."""
    shown: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.reasoning_content:
        shown["reasoning"] = message.reasoning_content
    if message.tool_calls:
        shown["tool_calls"] = [
            {"id": c.id, "name": c.function.name, "arguments": c.function.arguments} for c in message.tool_calls
        ]
    if message.tool_call_id:
        shown["tool_call_id"] = message.tool_call_id
    if message.tool_name:
        shown["tool_name"] = message.tool_name
    if message.name:
        shown["name"] = message.name
    meta = message.response_meta
    if meta is not None:
        shown["finish_reason"] = meta.finish_reason
        if meta.usage is not None:
            shown["usage"] = jsonable(meta.usage)
    return shown


def interrupt_json(cause: InterruptCtx) -> dict[str, Any]:
    """An interrupt as the API shows it; ``kind`` is ``approval`` for a human approval of tool calls (its answer is
    a decision per call), ``question`` for anything else a tool asked."""
    kind = "approval" if isinstance(cause.info, HITLPending) else "question"
    return {"id": cause.id, "address": cause.address, "kind": kind, "info": jsonable(cause.info)}


def event_kind(event: AgentEvent) -> str:
    """The SSE event name of an agent event: ``error``, ``interrupt``, ``transfer``, ``message`` or ``action``."""
    if event.error is not None:
        return "error"
    action = event.action
    if action is not None and isinstance(action.interrupted, InterruptInfo):
        return "interrupt"
    if action is not None and action.transfer_to_agent is not None:
        return "transfer"
    if event.message_output is not None:
        return "message"
    return "action"


def event_json(event: AgentEvent, message: Message | None) -> dict[str, Any]:
    """One agent event; ``message`` is its message, joined already when it was streamed."""
    shown: dict[str, Any] = {
        "seq": event.seq,
        "agent": event.agent_name,
        "run_path": [step.agent_name for step in event.run_path],
    }
    variant = event.message_output
    if variant is not None and message is not None:
        shown["message"] = message_json(message)
    action = event.action
    if action is not None:
        act: dict[str, Any] = {}
        if action.exit:
            act["exit"] = True
        if action.transfer_to_agent is not None:
            act["transfer_to"] = action.transfer_to_agent.dest_agent_name
        if action.break_loop is not None:
            act["break_loop"] = action.break_loop.from_agent
        if isinstance(action.interrupted, InterruptInfo):
            act["interrupted"] = {
                "data": jsonable(action.interrupted.data),
                "interrupts": [interrupt_json(c) for c in action.interrupted.interrupt_contexts],
            }
        if action.customized_action is not None:
            act["custom"] = jsonable(action.customized_action)
        if act:
            shown["action"] = act
    if event.output is not None and event.output.customized_output is not None:
        shown["custom_output"] = jsonable(event.output.customized_output)
    if event.error is not None:
        shown["error"] = error_json(event.error)
    return shown


def trace_json(event: TraceEvent) -> dict[str, Any]:
    shown = jsonable(event)
    assert isinstance(shown, dict)
    return shown

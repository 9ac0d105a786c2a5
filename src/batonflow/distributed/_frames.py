"""A run's events as frames: what a run's event log carries and the HTTP API sends, one SSE event each. Frames
are made where the run runs (this process, or the worker of a segment), so every backend's log holds the same
frames, and a server reads and sends them as they are.

A frame is an SSE event name and a JSON body: ``run`` (the run starts), ``message_start`` and ``delta`` (a
streamed message, then its chunks), ``message``, ``transfer``, ``action``, ``interrupt``, ``error`` (an agent
event each), ``trace`` (a trace event, when asked for), and last ``state`` (the run's session values as the segment
left them, when it holds any: ``state_json``). A log adds ``end`` (the segment's outcome) after the last.
How a value that is not JSON gets into one: dataclasses and pydantic models by their fields, exceptions by type and
message, anything else by ``str``.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import json
import re
from collections.abc import Awaitable, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from ..adk import AgentEvent, InterruptCtx, InterruptInfo, Runner
from ..agents import HITLPending
from ..schema import Message, RunStep
from ..trace import TraceEvent

__all__ = [
    "Frame",
    "FrameSink",
    "Framer",
    "body_of",
    "delta_text",
    "error_json",
    "event_json",
    "event_kind",
    "interrupt_json",
    "json_text",
    "jsonable",
    "message_json",
    "state_json",
    "trace_json",
]

_DEPTH = 32
_SURROGATE = re.compile("[\ud800-\udfff]")


def json_text(data: Any) -> str:
    """``data`` as JSON text that UTF-8 can carry: other characters as themselves, but when some text holds a lone
    surrogate (a tool's output or a model's can), every non-ASCII character escaped (``"\\ud800"``), which is
    what JSON has for it. Never an answer or an SSE stream cut short by a ``UnicodeEncodeError``."""
    text = _UNICODE.encode(data)
    return json.dumps(data) if not text.isascii() and _SURROGATE.search(text) else text


_UNICODE = json.JSONEncoder(ensure_ascii=False)
"""``json.dumps(..., ensure_ascii=False)``, made once: ``dumps`` builds an encoder per call for any option but the
defaults, which was half of what a frame's JSON cost."""


def delta_text(seq: int, content: str, reasoning: str = "") -> str:
    """``json_text`` of a ``delta`` frame's data (``seq``, ``content``, and ``reasoning`` when there is some), the
    same text made without an encoder's walk of a dict: most of a streamed run's frames are deltas."""
    text = f'{{"seq": {seq}, "content": {_string(content)}'
    text += f', "reasoning": {_string(reasoning)}}}' if reasoning else "}"
    if not text.isascii() and _SURROGATE.search(text):
        return json.dumps({"seq": seq, "content": content, **({"reasoning": reasoning} if reasoning else {})})
    return text


_string = json.encoder.encode_basestring  # what the encoder writes a str as (ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class Frame:
    """One SSE event of a run: its ``event`` name, its JSON ``data``, and the ``seq`` of the agent event it is part
    of (0 before the first); ``text``, when given, is ``json_text(data)`` made already."""

    event: str
    data: dict[str, Any]
    seq: int = 0
    text: str | None = None

    def record(self) -> dict[str, str]:
        """What a log keeps of the frame: its SSE event name and its data, as the JSON text sent. Made once, where
        the run runs: every follower sends the same text, and a log in memory holds two strings a frame, not the
        frame's values (which would lengthen every collection of the garbage collector)."""
        return {"event": self.event, "data": json_text(self.data) if self.text is None else self.text}


def body_of(record: Mapping[str, Any]) -> dict[str, Any]:
    """The data of a frame a log kept (``Frame.record``), as values again."""
    body = json.loads(record["data"])
    assert isinstance(body, dict)
    return body


FrameSink = Callable[[Frame], Awaitable[None]]
"""Where a run's frames go as they are made (its event log); awaited before the next one."""


@dataclass(slots=True)
class Framer:
    """Turns one run's events into frames for ``sink`` (None: only the summary is kept), its streamed messages
    into deltas when ``deltas``; keeps what an outcome reports: the answer so far, the tokens, the interrupts (as
    the API shows them: an approval's tasks are what its answer is checked against) and the error."""

    sink: FrameSink | None
    deltas: bool = False
    text: str = ""
    interrupts: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, Any] | None = None
    usage: dict[str, int] = field(
        default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    )
    last_seq: int = 0

    async def send(self, event: str, data: dict[str, Any]) -> None:
        if self.sink is not None:
            await self.sink(Frame(event, data, self.last_seq))

    async def event(self, event: AgentEvent) -> None:
        self.last_seq = max(self.last_seq, event.seq)
        variant = event.message_output
        message: Message | None = None
        sink = self.sink
        if variant is not None and variant.is_streaming and variant.message_stream is not None and self.deltas:
            if sink is not None:
                head = {"seq": event.seq, "agent": event.agent_name, "role": variant.role}
                await sink(Frame("message_start", {**head, "tool_name": variant.tool_name}, event.seq))
            try:
                async with aclosing(variant.message_stream) as chunks:
                    async for chunk in chunks:
                        if sink is not None and (chunk.content or chunk.reasoning_content):
                            delta = {"seq": event.seq, "content": chunk.content}
                            if chunk.reasoning_content:
                                delta["reasoning"] = chunk.reasoning_content
                            text = delta_text(event.seq, chunk.content, chunk.reasoning_content)
                            await sink(Frame("delta", delta, event.seq, text))
                message = await variant.get_message()
            except Exception:
                message = None  # the agent reports why in an error event of its own
        elif variant is not None:
            try:
                message = await variant.get_message()
            except Exception:
                message = None
        if sink is not None:
            await sink(Frame(event_kind(event), event_json(event, message), event.seq))
        self._note(event, message)

    async def trace(self, event: TraceEvent) -> None:
        await self.send("trace", trace_json(event))

    def _note(self, event: AgentEvent, message: Message | None) -> None:
        if message is not None and message.role == "assistant":
            if not message.tool_calls and message.content:
                self.text = message.content
            usage = message.response_meta.usage if message.response_meta is not None else None
            if usage is not None:
                self.usage["prompt_tokens"] += usage.prompt_tokens
                self.usage["completion_tokens"] += usage.completion_tokens
                self.usage["total_tokens"] += usage.total_tokens
        action = event.action
        if action is not None and isinstance(action.interrupted, InterruptInfo):
            self.interrupts = [interrupt_json(c) for c in action.interrupted.interrupt_contexts]
        if event.error is not None:
            self.error = error_json(event.error)


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


STATE_KEYS = 100
"""The session values a ``state`` frame carries at most (the others are counted in its ``more``)."""
STATE_VALUE_CHARS = 2_000
"""The longest a value of a ``state`` frame is, as JSON text: a longer one is that text cut, ending in "…"."""


def state_json(values: Mapping[str, Any]) -> dict[str, Any]:
    """A run's session values as a ``state`` frame shows them: ``values``, the first ``STATE_KEYS`` made of JSON
    types (each longer than ``STATE_VALUE_CHARS`` as JSON replaced by that text cut short), and ``more``, how many
    were left out. The frame is for people to read: the run's own values stay in its checkpoint or session."""
    shown: dict[str, Any] = {}
    for key, value in itertools.islice(values.items(), STATE_KEYS):
        plain = jsonable(value)
        text = json_text(plain)
        shown[str(key)] = plain if len(text) <= STATE_VALUE_CHARS else f"{text[: STATE_VALUE_CHARS - 1]}…"
    return {"values": shown, "more": max(len(values) - STATE_KEYS, 0)}


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


async def replay_json(runner: Runner, run_id: str) -> dict[str, Any]:
    """``runner``'s replay of the kept run ``run_id`` as the API answers it: each event as a frame shows it, its
    SSE name under ``event``, and the text of the last message (``ReplayMismatchError`` raised, as the replay's)."""
    events: list[dict[str, Any]] = []
    async for event in runner.replay(run_id):
        variant = event.message_output
        message = None if variant is None else await variant.get_message()
        events.append({"event": event_kind(event), **event_json(event, message)})
    text = next((e["message"]["content"] for e in reversed(events) if "message" in e), "")
    return {"text": text, "events": events}


def trace_json(event: TraceEvent) -> dict[str, Any]:
    shown = jsonable(event)
    assert isinstance(shown, dict)
    return shown

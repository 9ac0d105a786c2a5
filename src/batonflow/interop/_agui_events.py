"""A batonflow run as AG-UI events: the pure translation, with no I/O, from a run's frames (its agent events as the
server's event log carries them: ``run``, ``message_start``, ``delta``, ``message``, ``transfer``, ``interrupt``,
``error``, ``state``, then the segment's ``end``) to the events of the AG-UI protocol, made with the
``ag-ui-protocol`` package's own models.

What maps to what: a run is ``RUN_STARTED`` … ``RUN_FINISHED`` (or ``RUN_ERROR``); an assistant's text is
``TEXT_MESSAGE_START``/``CONTENT``/``END`` (each streamed chunk a ``CONTENT`` delta), its reasoning the ``REASONING_*``
events before it; its tool calls are ``TOOL_CALL_START``/``ARGS``/``END`` and each tool's answer a
``TOOL_CALL_RESULT``; the run's session values are a ``STATE_SNAPSHOT`` when it starts and a ``STATE_DELTA`` (RFC
6902 JSON Patch) when it ends; each stretch of events by one agent of the run path (a transfer hands over to the
next) is a step. An interrupted run finishes with the
``interrupt`` outcome, whose interrupts a later run's ``resume`` entries answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    Interrupt,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from ..adk import TRANSFER_TOOL_NAME
from ..distributed import jsonable

__all__ = ["AguiTranslator", "json_patch"]


class AguiTranslator:
    """The AG-UI events of one run of thread ``thread_id`` (the AG-UI ``run_id`` echoed in them), which starts on the
    session values ``state``. Feed it the run's frames in order (``frame``), then its end (``ended``); each call
    gives the events to send. Once the run has finished (``finished``), or failed, nothing more is sent."""

    def __init__(self, *, thread_id: str, run_id: str, state: Mapping[str, Any] | None = None) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.state: dict[str, Any] = jsonable(dict(state or {}))
        self.finished = False
        self._step: str | None = None
        self._roles: dict[int, str] = {}  # the role of each streamed message, by its seq
        self._open: set[int] = set()  # the streamed texts started and not ended yet
        self._thinking: set[int] = set()  # the streamed reasonings started and not ended yet
        self._transfers: list[str] = []  # the transfer calls made and not answered yet (a transfer answers them)

    def started(self) -> list[BaseEvent]:
        """What a run sends first: ``RUN_STARTED``, and the state it starts on."""
        return [
            RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id),
            StateSnapshotEvent(snapshot=self.state),
        ]

    def frame(self, event: str, data: Mapping[str, Any]) -> list[BaseEvent]:
        """The events of one frame (``event`` its name, ``data`` its body); a frame AG-UI has no word for (an
        ``action``, a ``trace``, the ``run`` head) sends none but a step."""
        if self.finished:
            return []
        out: list[BaseEvent] = []
        agent = data.get("agent") if event != "run" else None  # the run's head names the agent as the API does
        if isinstance(agent, str) and agent and agent != self._step:
            out += self._close_step()
            self._step = agent
            out.append(StepStartedEvent(step_name=agent))
        if event == "message_start":
            self._roles[int(data["seq"])] = str(data.get("role", ""))
        elif event == "delta":
            out += self._delta(int(data["seq"]), str(data.get("content") or ""), str(data.get("reasoning") or ""))
        elif event == "message":
            out += self._message(int(data["seq"]), data.get("message") or {})
        elif event == "transfer":
            out += self._transferred(data)
        elif event == "state":
            out += self._state(data.get("values") or {})
        elif event == "error":
            error = data.get("error") or {}
            out += self._failed(str(error.get("type") or "Error"), str(error.get("message") or ""))
        elif event == "gap":  # records the log lost: said, never skipped silently
            out.append(CustomEvent(name="batonflow.gap", value=jsonable(dict(data))))
        return out

    def ended(self, outcome: Mapping[str, Any]) -> list[BaseEvent]:
        """The events of the run's end: ``outcome`` is the segment's (``SegmentOutcome.payload``): ``RUN_FINISHED``
        (completed, interrupted, cancelled) or ``RUN_ERROR`` (failed, when no error frame said so already)."""
        if self.finished:
            return []
        status = outcome.get("status")
        if status == "failed":
            kind, sep, message = str(outcome.get("error") or "Error: the run failed").partition(": ")
            return self._failed(kind if sep else "Error", message if sep else kind)
        out = self._close_texts() + self._close_step()
        self.finished = True
        result: dict[str, Any] = {
            "status": status,
            "session_id": self.thread_id,
            "segment_id": outcome.get("segment_id"),
        }
        if status == "interrupted":
            interrupts = [_interrupt(i) for i in outcome.get("interrupts") or ()]
            result |= {"checkpoint_id": self.thread_id, "interrupt_ids": [i.id for i in interrupts]}
            ending: Any = RunFinishedInterruptOutcome(interrupts=interrupts) if interrupts else None
        elif status == "cancelled":
            ending = RunFinishedCancelledOutcome()
        else:
            result["text"] = outcome.get("text") or ""
            ending = RunFinishedSuccessOutcome()
        out.append(
            RunFinishedEvent(
                thread_id=self.thread_id, run_id=self.run_id, result=result, outcome=ending, usage=_usage(outcome)
            )
        )
        return out

    def _delta(self, seq: int, content: str, reasoning: str) -> list[BaseEvent]:
        if self._roles.get(seq) != "assistant":
            return []
        out: list[BaseEvent] = []
        if reasoning:
            if seq not in self._thinking:
                self._thinking.add(seq)
                rid = self._id(seq, "reasoning")
                out += [ReasoningStartEvent(message_id=rid), ReasoningMessageStartEvent(message_id=rid)]
            out.append(ReasoningMessageContentEvent(message_id=self._id(seq, "reasoning"), delta=reasoning))
        if content:
            out += self._thought(seq)
            if seq not in self._open:
                self._open.add(seq)
                out.append(TextMessageStartEvent(message_id=self._id(seq), role="assistant"))
            out.append(TextMessageContentEvent(message_id=self._id(seq), delta=content))
        return out

    def _message(self, seq: int, message: Mapping[str, Any]) -> list[BaseEvent]:
        role, content = message.get("role"), str(message.get("content") or "")
        mid = self._id(seq)
        if role == "assistant":
            return self._answer(seq, message, content) + self._calls(mid, message.get("tool_calls") or ())
        if role == "tool" and message.get("tool_call_id"):
            if message["tool_call_id"] in self._transfers:
                self._transfers.remove(message["tool_call_id"])
            return [
                ToolCallResultEvent(message_id=mid, tool_call_id=message["tool_call_id"], content=content, role="tool")
            ]
        return []

    def _answer(self, seq: int, message: Mapping[str, Any], content: str) -> list[BaseEvent]:
        """An assistant message's reasoning and text: the end of what its chunks started, or (not streamed) whole."""
        out: list[BaseEvent] = []
        mid, reasoning = self._id(seq), str(message.get("reasoning") or "")
        if seq not in self._roles and reasoning:  # not streamed: its reasoning whole, before its text
            rid = self._id(seq, "reasoning")
            out += [
                ReasoningStartEvent(message_id=rid),
                ReasoningMessageStartEvent(message_id=rid),
                ReasoningMessageContentEvent(message_id=rid, delta=reasoning),
                ReasoningMessageEndEvent(message_id=rid),
                ReasoningEndEvent(message_id=rid),
            ]
        out += self._thought(seq)
        if seq in self._open:
            self._open.discard(seq)
            out.append(TextMessageEndEvent(message_id=mid))
        elif content:
            out += [
                TextMessageStartEvent(message_id=mid, role="assistant"),
                TextMessageContentEvent(message_id=mid, delta=content),
                TextMessageEndEvent(message_id=mid),
            ]
        return out

    def _calls(self, mid: str, calls: Any) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        for call in calls:
            if call["name"] == TRANSFER_TOOL_NAME:
                self._transfers.append(call["id"])
            out.append(ToolCallStartEvent(tool_call_id=call["id"], tool_call_name=call["name"], parent_message_id=mid))
            if call.get("arguments"):
                out.append(ToolCallArgsEvent(tool_call_id=call["id"], delta=str(call["arguments"])))
            out.append(ToolCallEndEvent(tool_call_id=call["id"]))
        return out

    def _thought(self, seq: int) -> list[BaseEvent]:
        """The end of message ``seq``'s streamed reasoning, when it is under way."""
        if seq not in self._thinking:
            return []
        self._thinking.discard(seq)
        rid = self._id(seq, "reasoning")
        return [ReasoningMessageEndEvent(message_id=rid), ReasoningEndEvent(message_id=rid)]

    def _transferred(self, data: Mapping[str, Any]) -> list[BaseEvent]:
        """The answer of the transfer calls made: a batonflow transfer is an action, not a tool message, but an
        AG-UI client would take a call left unanswered for one of its own tools to answer."""
        dest = (data.get("action") or {}).get("transfer_to", "")
        calls, self._transfers = self._transfers, []
        return [
            ToolCallResultEvent(
                message_id=f"{self._id(int(data.get('seq', 0)))}-{call}",
                tool_call_id=call,
                content=f"transferred to {dest}",
                role="tool",
            )
            for call in calls
        ]

    def _state(self, values: Mapping[str, Any]) -> list[BaseEvent]:
        after = jsonable(dict(values))
        patch = json_patch(self.state, after)
        self.state = after
        return [StateDeltaEvent.model_validate({"type": "STATE_DELTA", "delta": patch})] if patch else []

    def _failed(self, kind: str, message: str) -> list[BaseEvent]:
        out = self._close_texts() + self._close_step()
        self.finished = True
        out.append(RunErrorEvent(message=f"{kind}: {message}" if message else kind, code=kind))
        return out

    def _close_texts(self) -> list[BaseEvent]:
        out: list[BaseEvent] = [event for seq in sorted(self._thinking) for event in self._thought(seq)]
        out += [TextMessageEndEvent(message_id=self._id(seq)) for seq in sorted(self._open)]
        self._open.clear()
        return out

    def _close_step(self) -> list[BaseEvent]:
        if self._step is None:
            return []
        step, self._step = self._step, None
        return [StepFinishedEvent(step_name=step)]

    def _id(self, seq: int, part: str = "") -> str:
        return f"{self.run_id}-{seq}-{part}" if part else f"{self.run_id}-{seq}"


def _interrupt(shown: Mapping[str, Any]) -> Interrupt:
    """An interrupt as the API shows it (id, address, kind, info) as AG-UI's: its kind the reason, what it asks the
    message (an approval's comments, else its info as text), the tool call it concerns (the one call an approval
    is of, or the tool that asked), and its kind, address and info as they are in the ``batonflow`` metadata."""
    info, kind = shown.get("info"), str(shown.get("kind") or "question")
    tasks = info.get("tasks") if kind == "approval" and isinstance(info, dict) else None
    if isinstance(tasks, list) and tasks:
        message = "; ".join(str(task.get("comment") or task.get("tool_name") or "") for task in tasks)
        call = tasks[0].get("call_id") if len(tasks) == 1 else None
    else:
        message = info if isinstance(info, str) else json.dumps(info, ensure_ascii=False)
        call = _asking_call(str(shown.get("address") or ""))
    return Interrupt(
        id=str(shown["id"]),
        reason=kind,
        message=message,
        tool_call_id=call if isinstance(call, str) and call else None,
        metadata={"batonflow": {"kind": kind, "address": shown.get("address"), "info": info}},
    )


def _asking_call(address: str) -> str | None:
    """The call id of the tool that interrupted, the last ``tool:<name>:<call id>`` of ``address``."""
    last = address.rpartition(";")[2].split(":")
    return last[2] if len(last) == 3 and last[0] == "tool" else None


def _usage(outcome: Mapping[str, Any]) -> list[TokenUsage] | None:
    usage = outcome.get("usage") or {}
    if not usage.get("total_tokens"):
        return None
    return [
        TokenUsage(
            input_tokens=usage.get("prompt_tokens", 0),
            output_tokens=usage.get("completion_tokens", 0),
            total_tokens=usage["total_tokens"],
        )
    ]


def json_patch(before: Any, after: Any, path: str = "") -> list[dict[str, Any]]:
    """The RFC 6902 JSON Patch that turns ``before`` into ``after`` (both made of JSON types): objects compared key
    by key, anything else replaced whole when it differs."""
    if isinstance(before, dict) and isinstance(after, dict):
        patch: list[dict[str, Any]] = []
        for key in before:
            if key not in after:
                patch.append({"op": "remove", "path": f"{path}/{_pointer(key)}"})
        for key, value in after.items():
            where = f"{path}/{_pointer(key)}"
            if key not in before:
                patch.append({"op": "add", "path": where, "value": value})
            else:
                patch += json_patch(before[key], value, where)
        return patch
    if before == after and type(before) is type(after):
        return []
    return [{"op": "replace", "path": path, "value": after}]


def _pointer(key: str) -> str:
    """A key as a JSON Pointer segment (RFC 6901): ``~`` as ``~0``, ``/`` as ``~1``."""
    return str(key).replace("~", "~0").replace("/", "~1")

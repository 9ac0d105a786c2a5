"""A batonflow run as A2A task updates, and an A2A answer as the targets of a resume: the pure translation, with no
I/O, between a run's frames (``message_start``, ``delta``, ``message``, ``error``, then the segment's ``end``) and
the ``a2a-sdk`` package's own ``TaskStatusUpdateEvent``/``TaskArtifactUpdateEvent``.

What maps to what: an assistant's text is an artifact of the task (``answer-<seq>``), each streamed chunk appended
to it; the run's end is the task's status: ``completed`` with the answer, ``input-required`` with what the run's
interrupts ask (a text part) and the interrupts themselves (a data part, ``{"batonflow": {"interrupts": [...]}}``),
``canceled``, or ``failed`` with the error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from a2a.helpers.proto_helpers import get_data_parts, get_text_parts, new_data_part, new_message, new_text_part
from a2a.types import Artifact, Message, Part, TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent

from ..distributed import jsonable

__all__ = ["A2ATranslator", "answer_targets", "asked_interrupts", "turn_text"]

_YES = {"yes", "y", "approve", "approved", "ok", "true"}
_NO = {"no", "n", "reject", "rejected", "deny", "false"}

Update = TaskStatusUpdateEvent | TaskArtifactUpdateEvent


class A2ATranslator:
    """The A2A updates of one run of task ``task_id`` in context ``context_id`` (a conversation, its session id).
    Feed it the run's frames in order (``frame``), then its end (``ended``); each call gives the updates to send."""

    def __init__(self, *, task_id: str, context_id: str) -> None:
        self.task_id = task_id
        self.context_id = context_id
        self._roles: dict[int, str] = {}  # the role of each streamed message, by its seq
        self._streamed: set[int] = set()  # the messages whose text went out as chunks
        self._error = ""

    def frame(self, event: str, data: Mapping[str, Any]) -> list[Update]:
        """The updates of one frame (``event`` its name, ``data`` its body): an assistant's text as its artifact."""
        if event == "message_start":
            self._roles[int(data["seq"])] = str(data.get("role", ""))
        elif event == "delta":
            seq, content = int(data["seq"]), str(data.get("content") or "")
            if content and self._roles.get(seq) == "assistant":
                first = seq not in self._streamed
                self._streamed.add(seq)
                return [self._artifact(seq, content, append=not first, last=False)]
        elif event == "message":
            message = data.get("message") or {}
            seq, content = int(data["seq"]), str(message.get("content") or "")
            if message.get("role") == "assistant" and content and seq not in self._streamed:
                return [self._artifact(seq, content, append=False, last=True)]
        elif event == "error":
            error = data.get("error") or {}
            self._error = f"{error.get('type') or 'Error'}: {error.get('message') or ''}"
        return []

    def ended(self, outcome: Mapping[str, Any]) -> TaskStatusUpdateEvent:
        """The task's status at the run's end (``outcome`` is the segment's ``SegmentOutcome.payload``)."""
        status = outcome.get("status")
        ids = {"session_id": self.context_id, "segment_id": outcome.get("segment_id")}
        if status == "interrupted":
            interrupts = [jsonable(dict(i)) for i in outcome.get("interrupts") or ()]
            ids |= {"checkpoint_id": self.context_id, "interrupt_ids": [i["id"] for i in interrupts]}
            parts = [new_text_part(asked(interrupts)), new_data_part({"batonflow": {"interrupts": interrupts}})]
            return self.status(TaskState.TASK_STATE_INPUT_REQUIRED, parts, ids)
        if status == "cancelled":
            return self.status(TaskState.TASK_STATE_CANCELED, [new_text_part("the run was cancelled")], ids)
        if status == "completed":
            return self.status(TaskState.TASK_STATE_COMPLETED, [new_text_part(str(outcome.get("text") or ""))], ids)
        error = self._error or str(outcome.get("error") or "Error: the run failed")
        return self.status(TaskState.TASK_STATE_FAILED, [new_text_part(error)], ids)

    def status(self, state: int, parts: list[Part], ids: Mapping[str, Any] | None = None) -> TaskStatusUpdateEvent:
        """A status update of the task to ``state``, its message of ``parts`` (and ``ids``, batonflow's names of
        the run, in the update's metadata)."""
        message = new_message(parts, context_id=self.context_id, task_id=self.task_id)
        return TaskStatusUpdateEvent(
            task_id=self.task_id,
            context_id=self.context_id,
            status=TaskStatus(state=state, message=message),  # type: ignore[arg-type]
            metadata={"batonflow": dict(ids or {})},
        )

    def _artifact(self, seq: int, text: str, *, append: bool, last: bool) -> TaskArtifactUpdateEvent:
        return TaskArtifactUpdateEvent(
            task_id=self.task_id,
            context_id=self.context_id,
            artifact=Artifact(artifact_id=f"answer-{seq}", name="answer", parts=[new_text_part(text)]),
            append=append,
            last_chunk=last,
        )


def asked(interrupts: Sequence[Mapping[str, Any]]) -> str:
    """What the run's interrupts ask, as text: each question, or each call an approval waits on."""
    lines: list[str] = []
    for interrupt in interrupts:
        info = interrupt.get("info")
        tasks = info.get("tasks") if interrupt.get("kind") == "approval" and isinstance(info, dict) else None
        if isinstance(tasks, list):
            for task in tasks:
                call = f"{task.get('tool_name')}({json.dumps(task.get('arguments'), ensure_ascii=False)})"
                comment = f" - {task['comment']}" if task.get("comment") else ""
                lines.append(f"approve {call}{comment}? Answer yes or no.")
        else:
            lines.append(info if isinstance(info, str) else json.dumps(info, ensure_ascii=False))
    return "\n".join(lines)


def asked_interrupts(message: Message | None) -> list[dict[str, Any]]:
    """The interrupts an ``input-required`` status message names (its ``batonflow`` data part)."""
    for data in get_data_parts(message.parts) if message is not None else ():
        found = data.get("batonflow", {}).get("interrupts") if isinstance(data, dict) else None
        if isinstance(found, list):
            return [i for i in found if isinstance(i, dict) and isinstance(i.get("id"), str)]
    return []


def answer_targets(message: Message, interrupts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The targets of a resume from the follow-up ``message`` of an ``input-required`` task: a data part whose keys
    are interrupt ids is the targets as they are, another data part the answer to each interrupt; else its text
    is: the answer to a question, and to an approval ``yes`` (``"approve"``) or ``no`` (``"reject"``). Empty when
    the message has neither."""
    for data in get_data_parts(message.parts):
        if isinstance(data, dict) and data and set(data) <= {i["id"] for i in interrupts}:
            return dict(data)
        return {i["id"]: data for i in interrupts}
    text = "\n".join(get_text_parts(message.parts)).strip()
    if not text:
        return {}
    return {i["id"]: _approval(text) if i.get("kind") == "approval" else text for i in interrupts}


def _approval(text: str) -> str:
    word = text.strip().strip(".!").lower()
    return "approve" if word in _YES else "reject" if word in _NO else text


def turn_text(message: Message) -> str:
    """A new turn's text: the message's text parts, then its data parts as JSON, one a line."""
    said = [*get_text_parts(message.parts), *(json.dumps(d, ensure_ascii=False) for d in get_data_parts(message.parts))]
    return "\n".join(part for part in said if part)

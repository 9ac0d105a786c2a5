"""What an MCP client is asked when a batonflow run waits, and how its answers resume the run.

A run that stops for a person (a human approval of tool calls, a question a tool asked with ``ctx.ask``) is one
MCP elicitation per interrupt: an approval asks for a ``decision`` (``approve`` or ``reject``) and an optional
``comment``, a question for an ``answer`` (text; JSON when it parses as JSON). The client's answer becomes the
interrupt's resume target; a declined approval is its rejection, while a declined question or a cancelled
elicitation leaves the run waiting, resumable later with the ``resume`` tool.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..adk import InterruptCtx, RunResult
from ..agents import HITLPending
from ..distributed import jsonable

__all__ = [
    "ElicitAnswer",
    "elicitation_of",
    "interrupt_entries",
    "is_approval",
    "parse_answer",
    "root_causes",
    "target_of",
    "waiting_text",
]

ElicitAnswer = tuple[str, Mapping[str, Any] | None]
"""An elicitation's outcome: its action (``accept``, ``decline``, ``cancel``) and the content accepted."""

_APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {
            "type": "string",
            "title": "Decision",
            "enum": ["approve", "reject"],
            "description": "approve runs the calls; reject refuses them",
        },
        "comment": {"type": "string", "title": "Comment", "description": "why (shown to the agent)"},
    },
    "required": ["decision"],
}
_QUESTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string", "title": "Answer", "description": "the answer (JSON or text)"}},
    "required": ["answer"],
}


def root_causes(result: RunResult) -> list[InterruptCtx]:
    """The interrupts a resume answers: the root causes of the run's interrupt."""
    return [cause for cause in result.interrupt_contexts if cause.is_root_cause]


def is_approval(cause: InterruptCtx) -> bool:
    return isinstance(cause.info, HITLPending)


def elicitation_of(agent: str, cause: InterruptCtx) -> tuple[str, dict[str, Any]]:
    """The message and requested schema of the elicitation that asks for ``cause``'s answer."""
    if isinstance(cause.info, HITLPending):
        calls = ", ".join(f"{task.tool_name}({task.arguments})" for task in cause.info.tasks)
        return f"{agent} asks for approval: {cause.info.summary} [{calls}]", _APPROVAL_SCHEMA
    info = cause.info if isinstance(cause.info, str) else json.dumps(jsonable(cause.info), ensure_ascii=False)
    return f"{agent} asks: {info}", _QUESTION_SCHEMA


def target_of(cause: InterruptCtx, answer: ElicitAnswer) -> tuple[bool, Any]:
    """Whether ``answer`` answers ``cause``, and the resume target it makes: an approval's decision (a decline is a
    rejection), a question's answer (parsed when it is JSON). A cancel, or a declined question, answers nothing."""
    action, content = answer
    content = content or {}
    if isinstance(cause.info, HITLPending):
        if action == "decline":
            return True, "reject"
        if action != "accept":
            return False, None
        decision = str(content.get("decision", "approve"))
        comment = content.get("comment")
        if comment:
            return True, {"action": decision, "comment": str(comment)}
        return True, decision
    if action != "accept" or "answer" not in content:
        return False, None
    return True, parse_answer(content["answer"])


def parse_answer(value: Any) -> Any:
    """A question's answer: the JSON a text holds, else the text itself."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def waiting_text(agent: str, reference: Mapping[str, str], causes: list[InterruptCtx]) -> str:
    """The text of a result that waits: what was asked, and how to answer it with the ``resume`` tool."""
    asked = "; ".join(f"{cause.id}: {elicitation_of(agent, cause)[0]}" for cause in causes)
    where = ", ".join(f"{key} {value!r}" for key, value in reference.items())
    example = json.dumps(dict(reference) | {"answers": {cause.id: "..." for cause in causes}})
    return f"{agent} is waiting for an answer ({where}); interrupts: {asked}. Answer with the resume tool: {example}"


def interrupt_entries(causes: list[InterruptCtx]) -> list[dict[str, Any]]:
    """The interrupts as the structured content names them: id, kind, address, info."""
    return [
        {
            "id": cause.id,
            "kind": "approval" if is_approval(cause) else "question",
            "address": cause.address,
            "info": jsonable(cause.info),
        }
        for cause in causes
    ]

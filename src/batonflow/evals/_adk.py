"""Google ADK's eval sets (``.evalset.json``) as batonflow's: each ``eval_cases[]`` entry a case, each invocation of
its ``conversation`` a turn.

ADK's pydantic models write snake_case and read camelCase too (``eval_set_id`` or ``evalSetId``), so both are read.
A turn's ``intermediate_data.tool_uses`` (or the function calls of its ``invocation_events``) become an ``exact``
trajectory with every argument given, as ADK's ``tool_trajectory_avg_score`` compares them; its
``final_response`` becomes a ``similar`` check at ADK's default ``response_match_score`` threshold (ROUGE-1 F1
0.8); rubrics become the judge's rubrics; ``session_input.state`` the session values. What ADK's models allow
beyond these (timestamps, app details) is left out, as ADK itself keeps it without reading it. A case with a
``conversation_scenario`` (a simulated user) cannot be imported: batonflow has no user simulator.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._load import check_unique_ids
from ._set import SIMILAR_THRESHOLD, AnswerCheck, EvalCase, EvalSet, EvalSetError, ToolUse, Trajectory, Turn

__all__ = ["from_adk"]


def _get(data: Mapping[str, Any], snake: str, default: Any = None) -> Any:
    """``data``'s field ``snake``, written so or in camelCase."""
    if snake in data:
        return data[snake]
    head, *rest = snake.split("_")
    return data.get(head + "".join(part.title() for part in rest), default)


def from_adk(data: Mapping[str, Any], *, source: str = "eval set", name: str = "") -> EvalSet:
    """The eval set an ADK eval set file's JSON holds."""
    set_name = _get(data, "eval_set_id") or _get(data, "name") or name or source
    if not isinstance(set_name, str):
        raise EvalSetError(f"expected a text, got {type(set_name).__name__}", path=f"{source}, eval_set_id")
    items = _get(data, "eval_cases")
    if not isinstance(items, list) or not items:
        raise EvalSetError(f"expected a non-empty list of eval cases, got {_kind(items)}", path=f"{source}, eval_cases")
    cases = tuple(_case(item, f"{source}, eval_cases[{i}]") for i, item in enumerate(items))
    check_unique_ids(cases, source)
    description = _get(data, "description") or ""
    return EvalSet(name=set_name, cases=cases, description=description if isinstance(description, str) else "")


def _case(data: Any, path: str) -> EvalCase:
    if not isinstance(data, Mapping):
        raise EvalSetError(f"expected an eval case (a mapping), got {_kind(data)}", path=path)
    case_id = _get(data, "eval_id")
    if not isinstance(case_id, str) or not case_id:
        raise EvalSetError(f"expected eval_id, a non-empty text, got {_kind(case_id)}", path=path)
    where = f"case {case_id!r}"
    if _get(data, "conversation_scenario") is not None:
        raise EvalSetError(
            "expected a conversation (batonflow replays given user turns), got a conversation_scenario (ADK's "
            "simulated user, which batonflow does not have)",
            path=where,
        )
    conversation = _get(data, "conversation")
    if not isinstance(conversation, list) or not conversation:
        raise EvalSetError(
            f"expected a non-empty conversation, got {_kind(conversation)}", path=f"{where}, conversation"
        )
    turns = [_turn(item, f"{where}, conversation[{i}]") for i, item in enumerate(conversation)]
    case_rubrics = _rubrics(_get(data, "rubrics"), f"{where}, rubrics")
    if case_rubrics:  # the case's rubrics apply to every invocation in ADK; here they grade its last answer
        last = turns[-1]
        turns[-1] = Turn(
            input=last.input, trajectory=last.trajectory, answer=last.answer, rubrics=(*last.rubrics, *case_rubrics)
        )
    session = _get(data, "session_input") or {}
    state = _get(session, "state", {}) if isinstance(session, Mapping) else None
    if not isinstance(state, Mapping):
        raise EvalSetError(f"expected a mapping, got {_kind(state)}", path=f"{where}, session_input.state")
    return EvalCase(id=case_id, turns=tuple(turns), session_values=dict(state))


def _turn(data: Any, path: str) -> Turn:
    if not isinstance(data, Mapping):
        raise EvalSetError(f"expected an invocation (a mapping), got {_kind(data)}", path=path)
    text = _text_of(_get(data, "user_content"), f"{path}.user_content")
    if not text:
        raise EvalSetError("expected user_content with text parts, got no text", path=f"{path}.user_content")
    final = _get(data, "final_response")
    expected = _text_of(final, f"{path}.final_response") if final is not None else ""
    answer = (AnswerCheck(kind="similar", value=expected, threshold=SIMILAR_THRESHOLD),) if expected else ()
    calls = _tool_uses(_get(data, "intermediate_data"), f"{path}.intermediate_data")
    return Turn(
        input=text,
        trajectory=Trajectory(mode="exact", tools=calls) if calls is not None else None,
        answer=answer,
        rubrics=_rubrics(_get(data, "rubrics"), f"{path}.rubrics"),
    )


def _text_of(content: Any, path: str) -> str:
    """The text parts of an ADK ``Content``, joined by newlines."""
    if not isinstance(content, Mapping):
        raise EvalSetError(f"expected a content (a mapping with parts), got {_kind(content)}", path=path)
    parts = _get(content, "parts", [])
    if not isinstance(parts, list):
        raise EvalSetError(f"expected a list of parts, got {_kind(parts)}", path=f"{path}.parts")
    texts = [p["text"] for p in parts if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
    return "\n".join(texts)


def _tool_uses(data: Any, path: str) -> tuple[ToolUse, ...] | None:
    """The expected calls of an ``intermediate_data``; None when it says nothing of them."""
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise EvalSetError(f"expected a mapping, got {_kind(data)}", path=path)
    events = _get(data, "invocation_events")
    if events is not None:
        calls = [
            part.get("function_call") or part.get("functionCall")
            for event in (events if isinstance(events, list) else [])
            if isinstance(event, Mapping) and isinstance(event.get("content"), Mapping)
            for part in event["content"].get("parts") or []
            if isinstance(part, Mapping)
        ]
        uses = [c for c in calls if c]
    else:
        uses = _get(data, "tool_uses", [])
    if not isinstance(uses, list):
        raise EvalSetError(f"expected a list of tool uses, got {_kind(uses)}", path=f"{path}.tool_uses")
    found: list[ToolUse] = []
    for i, use in enumerate(uses):
        where = f"{path}.tool_uses[{i}]"
        if not isinstance(use, Mapping) or not isinstance(use.get("name"), str) or not use["name"]:
            raise EvalSetError(f"expected a function call with a name, got {_kind(use)}", path=where)
        args = use.get("args") or {}
        if not isinstance(args, Mapping):
            raise EvalSetError(f"expected args, a mapping, got {_kind(args)}", path=f"{where}.args")
        found.append(ToolUse(name=use["name"], args=dict(args)))
    return tuple(found)


def _rubrics(data: Any, path: str) -> tuple[str, ...]:
    """The texts of ADK ``Rubric``s (``rubric_content.text_property``)."""
    if data is None:
        return ()
    if not isinstance(data, list):
        raise EvalSetError(f"expected a list of rubrics, got {_kind(data)}", path=path)
    texts: list[str] = []
    for i, rubric in enumerate(data):
        content = _get(rubric, "rubric_content") if isinstance(rubric, Mapping) else None
        text = _get(content, "text_property") if isinstance(content, Mapping) else None
        if not isinstance(text, str) or not text:
            raise EvalSetError(
                f"expected rubric_content.text_property, a text, got {_kind(rubric)}", path=f"{path}[{i}]"
            )
        texts.append(text)
    return tuple(texts)


def _kind(value: Any) -> str:
    if isinstance(value, list | dict) and not value:
        return f"an empty {type(value).__name__}"
    return "nothing" if value is None else type(value).__name__

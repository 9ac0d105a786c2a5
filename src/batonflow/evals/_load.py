"""Reading eval sets: YAML (``yaml.safe_load``) or JSON, every field checked, and Google ADK's ``.evalset.json``.

An eval set file is input from a person: an unknown field or a value of the wrong type is an ``EvalSetError`` that
names where it is (the case, the turn, the field), what was expected and what was found, before any case runs. A
case is ``input`` with its expectations, or ``turns``, a list of them, run in one session.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import yaml

from ._set import (
    CHECK_KINDS,
    INTERRUPT_POLICIES,
    SIMILAR_THRESHOLD,
    TRAJECTORY_MODES,
    AnswerCheck,
    CheckKind,
    EvalCase,
    EvalSet,
    EvalSetError,
    InterruptPolicy,
    RunnerOptions,
    ToolUse,
    Trajectory,
    TrajectoryMode,
    Turn,
)

__all__ = ["MAX_EVAL_SET_CHARS", "load_eval_set", "parse_eval_set"]

MAX_EVAL_SET_CHARS = 10_000_000
"""The longest eval set file read, in characters."""

_SET_FIELDS = {"name", "description", "runner", "cases"}
_RUNNER_FIELDS = {"interrupts", "skip_transfer_messages"}
_TURN_FIELDS = {"input", "trajectory", "answer", "rubrics"}
_CASE_FIELDS = {"id", "description", "session_values", "turns"} | _TURN_FIELDS
_CHECK_OPTIONS = {"threshold", "ignore_case"}


def load_eval_set(path: str | Path, *, max_chars: int = MAX_EVAL_SET_CHARS) -> EvalSet:
    """The eval set in the file ``path``: YAML (``.yaml``, ``.yml``) or JSON; a Google ADK eval set (its
    ``eval_set_id`` and ``eval_cases``) is imported. Its name defaults to the file's name; a file of more than
    ``max_chars`` characters is refused."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as error:
        raise EvalSetError(
            f"expected a readable eval set file, got {error.strerror or error}", path=str(path)
        ) from None
    if size > max_chars * 4:  # UTF-8 takes at most 4 bytes a character
        raise EvalSetError(f"expected at most {max_chars:,} characters, got {size:,} bytes", path=str(path))
    text = path.read_text(encoding="utf-8")
    kind = "json" if path.suffix == ".json" else "yaml"
    default_name = path.name.removesuffix(".json").removesuffix(".evalset").removesuffix(path.suffix)
    return parse_eval_set(text, format=kind, source=str(path), name=default_name, max_chars=max_chars)


def parse_eval_set(
    text: str, *, format: str = "yaml", source: str = "eval set", name: str = "", max_chars: int = MAX_EVAL_SET_CHARS
) -> EvalSet:
    """The eval set ``text`` holds, in ``format`` ``yaml`` (which reads JSON too) or ``json``. ``source`` names it
    in errors; ``name`` is its name when the text gives none; a text of more than ``max_chars`` characters is
    refused before it is parsed."""
    if len(text) > max_chars:
        raise EvalSetError(f"expected at most {max_chars:,} characters, got {len(text):,}", path=source)
    if format not in ("yaml", "json"):
        raise EvalSetError(f"format: expected 'yaml' or 'json', got {format!r}", path=source)
    try:
        data = json.loads(text) if format == "json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as error:
        detail = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise EvalSetError(f"expected {format.upper()}, got text that does not parse ({detail})", path=source) from None
    if isinstance(data, Mapping) and ("eval_cases" in data or "evalCases" in data):
        from ._adk import from_adk

        return from_adk(data, source=source, name=name)
    return _eval_set(data, source, name)


def _eval_set(data: Any, source: str, default_name: str) -> EvalSet:
    fields = _mapping(data, source, allowed=_SET_FIELDS, required={"cases"})
    name = _text(fields.get("name", default_name or source), f"{source}, name")
    cases_data = fields["cases"]
    if not isinstance(cases_data, list) or not cases_data:
        raise EvalSetError(f"expected a non-empty list of cases, got {_found(cases_data)}", path=f"{source}, cases")
    cases = tuple(_case(item, f"{source}, cases[{i}]") for i, item in enumerate(cases_data))
    check_unique_ids(cases, source)
    return EvalSet(
        name=name,
        cases=cases,
        runner=_runner(fields.get("runner", {}), f"{source}, runner"),
        description=_text(fields.get("description", ""), f"{source}, description", empty=True),
    )


def check_unique_ids(cases: tuple[EvalCase, ...], source: str) -> None:
    """An ``EvalSetError`` for the first case id given twice."""
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise EvalSetError(f"expected unique case ids, got {case.id!r} twice", path=f"{source}, cases")
        seen.add(case.id)


def _runner(data: Any, path: str) -> RunnerOptions:
    fields = _mapping(data, path, allowed=_RUNNER_FIELDS)
    interrupts = fields.get("interrupts", "stop")
    if interrupts not in INTERRUPT_POLICIES:
        raise EvalSetError(
            f"expected one of {', '.join(INTERRUPT_POLICIES)}, got {_found(interrupts)}", path=f"{path}.interrupts"
        )
    skip = _flag(fields.get("skip_transfer_messages", False), f"{path}.skip_transfer_messages")
    return RunnerOptions(interrupts=cast(InterruptPolicy, interrupts), skip_transfer_messages=skip)


def _case(data: Any, path: str) -> EvalCase:
    fields = _mapping(data, path, allowed=_CASE_FIELDS, required={"id"})
    case_id = _text(fields["id"], f"{path}.id")
    where = f"case {case_id!r}"
    values = fields.get("session_values", {})
    if not isinstance(values, Mapping) or not all(isinstance(k, str) for k in values):
        raise EvalSetError(
            f"expected a mapping of names to values, got {_found(values)}", path=f"{where}, session_values"
        )
    single = _TURN_FIELDS & fields.keys()
    if "turns" in fields:
        if single:
            raise EvalSetError(
                f"expected either turns or {', '.join(sorted(_TURN_FIELDS))} at the case's top, got both "
                f"(turns and {', '.join(sorted(single))})",
                path=where,
            )
        items = fields["turns"]
        if not isinstance(items, list) or not items:
            raise EvalSetError(f"expected a non-empty list of turns, got {_found(items)}", path=f"{where}, turns")
        turns = tuple(turn(item, f"{where}, turn {i + 1}") for i, item in enumerate(items))
    elif "input" in fields:
        turns = (turn({k: fields[k] for k in single}, where),)
    else:
        raise EvalSetError("expected input (one turn) or turns, got neither", path=where)
    description = _text(fields.get("description", ""), f"{where}, description", empty=True)
    return EvalCase(id=case_id, turns=turns, session_values=dict(values), description=description)


def turn(data: Any, path: str) -> Turn:
    """A turn from its fields (``input``, ``trajectory``, ``answer``, ``rubrics``)."""
    fields = _mapping(data, path, allowed=_TURN_FIELDS, required={"input"})
    trajectory = fields.get("trajectory")
    answer = fields.get("answer", [])
    if isinstance(answer, Mapping):
        answer = [answer]  # one check
    if not isinstance(answer, list):
        raise EvalSetError(f"expected a list of checks, got {_found(answer)}", path=f"{path}, answer")
    rubrics = fields.get("rubrics", [])
    if isinstance(rubrics, str):
        rubrics = [rubrics]
    if not isinstance(rubrics, list):
        raise EvalSetError(f"expected a list of rubric texts, got {_found(rubrics)}", path=f"{path}, rubrics")
    return Turn(
        input=_text(fields["input"], f"{path}, input"),
        trajectory=None if trajectory is None else _trajectory(trajectory, f"{path}, trajectory"),
        answer=tuple(answer_check(item, f"{path}, answer[{i}]") for i, item in enumerate(answer)),
        rubrics=tuple(_text(r, f"{path}, rubrics[{i}]") for i, r in enumerate(rubrics)),
    )


def _trajectory(data: Any, path: str) -> Trajectory:
    if isinstance(data, list):
        data = {"mode": "exact", "tools": data}
    fields = _mapping(data, path, allowed={"mode", "tools"}, required={"tools"})
    mode = fields.get("mode", "exact")
    if mode not in TRAJECTORY_MODES:
        raise EvalSetError(f"expected one of {', '.join(TRAJECTORY_MODES)}, got {_found(mode)}", path=f"{path}.mode")
    tools = fields["tools"]
    if not isinstance(tools, list):
        raise EvalSetError(f"expected a list of tool calls, got {_found(tools)}", path=f"{path}.tools")
    uses = tuple(_tool_use(item, f"{path}.tools[{i}]") for i, item in enumerate(tools))
    return Trajectory(mode=cast(TrajectoryMode, mode), tools=uses)


def _tool_use(data: Any, path: str) -> ToolUse:
    if isinstance(data, str):
        return ToolUse(name=_text(data, path))
    fields = _mapping(data, path, allowed={"name", "args"}, required={"name"})
    args = fields.get("args", {})
    if not isinstance(args, Mapping) or not all(isinstance(k, str) for k in args):
        raise EvalSetError(f"expected a mapping of argument names to values, got {_found(args)}", path=f"{path}.args")
    return ToolUse(name=_text(fields["name"], f"{path}.name"), args=dict(args))


def answer_check(data: Any, path: str) -> AnswerCheck:
    """A check from its mapping: one of ``equals``, ``contains``, ``regex``, ``schema``, ``similar`` with its value,
    and the options ``threshold`` (``similar``) and ``ignore_case`` (``equals``, ``contains``, ``regex``)."""
    fields = _mapping(data, path, allowed=set(CHECK_KINDS) | _CHECK_OPTIONS)
    kinds = [k for k in CHECK_KINDS if k in fields]
    if len(kinds) != 1:
        found = f"{', '.join(kinds)}" if kinds else "none"
        raise EvalSetError(f"expected exactly one of {', '.join(CHECK_KINDS)}, got {found}", path=path)
    kind: CheckKind = kinds[0]
    value = fields[kind]
    where = f"{path}.{kind}"
    if kind == "schema":
        check_schema(value, where)
    else:
        value = _text(value, where, empty=kind == "equals")
    if kind == "regex":
        try:
            re.compile(value)
        except re.error as error:
            raise EvalSetError(f"expected a regular expression, got {value!r} ({error})", path=where) from None
    threshold = fields.get("threshold", SIMILAR_THRESHOLD)
    if "threshold" in fields and kind != "similar":
        raise EvalSetError(
            f"expected threshold with a similar check only, got it with {kind}", path=f"{path}.threshold"
        )
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 <= threshold <= 1:
        raise EvalSetError(f"expected a number from 0 to 1, got {_found(threshold)}", path=f"{path}.threshold")
    ignore_case = _flag(fields.get("ignore_case", False), f"{path}.ignore_case")
    if ignore_case and kind in ("schema", "similar"):
        raise EvalSetError(
            f"expected ignore_case with equals, contains or regex, got it with {kind}", path=f"{path}.ignore_case"
        )
    return AnswerCheck(kind=kind, value=value, threshold=float(threshold), ignore_case=ignore_case)


def check_schema(schema: Any, path: str) -> None:
    """An ``EvalSetError`` unless ``schema`` is a valid JSON schema (a mapping, or ``true`` / ``false``)."""
    if not isinstance(schema, Mapping | bool):
        raise EvalSetError(f"expected a JSON schema (a mapping), got {_found(schema)}", path=path)
    validator = schema_validator()
    try:
        validator.check_schema(schema)
    except Exception as error:  # jsonschema's SchemaError: its message says what is wrong
        message = getattr(error, "message", str(error))
        raise EvalSetError(f"expected a valid JSON schema, got one that is not ({message})", path=path) from None


def schema_validator() -> Any:
    """jsonschema's validator class for the newest draft (the ``evals`` extra)."""
    try:
        import jsonschema
    except ModuleNotFoundError as error:
        raise EvalSetError(
            "a schema check needs jsonschema, which is not installed: pip install 'batonflow[evals]'"
        ) from error
    return jsonschema.Draft202012Validator


# -- field readers ------------------------------------------------------------------------------------------------


def _mapping(
    data: Any, path: str, *, allowed: set[str], required: frozenset[str] | set[str] = frozenset()
) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise EvalSetError(f"expected a mapping, got {_found(data)}", path=path)
    for key in data:
        if not isinstance(key, str) or key not in allowed:
            raise EvalSetError(f"expected a field of {', '.join(sorted(allowed))}, got {key!r}", path=path)
    missing = sorted(required - data.keys())
    if missing:
        raise EvalSetError(f"expected the field {missing[0]!r}, got none", path=path)
    return dict(data)


def _text(value: Any, path: str, *, empty: bool = False) -> str:
    if not isinstance(value, str) or (not empty and not value):
        want = "a text" if empty else "a non-empty text"
        hint = " (quote numbers in YAML: '1042')" if isinstance(value, int | float) else ""
        raise EvalSetError(f"expected {want}, got {_found(value)}{hint}", path=path)
    return value


def _flag(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise EvalSetError(f"expected true or false, got {_found(value)}", path=path)
    return value


def _found(value: Any) -> str:
    """``value`` as an error shows it: its type, and itself when short."""
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:59] + "…"
    return f"{type(value).__name__} {shown}" if value is not None else "nothing"

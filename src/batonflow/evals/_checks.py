"""The deterministic checks: a turn's tool calls against its expected trajectory, its answer against each answer
check. Each gives a ``CheckResult`` whose reason says what was expected and what was found."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import ModelJSONError
from ..tools import parse_model_json
from ._load import schema_validator
from ._set import AnswerCheck, ToolUse, Trajectory

__all__ = ["CheckResult", "check_answer", "check_trajectory", "rouge1_f1"]


@dataclass(slots=True, frozen=True, kw_only=True)
class CheckResult:
    """The outcome of one check: ``name`` says which (``trajectory``, ``contains 'refund'``, ``rubric: …``),
    ``score`` is from 0 to 1 (1 or 0 for checks that pass or fail outright), ``reason`` why."""

    name: str
    passed: bool
    score: float
    reason: str


def _calls(uses: Sequence[ToolUse]) -> str:
    return ", ".join(map(str, uses)) if uses else "no tool calls"


def check_trajectory(expected: Trajectory, actual: Sequence[ToolUse]) -> CheckResult:
    """Whether ``actual`` (the turn's calls, in order) is what ``expected`` asks for, in its mode."""
    name = f"trajectory ({expected.mode})"
    if expected.mode == "exact":
        missing = _exact_mismatch(expected.tools, actual)
    elif expected.mode == "in_order":
        missing = _first_out_of_order(expected.tools, actual)
    else:
        missing = _first_unmatched(expected.tools, actual)
    if missing is None:
        return CheckResult(name=name, passed=True, score=1.0, reason=f"called {_calls(actual)}")
    reason, unmatched = missing
    # Every expected call made, and more (exact): the share of the calls that were expected.
    score = 1 - len(unmatched) / len(expected.tools) if unmatched else len(expected.tools) / len(actual)
    return CheckResult(name=name, passed=False, score=score, reason=f"{reason}; got {_calls(actual)}")


def _exact_mismatch(expected: Sequence[ToolUse], actual: Sequence[ToolUse]) -> tuple[str, list[ToolUse]] | None:
    for i, want in enumerate(expected):
        if i >= len(actual):
            return f"expected call {i + 1} to be {want}, got no call {i + 1}", list(expected[i:])
        if not want.matches(actual[i]):
            return f"expected call {i + 1} to be {want}, got {actual[i]}", list(expected[i:])
    if len(actual) > len(expected):
        return f"expected exactly {len(expected)} calls, got {len(actual)} (then {actual[len(expected)]})", []
    return None


def _first_out_of_order(expected: Sequence[ToolUse], actual: Sequence[ToolUse]) -> tuple[str, list[ToolUse]] | None:
    position = 0
    for i, want in enumerate(expected):
        while position < len(actual) and not want.matches(actual[position]):
            position += 1
        if position == len(actual):
            after = f" after {expected[i - 1]}" if i else ""
            return f"expected {want}{after}, in this order, got none", list(expected[i:])
        position += 1
    return None


def _first_unmatched(expected: Sequence[ToolUse], actual: Sequence[ToolUse]) -> tuple[str, list[ToolUse]] | None:
    free = list(actual)
    unmatched: list[ToolUse] = []
    for want in expected:
        found = next((j for j, got in enumerate(free) if want.matches(got)), None)
        if found is None:
            unmatched.append(want)
        else:
            del free[found]
    if unmatched:
        return f"expected {_calls(unmatched)} among the calls, in any order, got none of it", unmatched
    return None


def check_answer(check: AnswerCheck, answer: str) -> CheckResult:
    """Whether ``answer`` (the turn's final text) passes ``check``."""
    name = check.describe()
    if check.kind == "schema":
        return _check_schema(check, answer)
    if check.kind == "similar":
        score = rouge1_f1(answer, check.value)
        passed = score >= check.threshold
        relation = "≥" if passed else "<"
        return CheckResult(
            name=name, passed=passed, score=score, reason=f"ROUGE-1 F1 {score:.2f} {relation} {check.threshold:g}"
        )
    text, value = (answer.casefold(), check.value.casefold()) if check.ignore_case else (answer, check.value)
    if check.kind == "equals":
        passed = text.strip() == value.strip()
    elif check.kind == "contains":
        passed = value in text
    else:
        passed = re.search(check.value, answer, re.IGNORECASE if check.ignore_case else 0) is not None
    verb = {"equals": "equal to", "contains": "containing", "regex": "matching"}[check.kind]
    reason = f"expected an answer {verb} {check.value!r}, got {_shown(answer)}"
    return CheckResult(name=name, passed=passed, score=float(passed), reason="ok" if passed else reason)


def _check_schema(check: AnswerCheck, answer: str) -> CheckResult:
    name = check.describe()
    try:
        value = parse_model_json(answer.strip())
    except ModelJSONError as error:
        return CheckResult(name=name, passed=False, score=0.0, reason=f"expected a JSON answer, got {error}")
    invalid = next(iter(schema_validator()(check.value).iter_errors(value)), None)
    if invalid is None:
        return CheckResult(name=name, passed=True, score=1.0, reason="valid")
    where = "/".join(str(p) for p in invalid.absolute_path) or "the answer"
    return CheckResult(name=name, passed=False, score=0.0, reason=f"expected valid JSON, at {where}: {invalid.message}")


def _shown(text: str, limit: int = 120) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


_WORD = re.compile(r"\w+")


def rouge1_f1(candidate: str, reference: str) -> float:
    """ROUGE-1 F1 of ``candidate`` against ``reference``: the harmonic mean of the shares of words each has of the
    other, over lower-cased words (counted with repeats). 1 for equal texts; 0 when either has no words."""
    got, want = Counter(_WORD.findall(candidate.lower())), Counter(_WORD.findall(reference.lower()))
    overlap = sum((got & want).values())
    if not overlap:
        return 0.0
    precision, recall = overlap / sum(got.values()), overlap / sum(want.values())
    return 2 * precision * recall / (precision + recall)

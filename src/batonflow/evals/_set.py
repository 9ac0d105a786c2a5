"""What an eval set is: cases of one or more turns, each turn with the tool calls it should make, checks on its
answer and rubrics for a judge; plain dataclasses, built by ``_load`` from YAML, JSON or Google ADK's files."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ..errors import RunError, UserError

__all__ = [
    "AnswerCheck",
    "CheckKind",
    "EvalCase",
    "EvalSet",
    "EvalSetError",
    "InterruptPolicy",
    "JudgeError",
    "RunnerOptions",
    "ToolUse",
    "Trajectory",
    "TrajectoryMode",
    "Turn",
]

TrajectoryMode: TypeAlias = Literal["exact", "in_order", "subset"]
CheckKind: TypeAlias = Literal["equals", "contains", "regex", "schema", "similar"]
InterruptPolicy: TypeAlias = Literal["stop", "approve", "reject"]

TRAJECTORY_MODES: tuple[TrajectoryMode, ...] = ("exact", "in_order", "subset")
CHECK_KINDS: tuple[CheckKind, ...] = ("equals", "contains", "regex", "schema", "similar")
INTERRUPT_POLICIES: tuple[InterruptPolicy, ...] = ("stop", "approve", "reject")
SIMILAR_THRESHOLD = 0.8
"""The ROUGE-1 F1 a ``similar`` check needs by default: Google ADK's ``response_match_score`` default."""


class EvalSetError(UserError):
    """An eval set that cannot be run: an unknown field, a value of the wrong type, a regex that does not compile, a
    check that cannot apply. ``path`` is where (``case 'refund', turn 1, answer[0].regex``); the message says what
    was expected and what was found."""

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path


class JudgeError(RunError):
    """A judge that could not grade: its model failed, or it answered something other than a verdict."""


@dataclass(slots=True, frozen=True, kw_only=True)
class ToolUse:
    """A tool call: its ``name`` and ``args``. Expected, ``args`` are a subset the actual call must hold (the
    arguments not named may be anything); actual, they are all the call's arguments."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)

    def matches(self, actual: ToolUse) -> bool:
        """Whether ``actual`` is a call of this tool with at least these arguments, equal."""
        return self.name == actual.name and all(k in actual.args and actual.args[k] == v for k, v in self.args.items())

    def __str__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.args.items())
        return f"{self.name}({args})"


@dataclass(slots=True, frozen=True, kw_only=True)
class Trajectory:
    """The tool calls a turn should make. ``exact``: these and no others, in this order; ``in_order``: these in
    this order, others may come between; ``subset``: these in any order, others may come too."""

    mode: TrajectoryMode = "exact"
    tools: tuple[ToolUse, ...] = ()


@dataclass(slots=True, frozen=True, kw_only=True)
class AnswerCheck:
    """A check of a turn's answer. ``equals`` and ``contains`` compare text (``ignore_case`` to fold case),
    ``regex`` searches for a pattern, ``schema`` reads the answer as JSON and validates it against a JSON schema
    (``value``), ``similar`` asks for a ROUGE-1 F1 of at least ``threshold`` with the text ``value``."""

    kind: CheckKind
    value: Any
    threshold: float = SIMILAR_THRESHOLD
    ignore_case: bool = False

    def describe(self) -> str:
        """The check in a few words, for reports."""
        if self.kind == "schema":
            return "schema"
        shown = str(self.value)
        shown = shown if len(shown) <= 40 else shown[:39] + "…"
        extra = f" ≥ {self.threshold:g}" if self.kind == "similar" else ""
        return f"{self.kind} {shown!r}{extra}"


@dataclass(slots=True, frozen=True, kw_only=True)
class Turn:
    """One user message of a case and what is expected of the agent's answer to it (every part optional)."""

    input: str
    trajectory: Trajectory | None = None
    answer: tuple[AnswerCheck, ...] = ()
    rubrics: tuple[str, ...] = ()


@dataclass(slots=True, frozen=True, kw_only=True)
class EvalCase:
    """One conversation: ``turns`` run in order in one session, which starts with ``session_values``."""

    id: str
    turns: tuple[Turn, ...]
    session_values: dict[str, Any] = field(default_factory=dict)
    description: str = ""

    @property
    def rubrics(self) -> tuple[str, ...]:
        """Every rubric of the case's turns (a judge is needed when there is any)."""
        return tuple(r for turn in self.turns for r in turn.rubrics)


@dataclass(slots=True, frozen=True, kw_only=True)
class RunnerOptions:
    """How each case runs: ``interrupts`` says what a run that stops for a person gets (``stop`` ends the turn
    there, ``approve`` and ``reject`` decide every pending approval so); ``skip_transfer_messages`` is the
    Runner's option of that name."""

    interrupts: InterruptPolicy = "stop"
    skip_transfer_messages: bool = False


@dataclass(slots=True, frozen=True, kw_only=True)
class EvalSet:
    """A named list of cases, with the options they run with. Case ids are unique."""

    name: str
    cases: tuple[EvalCase, ...]
    runner: RunnerOptions = field(default_factory=RunnerOptions)
    description: str = ""

    def case(self, case_id: str) -> EvalCase:
        """The case ``case_id``; an ``EvalSetError`` naming the ids there are when there is none."""
        for case in self.cases:
            if case.id == case_id:
                return case
        raise EvalSetError(f"expected a case id of {[c.id for c in self.cases]}, got {case_id!r}", path=self.name)

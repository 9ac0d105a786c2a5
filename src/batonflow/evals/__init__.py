"""Evaluation: score agents on eval sets (``batonflow eval``, and this API).

An eval set (``load_eval_set``: YAML, JSON, or Google ADK's ``.evalset.json``) lists cases; a case is one or more
turns, each with the tool calls it should make (a ``Trajectory``: ``exact``, ``in_order`` or ``subset``), checks on
its answer (``equals``, ``contains``, ``regex``, a JSON ``schema``, ``similar`` by ROUGE-1) and rubrics an
``LLMJudge`` grades on any chat model. ``evaluate`` runs the cases a few at a time on an agent (or a factory that
makes one per case) and gives an ``EvalReport``: a terminal table, JSON, a self-contained HTML page; ``compare``
sets two reports side by side. ``assert_eval_set`` and ``assert_case`` run them in a test. Bad input is an
``EvalSetError`` naming the case and field; a judge that cannot grade is a ``JudgeError``.

It needs the ``evals`` extra (jsonschema) for schema checks only.
"""

from ._checks import CheckResult as CheckResult
from ._checks import check_answer as check_answer
from ._checks import check_trajectory as check_trajectory
from ._checks import rouge1_f1 as rouge1_f1
from ._judge import JudgeVerdict as JudgeVerdict
from ._judge import LLMJudge as LLMJudge
from ._judge import parse_verdict as parse_verdict
from ._load import MAX_EVAL_SET_CHARS as MAX_EVAL_SET_CHARS
from ._load import load_eval_set as load_eval_set
from ._load import parse_eval_set as parse_eval_set
from ._report import CaseResult as CaseResult
from ._report import Comparison as Comparison
from ._report import ComparisonRow as ComparisonRow
from ._report import EvalReport as EvalReport
from ._report import TurnResult as TurnResult
from ._report import compare as compare
from ._run import AgentSource as AgentSource
from ._run import EvalFailure as EvalFailure
from ._run import Progress as Progress
from ._run import assert_case as assert_case
from ._run import assert_eval_set as assert_eval_set
from ._run import evaluate as evaluate
from ._run import run_case as run_case
from ._run import tool_uses as tool_uses
from ._set import AnswerCheck as AnswerCheck
from ._set import EvalCase as EvalCase
from ._set import EvalSet as EvalSet
from ._set import EvalSetError as EvalSetError
from ._set import JudgeError as JudgeError
from ._set import RunnerOptions as RunnerOptions
from ._set import ToolUse as ToolUse
from ._set import Trajectory as Trajectory
from ._set import Turn as Turn

__all__ = [
    "MAX_EVAL_SET_CHARS",
    "AgentSource",
    "AnswerCheck",
    "CaseResult",
    "CheckResult",
    "Comparison",
    "ComparisonRow",
    "EvalCase",
    "EvalFailure",
    "EvalReport",
    "EvalSet",
    "EvalSetError",
    "JudgeError",
    "JudgeVerdict",
    "LLMJudge",
    "Progress",
    "RunnerOptions",
    "ToolUse",
    "Trajectory",
    "TurnResult",
    "assert_case",
    "assert_eval_set",
    "check_answer",
    "check_trajectory",
    "compare",
    "evaluate",
    "load_eval_set",
    "parse_eval_set",
    "parse_verdict",
    "rouge1_f1",
    "run_case",
    "tool_uses",
]

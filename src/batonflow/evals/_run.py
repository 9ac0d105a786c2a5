"""Running an eval set: each case a conversation on a ``Runner`` (its turns in one session), a few at a time; the
tool calls in its events are its trajectory, its last message the answer; then the checks, and the judge for the
rubrics. ``assert_case`` and ``assert_eval_set`` do the same in a test and fail it with what went wrong."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeAlias, cast

from ..adk import Agent, AgentEvent, RunResult
from ..agents import HITL, ConversationRunner, HITLPending
from ..errors import ModelJSONError, UserError
from ..store import MemorySessionStore
from ..tools import parse_model_json
from ._checks import CheckResult, check_answer, check_trajectory
from ._judge import LLMJudge
from ._report import CaseResult, EvalReport, TurnResult
from ._set import EvalCase, EvalSet, EvalSetError, JudgeError, RunnerOptions, ToolUse, Turn

__all__ = ["AgentSource", "EvalFailure", "Progress", "assert_case", "assert_eval_set", "evaluate", "run_case"]

AgentSource: TypeAlias = Agent | Callable[[], Agent] | Callable[[], Awaitable[Agent]]
"""An agent (shared by every case: agents are definitions), or a function that makes a fresh one for each case
(for agents over state a case changes, such as a shop its tools write to)."""
Progress: TypeAlias = Callable[[CaseResult, int, int], None]
"""Called as each case ends: its result, how many cases have ended, and how many there are."""


class EvalFailure(AssertionError):
    """Cases that failed under ``assert_case`` / ``assert_eval_set``; ``report`` holds every result."""

    def __init__(self, message: str, report: EvalReport) -> None:
        super().__init__(message)
        self.report = report


def _is_agent(value: Any) -> bool:
    return callable(getattr(value, "run", None)) and isinstance(getattr(value, "name", None), str)


async def _agent_of(source: AgentSource) -> Agent:
    if _is_agent(source):
        return cast(Agent, source)
    if not callable(source):
        raise UserError(f"agent: expected an agent or a function that makes one, got {type(source).__qualname__}")
    made = source()
    if inspect.isawaitable(made):
        made = await made
    if not _is_agent(made):
        raise UserError(f"agent: expected the factory to make an agent, got {type(made).__qualname__}")
    return made


def check_judge(eval_set: EvalSet, judge: LLMJudge | None) -> None:
    """An ``EvalSetError`` when a case has rubrics and there is no judge to grade them."""
    if judge is None:
        graded = [c.id for c in eval_set.cases if c.rubrics]
        if graded:
            raise EvalSetError(
                "expected a judge for the rubrics (judge=LLMJudge(model), or --judge MODEL_URI), got none",
                path=f"{eval_set.name}, case {graded[0]!r}",
            )


async def evaluate(
    eval_set: EvalSet,
    agent: AgentSource,
    *,
    concurrency: int = 4,
    judge: LLMJudge | None = None,
    progress: Progress | None = None,
    target: str = "",
    options: RunnerOptions | None = None,
) -> EvalReport:
    """Run every case of ``eval_set`` on ``agent``, ``concurrency`` at a time, and grade them (rubrics by
    ``judge``). A run that fails fails its case, and the others go on. ``target`` labels the report (the agent's
    name by default); ``options`` replace the set's runner options (for a set imported from Google ADK, which has
    none)."""
    if type(concurrency) is not int or concurrency < 1:
        raise UserError(f"concurrency: expected a whole number of at least 1, got {concurrency!r}")
    check_judge(eval_set, judge)
    gate = asyncio.Semaphore(concurrency)
    results: list[CaseResult | None] = [None] * len(eval_set.cases)
    ended = 0

    async def one(index: int, case: EvalCase) -> None:
        nonlocal ended
        async with gate:
            results[index] = result = await run_case(case, agent, options=options or eval_set.runner, judge=judge)
        ended += 1
        if progress is not None:
            progress(result, ended, len(results))

    async with asyncio.TaskGroup() as group:
        for index, case in enumerate(eval_set.cases):
            group.create_task(one(index, case))
    label = target or await _label(agent)
    done = tuple(r for r in results if r is not None)
    return EvalReport(name=eval_set.name, target=label, results=done, judge=judge.model_name if judge else "")


async def _label(source: AgentSource) -> str:
    return str(source.name) if _is_agent(source) else getattr(source, "__qualname__", "agent")  # type: ignore[union-attr]


async def run_case(
    case: EvalCase,
    agent: AgentSource,
    *,
    options: RunnerOptions | None = None,
    judge: LLMJudge | None = None,
) -> CaseResult:
    """Run ``case``'s turns, in order, as one conversation on ``agent``, and grade each; a failed run is the
    result's ``error`` (the turns after it do not run)."""
    options = options or RunnerOptions()
    if judge is None and case.rubrics:
        raise EvalSetError("expected a judge for the rubrics, got none", path=f"case {case.id!r}")
    started = time.perf_counter()
    turns: list[TurnResult] = []
    try:
        runner = ConversationRunner(
            await _agent_of(agent),
            session_store=MemorySessionStore(),
            session_window=None,
            skip_transfer_messages=options.skip_transfer_messages,
        )
        for turn in case.turns:
            result, events = await _run_turn(runner, case, turn, options)
            turns.append(await _grade(turn, result, events, judge))
    except Exception as error:  # the agent's failure, of whatever type: the case's result says it
        seconds = time.perf_counter() - started
        return CaseResult(
            case_id=case.id, turns=tuple(turns), error=f"{type(error).__name__}: {error}", seconds=seconds
        )
    return CaseResult(case_id=case.id, turns=tuple(turns), seconds=time.perf_counter() - started)


async def _run_turn(
    runner: ConversationRunner, case: EvalCase, turn: Turn, options: RunnerOptions
) -> tuple[RunResult, list[AgentEvent]]:
    """The turn's last result and every event of it, its resumes included (approvals decided by ``options``)."""
    session_id = f"eval-{case.id}"
    values = case.session_values or None
    result = await runner.call(turn.input, session_id=session_id, session_values=values, metrics=False)
    events = list(result.events)
    while result.interrupted and options.interrupts != "stop":
        targets = _decisions(result, approve=options.interrupts == "approve")
        if not targets:  # a question only a person can answer: the turn ends here
            break
        result = await runner.call(session_id=session_id, targets=targets, session_values=values, metrics=False)
        events += result.events
    return result, events


def _decisions(result: RunResult, *, approve: bool) -> dict[str, Any]:
    """A decision for each call the run waits to have approved."""
    decision = HITL.approve("approved by the eval") if approve else HITL.reject("rejected by the eval")
    return {
        cause.id: {task.call_id: decision for task in cause.info.tasks}
        for cause in result.interrupt_contexts
        if cause.is_root_cause and isinstance(cause.info, HITLPending)
    }


def tool_uses(events: Sequence[AgentEvent]) -> tuple[ToolUse, ...]:
    """The tool calls the events' assistant messages make, in order (transfers among them)."""
    uses: list[ToolUse] = []
    for event in events:
        variant = event.message_output
        message = variant.peek_message() if variant is not None else None
        if message is None or message.role != "assistant":
            continue
        for call in message.tool_calls or ():
            try:
                args = parse_model_json(call.function.arguments or "{}")
            except ModelJSONError:
                args = {"": call.function.arguments}  # what the model wrote, kept for the report
            uses.append(ToolUse(name=call.function.name, args=args if isinstance(args, dict) else {"": args}))
    return tuple(uses)


async def _grade(turn: Turn, result: RunResult, events: list[AgentEvent], judge: LLMJudge | None) -> TurnResult:
    uses = tool_uses(events)
    answer = result.text
    checks: list[CheckResult] = []
    if turn.trajectory is not None:
        checks.append(check_trajectory(turn.trajectory, uses))
    checks += [check_answer(check, answer) for check in turn.answer]
    for rubric in turn.rubrics:
        assert judge is not None  # run_case checked
        checks.append(await _judged(judge, rubric, turn.input, answer))
    return TurnResult(
        input=turn.input, answer=answer, tool_uses=uses, checks=tuple(checks), interrupted=result.interrupted
    )


async def _judged(judge: LLMJudge, rubric: str, request: str, answer: str) -> CheckResult:
    name = f"rubric {rubric if len(rubric) <= 40 else rubric[:39] + '…'!r}"
    try:
        verdict = await judge.grade(rubric, request=request, answer=answer)
    except JudgeError as error:
        return CheckResult(name=name, passed=False, score=0.0, reason=f"JudgeError: {error}")
    return CheckResult(name=name, passed=verdict.passed, score=verdict.score, reason=verdict.reason)


# -- in tests -------------------------------------------------------------------------------------------------------


async def assert_eval_set(
    eval_set: EvalSet, agent: AgentSource, *, concurrency: int = 4, judge: LLMJudge | None = None
) -> EvalReport:
    """``evaluate``, raising ``EvalFailure`` (an ``AssertionError``) that lists each failed check when a case
    fails; the report when every case passed."""
    report = await evaluate(eval_set, agent, concurrency=concurrency, judge=judge)
    if not report.passed:
        raise EvalFailure(failure_text(report), report)
    return report


async def assert_case(
    case: EvalCase, agent: AgentSource, *, options: RunnerOptions | None = None, judge: LLMJudge | None = None
) -> CaseResult:
    """``run_case``, raising ``EvalFailure`` that lists each failed check when the case fails."""
    result = await run_case(case, agent, options=options, judge=judge)
    if not result.passed:
        report = EvalReport(name=case.id, target=await _label(agent), results=(result,))
        raise EvalFailure(failure_text(report), report)
    return result


def failure_text(report: EvalReport) -> str:
    """The failed cases of ``report``: each failed check's expected and found, and each turn's calls and answer."""
    lines = [report.summary()]
    for result in report.results:
        if result.passed:
            continue
        lines.append(f"case {result.case_id!r} failed:")
        lines += [f"  {line}" for line in result.failures()]
        for number, turn in enumerate(result.turns, 1):
            calls = ", ".join(map(str, turn.tool_uses)) or "no tool calls"
            lines.append(f"  turn {number} called: {calls}")
            lines.append(f"  turn {number} answered: {turn.answer!r}")
    return "\n".join(lines)

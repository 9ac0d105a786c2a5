"""Running eval sets: a case is a conversation on a Runner, its tool calls the trajectory and its last message the
answer; cases run a few at a time; a failed run fails its case only; approvals are decided as the set says; the
judge grades rubrics; the pytest helpers fail with what went wrong."""

from __future__ import annotations

import asyncio
import json

import pytest

from batonflow import ChatModelAgent, tool
from batonflow.agents import human_approval
from batonflow.errors import UserError
from batonflow.evals import (
    CaseResult,
    EvalFailure,
    EvalSetError,
    LLMJudge,
    RunnerOptions,
    ToolUse,
    assert_case,
    assert_eval_set,
    evaluate,
    parse_eval_set,
    run_case,
)
from batonflow.schema import Message, assistant
from batonflow.testing import FunctionModel, ScriptedModel, tool_calls
from batonflow.tools import ToolInfo

REFUNDED: list[int] = []


@tool
def refund(order_id: int) -> str:
    """Refund an order.

    Args:
        order_id: the order number
    """
    REFUNDED.append(order_id)
    return f"order {order_id} refunded"


def _refunds(messages: list[Message], tools: list[ToolInfo]) -> Message:
    """Calls refund with the number in the request, then says what the tool said."""
    result = next((m for m in reversed(messages) if m.role == "tool"), None)
    if result is not None and result.tool_call_id.startswith("call_") and messages[-1] is result:
        return assistant(f"Done: {result.content}.")
    request = next(m.content for m in reversed(messages) if m.role == "user")
    number = int("".join(c for c in request if c.isdigit()) or "0")
    return tool_calls(("refund", {"order_id": number}))


def refunder(*, approval: bool = False) -> ChatModelAgent:
    return ChatModelAgent(
        name="refunder",
        description="refunds orders",
        model=FunctionModel(_refunds),
        tools=[refund],
        middlewares=[human_approval(sensitive_tools=["refund"])] if approval else [],
    )


SET = """
name: refunds
cases:
  - id: one
    input: refund 1
    trajectory: [{name: refund, args: {order_id: 1}}]
    answer: [{equals: "Done: order 1 refunded."}]
  - id: two
    input: refund 2
    trajectory: {mode: subset, tools: [refund]}
    answer: [{contains: "order 2"}, {regex: "refunded\\\\.$"}]
"""


async def test_each_case_s_tool_calls_and_answer_are_checked() -> None:
    report = await evaluate(parse_eval_set(SET), refunder())

    assert (report.name, report.target, report.passed, report.pass_count) == ("refunds", "refunder", True, 2)
    one = report.result("one")
    (turn,) = one.turns
    assert turn.tool_uses == (ToolUse(name="refund", args={"order_id": 1}),)
    assert turn.answer == "Done: order 1 refunded."
    assert [(c.name, c.passed) for c in turn.checks] == [
        ("trajectory (exact)", True),
        ("equals 'Done: order 1 refunded.'", True),
    ]
    assert len(report.result("two").checks) == 3


async def test_a_wrong_answer_fails_its_case_with_the_reason() -> None:
    text = SET.replace('"Done: order 1 refunded."', '"Done: order 7 refunded."')

    report = await evaluate(parse_eval_set(text), refunder())

    assert (report.passed, report.pass_count) == (False, 1)
    assert report.result("one").failures() == [
        "turn 1: equals 'Done: order 7 refunded.': expected an answer equal to 'Done: order 7 refunded.', got 'Done: order 1 refunded.'"
    ]
    assert report.result("one").score == 0.5


async def test_cases_run_concurrently_up_to_the_limit() -> None:
    running, peak, gate = 0, 0, asyncio.Event()

    async def answer(messages: list[Message], tools: list[ToolInfo]) -> Message:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        if running == 3:
            gate.set()
        await gate.wait()  # the first cases wait until three run at once: a limit below three would hang here
        for _ in range(5):
            await asyncio.sleep(0)  # the others get their turn: a fourth would be counted
        running -= 1
        return assistant("ok")

    cases = "\n".join(f"  - {{id: c{i}, input: hi, answer: {{equals: ok}}}}" for i in range(8))
    agent = ChatModelAgent(name="a", description="answers", model=FunctionModel(answer))
    ended: list[tuple[str, int, int]] = []

    def progress(result: CaseResult, done: int, total: int) -> None:
        ended.append((result.case_id, done, total))

    report = await evaluate(parse_eval_set(f"cases:\n{cases}"), agent, concurrency=3, progress=progress)

    assert report.passed and peak == 3
    assert [r.case_id for r in report.results] == [f"c{i}" for i in range(8)]  # the set's order, whatever ended first
    assert sorted(done for _, done, _ in ended) == list(range(1, 9)) and {t for _, _, t in ended} == {8}


async def test_a_failed_run_fails_its_case_and_the_others_go_on() -> None:
    def flaky(messages: list[Message], tools: list[ToolInfo]) -> Message:
        if "boom" in messages[-1].content:
            raise RuntimeError("the model is down")
        return assistant("fine")

    agent = ChatModelAgent(name="a", description="answers", model=FunctionModel(flaky))
    text = "cases: [{id: ok, input: hi}, {id: bad, input: boom}, {id: later, turns: [{input: boom}, {input: hi}]}]"

    report = await evaluate(parse_eval_set(text), agent)

    assert [(r.case_id, r.passed) for r in report.results] == [("ok", True), ("bad", False), ("later", False)]
    assert report.result("bad").error == "RuntimeError: the model is down"
    assert report.result("bad").score == 0.0
    assert report.result("later").turns == ()  # the turn after a failed one does not run


async def test_a_factory_gives_each_case_a_fresh_agent() -> None:
    made: list[ChatModelAgent] = []

    def factory() -> ChatModelAgent:
        made.append(refunder())
        return made[-1]

    async def async_factory() -> ChatModelAgent:
        return factory()

    await evaluate(parse_eval_set(SET), factory, concurrency=1)
    await evaluate(parse_eval_set(SET), async_factory)

    assert len(made) == 4 and len({id(a) for a in made}) == 4


async def test_turns_of_a_case_are_one_conversation() -> None:
    def recall(messages: list[Message], tools: list[ToolInfo]) -> Message:
        said = [m.content for m in messages if m.role == "user"]
        return assistant(" / ".join(said))

    agent = ChatModelAgent(name="a", description="echoes", model=FunctionModel(recall))
    text = "cases: [{id: c, turns: [{input: first}, {input: second, answer: {equals: first / second}}]}]"

    report = await evaluate(parse_eval_set(text), agent)

    assert report.passed, report.table()


async def test_session_values_reach_the_agent_s_instruction() -> None:
    model = ScriptedModel([assistant("hello gold")])
    agent = ChatModelAgent(name="a", description="greets", instruction="The customer is {tier}.", model=model)
    text = "cases: [{id: c, input: hi, session_values: {tier: gold}}]"

    await evaluate(parse_eval_set(text), agent)

    assert model.requests[0].messages[0].content == "The customer is gold."


@pytest.mark.parametrize(
    ("policy", "answer", "refunded"),
    [
        ("approve", "Done: order 5 refunded (Note: approved by the eval).", [5]),
        ("reject", "rejected by the eval", []),
        ("stop", "", []),
    ],
)
async def test_approvals_are_decided_as_the_set_s_runner_says(policy: str, answer: str, refunded: list[int]) -> None:
    REFUNDED.clear()
    text = f"runner: {{interrupts: {policy}}}\ncases: [{{id: c, input: refund 5, trajectory: [refund]}}]"

    report = await evaluate(parse_eval_set(text), lambda: refunder(approval=True))

    (turn,) = report.result("c").turns
    assert turn.answer == answer
    assert turn.interrupted is (policy == "stop")
    assert turn.tool_uses == (ToolUse(name="refund", args={"order_id": 5}),)  # the call is made once, resumed or not
    assert refunded == REFUNDED


async def test_options_given_to_evaluate_replace_the_set_s() -> None:
    REFUNDED.clear()
    text = "cases: [{id: c, input: refund 6, answer: {contains: refunded}}]"  # the set's runner: stop

    stopped = await evaluate(parse_eval_set(text), lambda: refunder(approval=True))
    approved = await evaluate(
        parse_eval_set(text), lambda: refunder(approval=True), options=RunnerOptions(interrupts="approve")
    )

    assert (stopped.passed, approved.passed, REFUNDED) == (False, True, [6])


JUDGED = """
cases:
  - id: polite
    input: refund 3
    rubrics: [The answer is polite.]
  - id: rude
    input: refund 4
    rubrics: [The answer is polite.]
"""


def _grades(messages: list[Message], tools: list[ToolInfo]) -> Message:
    polite = "order 3" in messages[-1].content
    return assistant(json.dumps({"score": 1 if polite else 0.2, "pass": polite, "reason": "judged"}))


async def test_rubrics_are_graded_by_the_judge() -> None:
    report = await evaluate(parse_eval_set(JUDGED), refunder(), judge=LLMJudge(FunctionModel(_grades, model_name="jm")))

    assert report.judge == "jm"
    assert [(r.case_id, r.passed, r.score) for r in report.results] == [("polite", True, 1.0), ("rude", False, 0.2)]
    (check,) = report.result("rude").checks
    assert (check.name, check.reason) == ("rubric 'The answer is polite.'", "judged")


async def test_a_judge_that_cannot_grade_fails_the_rubric_with_its_error() -> None:
    judge = LLMJudge(ScriptedModel([assistant("no idea")] * 2, model_name="jm"))

    report = await evaluate(parse_eval_set(JUDGED), refunder(), judge=judge, concurrency=1)

    (check,) = report.result("polite").checks
    assert not check.passed
    assert check.reason == "JudgeError: judge on jm: expected a JSON verdict, got 'no idea'"


async def test_rubrics_without_a_judge_are_refused_before_any_case_runs() -> None:
    model = FunctionModel(_refunds)
    agent = ChatModelAgent(name="a", description="refunds", model=model, tools=[refund])

    with pytest.raises(
        EvalSetError,
        match=r"^eval set, case 'polite': expected a judge for the rubrics \(judge=LLMJudge\(model\), or --judge MODEL_URI\), got none$",
    ):
        await evaluate(parse_eval_set(JUDGED), agent)
    with pytest.raises(EvalSetError, match=r"case 'polite': expected a judge for the rubrics, got none"):
        await run_case(parse_eval_set(JUDGED).cases[0], agent)
    assert model.requests == []


async def test_bad_options_are_refused() -> None:
    with pytest.raises(UserError, match=r"concurrency: expected a whole number of at least 1, got 0"):
        await evaluate(parse_eval_set(SET), refunder(), concurrency=0)
    report = await evaluate(parse_eval_set(SET), "refunder")  # type: ignore[arg-type]
    assert report.result("one").error == "UserError: agent: expected an agent or a function that makes one, got str"
    made = await run_case(parse_eval_set(SET).cases[0], lambda: 42)  # type: ignore[arg-type, return-value]
    assert made.error == "UserError: agent: expected the factory to make an agent, got int"


async def test_assert_eval_set_passes_quietly_and_fails_with_the_checks_and_calls() -> None:
    await assert_eval_set(parse_eval_set(SET), refunder())

    text = SET.replace("{order_id: 1}", "{order_id: 9}")
    with pytest.raises(EvalFailure) as caught:
        await assert_eval_set(parse_eval_set(text), refunder())
    assert str(caught.value) == (
        "refunds on refunder: 1 of 2 cases passed, score 0.75\n"
        "case 'one' failed:\n"
        "  turn 1: trajectory (exact): expected call 1 to be refund(order_id=9), got refund(order_id=1); got refund(order_id=1)\n"
        "  turn 1 called: refund(order_id=1)\n"
        "  turn 1 answered: 'Done: order 1 refunded.'"
    )
    assert isinstance(caught.value, AssertionError) and not caught.value.report.passed


async def test_assert_case_runs_one_case() -> None:
    case = parse_eval_set(SET).case("two")
    result = await assert_case(case, refunder(), options=RunnerOptions())
    assert result.passed
    with pytest.raises(EvalFailure, match=r"case 'one' failed"):
        await assert_case(parse_eval_set(SET.replace("Done: order 1", "Nope")).case("one"), refunder())

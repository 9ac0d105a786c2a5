"""The deterministic checks: trajectories in each mode, answer checks of each kind, ROUGE-1; a failed check's
reason says what was expected and what was found."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batonflow.evals import AnswerCheck, ToolUse, Trajectory, check_answer, check_trajectory, rouge1_f1

LOOKUP = ToolUse(name="lookup_order", args={"order_id": "1042"})
REFUND = ToolUse(name="issue_refund", args={"order_id": "1042", "reason": "damaged"})
TRANSFER = ToolUse(name="transfer_to_agent", args={"agent_name": "refund_agent"})
CALLS = (TRANSFER, LOOKUP, REFUND)


def test_expected_arguments_are_a_subset_of_the_call_s() -> None:
    assert ToolUse(name="issue_refund", args={"order_id": "1042"}).matches(REFUND)
    assert ToolUse(name="issue_refund").matches(REFUND)
    assert not ToolUse(name="issue_refund", args={"order_id": 1042}).matches(REFUND)  # types count
    assert not ToolUse(name="issue_refund", args={"amount": 1}).matches(REFUND)
    assert not ToolUse(name="lookup_order").matches(REFUND)


@pytest.mark.parametrize(
    ("mode", "tools", "passed"),
    [
        ("exact", (TRANSFER, LOOKUP, REFUND), True),
        ("exact", (TRANSFER, REFUND), False),
        ("exact", (TRANSFER, LOOKUP), False),
        ("in_order", (TRANSFER, REFUND), True),
        ("in_order", (REFUND, TRANSFER), False),
        ("subset", (REFUND, TRANSFER), True),
        ("subset", (REFUND, REFUND), False),  # each expected call is one actual call
        ("subset", (), True),
        ("exact", (), False),
    ],
)
def test_trajectory_modes(mode: str, tools: tuple[ToolUse, ...], passed: bool) -> None:
    result = check_trajectory(Trajectory(mode=mode, tools=tools), CALLS)  # type: ignore[arg-type]
    assert result.passed is passed
    assert result.name == f"trajectory ({mode})"


def test_failed_trajectories_say_what_was_expected_and_what_was_called() -> None:
    calls = "transfer_to_agent(agent_name='refund_agent'), lookup_order(order_id='1042'), issue_refund(order_id='1042', reason='damaged')"
    exact = check_trajectory(Trajectory(mode="exact", tools=(TRANSFER, REFUND)), CALLS)
    assert (
        exact.reason
        == f"expected call 2 to be issue_refund(order_id='1042', reason='damaged'), got lookup_order(order_id='1042'); got {calls}"
    )
    assert exact.score == 0.5
    longer = check_trajectory(Trajectory(mode="exact", tools=(TRANSFER, LOOKUP)), CALLS)
    assert longer.reason.startswith("expected exactly 2 calls, got 3 (then issue_refund(")
    assert longer.score == pytest.approx(2 / 3)
    short = check_trajectory(Trajectory(mode="exact", tools=CALLS), CALLS[:1])
    assert short.reason.startswith("expected call 2 to be lookup_order(order_id='1042'), got no call 2;")
    order = check_trajectory(Trajectory(mode="in_order", tools=(REFUND, LOOKUP)), CALLS)
    assert order.reason.startswith("expected lookup_order(order_id='1042') after issue_refund(")
    subset = check_trajectory(Trajectory(mode="subset", tools=(ToolUse(name="file_complaint"),)), ())
    assert subset.reason == "expected file_complaint() among the calls, in any order, got none of it; got no tool calls"
    assert subset.score == 0.0


@pytest.mark.parametrize(
    ("check", "answer", "passed"),
    [
        (AnswerCheck(kind="equals", value="Done."), " Done.\n", True),
        (AnswerCheck(kind="equals", value="Done."), "done.", False),
        (AnswerCheck(kind="equals", value="Done.", ignore_case=True), "done.", True),
        (AnswerCheck(kind="contains", value="1042"), "Order 1042 refunded", True),
        (AnswerCheck(kind="contains", value="REFUNDED"), "Order 1042 refunded", False),
        (AnswerCheck(kind="contains", value="REFUNDED", ignore_case=True), "Order 1042 refunded", True),
        (AnswerCheck(kind="regex", value=r"T-\d{4}"), "Your ticket is T-1001.", True),
        (AnswerCheck(kind="regex", value=r"^ticket"), "Your ticket", False),
        (AnswerCheck(kind="regex", value=r"^your", ignore_case=True), "Your ticket", True),
        (AnswerCheck(kind="similar", value="the order was refunded", threshold=0.5), "Your order was refunded.", True),
        (AnswerCheck(kind="similar", value="the order was refunded", threshold=0.9), "Your order was refunded.", False),
    ],
)
def test_answer_checks(check: AnswerCheck, answer: str, passed: bool) -> None:
    assert check_answer(check, answer).passed is passed


def test_a_failed_answer_check_says_what_was_expected_and_what_was_found() -> None:
    result = check_answer(AnswerCheck(kind="contains", value="1042"), "I cannot help.")
    assert (result.name, result.passed, result.score) == ("contains '1042'", False, 0.0)
    assert result.reason == "expected an answer containing '1042', got 'I cannot help.'"
    similar = check_answer(AnswerCheck(kind="similar", value="a b c d", threshold=0.8), "a b")
    assert similar.reason == "ROUGE-1 F1 0.67 < 0.8" and similar.score == pytest.approx(2 / 3)


SCHEMA = {"type": "object", "properties": {"ticket": {"type": "string"}}, "required": ["ticket"]}


def test_a_schema_check_reads_the_answer_as_json_and_validates_it() -> None:
    check = AnswerCheck(kind="schema", value=SCHEMA)
    assert check_answer(check, '{"ticket": "T-1"}').passed
    wrong = check_answer(check, '{"ticket": 7}')
    assert (wrong.passed, wrong.reason) == (False, "expected valid JSON, at ticket: 7 is not of type 'string'")
    missing = check_answer(check, "{}")
    assert missing.reason == "expected valid JSON, at the answer: 'ticket' is a required property"
    prose = check_answer(check, "Your ticket is T-1.")
    assert not prose.passed and prose.reason.startswith("expected a JSON answer, got expected JSON, got")


def test_rouge1_f1() -> None:
    assert rouge1_f1("The cat sat", "the cat sat") == 1.0
    assert rouge1_f1("", "the cat") == 0.0
    assert rouge1_f1("dog", "the cat") == 0.0
    assert rouge1_f1("the the cat", "the cat") == pytest.approx(0.8)  # repeats count once per match


_NAMES = st.sampled_from(["a", "b", "c"])
_USES = st.lists(st.builds(ToolUse, name=_NAMES), max_size=6).map(tuple)


@given(expected=_USES, actual=_USES)
def test_an_exact_match_is_in_order_and_an_in_order_match_is_a_subset(
    expected: tuple[ToolUse, ...], actual: tuple[ToolUse, ...]
) -> None:
    exact, in_order, subset = (
        check_trajectory(Trajectory(mode=mode, tools=expected), actual) for mode in ("exact", "in_order", "subset")
    )
    assert not exact.passed or in_order.passed
    assert not in_order.passed or subset.passed
    assert check_trajectory(Trajectory(mode="exact", tools=actual), actual).passed
    for result in (exact, in_order, subset):
        assert 0 <= result.score <= 1 and (result.score == 1) >= result.passed


@given(a=st.text(max_size=40), b=st.text(max_size=40))
def test_rouge1_f1_is_symmetric_and_between_0_and_1(a: str, b: str) -> None:
    assert rouge1_f1(a, b) == pytest.approx(rouge1_f1(b, a))
    assert 0 <= rouge1_f1(a, b) <= 1

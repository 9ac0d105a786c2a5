"""Eval sets read from YAML and JSON: every field, the shorthand forms, and each kind of bad input named where it is
(the case, the turn, the field) with what was expected and what was found."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from batonflow.errors import UserError
from batonflow.evals import (
    MAX_EVAL_SET_CHARS,
    AnswerCheck,
    EvalSetError,
    RunnerOptions,
    ToolUse,
    Trajectory,
    load_eval_set,
    parse_eval_set,
)

FULL = """
name: shop
description: a few requests
runner: {interrupts: approve, skip_transfer_messages: true}
cases:
  - id: refund
    description: a refund
    session_values: {tier: gold}
    input: Refund order 1042.
    trajectory:
      mode: in_order
      tools:
        - {name: transfer_to_agent, args: {agent_name: refund_agent}}
        - issue_refund
    answer:
      - contains: refunded
        ignore_case: true
      - similar: Refunded order 1042.
        threshold: 0.5
    rubrics: The answer is polite.
  - id: two
    turns:
      - input: hi
      - input: bye
        trajectory: [lookup_order]
        answer: {regex: "b.e"}
        rubrics: [short, kind]
"""


def test_a_full_set_reads_into_its_dataclasses() -> None:
    eval_set = parse_eval_set(FULL)

    assert (eval_set.name, eval_set.description) == ("shop", "a few requests")
    assert eval_set.runner == RunnerOptions(interrupts="approve", skip_transfer_messages=True)
    refund, two = eval_set.cases
    assert (refund.id, refund.description, refund.session_values) == ("refund", "a refund", {"tier": "gold"})
    (turn,) = refund.turns
    assert turn.input == "Refund order 1042."
    assert turn.trajectory == Trajectory(
        mode="in_order",
        tools=(ToolUse(name="transfer_to_agent", args={"agent_name": "refund_agent"}), ToolUse(name="issue_refund")),
    )
    assert turn.answer == (
        AnswerCheck(kind="contains", value="refunded", ignore_case=True),
        AnswerCheck(kind="similar", value="Refunded order 1042.", threshold=0.5),
    )
    assert turn.rubrics == ("The answer is polite.",)
    assert [t.input for t in two.turns] == ["hi", "bye"]
    assert two.turns[0].trajectory is None and two.turns[0].answer == ()
    assert two.turns[1].trajectory == Trajectory(mode="exact", tools=(ToolUse(name="lookup_order"),))
    assert two.turns[1].answer == (AnswerCheck(kind="regex", value="b.e"),)
    assert two.rubrics == ("short", "kind")
    assert eval_set.case("two") is two


def test_json_reads_as_yaml_does() -> None:
    data = {"name": "j", "cases": [{"id": "a", "input": "hi", "answer": [{"equals": "hello"}]}]}

    from_json = parse_eval_set(json.dumps(data), format="json")

    assert from_json == parse_eval_set(json.dumps(data))
    assert from_json.cases[0].turns[0].answer == (AnswerCheck(kind="equals", value="hello"),)


def test_a_file_is_named_after_itself_unless_it_names_itself(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text("cases: [{id: a, input: hi}]")
    (tmp_path / "named.json").write_text('{"name": "given", "cases": [{"id": "a", "input": "hi"}]}')

    assert load_eval_set(tmp_path / "mine.yaml").name == "mine"
    assert load_eval_set(tmp_path / "named.json").name == "given"


def test_an_unknown_case_id_names_the_ones_there_are() -> None:
    with pytest.raises(EvalSetError, match=r"expected a case id of \['refund', 'two'\], got 'nope'"):
        parse_eval_set(FULL).case("nope")


def _error(text: str) -> str:
    with pytest.raises(EvalSetError) as caught:
        parse_eval_set(text, source="set.yaml")
    assert isinstance(caught.value, UserError)
    return str(caught.value)


BAD = [
    (
        "cases: [{id: a, input: hi}]\nowner: me",
        "set.yaml: expected a field of cases, description, name, runner, got 'owner'",
    ),
    ("name: x", "set.yaml: expected the field 'cases', got none"),
    ("cases: []", "set.yaml, cases: expected a non-empty list of cases, got list []"),
    ("- 1\n- 2", "set.yaml: expected a mapping, got list [1, 2]"),
    (
        "cases: [{id: a, input: hi, expect: x}]",
        "set.yaml, cases[0]: expected a field of answer, description, id, input, rubrics, session_values, trajectory, turns, got 'expect'",
    ),
    ("cases: [{input: hi}]", "set.yaml, cases[0]: expected the field 'id', got none"),
    (
        "cases: [{id: 7, input: hi}]",
        "set.yaml, cases[0].id: expected a non-empty text, got int 7 (quote numbers in YAML: '1042')",
    ),
    ("cases: [{id: a}]", "case 'a': expected input (one turn) or turns, got neither"),
    ("cases: [{id: a, input: hi}, {id: a, input: ho}]", "set.yaml, cases: expected unique case ids, got 'a' twice"),
    (
        "cases: [{id: a, input: hi, turns: [{input: ho}]}]",
        "case 'a': expected either turns or answer, input, rubrics, trajectory at the case's top, got both (turns and input)",
    ),
    ("cases: [{id: a, turns: []}]", "case 'a', turns: expected a non-empty list of turns, got list []"),
    (
        "cases: [{id: a, turns: [{input: hi, say: x}]}]",
        "case 'a', turn 1: expected a field of answer, input, rubrics, trajectory, got 'say'",
    ),
    (
        "cases: [{id: a, input: 1042}]",
        "case 'a', input: expected a non-empty text, got int 1042 (quote numbers in YAML: '1042')",
    ),
    (
        "cases: [{id: a, input: hi, session_values: [1]}]",
        "case 'a', session_values: expected a mapping of names to values, got list [1]",
    ),
    (
        "cases: [{id: a, input: hi, trajectory: {mode: fuzzy, tools: []}}]",
        "case 'a', trajectory.mode: expected one of exact, in_order, subset, got str 'fuzzy'",
    ),
    (
        "cases: [{id: a, input: hi, trajectory: {mode: exact}}]",
        "case 'a', trajectory: expected the field 'tools', got none",
    ),
    (
        "cases: [{id: a, input: hi, trajectory: {tools: lookup}}]",
        "case 'a', trajectory.tools: expected a list of tool calls, got str 'lookup'",
    ),
    (
        "cases: [{id: a, input: hi, trajectory: [{tool: lookup}]}]",
        "case 'a', trajectory.tools[0]: expected a field of args, name, got 'tool'",
    ),
    (
        "cases: [{id: a, input: hi, trajectory: [{name: lookup, args: [1]}]}]",
        "case 'a', trajectory.tools[0].args: expected a mapping of argument names to values, got list [1]",
    ),
    ("cases: [{id: a, input: hi, answer: yes}]", "case 'a', answer: expected a list of checks, got bool True"),
    (
        "cases: [{id: a, input: hi, answer: [{startswith: x}]}]",
        "case 'a', answer[0]: expected a field of contains, equals, ignore_case, regex, schema, similar, threshold, got 'startswith'",
    ),
    (
        "cases: [{id: a, input: hi, answer: [{contains: x, regex: y}]}]",
        "case 'a', answer[0]: expected exactly one of equals, contains, regex, schema, similar, got contains, regex",
    ),
    (
        "cases: [{id: a, input: hi, answer: [{ignore_case: true}]}]",
        "case 'a', answer[0]: expected exactly one of equals, contains, regex, schema, similar, got none",
    ),
    (
        "cases: [{id: a, input: hi, answer: [{regex: 'x('}]}]",
        "case 'a', answer[0].regex: expected a regular expression, got 'x(' (missing ), unterminated subpattern at position 1)",
    ),
    (
        "cases: [{id: a, input: hi, answer: [{contains: 5}]}]",
        "case 'a', answer[0].contains: expected a non-empty text, got int 5 (quote numbers in YAML: '1042')",
    ),
    (
        "cases: [{id: a, input: hi, answer: [{similar: x, threshold: 2}]}]",
        "case 'a', answer[0].threshold: expected a number from 0 to 1, got int 2",
    ),
    (
        "cases: [{id: a, input: hi, answer: [{contains: x, threshold: 0.5}]}]",
        "case 'a', answer[0].threshold: expected threshold with a similar check only, got it with contains",
    ),
    (
        "cases: [{id: a, input: hi, answer: [{schema: {type: object}, ignore_case: true}]}]",
        "case 'a', answer[0].ignore_case: expected ignore_case with equals, contains or regex, got it with schema",
    ),
    (
        "cases: [{id: a, input: hi, answer: [{contains: x, ignore_case: 'yes'}]}]",
        "case 'a', answer[0].ignore_case: expected true or false, got str 'yes'",
    ),
    (
        "cases: [{id: a, input: hi, answer: [{schema: [1]}]}]",
        "case 'a', answer[0].schema: expected a JSON schema (a mapping), got list [1]",
    ),
    (
        "cases: [{id: a, input: hi, answer: [{schema: {type: 12}}]}]",
        "case 'a', answer[0].schema: expected a valid JSON schema, got one that is not (12 is not valid under any of the given schemas)",
    ),
    (
        "cases: [{id: a, input: hi, rubrics: {a: 1}}]",
        "case 'a', rubrics: expected a list of rubric texts, got dict {'a': 1}",
    ),
    ("cases: [{id: a, input: hi, rubrics: ['']}]", "case 'a', rubrics[0]: expected a non-empty text, got str ''"),
    (
        "runner: {interrupts: maybe}\ncases: [{id: a, input: hi}]",
        "set.yaml, runner.interrupts: expected one of stop, approve, reject, got str 'maybe'",
    ),
    (
        "runner: {retries: 3}\ncases: [{id: a, input: hi}]",
        "set.yaml, runner: expected a field of interrupts, skip_transfer_messages, got 'retries'",
    ),
    ("cases: [{id: a, input: hi}]\nname: [x]", "set.yaml, name: expected a non-empty text, got list ['x']"),
]


@pytest.mark.parametrize(
    ("text", "message"), BAD, ids=[m.split(": expected")[0] + " " + str(i) for i, (_, m) in enumerate(BAD)]
)
def test_bad_input_is_an_eval_set_error_naming_where_and_what(text: str, message: str) -> None:
    assert _error(text) == message


def test_text_that_does_not_parse_says_so() -> None:
    assert _error("cases: [").startswith("set.yaml: expected YAML, got text that does not parse (")
    with pytest.raises(EvalSetError, match=r"^j: expected JSON, got text that does not parse \(Expecting"):
        parse_eval_set("{cases", format="json", source="j")
    with pytest.raises(EvalSetError, match=r"format: expected 'yaml' or 'json', got 'toml'"):
        parse_eval_set("", format="toml")


def test_yaml_that_is_not_safe_is_refused() -> None:
    assert "does not parse" in _error("cases: !!python/object/apply:os.system [echo hi]")


def test_a_set_past_the_size_bound_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    with pytest.raises(EvalSetError, match=r"expected at most 10 characters, got 30"):
        parse_eval_set("cases: [{id: a, input: hello}]", max_chars=10)
    path = tmp_path / "big.yaml"
    path.write_text("x" * 100)
    with pytest.raises(EvalSetError, match=r"big.yaml: expected at most 10 characters, got 100 bytes"):
        load_eval_set(path, max_chars=10)
    assert MAX_EVAL_SET_CHARS == 10_000_000


def test_a_missing_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(EvalSetError, match=r"nothing.yaml: expected a readable eval set file, got No such file"):
        load_eval_set(tmp_path / "nothing.yaml")

"""The sandbox bounds work, not only results: every operation is priced by the size of its values, before it runs."""

from __future__ import annotations

from typing import Any

import pytest

from batonflow.graph import MAX_ITEMS, MAX_WORK, ExpressionError, ExpressionLimitError, compile_expression
from batonflow.graph._work import size

# A million lists that are one list of a million zeros: 16 MB of memory, 10 ** 12 items to walk.
SHARED = [[0] * 1_000_000] * 1_000_000


def limit_of(source: str, variables: dict[str, Any] | None = None) -> ExpressionLimitError:
    with pytest.raises(ExpressionLimitError) as caught:
        compile_expression(source, graph_id="g", node_id="n").evaluate(variables or {})
    error = caught.value
    assert f"({error.limit})" in str(error) and str(error).startswith("graph 'g', node 'n': expression ")
    return error


def test_size_counts_items_and_characters_with_a_shared_value_each_time_it_is_reached() -> None:
    assert size(7, 100) == 1 and size("abc", 100) == 3
    assert size(["ab", 1, [2, 3]], 100) == 3 + 2 + 2
    assert size({"k": [1, 2]}, 100) == 2 + 1 + 2
    inner = [0] * 10
    assert size([inner] * 10, 1000) == 10 + 100
    assert size(SHARED, 10**6) > 10**6  # stops counting past the cap, at once


def test_a_nested_repetition_is_refused_before_it_is_built() -> None:
    error = limit_of("len(str([[0] * 1000000] * 1000000))")

    assert error.limit == "MAX_ITEMS"
    assert "at most 1000000 items and characters, nested ones included (MAX_ITEMS)" in str(error)


@pytest.mark.parametrize(
    "source",
    [
        "len(str(x))",
        "str(x) == ''",
        "x|string|length",
        "x|lower == ''",
        "x == x",
        "x < x",
        "x >= y",
        "x is eq(x)",
        "x is lt(y)",
        "[0] in x",
        "x in [y]",
        "x is in([y])",
        "x.contains([1])",
        "x.equals(x)",
        "x is like 'a'",
        "max(x)",
        "min(x, x)",
        "sum(x)",
        "x + x",
        "x * 2",
        "[x]",
        "(x,)",
        "{'a': x}",
        "{'k': 1}[(x,)]",
    ],
)
def test_work_over_a_trillion_shared_items_ends_with_a_limit_error(source: str) -> None:
    error = limit_of(source, {"x": SHARED, "y": [SHARED]})

    assert error.limit in ("MAX_WORK", "MAX_ITEMS")


def test_the_work_budget_is_spent_across_one_evaluation_and_renewed_for_the_next() -> None:
    text = "a" * 1_000_000
    four = " and ".join(["'b' not in t"] * 4)
    six = " and ".join(["'b' not in t"] * 6)
    expression = compile_expression(four)

    assert expression.test({"t": text}) and expression.test({"t": text})  # 4 million characters each time

    error = limit_of(six, {"t": text})
    assert error.limit == "MAX_WORK" and MAX_WORK == 5_000_000
    assert "expected at most 5000000 items and characters walked in one evaluation (MAX_WORK)" in str(error)


def test_what_an_expression_builds_holds_at_most_max_items_counting_what_it_holds() -> None:
    half = [0] * 600_000

    assert compile_expression("[x][0] == x").test({"x": half})
    assert limit_of("[x, x]", {"x": half}).limit == "MAX_ITEMS"
    assert limit_of("x + x", {"x": half}).limit == "MAX_ITEMS"
    assert limit_of("str([0] * 999999)").limit == "MAX_ITEMS"  # 3 million characters
    assert compile_expression("len(str([0] * 300000))").evaluate({}) == 900_000 - 2 + 2
    assert MAX_ITEMS == 1_000_000


def test_comparisons_keep_python_s_and_solon_s_meaning() -> None:
    variables = {"n": 5, "s": "abc", "items": [1, 2], "none": None}
    checks = {
        "1 < n < 10": True,
        "1 < n < 3": False,
        "1 > n < 10": False,
        "0 > 1 < len(missing)": False,  # a chain stops at its first false link, as Python's does
        "n in items or 2 in items": True,
        "'b' in s and 'z' not in s": True,
        "items == [1, 2] and items != [2, 1] and items < [1, 3]": True,
        "missing > 3 or missing < 3 or missing == 3": False,
        "missing == null and none == null": True,
        "{'a': [1]} == {'a': [1]}": True,
    }
    for source, expected in checks.items():
        assert compile_expression(source).evaluate(variables) is expected, source

    with pytest.raises(ExpressionError, match="could not evaluate it"):  # reached, this time
        compile_expression("0 < 1 < len(missing)").evaluate({})


def test_a_value_that_holds_itself_is_counted_as_endless_at_once() -> None:
    endless: list[Any] = []
    endless.append(endless)
    shared = [1, [2]]

    assert size(endless, MAX_WORK) > MAX_WORK
    assert size([shared, [shared, [shared]]], 100) == 2 + 3 + 2 + 3 + 1 + 3  # shared, not endless
    assert limit_of("x == x", {"x": endless}).limit == "MAX_WORK"

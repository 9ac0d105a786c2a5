"""Graph conditions: Jinja2's syntax and Solon's Java style, null as Solon has it, a sandbox nothing reaches out of,
and limits on what one evaluation may build."""

from __future__ import annotations

import os
from collections import defaultdict, namedtuple
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest
from jinja2.parser import Parser
from pydantic import BaseModel

from batonflow.errors import UserError
from batonflow.graph import ExpressionError, compile_expression


def value(source: str, **variables: Any) -> Any:
    return compile_expression(source).evaluate(variables)


def error(source: str, **variables: Any) -> str:
    with pytest.raises(ExpressionError) as caught:
        compile_expression(source, graph_id="g", node_id="n").evaluate(variables)
    assert caught.value.graph_id == "g"
    assert caught.value.node_id == "n"
    assert caught.value.source == source
    message = str(caught.value)
    assert message.startswith("graph 'g', node 'n': expression ")
    assert "expected" in message or "could not evaluate" in message
    return message


@dataclass
class Order:
    amount: int
    tags: list[str]


class Customer(BaseModel):
    name: str
    score: int


Point = namedtuple("Point", "x y")


class Opaque:
    """Not plain data: an object with an attribute and a method."""

    secret = "s"

    def run(self) -> str:
        return "ran"


# --- Jinja2's syntax over plain data ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("a > 1 and b == 'x'", True),
        ("a >= 3 or not done", True),
        ("1 < a < 3", True),
        ("a * 3 + 1 - a // 2 % 5", 6),
        ("a / 4", 0.5),
        ("a ** 3", 8),
        ("-a", -2),
        ("'y' in tags", True),
        ("'z' not in tags", True),
        ("'ell' in word", True),
        ("order.amount >= 100", True),
        ("order['amount']", 150),
        ("order.tags[0]", "vip"),
        ("customer.name + '/' + str(customer.score)", "Ann/90"),
        ("point.x + point[1]", 3),
        ("data.k.z + data['k']['z']", 2),
        ("tags[1]", "y"),
        ("[a, b]", [2, "x"]),
        ("{'k': a}", {"k": 2}),
        ("(a, b)", (2, "x")),
        ("a if a > 1 else b", 2),
        ("tags|length", 2),
        ("word|upper", "HELLO"),
        ("missing|default('d')", "d"),
        ("tags|first", "x"),
        ("len(word) + abs(-1)", 6),
        ("min(tags) + max(tags)", "xy"),
        ("int('7') + float('0.5')", 7.5),
        ("str(a) + '!'", "2!"),
        ("round(2.567, 2)", 2.57),
        ("sum([1, 2, 3])", 6),
        ("any([false, a]) and all([true, 1])", True),
        ("3 in range(1, 5)", True),
        ("bool(tags)", True),
        ("result + 1", 4),
    ],
)
def test_jinja_expressions_compute_over_plain_data(source: str, expected: Any) -> None:
    variables = {
        "a": 2,
        "b": "x",
        "done": False,
        "tags": ["x", "y"],
        "word": "hello",
        "order": Order(150, ["vip"]),
        "customer": Customer(name="Ann", score=90),
        "point": Point(1, 2),
        "data": {"k": {"z": 1}},
        "result": 3,  # the name Jinja2's expressions keep their value under, as a variable
    }
    assert compile_expression(source).evaluate(variables) == expected


# --- Solon's Java-style conditions -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("a > 1 && b == 'x'", True),
        ("a > 5 || b == 'x'", True),
        ("!done", True),
        ("!done && a != 2", False),  # '!=' is not a '!'
        ("!a == 2", False),  # Java's '!' binds tighter than '==': (!a) == 2
        ("!(a > 1 && done)", True),
        ("!!done", False),
        ("!order.tags.contains('vip')", False),
        ("!tags[0].equals('x')", False),
        ("absent == null", True),
        ("true && !false", True),
        ("'a && !b || null'", "a && !b || null"),  # string literals are left alone
        ('"x" + "||" + b', "x||x"),
        ("a > 1 AND NOT done", True),
        ("a < 1 OR b IN ['x', 'y']", True),
        ("b NOT IN ['x', 'y']", False),
        ("word LIKE 'ell'", True),
        ("word NOT LIKE 'ell'", False),
        ("absent LIKE 'x'", False),
        ("order?.amount", 150),
        ("absent?.amount", None),
        ("1L + 2.5D + 1f", 4.5),
        ("data.null", "kept"),  # an attribute named like a keyword stays an attribute
        ('"type1".equals(kind)', True),
        ("tags.contains('x') && word.contains('ell') && data.contains('null')", True),
        ("data.containsKey('null') && !data.isEmpty() && data.size() == 2", True),
        ("tags.size() + word.length()", 7),
        ("word.startsWith('he') && word.endsWith('lo') && word.toUpperCase() == 'HELLO'", True),
        ("' x '.trim()", "x"),
        ("data.get('null') + data.get('none', '!')", "kept!"),
        ("tags.get(1) + tags.get(9, '?')", "y?"),
        ("data.keys()", ["null", "k"]),
    ],
)
def test_solon_s_java_operators_keywords_and_methods_are_accepted(source: str, expected: Any) -> None:
    variables = {
        "a": 2,
        "b": "x",
        "done": False,
        "tags": ["x", "y"],
        "word": "hello",
        "kind": "type1",
        "order": Order(150, ["vip"]),
        "data": {"null": "kept", "k": 1},
    }
    assert compile_expression(source).evaluate(variables) == expected


@pytest.mark.parametrize(
    ("source", "variables", "expected"),
    [
        # Conditions as solon-flow's own test flows write them.
        ("day>=3 && day<7", {"day": 5}, True),
        ("amount>=500000", {"amount": 100_000}, False),
        ('"type1".equals(dataType)', {"dataType": "type1"}, True),
        ("s.amount > 100 && s.amount <= 500", {"s": {"amount": 300}}, True),
        ("IsEnemyVisible", {}, False),
        ("a > 3", {}, False),
        ("score > 90", {"score": 95}, True),
    ],
)
def test_conditions_from_solon_flow_s_examples_hold_as_there(
    source: str, variables: dict[str, Any], expected: bool
) -> None:
    assert compile_expression(source).test(variables) is expected


def test_a_java_method_on_a_value_it_does_not_belong_to_is_refused() -> None:
    message = error("a.contains(1)", a=5)
    assert "expected contains() on text, lists, sets and mappings, found it on an 'int' value" in message
    assert "expected startsWith() on text, found it on a 'list' value" in error("a.startsWith('x')", a=[])


def test_a_java_getter_or_a_mutating_method_is_refused_with_the_form_to_write() -> None:
    assert "found .getAmount() (a Java getter is read as a field: .amount)" in error("order.getAmount() >= 100")
    assert "found .incrementAndGet()" in error("demo.incrementAndGet() < 5")
    assert "found .append()" in error("tags.append(1)", tags=[])


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("a > 1 ? 'x' : 'y'", "'?': Java's ternary 'c ? a : b' is written 'a if c else b'"),
        ("a ?: 'y'", "'?:': SnEL's 'a ?: b' is written 'a if a != null else b'"),
        ("a = 1", "'=': a comparison is written '=='"),
        ("x ~ y", "'~': text is joined with '+'"),
    ],
)
def test_java_forms_that_have_no_rewrite_are_refused_with_the_form_to_write(source: str, found: str) -> None:
    assert f"expected an expression, found {found}" in error(source)


# --- Null ------------------------------------------------------------------------------------------------------


def test_a_missing_variable_and_a_none_one_are_null_as_in_solon() -> None:
    for variables in ({}, {"x": None}):
        expression = compile_expression("x")
        assert expression.evaluate(variables) is None
        assert expression.test(variables) is False
        assert all(compile_expression(s).test(variables) is False for s in ("x > 1", "x < 1", "1 < x", "x >= 0"))
        assert compile_expression("x == null and null == x and x is none and x is not defined").test(variables)
        assert compile_expression("x != 1 and !x and x.y.z == null and x['k'][0] == null").test(variables)


def test_reading_past_the_end_or_a_missing_key_is_null() -> None:
    assert value("tags[5] == null and data.nope == null and data['nope'] == null", tags=[1], data={}) is True
    assert value("data.k", data={"k": None}) is None


def test_computing_with_null_is_an_error_that_says_so() -> None:
    assert "expected a value on both sides of '+', found null" in error("x + 1")
    assert "expected a value, found null ('x' is undefined)" in error("x - 1")
    assert "could not evaluate it: TypeError: object of type 'NoneType' has no len()" in error("len(x)")


def test_a_condition_is_python_s_truthiness_of_its_value() -> None:
    assert [compile_expression(s).test({}) for s in ("0", "''", "[]", "1", "'x'", "[0]")] == [False] * 3 + [True] * 3


# --- The sandbox -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("x.__class__", "the name '__class__'"),
        ("().__class__.__bases__", "the name '__bases__'"),
        ("cycler.__init__.__globals__", "the name '__globals__'"),
        ("x['__class__']", "the name '__class__'"),
        ("__builtins__", "the name '__builtins__'"),
        ("lipsum()", "lipsum()"),
        ("lipsum(100000, false, 100, 200)", "lipsum()"),
        ("range.__call__", "the name '__call__'"),
        ("joiner()", "joiner()"),
        ("namespace(a=1)", "'='"),
        ("x|attr('__class__')", "the filter 'attr'"),
        ("'{0.__class__}'.format(x)", ".format()"),
        ("x|format(1)", "the filter 'format'"),
        ("x|center(1000000000)", "the filter 'center'"),
        ("a is divisibleby 3", "the test 'divisibleby'"),
        ("max(*x)", "'*' or '**' arguments"),
        ("x[1:2]", "a slice"),
        ("tags[0]()", "a call to another value"),
        ("self.__init__", "the name '__init__'"),
    ],
)
def test_what_reaches_outside_the_sandbox_is_refused_when_compiled(source: str, found: str) -> None:
    with pytest.raises(ExpressionError) as caught:
        compile_expression(source, graph_id="g", node_id="n")
    assert isinstance(caught.value, UserError)
    assert f"graph 'g', node 'n': expression {source!r}: expected" in str(caught.value)
    assert f"found {found}" in str(caught.value)


def test_attributes_of_objects_that_are_not_plain_data_are_refused() -> None:
    expected = "expected plain data (a mapping, a list or tuple, the fields of a dataclass, a pydantic model or a named"
    message = error("thing.secret", thing=Opaque())
    assert expected in message
    assert "found attribute 'secret' of an 'Opaque' value" in message
    assert "found attribute 'real' of an 'int' value" in error("n.real", n=1)
    assert "found attribute 'format' of a 'str' value" in error("s.format", s="{}")
    assert "found item 'x' of an 'Opaque' value" in error("thing['x']", thing=Opaque())


def test_a_callable_in_the_variables_is_never_called() -> None:
    # a mapping's key that shadows a method name, and a variable that shadows a function
    data = {"get": os.system, "contains": lambda item: True}
    assert "found a call to a 'builtin_function_or_method' value" in error("data.get('true')", data=data)
    assert "found a call to a 'function' value" in error("data.contains(1)", data=data)
    assert "found a call to an 'int' value" in error("max(1, 2)", max=5)
    assert "found a call to null" in error("x.contains(1)")


def test_evaluating_never_changes_the_variables() -> None:
    counts: defaultdict[str, int] = defaultdict(int)
    variables: dict[str, Any] = {"tags": ["x"], "data": {"k": 1}, "n": None, "counts": counts}
    expression = compile_expression(
        "tags.contains('x') and data.k == 1 and n == null and counts.a == null and tags + ['y']"
    )
    assert expression.evaluate(variables) == ["x", "y"]
    assert variables == {"tags": ["x"], "data": {"k": 1}, "n": None, "counts": {}}


# --- Limits ----------------------------------------------------------------------------------------------------


def test_the_source_is_at_most_4_kib() -> None:
    assert compile_expression("a" + " " * 4095).evaluate({"a": 1}) == 1
    message = error("a" + " " * 4096)
    assert "expected at most 4096 characters (MAX_SOURCE), found 4097" in message


def test_nesting_is_bounded() -> None:
    assert value("(" * 32 + "1" + ")" * 32) == 1
    assert "expected at most 32 levels of brackets (MAX_NESTING), found 33" in error("(" * 33 + "1" + ")" * 33)
    assert "expected at most 32 levels of brackets and '!' (MAX_NESTING), found more" in error("!" * 40 + "x")
    for deep in ("x" + " + x" * 100, "not " * 100 + "x", "- " * 100 + "1", "x" + " && x" * 100):
        assert "expected at most 64 levels of operations (MAX_DEPTH), found more" in error(deep)


def test_a_power_too_large_is_refused_before_it_is_computed() -> None:
    assert value("2 ** 4096") == 2**4096
    assert "expected a power of at most 4096 bits (MAX_INT_BITS), found 2 ** 100000 (about 100000 bits)" in error(
        "2 ** 100000"
    )
    assert "expected a power of at most 4096 bits" in error("10 ** (10 ** 10)")
    assert "OverflowError" in error("10.0 ** 1000")


def test_a_product_too_large_is_refused_before_it_is_computed() -> None:
    assert len(value("'ab' * 500000")) == 1_000_000
    assert "expected a repetition of at most 1000000 characters or items (MAX_ITEMS), found one of 1000000000" in error(
        "'a' * 10 ** 9"
    )
    assert "found one of 2000000" in error("[1, 2] * 1000000")
    assert "found one of 1000000001" in error("1000000001 * x", x="a")
    assert "expected a product of at most 4096 bits" in error("(2 ** 4000) * (2 ** 4000)")


def test_a_sum_of_text_or_lists_too_large_is_refused() -> None:
    assert "expected a sum of at most 1000000 characters or items (MAX_ITEMS), found one of 1200000" in error(
        "'x' * 600000 + 'y' * 600000"
    )
    big = ["x"] * 600_000
    assert "found one of 1200000" in error("a + a", a=big)


def test_formatting_text_with_percent_is_refused() -> None:
    assert "expected numbers on both sides of '%', found text on the left" in error("'%999999999d' % 1")
    assert value("7 % 3") == 1


def test_ranges_and_round_are_bounded() -> None:
    assert value("range(10000)|length") == 10000
    assert (
        "expected a range of at most 10000 numbers (MAX_RANGE), found range(0, 1000000000, 1) of 1000000000 numbers"
        in error("range(0, 10 ** 9, 1)")
    )
    assert "found range(1000000000000000000000) of more numbers than a machine word counts" in error("range(10 ** 21)")
    assert "expected round() to at most 100 digits (MAX_ROUND_DIGITS), found -1000000000000000000" in error(
        "round(5, -(10 ** 18))"
    )


# --- Bad input, compiling once ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("a >", "found a syntax error: it ends too early"),
        ("(a", "found a syntax error: it ends too early, expected ')'"),
        ("a b", "expected the end of the expression, found 'b'"),
        ("", "expected an expression, found an empty text"),
        ("   ", "expected an expression, found an empty text"),
        ("a $ b", "found a syntax error: unexpected char '$'"),
        ("'unclosed", "found a syntax error"),
    ],
)
def test_bad_syntax_names_the_graph_the_node_and_the_source(source: str, found: str) -> None:
    assert found in error(source)


def test_a_source_that_is_not_text_is_refused_naming_its_type() -> None:
    with pytest.raises(ExpressionError, match=r"graph 'g', node 'n': expected an expression as text, found a bool"):
        compile_expression(True, graph_id="g", node_id="n")  # type: ignore[arg-type]


def test_a_type_error_while_evaluating_names_the_graph_the_node_and_the_source() -> None:
    message = error("a > 1", a="text")
    assert message == (
        "graph 'g', node 'n': expression 'a > 1': could not evaluate it: TypeError: '>' not supported between instances"
        " of 'str' and 'int'"
    )


def test_a_source_is_compiled_once_whatever_node_uses_it(monkeypatch: pytest.MonkeyPatch) -> None:
    parses: list[str] = []
    original = Parser.parse_expression

    def counting(self: Parser, *args: Any, **kwargs: Any) -> Any:
        parses.append("parse")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Parser, "parse_expression", counting)
    source = "compiled_once > 1"
    first = compile_expression(source, graph_id="g", node_id="a")
    second = compile_expression(source, graph_id="g", node_id="b")
    for _ in range(2):
        with pytest.raises(ExpressionError):
            compile_expression("compiled_once >")
    assert len(parses) == 2  # one per source, refused sources included
    assert (first.node_id, second.node_id) == ("a", "b")
    assert first.test({"compiled_once": 2}) and not second.test({"compiled_once": 1})


def test_one_expression_is_shared_by_many_threads() -> None:
    expression = compile_expression("n * 2 + len(tags)")

    def run(n: int) -> Any:
        return expression.evaluate({"n": n, "tags": [n] * (n % 3)})

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(run, range(400)))
    assert results == [n * 2 + n % 3 for n in range(400)]

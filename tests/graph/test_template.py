"""Solon's ``#{...}`` templates: variable paths over plain data, written as Solon writes values, computing
nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from batonflow.graph import MAX_RENDERED, ExpressionError, ExpressionLimitError, render_template


@dataclass
class Person:
    name: str
    city: str | None = None


class Opaque:
    secret = "s"


def test_placeholders_read_variables_and_dotted_paths() -> None:
    variables = {"name": "Bob", "user": {"city": "Paris"}}
    assert render_template("Hello #{name}, #{user.city}", variables) == "Hello Bob, Paris"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("#{company.name} - #{company.department.name} - #{company.department.employee.name}", "ABC - HR - Grace"),
        ("Hello, #{names[0]}! #{names[-1]}", "Hello, Eve! Frank"),
        ("#{row['the key']} #{row[\"the key\"]}", "v v"),
        ("#{person.name} in #{person.city}", "Ann in null"),
        ("#{  greeting  }, World!", "Hi, World!"),
        ("#{greeting}#{greeting}", "HiHi"),
        ("#{ company . department [ 'name' ] }", "HR"),
    ],
)
def test_paths_read_mappings_lists_and_fields_as_solon_reads_them(text: str, expected: str) -> None:
    variables: dict[str, Any] = {
        "company": {"name": "ABC", "department": {"name": "HR", "employee": {"name": "Grace"}}},
        "names": ["Eve", "Frank"],
        "row": {"the key": "v"},
        "person": Person("Ann"),
        "greeting": "Hi",
    }
    assert render_template(text, variables) == expected


def test_null_and_booleans_are_written_as_solon_writes_them() -> None:
    # Solon appends Java's String.valueOf: a missing variable reads "Hello, null!" (SnEL's own test says so).
    assert render_template("Hello, #{name}!", {}) == "Hello, null!"
    assert render_template("#{a} #{b.c.d} #{items[3]} #{n}", {"a": None, "b": {}, "items": [], "n": 0}) == (
        "null null null 0"
    )
    assert render_template("#{yes}/#{no}", {"yes": True, "no": False}) == "true/false"
    assert render_template("Hello, #{name}!", {"name": ""}) == "Hello, !"


def test_text_that_is_not_a_closed_placeholder_is_left_as_written() -> None:
    variables = {"name": "x", "prop": "p"}
    for text in ("This is #{unclosed", "Hello, #name!", "Hello, {name}!", "${prop} and ${prop:default}", "#", ""):
        assert render_template(text, variables) == text
    assert render_template("A #{name} B #{open", variables) == "A x B #{open"


@pytest.mark.parametrize(
    "content",
    ["a + b", "user.getName()", "a > b ? 'x' : 'y'", "", "1", "a b", "names[0 + 1]", "a[b]"],
)
def test_a_placeholder_that_is_not_a_variable_path_is_refused(content: str) -> None:
    placeholder = "#{" + content + "}"
    with pytest.raises(ExpressionError) as caught:
        render_template(f"Result: {placeholder}", {"a": 1, "b": 2})
    assert caught.value.source == placeholder
    assert str(caught.value) == (
        f"template placeholder {placeholder!r}: expected a variable path such as name, user.city or items[0],"
        f" found {content!r} (templates read variables, they compute nothing)"
    )


def test_a_placeholder_s_braces_are_balanced_as_solon_balances_them() -> None:
    # The brace inside the literal opens a level, so the placeholder never closes and is text (as in Solon).
    assert render_template("Result: #{ m.get('{') }", {}) == "Result: #{ m.get('{') }"
    assert render_template("#{a}}", {"a": 1}) == "1}"


def test_paths_read_plain_data_only() -> None:
    with pytest.raises(ExpressionError, match=r"expected plain data, found 'a.__class__' \(names that start with"):
        render_template("#{a.__class__}", {"a": 1})
    with pytest.raises(ExpressionError) as caught:
        render_template("#{thing.secret}", {"thing": Opaque()})
    assert "template placeholder '#{thing.secret}': expected plain data" in str(caught.value)
    assert "found attribute 'secret' of an 'Opaque' value" in str(caught.value)
    with pytest.raises(ExpressionError, match="found attribute 'size' of a 'list' value"):
        render_template("#{tags.size}", {"tags": [1]})  # no methods: a template computes nothing


def test_a_mapping_s_key_named_like_a_method_is_its_value_and_a_missing_one_is_null() -> None:
    assert render_template("#{m.get} #{m.size}", {"m": {"get": "g"}}) == "g null"


def test_a_rendered_text_is_at_most_max_rendered_characters() -> None:
    assert MAX_RENDERED == 1_000_000
    assert len(render_template("#{x}" * 100, {"x": "a" * 10_000})) == MAX_RENDERED

    with pytest.raises(ExpressionLimitError) as caught:
        render_template("#{x}" * 101, {"x": "a" * 10_000})
    assert caught.value.limit == "MAX_RENDERED" and caught.value.source == "#{x}"
    assert "expected a rendered text of at most 1000000 characters (MAX_RENDERED), found more" in str(caught.value)


def test_a_value_too_large_to_render_is_refused_before_it_becomes_text() -> None:
    shared = [[0] * 1_000_000] * 1_000_000  # str() of it would write 3 * 10 ** 12 characters

    with pytest.raises(ExpressionLimitError, match="MAX_RENDERED"):
        render_template("Context: #{docs}", {"docs": shared})
    with pytest.raises(ExpressionLimitError, match="MAX_RENDERED"):
        render_template("x" * (MAX_RENDERED + 1), {})

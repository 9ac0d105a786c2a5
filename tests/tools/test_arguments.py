"""What a model reads when its arguments are wrong: exact texts, since they are part of the contract."""

import enum
import json
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from batonflow.errors import ToolArgumentsError
from batonflow.tools import MAX_JSON_CHARS, Tool, feedback, tool
from batonflow.tools.feedback import join_clauses


class Unit(enum.Enum):
    CELSIUS = "c"
    FAHRENHEIT = "f"


class Location(BaseModel):
    city: str
    country: str = "FR"


@tool
def get_weather(city: str, days: int = 1) -> str:
    return f"{city}:{days}"


async def invalid(t: Tool, arguments: str) -> str:
    with pytest.raises(ToolArgumentsError) as caught:
        await t.invoke(arguments)
    assert caught.value.tool_name == t.info.name
    return str(caught.value)


async def test_invalid_json_arguments_raise_tool_arguments_error_naming_the_tool() -> None:
    assert await invalid(get_weather, "{city: Paris}") == (
        "Invalid arguments for tool [get_weather]: expected a JSON object, got '{city: Paris}'"
    )


async def test_invalid_json_is_shown_cut_to_200_characters() -> None:
    text = "x" * 500
    assert await invalid(get_weather, text) == (
        f"Invalid arguments for tool [get_weather]: expected a JSON object, got '{'x' * 200}'..."
    )


async def test_deeply_nested_json_is_an_arguments_error_saying_the_limit_and_the_depth() -> None:
    assert await invalid(get_weather, "[" * 100_000) == (
        "Invalid arguments for tool [get_weather]: expected JSON nested at most 100 levels deep, got 100,000 levels"
    )


@pytest.mark.parametrize(
    ("arguments", "kind"),
    [
        ("[1, 2]", "array"),
        ('"Paris"', "string"),
        ("3", "number"),
        ("2.5", "number"),
        ("true", "boolean"),
        ("null", "null"),
    ],
)
async def test_json_that_is_not_an_object_is_refused_naming_its_kind(arguments: str, kind: str) -> None:
    assert await invalid(get_weather, arguments) == (
        f"Invalid arguments for tool [get_weather]: expected a JSON object, got {kind}"
    )


async def test_missing_and_wrong_type_arguments_are_reported_together() -> None:
    assert await invalid(get_weather, '{"days": "abc"}') == (
        "Invalid arguments for tool [get_weather]: expected 'city' (string), got nothing; "
        "expected 'days' to be a valid integer, got 'abc'"
    )


async def test_empty_arguments_for_a_tool_with_required_parameters_report_them_missing() -> None:
    assert await invalid(get_weather, "") == (
        "Invalid arguments for tool [get_weather]: expected 'city' (string), got nothing"
    )


async def test_unknown_arguments_are_refused_listing_the_known_ones() -> None:
    assert await invalid(get_weather, '{"city": "Paris", "units": "metric"}') == (
        "Invalid arguments for tool [get_weather]: expected one of 'city', 'days', got unknown 'units'"
    )


async def test_unknown_arguments_of_a_tool_without_parameters_are_refused() -> None:
    @tool
    def now() -> str:
        return ""

    assert (
        await invalid(now, '{"tz": "UTC"}')
        == "Invalid arguments for tool [now]: expected no arguments, got unknown 'tz'"
    )


async def test_values_of_the_wrong_json_type_are_shown_as_json() -> None:
    assert await invalid(get_weather, '{"city": ["Paris"], "days": 1.5}') == (
        "Invalid arguments for tool [get_weather]: expected 'city' to be a valid string, got [\"Paris\"]; "
        "expected 'days' to be a valid integer, got 1.5"
    )


async def test_long_values_are_cut_to_100_characters() -> None:
    message = await invalid(get_weather, '{"city": 1, "days": "' + "9x" * 100 + '"}')
    assert message.endswith("expected 'days' to be a valid integer, got '" + "9x" * 49 + "9...")


async def test_missing_enum_literal_and_list_arguments_say_what_values_fit() -> None:
    @tool
    def convert(unit: Unit, mode: Literal["fast", "exact"], values: list[int], target: Unit | None) -> str:
        return ""

    assert await invalid(convert, "{}") == (
        "Invalid arguments for tool [convert]: expected 'unit' (one of 'c', 'f'), got nothing; "
        "expected 'mode' (one of 'fast', 'exact'), got nothing; "
        "expected 'values' (array of integer), got nothing; "
        "expected 'target' (one of 'c', 'f' or null), got nothing"
    )


async def test_wrong_enum_and_literal_values_list_the_allowed_ones() -> None:
    @tool
    def convert(unit: Unit, mode: Literal["fast", "exact"] = "fast") -> str:
        return ""

    assert await invalid(convert, '{"unit": "k", "mode": "slow"}') == (
        "Invalid arguments for tool [convert]: expected 'unit' to be 'c' or 'f', got 'k'; "
        "expected 'mode' to be 'fast' or 'exact', got 'slow'"
    )


async def test_errors_inside_nested_values_name_the_path() -> None:
    @tool
    def plan(stops: list[Location], home: Location | None = None) -> str:
        return ""

    assert await invalid(plan, '{"stops": [{"city": "Lyon"}, {"country": 3}], "home": {}}') == (
        "Invalid arguments for tool [plan]: expected 'stops[1].city' (string), got nothing; "
        "expected 'stops[1].country' to be a valid string, got 3; "
        "expected 'home.city' (string), got nothing"
    )


async def test_unknown_keys_in_nested_typed_dict_name_the_known_fields() -> None:
    from typing_extensions import TypedDict

    class Range(TypedDict):
        low: int
        high: int

    @tool
    def f(span: Range) -> str:
        return ""

    assert await invalid(f, '{"span": {"low": 1, "high": 2, "step": 1}}') == (
        "Invalid arguments for tool [f]: expected one of 'span.low', 'span.high', got unknown 'span.step'"
    )


async def test_union_members_tried_by_pydantic_are_not_shown_as_paths() -> None:
    @tool
    def f(key: int | str) -> str:
        return ""

    assert await invalid(f, '{"key": [1]}') == (
        "Invalid arguments for tool [f]: expected 'key' to be a valid integer, got [1]; "
        "expected 'key' to be a valid string, got [1]"
    )


async def test_constraint_violations_state_the_constraint() -> None:
    @tool
    def f(n: int = Field(ge=1), name: str = Field("x", min_length=2)) -> str:
        return ""

    assert await invalid(f, '{"n": 0, "name": "a"}') == (
        "Invalid arguments for tool [f]: expected 'n' to be greater than or equal to 1, got 0; "
        "expected 'name' to have at least 2 characters, got 'a'"
    )


async def test_lax_conversions_models_commonly_need_are_accepted() -> None:
    assert await get_weather.invoke('{"city": "Paris", "days": "3"}') == "Paris:3"


# -- hostile input: what a model reads stays short, and costs time in proportion to what was sent -----------------


async def test_arguments_longer_than_the_limit_are_refused_before_parsing_saying_the_limit_and_the_size() -> None:
    arguments = json.dumps({"x" * 10_000_000: 1})
    assert await invalid(get_weather, arguments) == (
        "Invalid arguments for tool [get_weather]: expected at most 1,000,000 characters of JSON, got 10,000,007"
    )


async def test_arguments_at_the_limit_are_read() -> None:
    padding = MAX_JSON_CHARS - len('{"city": "", "days": 2}')
    assert await get_weather.invoke(json.dumps({"city": "P" * padding, "days": 2})) == "P" * padding + ":2"


async def test_many_unknown_keys_are_reported_in_ten_clauses_and_a_count() -> None:
    message = await invalid(get_weather, json.dumps({"city": "Paris", **{f"k{i}": i for i in range(32_000)}}))
    clauses = [f"expected one of 'city', 'days', got unknown 'k{i}'" for i in range(10)]
    assert message == (f"Invalid arguments for tool [get_weather]: {'; '.join(clauses)}; and 31,990 more")


async def test_many_unknown_keys_are_reported_describing_only_the_clauses_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    described: list[str] = []
    clause = feedback._clause

    def counted(*args: Any) -> str:
        described.append(text := clause(*args))
        return text

    monkeypatch.setattr(feedback, "_clause", counted)
    arguments = json.dumps({f"k{i}": i for i in range(32_000)})

    message = await invalid(get_weather, arguments)

    # The work grows with the keys only in the validation itself: of 32,001 mistakes (the missing city among them)
    # ten are put into words, and the eleventh is read to find that there are more.
    assert len(described) == 11 and message.endswith("; and 31,991 more")


def test_clauses_are_joined_once_each_the_first_ten_then_a_count_of_the_others() -> None:
    clauses = ["a", "b", "a", *(f"c{i}" for i in range(20)), "b"]
    shown = "; ".join(["a", "b", *(f"c{i}" for i in range(8))])
    assert join_clauses(clauses) == f"{shown}; and 12 more"
    assert join_clauses(iter(clauses), total=1_000) == f"{shown}; and 989 more"
    assert join_clauses(["a", "a"]) == "a"


async def test_a_long_unknown_key_is_echoed_cut_to_60_characters() -> None:
    message = await invalid(get_weather, json.dumps({"city": "Paris", "k" * 900_000: 1}))
    assert message == (
        f"Invalid arguments for tool [get_weather]: expected one of 'city', 'days', got unknown '{'k' * 60}...'"
    )


async def test_long_names_in_a_path_are_each_cut_short() -> None:
    @tool
    def f(items: list[dict[str, int]]) -> str:
        return ""

    message = await invalid(f, json.dumps({"items": [{"n" * 500: "x"}]}))
    assert message == (
        f"Invalid arguments for tool [f]: expected 'items[0].{'n' * 60}...' to be a valid integer, got 'x'"
    )

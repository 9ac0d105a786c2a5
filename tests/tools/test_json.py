"""The one reader of model JSON: its limits, its errors, and that it costs time in proportion to the text."""

import json

import pytest
from tests.growth import growth

from batonflow.errors import ModelJSONError, RunError
from batonflow.tools import (
    MAX_JSON_CHARS,
    MAX_JSON_DEPTH,
    check_model_json,
    decode_model_json,
    parse_model_json,
)


def refused(text: str, **limits: int) -> ModelJSONError:
    with pytest.raises(ModelJSONError) as caught:
        parse_model_json(text, **limits)
    return caught.value


def test_json_within_the_limits_is_parsed_as_json_loads_parses_it() -> None:
    text = '{"a": [1, 2.5, "x", true, null], "b": {"c": NaN}}'
    assert json.dumps(parse_model_json(text)) == json.dumps(json.loads(text))


def test_the_limits_are_a_megabyte_of_characters_and_a_hundred_levels() -> None:
    assert (MAX_JSON_CHARS, MAX_JSON_DEPTH) == (1_000_000, 100)
    assert parse_model_json("[" * 100 + "]" * 100) == json.loads("[" * 100 + "]" * 100)
    assert parse_model_json(json.dumps("x" * (MAX_JSON_CHARS - 2))) == "x" * (MAX_JSON_CHARS - 2)


def test_text_longer_than_the_limit_is_refused_before_parsing_saying_the_limit_and_the_length() -> None:
    error = refused(json.dumps("x" * 10_000_000))
    assert str(error) == "expected at most 1,000,000 characters of JSON, got 10,000,002"
    assert (error.reason, error.limit, error.found, error.detail) == ("too_long", 1_000_000, 10_000_002, str(error))


def test_deep_nesting_is_refused_saying_the_limit_and_the_depth() -> None:
    error = refused("[" * 100_000)
    assert str(error) == "expected JSON nested at most 100 levels deep, got 100,000 levels"
    assert (error.reason, error.limit, error.found) == ("too_deep", 100, 100_000)
    assert str(refused('{"a": ' * 101 + "1" + "}" * 101)) == (
        "expected JSON nested at most 100 levels deep, got 101 levels"
    )


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    text = json.dumps({"text": "[{" * 5_000 + '\\"]' + "\\\\"})
    assert parse_model_json(text) == json.loads(text)


def test_an_unterminated_string_full_of_escaped_quotes_is_scanned_in_linear_time() -> None:
    assert refused('"' + '\\"[' * 300_000).reason == "invalid"
    assert growth(lambda quotes: refused('"' + '\\"[' * quotes), 30_000) < 40  # 100 or more if quadratic


def test_the_limits_can_be_set_per_call() -> None:
    assert str(refused("[[[]]]", max_depth=2)) == "expected JSON nested at most 2 levels deep, got 3 levels"
    assert str(refused("[1, 2]", max_chars=5)) == "expected at most 5 characters of JSON, got 6"
    check_model_json("[[[]]]", max_depth=3)


def test_invalid_json_is_refused_with_the_text_cut_short_and_the_parsers_words() -> None:
    error = refused("{city: Paris}")
    assert str(error) == ("expected JSON, got '{city: Paris}' (Expecting property name enclosed in double quotes)")
    assert (error.reason, error.detail) == ("invalid", "Expecting property name enclosed in double quotes")
    assert str(refused("x" * 500)) == f"expected JSON, got '{'x' * 200}'... (Expecting value)"


def test_an_integer_past_pythons_digit_limit_is_invalid_json_not_a_crash() -> None:
    assert refused("1" * 5_000).reason == "invalid"


def test_the_error_is_a_run_error_and_a_value_error() -> None:
    error = refused("[" * 1_000)
    assert isinstance(error, RunError)
    assert isinstance(error, ValueError)


def test_decode_reads_one_value_and_says_where_it_ends() -> None:
    text = 'x {"a": 1} , [2] tail'
    check_model_json(text)
    assert decode_model_json(text, 2) == ({"a": 1}, 10)
    assert decode_model_json(text, 13) == ([2], 16)
    with pytest.raises(ModelJSONError) as caught:
        decode_model_json(text, 17)
    assert str(caught.value) == "expected JSON, got 'tail' (Expecting value)"


def test_decode_of_nesting_nobody_checked_is_still_a_model_json_error() -> None:
    with pytest.raises(ModelJSONError):
        decode_model_json("[" * 100_000)

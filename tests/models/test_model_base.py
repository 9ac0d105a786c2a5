"""The models front door, tool choice validation and settings merging."""

from __future__ import annotations

import dataclasses
import re

import pytest

import batonflow.models
from batonflow.errors import UserError
from batonflow.models import (
    ChatModel,
    ForcedTool,
    JSONSchemaFormat,
    ModelSettings,
    OpenAIChatModel,
    ToolChoice,
    answer_format,
    check_tool_choice,
    merge_settings,
)
from batonflow.tools import ToolInfo

TOOLS = [ToolInfo(name="search", description="Search."), ToolInfo(name="transfer_to_agent", description="Hand over.")]


def test_public_names_are_pinned() -> None:
    assert batonflow.models.__all__ == [
        "ANSWER_PROMPT",
        "AnthropicChatModel",
        "ChatModel",
        "EmbeddingModel",
        "ForcedTool",
        "GeminiChatModel",
        "JSONSchemaFormat",
        "ModelSettings",
        "OpenAIChatModel",
        "OpenAIEmbeddingModel",
        "RetryingModel",
        "RouteByExamples",
        "TextScorer",
        "ToolChoice",
        "ToolThenAnswer",
        "answer_format",
        "answer_from_tool_results",
        "as_model",
        "check_tool_choice",
        "is_retryable_error",
        "load_embedding_model",
        "load_model",
        "merge_settings",
        "with_retry",
    ]


def test_forced_tool_is_a_frozen_hashable_value() -> None:
    choice = ForcedTool("search")

    assert choice == ForcedTool(name="search")
    assert {choice, ForcedTool("search")} == {choice}
    with pytest.raises(dataclasses.FrozenInstanceError):
        choice.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize("choice", [None, "auto", "none", "required", ForcedTool("transfer_to_agent")])
def test_valid_tool_choices_pass(choice: object) -> None:
    check_tool_choice(TOOLS, choice)  # type: ignore[arg-type]


def test_forced_tool_must_name_one_of_the_tools() -> None:
    with pytest.raises(UserError, match=r"expected one of \['search', 'transfer_to_agent'\], got 'transfer'"):
        check_tool_choice(TOOLS, ForcedTool("transfer"))


@pytest.mark.parametrize("tools", [None, []])
def test_tool_choice_without_tools_is_refused(tools: list[ToolInfo] | None) -> None:
    with pytest.raises(UserError, match="tool_choice 'auto' needs tools: expected at least one tool, got none"):
        check_tool_choice(tools, "auto")


def test_unknown_tool_choice_string_is_refused() -> None:
    with pytest.raises(UserError, match=r"expected 'auto', 'none', 'required' or ForcedTool\(name\), got 'any'"):
        check_tool_choice(TOOLS, "any")  # type: ignore[arg-type]


def test_settings_default_to_unset() -> None:
    assert dataclasses.astuple(ModelSettings()) == (None, None, None, None, None, None, None)
    with pytest.raises(TypeError):
        ModelSettings(0.5)  # type: ignore[misc]  # keyword-only


def test_merged_settings_take_the_override_where_set_and_merge_extra() -> None:
    base = ModelSettings(temperature=0.7, max_tokens=100, extra={"top_k": 40, "min_p": 0.1})
    override = ModelSettings(temperature=0.0, seed=1, extra={"top_k": 5})

    merged = merge_settings(base, override)

    assert merged == ModelSettings(temperature=0.0, max_tokens=100, seed=1, extra={"top_k": 5, "min_p": 0.1})
    assert base.extra == {"top_k": 40, "min_p": 0.1}  # inputs untouched


def test_merging_with_nothing_gives_the_other_settings() -> None:
    settings = ModelSettings(top_p=0.9)

    assert merge_settings(None, settings) is settings
    assert merge_settings(settings, None) is settings
    assert merge_settings(None, None) == ModelSettings()


# -- structured output -------------------------------------------------------------------------------------------

ANSWER = JSONSchemaFormat({"type": "object", "properties": {"city": {"type": "string"}}}, name="City")


def test_response_format_is_a_setting_that_merges_like_the_others() -> None:
    base = ModelSettings(temperature=0.0, response_format=ANSWER)
    other = JSONSchemaFormat({"type": "integer"})

    assert merge_settings(base, ModelSettings(max_tokens=9)).response_format is ANSWER
    assert merge_settings(base, ModelSettings(response_format=other)).response_format is other


def test_response_format_must_be_a_json_schema_format() -> None:
    with pytest.raises(UserError, match=r"expected a JSONSchemaFormat\(schema, .*\), got \{'type': 'json_object'\}"):
        ModelSettings(response_format={"type": "json_object"})  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["", "has space", "x" * 65, "naïve"])
def test_json_schema_format_name_follows_openai_rule(name: str) -> None:
    with pytest.raises(UserError, match=rf"expected 1 to 64 letters, digits, '_' or '-' .*got {re.escape(repr(name))}"):
        JSONSchemaFormat({"type": "object"}, name=name)


def test_json_schema_format_schema_must_be_a_dict() -> None:
    with pytest.raises(UserError, match=r"expected a JSON Schema dict, got '\{\}'"):
        JSONSchemaFormat("{}")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("tools", "choice", "applies"),
    [
        (None, None, True),
        ([], None, True),
        (TOOLS, "none", True),
        (TOOLS, None, False),
        (TOOLS, "auto", False),
        (TOOLS, "required", False),
        (TOOLS, ForcedTool("search"), False),
    ],
)
def test_answer_format_applies_only_where_no_tool_call_can_follow(
    tools: list[ToolInfo] | None, choice: ToolChoice | None, applies: bool
) -> None:
    settings = ModelSettings(response_format=ANSWER)

    assert answer_format(settings, tools, choice) is (ANSWER if applies else None)
    assert answer_format(ModelSettings(), tools, choice) is None


def test_openai_model_satisfies_the_chat_model_protocol() -> None:
    assert isinstance(OpenAIChatModel("m", base_url="http://127.0.0.1:1/v1"), ChatModel)

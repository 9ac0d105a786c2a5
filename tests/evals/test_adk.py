"""Google ADK's ``.evalset.json`` files imported: snake_case and camelCase, tool uses as an exact trajectory, the
final response as a ROUGE-1 check, rubrics, session state; what cannot be imported is named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from batonflow.evals import AnswerCheck, EvalSetError, ToolUse, Trajectory, load_eval_set, parse_eval_set

ADK = {
    "eval_set_id": "home_automation",
    "name": "Home automation",
    "description": "lights and thermostat",
    "creation_timestamp": 1.0,
    "eval_cases": [
        {
            "eval_id": "lights_off",
            "creation_timestamp": 2.0,
            "conversation": [
                {
                    "invocation_id": "e-1",
                    "user_content": {
                        "parts": [{"text": "Turn off the lights"}, {"text": "in the kitchen."}],
                        "role": "user",
                    },
                    "final_response": {"parts": [{"text": "The kitchen lights are off."}], "role": "model"},
                    "intermediate_data": {
                        "tool_uses": [{"id": "adk-1", "name": "set_light", "args": {"room": "kitchen", "on": False}}],
                        "tool_responses": [],
                        "intermediate_responses": [],
                    },
                    "rubrics": [{"rubric_id": "r1", "rubric_content": {"text_property": "Confirms the room."}}],
                },
                {
                    "user_content": {"parts": [{"text": "Thanks!"}]},
                    "intermediate_data": {"tool_uses": []},
                },
            ],
            "session_input": {"app_name": "home", "user_id": "u", "state": {"house": "A"}},
            "rubrics": [{"rubric_id": "r2", "rubric_content": {"text_property": "Is polite."}}],
        }
    ],
}


def _camel(value: object) -> object:
    """ADK's aliases: every field name of its models in camelCase (tool arguments are left as they are)."""
    if isinstance(value, list):
        return [_camel(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        head, *rest = key.split("_")
        out[head + "".join(p.title() for p in rest)] = item if key == "args" else _camel(item)
    return out


@pytest.mark.parametrize("data", [ADK, _camel(ADK)], ids=["snake_case", "camelCase"])
def test_an_adk_eval_set_becomes_cases_of_turns(data: object) -> None:
    eval_set = parse_eval_set(json.dumps(data), format="json")

    assert (eval_set.name, eval_set.description) == ("home_automation", "lights and thermostat")
    (case,) = eval_set.cases
    assert case.id == "lights_off"
    assert case.session_values == {"house": "A"}
    first, second = case.turns
    assert first.input == "Turn off the lights\nin the kitchen."
    assert first.trajectory == Trajectory(
        mode="exact", tools=(ToolUse(name="set_light", args={"room": "kitchen", "on": False}),)
    )
    assert first.answer == (AnswerCheck(kind="similar", value="The kitchen lights are off.", threshold=0.8),)
    assert first.rubrics == ("Confirms the room.",)
    assert second.input == "Thanks!"
    assert second.trajectory == Trajectory(mode="exact", tools=())
    assert second.answer == ()
    assert second.rubrics == ("Is polite.",)  # the case's rubrics grade its last answer


def test_invocation_events_give_the_function_calls(tmp_path: Path) -> None:
    data = {
        "eval_set_id": "s",
        "eval_cases": [
            {
                "eval_id": "c",
                "conversation": [
                    {
                        "user_content": {"parts": [{"text": "hi"}]},
                        "intermediate_data": {
                            "invocation_events": [
                                {
                                    "author": "a",
                                    "content": {"parts": [{"function_call": {"name": "look", "args": {"q": 1}}}]},
                                },
                                {"author": "a", "content": {"parts": [{"text": "thinking"}]}},
                            ]
                        },
                    }
                ],
            }
        ],
    }
    path = tmp_path / "home.evalset.json"
    path.write_text(json.dumps(data))

    eval_set = load_eval_set(path)

    assert eval_set.cases[0].turns[0].trajectory == Trajectory(
        mode="exact", tools=(ToolUse(name="look", args={"q": 1}),)
    )


def _case(**fields: object) -> str:
    case = {"eval_id": "c", "conversation": [{"user_content": {"parts": [{"text": "hi"}]}}], **fields}
    return json.dumps({"eval_set_id": "s", "eval_cases": [case]})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            json.dumps({"eval_set_id": "s", "eval_cases": []}),
            "adk, eval_cases: expected a non-empty list of eval cases, got an empty list",
        ),
        (
            json.dumps({"eval_set_id": "s", "eval_cases": [{"conversation": []}]}),
            "adk, eval_cases[0]: expected eval_id, a non-empty text, got nothing",
        ),
        (
            _case(conversation=None, conversation_scenario={"starting_prompt": "hi"}),
            "case 'c': expected a conversation (batonflow replays given user turns), got a conversation_scenario (ADK's simulated user, which batonflow does not have)",
        ),
        (
            _case(conversation=[{"user_content": {"parts": []}}]),
            "case 'c', conversation[0].user_content: expected user_content with text parts, got no text",
        ),
        (
            _case(conversation=[{"user_content": "hi"}]),
            "case 'c', conversation[0].user_content: expected a content (a mapping with parts), got str",
        ),
        (
            _case(
                conversation=[
                    {"user_content": {"parts": [{"text": "hi"}]}, "intermediate_data": {"tool_uses": [{"args": {}}]}}
                ]
            ),
            "case 'c', conversation[0].intermediate_data.tool_uses[0]: expected a function call with a name, got dict",
        ),
        (
            _case(rubrics=[{"rubric_id": "r"}]),
            "case 'c', rubrics[0]: expected rubric_content.text_property, a text, got dict",
        ),
        (_case(session_input={"state": [1]}), "case 'c', session_input.state: expected a mapping, got list"),
    ],
)
def test_an_adk_file_that_cannot_be_imported_says_where_and_why(text: str, message: str) -> None:
    with pytest.raises(EvalSetError) as caught:
        parse_eval_set(text, format="json", source="adk")
    assert str(caught.value) == message

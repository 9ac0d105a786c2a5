"""The dict converters shared by the OpenAI SDK provider and in-process llama.cpp."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from batonflow.models import JSONSchemaFormat, ModelSettings
from batonflow.models.openai_format import (
    chat_request,
    chunk_to_message,
    completion_to_message,
    message_to_openai,
    response_format_to_openai,
)
from batonflow.schema import FunctionCall, Message, TextPart, ToolCall, Usage, concat_messages, user
from batonflow.tools import ToolInfo


def test_user_text_parts_without_content_are_sent_as_a_content_list() -> None:
    assert message_to_openai(user([TextPart(text="a"), TextPart(text="b")])) == {
        "role": "user",
        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
    }


def test_assistant_text_with_tool_calls_keeps_both() -> None:
    call = ToolCall(id="c1", function=FunctionCall(name="f", arguments="{}"))
    message = Message(role="assistant", content="Checking.", tool_calls=[call], name="router")

    assert message_to_openai(message) == {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        "name": "router",
    }


def test_completion_without_usage_or_choices_still_gives_an_assistant_message() -> None:
    message = completion_to_message({"choices": []})

    assert (message.role, message.content, message.tool_calls) == ("assistant", "", [])
    assert message.response_meta is not None
    assert message.response_meta.usage is None


def test_completion_keeps_logprobs_content() -> None:
    logprob = {"token": "Hi", "logprob": -0.1, "bytes": None, "top_logprobs": []}
    data = {"choices": [{"message": {"content": "Hi"}, "finish_reason": "stop", "logprobs": {"content": [logprob]}}]}

    message = completion_to_message(data)

    assert message.response_meta is not None
    assert message.response_meta.logprobs == [logprob]


def test_chunk_that_carries_nothing_is_dropped() -> None:
    assert (
        chunk_to_message({"choices": [{"delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}) is None
    )
    assert chunk_to_message({"choices": [], "usage": None}) is None


def test_usage_only_chunk_becomes_a_meta_chunk() -> None:
    message = chunk_to_message(
        {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}
    )

    assert message is not None
    assert message.response_meta is not None
    assert message.response_meta.usage == Usage(prompt_tokens=3, completion_tokens=2, total_tokens=5)


def _tool_call_chunks(arguments: list[str], data: st.DataObject) -> list[dict[str, Any]]:
    """OpenAI-style deltas for one call per argument string, split at random points, interleaved at random."""
    pending: list[list[dict[str, Any]]] = []
    for index, text in enumerate(arguments):
        cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=4)))
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        head = {"index": index, "id": f"call_{index}", "type": "function", "function": {"name": f"tool_{index}"}}
        deltas = [head] + [{"index": index, "function": {"arguments": piece}} for piece in pieces]
        pending.append(deltas)
    chunks = []
    while any(pending):
        queue = data.draw(st.sampled_from([q for q in pending if q]))
        chunks.append({"choices": [{"delta": {"tool_calls": [queue.pop(0)]}, "finish_reason": None}]})
    return chunks


@given(
    arguments=st.lists(st.dictionaries(st.text(max_size=5), st.integers()), min_size=1, max_size=3),
    data=st.data(),
)
def test_interleaved_tool_call_deltas_concat_back_to_the_calls(
    arguments: list[dict[str, int]], data: st.DataObject
) -> None:
    texts = [json.dumps(a) for a in arguments]
    chunks = [m for c in _tool_call_chunks(texts, data) if (m := chunk_to_message(c)) is not None]

    merged = concat_messages(chunks)

    assert [(c.index, c.id, c.function.name) for c in merged.tool_calls] == [
        (i, f"call_{i}", f"tool_{i}") for i in range(len(texts))
    ]
    assert [json.loads(c.function.arguments) for c in merged.tool_calls] == arguments


# -- structured output ---------------------------------------------------------------------------------------------

CITY = JSONSchemaFormat(
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}, name="City"
)
LOOKUP = ToolInfo(name="lookup", description="Look something up.")


def test_response_format_is_sent_in_openai_json_schema_form() -> None:
    body = chat_request([user("hi")], tools=None, tool_choice=None, settings=ModelSettings(response_format=CITY))

    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "City", "schema": dict(CITY.schema), "strict": False},
    }


def test_llama_cpp_form_puts_the_schema_beside_the_type() -> None:
    assert response_format_to_openai(CITY, "json_object") == {"type": "json_object", "schema": dict(CITY.schema)}


def test_response_format_is_left_out_where_the_model_may_call_a_tool() -> None:
    settings = ModelSettings(response_format=CITY)

    with_tools = chat_request([user("hi")], tools=[LOOKUP], tool_choice=None, settings=settings)
    tools_off = chat_request([user("hi")], tools=[LOOKUP], tool_choice="none", settings=settings)

    assert "response_format" not in with_tools
    assert tools_off["response_format"]["type"] == "json_schema"

"""Answers carry whatever text a run made: a lone surrogate from a model or a tool is escaped as JSON's
``"\\ud800"``, never a 500 or an SSE stream cut short, and the conversation it reached stays readable."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from batonflow import ChatModelAgent
from batonflow.distributed import delta_text
from batonflow.schema import assistant
from batonflow.server import create_app
from batonflow.server._wire import json_text
from batonflow.testing import FunctionModel

from .conftest import asgi_client, parse_sse


def odd() -> ChatModelAgent:
    model = FunctionModel(lambda messages, tools: assistant("half a pair: \ud83d, and é"))
    return ChatModelAgent(name="odd", description="Answers with a lone surrogate.", model=model)


def test_json_text_escapes_only_when_utf_8_cannot_carry_the_text() -> None:
    assert json_text({"a": "é"}) == '{"a": "é"}'
    assert json_text({"a": "\ud83d é"}) == '{"a": "\\ud83d \\u00e9"}'
    assert json.loads(json_text({"a": "\ud83d"})) == {"a": "\ud83d"}


TEXT = st.text(st.characters(exclude_categories=()))  # lone surrogates too


@given(st.integers(min_value=0, max_value=2**63), TEXT, TEXT)
def test_a_deltas_text_made_directly_is_the_text_of_its_data(seq: int, content: str, reasoning: str) -> None:
    data = {"seq": seq, "content": content, **({"reasoning": reasoning} if reasoning else {})}
    assert delta_text(seq, content, reasoning) == json_text(data)


def test_a_deltas_text_with_a_lone_surrogate_is_escaped_as_any_frame_is() -> None:
    assert delta_text(3, "é \ud83d", "\n") == '{"seq": 3, "content": "\\u00e9 \\ud83d", "reasoning": "\\n"}'
    assert delta_text(1, 'say "é"') == '{"seq": 1, "content": "say \\"é\\""}'


async def test_a_lone_surrogate_a_model_made_is_escaped_in_every_answer() -> None:
    async with asgi_client(create_app([odd()])) as client:
        answered = await client.post("/runs", json={"agent": "odd", "input": "x", "session_id": "s1"})
        streamed = await client.post("/runs", json={"agent": "odd", "input": "x", "stream": True})
        session = await client.get("/sessions/s1")
        completion = await client.post(
            "/v1/chat/completions", json={"model": "odd", "messages": [{"role": "user", "content": "x"}]}
        )
        chunks = await client.post(
            "/v1/chat/completions",
            json={"model": "odd", "messages": [{"role": "user", "content": "x"}], "stream": True},
        )
    text = "half a pair: \ud83d, and é"
    assert answered.status_code == 200 and answered.json()["text"] == text
    events = parse_sse(streamed.text)
    assert events[-1].event == "end" and events[-1].data["text"] == text
    assert session.status_code == 200 and session.json()["messages"][-1]["content"] == text
    assert completion.json()["choices"][0]["message"]["content"] == text
    assert parse_sse(chunks.text)[-1].data == "[DONE]"

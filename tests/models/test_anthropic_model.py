"""AnthropicChatModel against a fake Messages API on loopback that answers in Anthropic's wire format."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest

from batonflow.adk import ChatModelAgent, Runner
from batonflow.errors import (
    ModelConnectionError,
    ModelError,
    ModelHTTPError,
    ModelResponseError,
    ModelTimeoutError,
    UserError,
)
from batonflow.models import (
    AnthropicChatModel,
    ForcedTool,
    JSONSchemaFormat,
    ModelSettings,
    RetryingModel,
    ToolChoice,
    is_retryable_error,
    load_model,
)
from batonflow.schema import (
    AudioPart,
    FunctionCall,
    ImagePart,
    Message,
    ToolCall,
    Usage,
    assistant,
    concat_message_stream,
    concat_messages,
    system,
    tool_message,
    user,
)
from batonflow.tools import ToolInfo, tool

from .fake_api import FakeAPI, Reply, json_reply, serving, sse_reply

WEATHER = ToolInfo(
    name="get_weather",
    description="The weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def message(content: list[dict[str, Any]], stop_reason: str = "end_turn") -> dict[str, Any]:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 25, "output_tokens": 12, "cache_read_input_tokens": 5},
    }


def text_message(text: str) -> Reply:
    return json_reply(message([{"type": "text", "text": text}]))


def tool_use_message(name: str, arguments: dict[str, Any], id: str = "toolu_01") -> Reply:
    return json_reply(message([{"type": "tool_use", "id": id, "name": name, "input": arguments}], "tool_use"))


def stream_events(blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]], stop_reason: str) -> Reply:
    """An SSE answer as Anthropic streams it: each block's start, its deltas, its stop; then the usage."""
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": {**message([], None), "usage": {"input_tokens": 25, "output_tokens": 1}}}),  # type: ignore[arg-type]
        ("ping", {"type": "ping"}),
    ]  # fmt: skip
    for index, (start, deltas) in enumerate(blocks):
        events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}))
        for delta in deltas:
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None}, "usage": {"output_tokens": 15}},
        )
    )  # fmt: skip
    events.append(("message_stop", {"type": "message_stop"}))
    return sse_reply(events)


def text_block(*pieces: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    return {"type": "text", "text": ""}, [{"type": "text_delta", "text": p} for p in pieces]


def tool_block(id: str, name: str, *pieces: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    start = {"type": "tool_use", "id": id, "name": name, "input": {}}
    return start, [{"type": "input_json_delta", "partial_json": p} for p in pieces]


def error_reply(status: int, kind: str, text: str, **headers: str) -> Reply:
    return json_reply({"type": "error", "error": {"type": kind, "message": text}}, status, **headers)


def model_for(url: str, **kwargs: Any) -> AnthropicChatModel:
    return AnthropicChatModel("claude-test", api_key="test-key", base_url=url, **kwargs)


async def test_a_plain_answer_sends_the_system_prompt_apart_and_reports_usage() -> None:
    api = FakeAPI(text_message("Paris."))
    async with serving(api) as url:
        answer = await model_for(url).generate(
            [system("Be brief."), user("Capital of France?")], settings=ModelSettings(temperature=0.2, stop=["END"])
        )

    request = api.requests[0]
    assert request.path == "/v1/messages"
    assert "test-key" in request.headers.get("x-api-key", request.headers.get("authorization", ""))
    assert api.body == {
        "model": "claude-test",
        "system": "Be brief.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Capital of France?"}]}],
        "max_tokens": 4096,
        "temperature": 0.2,
        "stop_sequences": ["END"],
        "stream": False,
    }
    assert answer.content == "Paris."
    assert answer.response_meta is not None and answer.response_meta.finish_reason == "stop"
    assert answer.response_meta.usage == Usage(prompt_tokens=30, completion_tokens=12, total_tokens=42, cached_tokens=5)


async def test_a_tool_round_trip_is_sent_as_tool_use_and_tool_result_blocks() -> None:
    api = FakeAPI(text_message("Sunny in Paris."))
    call = ToolCall(index=0, id="toolu_01", function=FunctionCall(name="get_weather", arguments='{"city": "Paris"}'))
    history = [
        user("Weather in Paris?"),
        assistant("", tool_calls=[call]),
        tool_message("sunny", tool_call_id="toolu_01"),
    ]
    async with serving(api) as url:
        await model_for(url, max_tokens=100).generate(history, tools=[WEATHER])

    assert api.body["max_tokens"] == 100
    assert api.body["tools"] == [
        {"name": "get_weather", "description": "The weather in a city.", "input_schema": WEATHER.parameters}
    ]
    assert api.body["messages"][1:] == [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "sunny"}]},
    ]  # fmt: skip


async def test_thinking_is_the_reasoning_and_images_go_as_image_blocks() -> None:
    thought = [
        {"type": "thinking", "thinking": "Paris, surely.", "signature": "sig"},
        {"type": "text", "text": "Paris."},
    ]
    api = FakeAPI(json_reply(message(thought)))
    picture = Message(
        role="user",
        content="Where is this?",
        parts=[ImagePart(url="data:image/png;base64,iVBORw0K"), ImagePart(url="https://example.com/eiffel.jpg")],
    )
    async with serving(api) as url:
        answer = await model_for(url).generate([picture])

    assert (answer.reasoning_content, answer.content) == ("Paris, surely.", "Paris.")
    assert api.body["messages"][0]["content"] == [
        {"type": "text", "text": "Where is this?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/eiffel.jpg"}},
    ]


async def test_audio_is_refused_before_anything_is_sent() -> None:
    api = FakeAPI(text_message("never"))
    async with serving(api) as url:
        with pytest.raises(UserError, match="expected no audio part"):
            await model_for(url).generate([Message(role="user", parts=[AudioPart(data="AAAA")])])
    assert api.requests == []


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", {"type": "auto"}),
        ("required", {"type": "any"}),
        ("none", {"type": "none"}),
        (ForcedTool("get_weather"), {"type": "tool", "name": "get_weather"}),
    ],
)
async def test_tool_choice_maps_to_anthropics(choice: ToolChoice, expected: dict[str, Any]) -> None:
    api = FakeAPI(tool_use_message("get_weather", {"city": "Oslo"}))
    async with serving(api) as url:
        answer = await model_for(url).generate([user("Weather?")], tools=[WEATHER], tool_choice=choice)

    assert api.body["tool_choice"] == expected
    assert answer.tool_calls == [
        ToolCall(index=0, id="toolu_01", function=FunctionCall(name="get_weather", arguments='{"city": "Oslo"}'))
    ]
    assert answer.response_meta is not None and answer.response_meta.finish_reason == "tool_calls"


async def test_a_streamed_answer_arrives_in_text_deltas_with_usage_at_the_end() -> None:
    api = FakeAPI(stream_events([text_block("Hel", "lo", "!")], "end_turn"))
    async with serving(api) as url:
        chunks = await model_for(url).stream([user("hi")]).collect()

    assert api.body["stream"] is True
    assert [c.content for c in chunks if c.content] == ["Hel", "lo", "!"]
    answer = concat_messages(chunks)
    assert answer.content == "Hello!"
    assert answer.response_meta is not None and answer.response_meta.finish_reason == "stop"
    assert answer.response_meta.usage == Usage(prompt_tokens=25, completion_tokens=15, total_tokens=40)


async def test_a_streamed_tool_call_reassembles_from_input_json_deltas() -> None:
    api = FakeAPI(
        stream_events(
            [text_block("Let me look."), tool_block("toolu_1", "get_weather", '{"ci', 'ty": "Par', 'is"}'), tool_block("toolu_2", "get_time")],
            "tool_use",
        )
    )  # fmt: skip
    async with serving(api) as url:
        answer = await concat_message_stream(model_for(url).stream([user("Weather?")], tools=[WEATHER]))

    assert answer.content == "Let me look."
    assert [(c.id, c.function.name, c.function.arguments) for c in answer.tool_calls] == [
        ("toolu_1", "get_weather", '{"city": "Paris"}'),
        ("toolu_2", "get_time", "{}"),
    ]
    assert answer.response_meta is not None and answer.response_meta.finish_reason == "tool_calls"
    assert answer.response_meta.usage is not None and answer.response_meta.usage.completion_tokens == 15


CITY = JSONSchemaFormat(
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}, name="city"
)


async def test_structured_output_is_a_forced_tool_whose_input_is_the_answer() -> None:
    api = FakeAPI(tool_use_message("city", {"city": "Paris"}))
    async with serving(api) as url:
        answer = await model_for(url).generate(
            [user("Capital of France?")], settings=ModelSettings(response_format=CITY)
        )

    assert api.body["tools"] == [{"name": "city", "description": "Give the answer.", "input_schema": dict(CITY.schema)}]
    assert api.body["tool_choice"] == {"type": "tool", "name": "city"}
    assert json.loads(answer.content) == {"city": "Paris"} and not answer.tool_calls
    assert answer.response_meta is not None and answer.response_meta.finish_reason == "stop"


async def test_streamed_structured_output_is_the_text_of_the_forced_tools_input() -> None:
    api = FakeAPI(stream_events([tool_block("toolu_1", "city", '{"city":', ' "Paris"}')], "tool_use"))
    async with serving(api) as url:
        stream = model_for(url).stream([user("Capital of France?")], settings=ModelSettings(response_format=CITY))
        answer = await concat_message_stream(stream)

    assert json.loads(answer.content) == {"city": "Paris"} and not answer.tool_calls


@pytest.mark.parametrize(
    ("reply", "status", "retryable", "said"),
    [
        (error_reply(429, "rate_limit_error", "Number of request tokens has exceeded your rate limit.", **{"retry-after": "7"}), 429, True, "rate_limit_error: Number of request tokens"),
        (error_reply(529, "overloaded_error", "Overloaded"), 529, True, "overloaded_error: Overloaded"),
        (error_reply(500, "api_error", "Internal server error"), 500, True, "api_error: Internal server error"),
        (error_reply(400, "invalid_request_error", "max_tokens: Field required"), 400, False, "invalid_request_error: max_tokens: Field required"),
        (error_reply(401, "authentication_error", "invalid x-api-key"), 401, False, "authentication_error: invalid x-api-key"),
        (error_reply(404, "not_found_error", "model: claude-nope"), 404, False, "not_found_error: model: claude-nope"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("streamed", [False, True])
async def test_an_error_answer_is_a_typed_error_naming_the_status_and_the_providers_message(
    reply: Reply, status: int, retryable: bool, said: str, streamed: bool
) -> None:
    async with serving(FakeAPI(reply)) as url:
        model = model_for(url)
        call = model.stream([user("hi")]).collect() if streamed else model.generate([user("hi")])
        with pytest.raises(ModelHTTPError) as caught:
            await call

    assert caught.value.status_code == status
    assert f"HTTP {status}: {said}" in str(caught.value)
    assert is_retryable_error(caught.value) is retryable
    assert caught.value.retry_after == (7.0 if status == 429 else None)


@pytest.mark.parametrize(
    ("headers", "low", "high"),
    [({"retry-after": "2.5"}, 2.5, 2.5), ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5, 1.5), ("date", 20, 30)],
)
async def test_retry_after_is_read_in_seconds_milliseconds_or_as_an_http_date(
    headers: dict[str, str] | str, low: float, high: float
) -> None:
    if headers == "date":
        headers = {"retry-after": format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)}
    assert isinstance(headers, dict)
    async with serving(FakeAPI(error_reply(429, "rate_limit_error", "slow down", **headers))) as url:
        with pytest.raises(ModelHTTPError) as caught:
            await model_for(url).generate([user("hi")])

    assert caught.value.retry_after is not None and low <= caught.value.retry_after <= high


async def test_an_overloaded_error_event_inside_a_stream_is_a_retryable_529() -> None:
    events = [
        ("message_start", {"type": "message_start", "message": message([], None)}),  # type: ignore[arg-type]
        ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ]
    async with serving(FakeAPI(sse_reply(events))) as url:
        with pytest.raises(ModelHTTPError) as caught:
            await model_for(url).stream([user("hi")]).collect()

    assert caught.value.status_code == 529 and is_retryable_error(caught.value)
    assert "HTTP 529: overloaded_error: Overloaded" in str(caught.value)


@pytest.mark.parametrize(
    "reply",
    [
        Reply(body=b"<html><title>Login</title></html>", content_type="text/html"),
        Reply(body=b"not json at all"),
        json_reply({"hello": "world"}),
    ],
)
async def test_a_garbage_body_with_a_success_status_is_a_response_error(reply: Reply) -> None:
    async with serving(FakeAPI(reply)) as url:
        with pytest.raises(ModelResponseError) as caught:
            await model_for(url).generate([user("hi")])
        with pytest.raises(ModelResponseError):
            await model_for(url).stream([user("hi")]).collect()

    assert "expected a message object" in str(caught.value) and not is_retryable_error(caught.value)


@pytest.mark.parametrize(
    "events",
    [
        [("message_start", "{not json")],
        [("message_start", {"type": "message_start", "message": message([], None)})],  # ends without a stop reason
    ],
)
async def test_a_broken_or_cut_stream_is_a_model_error(events: list[tuple[str, Any]]) -> None:
    async with serving(FakeAPI(sse_reply(events))) as url:
        with pytest.raises(ModelError, match="request failed"):
            await model_for(url).stream([user("hi")]).collect()


@pytest.mark.parametrize("streamed", [False, True])
async def test_a_server_that_is_not_there_or_too_slow_is_a_retryable_error(streamed: bool) -> None:
    def call(model: Any) -> Any:
        return model.stream([user("hi")]).collect() if streamed else model.generate([user("hi")])

    refused = model_for("http://127.0.0.1:9")  # the discard port: nothing listens there
    with pytest.raises(ModelConnectionError) as caught:
        await call(refused)
    assert "127.0.0.1:9" in str(caught.value) and is_retryable_error(caught.value)

    async with serving(FakeAPI(Reply(delay=30))) as url:
        with pytest.raises(ModelTimeoutError) as late:
            await call(model_for(url, timeout=0.2))
    assert is_retryable_error(late.value)


async def test_retrying_waits_the_retry_after_a_429_asks_for() -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    api = FakeAPI(error_reply(429, "rate_limit_error", "slow down", **{"retry-after": "3"}), text_message("ok"))
    async with serving(api) as url:
        answer = await RetryingModel(model_for(url), sleep=sleep).generate([user("hi")])

    assert answer.content == "ok" and waits == [3.0] and len(api.requests) == 2


async def test_a_retry_after_longer_than_max_delay_is_not_retried() -> None:
    api = FakeAPI(error_reply(429, "rate_limit_error", "slow down", **{"retry-after": "120"}), text_message("ok"))
    async with serving(api) as url:
        with pytest.raises(ModelHTTPError) as caught:
            await RetryingModel(model_for(url), max_delay=10).generate([user("hi")])

    assert len(api.requests) == 1
    assert any("asked to wait 120 s" in note for note in caught.value.__notes__)


@tool(threaded=False)
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@pytest.mark.parametrize("streaming", [False, True])
async def test_an_agent_on_claude_calls_a_tool_and_answers(streaming: bool) -> None:
    if streaming:
        replies = [
            stream_events([tool_block("toolu_1", "get_weather", '{"city": "Paris"}')], "tool_use"),
            stream_events([text_block("It is ", "sunny.")], "end_turn"),
        ]
    else:
        replies = [tool_use_message("get_weather", {"city": "Paris"}, "toolu_1"), text_message("It is sunny.")]
    api = FakeAPI(*replies)
    async with serving(api) as url:
        agent = ChatModelAgent(name="weather", model=model_for(url), tools=[get_weather])
        result = await Runner(agent, enable_streaming=streaming).call("Weather in Paris?")

    assert result.text == "It is sunny."
    tool_result = api.requests[1].body["messages"][-1]
    assert tool_result == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny in Paris"}],
    }
    assert result.metrics is not None and result.metrics.total.prompt_tokens > 0


def test_a_missing_api_key_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(UserError, match="ANTHROPIC_API_KEY"):
        load_model("anthropic:claude-test")


def test_load_model_names_a_claude_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env")
    model = load_model("anthropic:claude-sonnet-4-5", max_tokens=256)

    assert isinstance(model, AnthropicChatModel)
    assert model.model_name == "claude-sonnet-4-5" and model.max_tokens == 256


def test_without_the_sdk_the_model_names_the_extra_to_install() -> None:
    code = (
        "import sys\n"
        "sys.modules['anthropic'] = None\n"
        "from batonflow.errors import UserError\n"
        "from batonflow.models import load_model\n"
        "try:\n"
        "    load_model('anthropic:claude-test', api_key='k')\n"
        "except UserError as error:\n"
        "    print(error)\n"
    )
    said = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)

    assert said.stdout.strip() == "AnthropicChatModel needs the 'anthropic' package: pip install 'batonflow[anthropic]'"

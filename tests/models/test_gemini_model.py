"""GeminiChatModel against a fake Gemini API on loopback that answers in its wire format (camelCase JSON;
``streamGenerateContent?alt=sse`` for streams)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
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
    ForcedTool,
    GeminiChatModel,
    JSONSchemaFormat,
    ModelSettings,
    RetryingModel,
    ToolChoice,
    is_retryable_error,
    load_model,
)
from batonflow.schema import (
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
USAGE = {"promptTokenCount": 21, "candidatesTokenCount": 9, "totalTokenCount": 30}


def response(
    parts: list[dict[str, Any]], finish: str | None = "STOP", usage: dict[str, Any] | None = USAGE
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    body: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-test", "responseId": "r1"}
    if usage:
        body["usageMetadata"] = usage
    return body


def camel(value: Any) -> Any:
    """``value`` with every key in lower camel case, the spelling of Gemini's API reference."""
    if isinstance(value, dict):
        return {re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k): camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [camel(v) for v in value]
    return value


def text_reply(text: str) -> Reply:
    return json_reply(response([{"text": text}]))


def call_reply(name: str, args: dict[str, Any], **extra: Any) -> Reply:
    return json_reply(response([{"functionCall": {"name": name, "args": args}, **extra}]))


def error_reply(code: int, status: str, text: str, **headers: str) -> Reply:
    return json_reply({"error": {"code": code, "message": text, "status": status}}, code, **headers)


def model_for(url: str, **kwargs: Any) -> GeminiChatModel:
    return GeminiChatModel("gemini-test", api_key="test-key", base_url=url, **kwargs)


async def test_a_plain_answer_sends_the_system_instruction_and_reports_usage() -> None:
    api = FakeAPI(text_reply("Paris."))
    async with serving(api) as url:
        answer = await model_for(url).generate(
            [system("Be brief."), user("Capital of France?")],
            settings=ModelSettings(temperature=0.2, max_tokens=50, stop=["END"], extra={"top_k": 20}),
        )

    request = api.requests[0]
    assert request.path.endswith("/models/gemini-test:generateContent")
    assert request.headers["x-goog-api-key"] == "test-key"
    assert api.body["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    assert api.body["contents"] == [{"role": "user", "parts": [{"text": "Capital of France?"}]}]
    assert api.body["generationConfig"] == {
        "temperature": 0.2,
        "maxOutputTokens": 50,
        "stopSequences": ["END"],
        "topK": 20,
    }
    assert answer.content == "Paris."
    assert answer.response_meta is not None and answer.response_meta.finish_reason == "stop"
    assert answer.response_meta.usage == Usage(prompt_tokens=21, completion_tokens=9, total_tokens=30)


async def test_a_tool_round_trip_is_sent_as_function_call_and_function_response_parts() -> None:
    api = FakeAPI(text_reply("Sunny."))
    call = ToolCall(
        index=0,
        id="call-7",
        function=FunctionCall(name="get_weather", arguments='{"city": "Paris"}'),
        extra={"thought_signature": "c2lnbmF0dXJl"},
    )
    history = [user("Weather?"), assistant("", tool_calls=[call]), tool_message("sunny", tool_call_id="call-7")]
    async with serving(api) as url:
        await model_for(url).generate(history, tools=[WEATHER])

    [declaration] = api.body["tools"][0]["functionDeclarations"]
    # The SDK sends this field in snake case (the API reads both spellings of a field, as protobuf's JSON does).
    schema = declaration.pop("parametersJsonSchema", None) or declaration.pop("parameters_json_schema")
    assert (declaration, schema) == (
        {"name": "get_weather", "description": "The weather in a city."},
        WEATHER.parameters,
    )
    assert api.body["contents"][1:] == [
        {"role": "model", "parts": [{"functionCall": {"id": "call-7", "name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "c2lnbmF0dXJl"}]},
        {"role": "user", "parts": [{"functionResponse": {"id": "call-7", "name": "get_weather", "response": {"result": "sunny"}}}]},
    ]  # fmt: skip


async def test_thought_parts_are_the_reasoning_and_images_go_as_inline_data_or_file_data() -> None:
    usage = {**USAGE, "thoughtsTokenCount": 4, "totalTokenCount": 34, "cachedContentTokenCount": 8}
    api = FakeAPI(json_reply(response([{"text": "Paris, surely.", "thought": True}, {"text": "Paris."}], usage=usage)))
    picture = Message(
        role="user",
        content="Where is this?",
        parts=[ImagePart(url="data:image/png;base64,iVBORw0K"), ImagePart(url="https://example.com/eiffel.jpg")],
    )
    async with serving(api) as url:
        answer = await model_for(url).generate([picture])

    assert (answer.reasoning_content, answer.content) == ("Paris, surely.", "Paris.")
    assert answer.response_meta is not None and answer.response_meta.usage == Usage(
        prompt_tokens=21, completion_tokens=13, total_tokens=34, cached_tokens=8, reasoning_tokens=4
    )
    # The SDK sends some nested fields in snake case (the API reads both spellings, as protobuf's JSON does).
    assert camel(api.body["contents"][0]["parts"]) == [
        {"text": "Where is this?"},
        {"inlineData": {"mimeType": "image/png", "data": "iVBORw0K"}},
        {"fileData": {"fileUri": "https://example.com/eiffel.jpg"}},
    ]


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", {"mode": "AUTO"}),
        ("required", {"mode": "ANY"}),
        ("none", {"mode": "NONE"}),
        (ForcedTool("get_weather"), {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}),
    ],
)
async def test_tool_choice_is_the_function_calling_mode(choice: ToolChoice, expected: dict[str, Any]) -> None:
    api = FakeAPI(call_reply("get_weather", {"city": "Oslo"}, thoughtSignature="c2ln"))
    async with serving(api) as url:
        answer = await model_for(url).generate([user("Weather?")], tools=[WEATHER], tool_choice=choice)

    assert api.body["toolConfig"] == {"functionCallingConfig": expected}
    [call] = answer.tool_calls
    assert (call.function.name, json.loads(call.function.arguments)) == ("get_weather", {"city": "Oslo"})
    assert call.id and call.extra == {"thought_signature": "c2ln"}
    assert answer.response_meta is not None and answer.response_meta.finish_reason == "tool_calls"


async def test_a_streamed_answer_arrives_in_chunks_with_usage_at_the_end() -> None:
    chunks_sent = [
        (None, response([{"text": "Hel"}], None, {"promptTokenCount": 21, "totalTokenCount": 21})),
        (None, response([{"text": "lo!"}], "STOP", USAGE)),
    ]
    api = FakeAPI(sse_reply(chunks_sent))
    async with serving(api) as url:
        chunks = await model_for(url).stream([user("hi")]).collect()

    assert api.requests[0].path.endswith(":streamGenerateContent") and api.requests[0].query == "alt=sse"
    assert [c.content for c in chunks] == ["Hel", "lo!"]
    answer = concat_messages(chunks)
    assert answer.content == "Hello!"
    assert answer.response_meta is not None and answer.response_meta.finish_reason == "stop"
    assert answer.response_meta.usage == Usage(prompt_tokens=21, completion_tokens=9, total_tokens=30)


async def test_streamed_function_calls_keep_their_order_across_chunks() -> None:
    chunks_sent = [
        (None, response([{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}], None, None)),
        (None, response([{"functionCall": {"id": "g-2", "name": "get_weather", "args": {"city": "Rome"}}}], "STOP")),
    ]
    async with serving(FakeAPI(sse_reply(chunks_sent))) as url:
        answer = await concat_message_stream(model_for(url).stream([user("Weather?")], tools=[WEATHER]))

    assert [(c.index, json.loads(c.function.arguments)["city"]) for c in answer.tool_calls] == [
        (0, "Paris"),
        (1, "Rome"),
    ]
    assert answer.tool_calls[1].id == "g-2"
    assert answer.response_meta is not None and answer.response_meta.finish_reason == "tool_calls"


CITY = JSONSchemaFormat({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})


async def test_structured_output_asks_for_json_that_fits_the_schema() -> None:
    api = FakeAPI(text_reply('{"city": "Paris"}'))
    async with serving(api) as url:
        answer = await model_for(url).generate([user("Capital?")], settings=ModelSettings(response_format=CITY))

    assert api.body["generationConfig"] == {
        "responseMimeType": "application/json",
        "responseJsonSchema": dict(CITY.schema),
    }
    assert json.loads(answer.content) == {"city": "Paris"}


@pytest.mark.parametrize(
    ("reply", "status", "retryable", "said"),
    [
        (error_reply(429, "RESOURCE_EXHAUSTED", "Quota exceeded for metric generate_content", **{"retry-after": "7"}), 429, True, "RESOURCE_EXHAUSTED: Quota exceeded"),
        (error_reply(503, "UNAVAILABLE", "The model is overloaded. Please try again later."), 503, True, "UNAVAILABLE: The model is overloaded"),
        (error_reply(500, "INTERNAL", "An internal error has occurred."), 500, True, "INTERNAL: An internal error"),
        (error_reply(400, "INVALID_ARGUMENT", "Invalid JSON payload received."), 400, False, "INVALID_ARGUMENT: Invalid JSON payload"),
        (error_reply(403, "PERMISSION_DENIED", "API key not valid."), 403, False, "PERMISSION_DENIED: API key not valid."),
        (error_reply(404, "NOT_FOUND", "models/gemini-nope is not found"), 404, False, "NOT_FOUND: models/gemini-nope"),
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


async def test_an_error_chunk_inside_a_stream_is_a_typed_error() -> None:
    events = [
        (None, response([{"text": "Hel"}], None, None)),
        (None, {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}),
    ]
    async with serving(FakeAPI(sse_reply(events))) as url:
        with pytest.raises(ModelHTTPError) as caught:
            await model_for(url).stream([user("hi")]).collect()

    assert caught.value.status_code == 503 and is_retryable_error(caught.value)


@pytest.mark.parametrize(
    "reply", [Reply(body=b"not json at all"), Reply(body=b"<html><title>Login</title></html>", content_type="text/html"), json_reply({"hello": "world"})]
)  # fmt: skip
async def test_a_garbage_body_with_a_success_status_is_a_response_error(reply: Reply) -> None:
    async with serving(FakeAPI(reply)) as url:
        with pytest.raises(ModelResponseError) as caught:
            await model_for(url).generate([user("hi")])

    assert not is_retryable_error(caught.value)


@pytest.mark.parametrize(
    "events",
    [[(None, "{not json")], [(None, response([{"text": "Hel"}], None, None))]],
)
async def test_a_broken_or_cut_stream_is_a_model_error(events: list[tuple[None, Any]]) -> None:
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


def test_settings_that_make_no_generate_content_config_are_a_user_error() -> None:
    model = GeminiChatModel("gemini-test", api_key="k", base_url="http://127.0.0.1:9")
    with pytest.raises(UserError, match="GenerateContentConfig"):
        model.stream([user("hi")], settings=ModelSettings(extra={"no_such_field": 1}))


async def test_retrying_waits_the_retry_after_a_429_asks_for() -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    api = FakeAPI(error_reply(429, "RESOURCE_EXHAUSTED", "slow down", **{"retry-after": "3"}), text_reply("ok"))
    async with serving(api) as url:
        answer = await RetryingModel(model_for(url), sleep=sleep).generate([user("hi")])

    assert answer.content == "ok" and waits == [3.0] and len(api.requests) == 2


@tool(threaded=False)
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@pytest.mark.parametrize("streaming", [False, True])
async def test_an_agent_on_gemini_calls_a_tool_and_answers(streaming: bool) -> None:
    call = response([{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}])
    text = response([{"text": "It is sunny."}])
    replies = (
        [sse_reply([(None, call)]), sse_reply([(None, text)])] if streaming else [json_reply(call), json_reply(text)]
    )
    api = FakeAPI(*replies)
    async with serving(api) as url:
        agent = ChatModelAgent(name="weather", model=model_for(url), tools=[get_weather])
        result = await Runner(agent, enable_streaming=streaming).call("Weather in Paris?")

    assert result.text == "It is sunny."
    answered = api.requests[1].body["contents"][-1]
    assert answered == {
        "role": "user",
        "parts": [{"functionResponse": {"name": "get_weather", "response": {"result": "sunny in Paris"}}}],
    }
    assert result.metrics is not None and result.metrics.total.prompt_tokens == 42


def test_a_missing_api_key_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with pytest.raises(UserError, match="GEMINI_API_KEY"):
        load_model("gemini:gemini-test")


@pytest.mark.parametrize("variable", ["GEMINI_API_KEY", "GOOGLE_API_KEY"])
def test_load_model_names_a_gemini_model(monkeypatch: pytest.MonkeyPatch, variable: str) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv(variable, "from-env")
    model = load_model("gemini:gemini-2.5-flash")

    assert isinstance(model, GeminiChatModel) and model.model_name == "gemini-2.5-flash"


def test_without_the_sdk_the_model_names_the_extra_to_install() -> None:
    code = (
        "import sys\n"
        "sys.modules['google.genai'] = None\n"
        "from batonflow.errors import UserError\n"
        "from batonflow.models import load_model\n"
        "try:\n"
        "    load_model('gemini:gemini-test', api_key='k')\n"
        "except UserError as error:\n"
        "    print(error)\n"
    )
    said = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)

    assert said.stdout.strip() == "GeminiChatModel needs the 'google-genai' package: pip install 'batonflow[gemini]'"

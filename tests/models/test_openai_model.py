"""OpenAIChatModel against a mocked HTTP transport (request shape, parsing, errors) and loopback sockets."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2
import openai
import pytest

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
    JSONSchemaFormat,
    ModelSettings,
    OpenAIChatModel,
    ToolChoice,
    is_retryable_error,
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
    system,
    tool_message,
    user,
)
from batonflow.tools import ToolInfo

WEATHER = ToolInfo(
    name="get_weather",
    description="The weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
TIME = ToolInfo(name="get_time", description="The time in a city.")

Reply = httpx2.Response | Exception


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class FakeProvider:
    """An OpenAI-compatible endpoint: answers with the given replies in turn (the last one repeats)."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == "/v1/chat/completions"
        self.requests.append(json.loads(request.content))
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, Exception):
            raise reply
        return reply

    @property
    def body(self) -> dict[str, Any]:
        assert len(self.requests) == 1
        return self.requests[0]


def model_for(handler: Callable[[httpx2.Request], httpx2.Response], **kwargs: Any) -> OpenAIChatModel:
    http_client = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    client = openai.AsyncOpenAI(api_key="sk-test", base_url="http://provider.test/v1", http_client=http_client)
    return OpenAIChatModel("test-model", client=client, **kwargs)


def completion(
    message: dict[str, Any], *, finish_reason: str = "stop", usage: dict[str, Any] | None = None
) -> httpx2.Response:
    return httpx2.Response(
        200,
        json={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "test-model",
            "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish_reason}],
            "usage": usage,
        },
    )


def chunk(
    delta: dict[str, Any] | None = None, *, finish_reason: str | None = None, usage: dict[str, Any] | None = None
) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "test-model",
        "choices": choices,
        "usage": usage,
    }


def sse(*chunks: dict[str, Any], done: bool = True) -> httpx2.Response:
    events = [f"data: {json.dumps(c)}\n\n" for c in chunks] + (["data: [DONE]\n\n"] if done else [])
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content="".join(events).encode())


def error_response(status: int, message: str) -> httpx2.Response:
    return httpx2.Response(status, json={"error": {"message": message, "type": "server_error", "code": None}})


USAGE = {
    "prompt_tokens": 20,
    "completion_tokens": 5,
    "total_tokens": 25,
    "prompt_tokens_details": {"cached_tokens": 8},
    "completion_tokens_details": {"reasoning_tokens": 3},
}


# -- requests --------------------------------------------------------------------------------------------------


async def test_generate_sends_the_conversation_in_openai_format() -> None:
    provider = FakeProvider(completion({"content": "Sunny."}))
    call = ToolCall(id="call_1", function=FunctionCall(name="get_weather", arguments='{"city": "Paris"}'))
    conversation = [
        system("Be brief."),
        user("Weather in Paris?", name="ann"),
        assistant(tool_calls=[call]),
        tool_message("sunny", tool_call_id="call_1", tool_name="get_weather"),
    ]

    await model_for(provider).generate(conversation)

    assert provider.body["model"] == "test-model"
    assert provider.body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?", "name": "ann"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "content": "sunny", "tool_call_id": "call_1"},
    ]
    assert provider.body["stream"] is False


async def test_generate_sends_multimodal_parts_as_content_list() -> None:
    provider = FakeProvider(completion({"content": "A cat."}))
    message = Message(
        role="user",
        content="What is this?",
        parts=[ImagePart(url="https://example.com/cat.png", detail="low"), AudioPart(data="UklG", format="wav")],
    )

    await model_for(provider).generate([message])

    assert provider.body["messages"][0]["content"] == [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png", "detail": "low"}},
        {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}},
    ]


async def test_generate_sends_tools_as_functions() -> None:
    provider = FakeProvider(completion({"content": "ok"}))

    await model_for(provider).generate([user("hi")], tools=[WEATHER, TIME])

    assert provider.body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "The weather in a city.",
                "parameters": WEATHER.parameters,
            },
        },
        {
            "type": "function",
            "function": {"name": "get_time", "description": "The time in a city.", "parameters": TIME.parameters},
        },
    ]
    assert "tool_choice" not in provider.body


@pytest.mark.parametrize(
    ("choice", "sent"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        (ForcedTool("get_time"), {"type": "function", "function": {"name": "get_time"}}),
    ],
)
async def test_tool_choice_forms_are_sent_in_openai_format(choice: ToolChoice, sent: object) -> None:
    provider = FakeProvider(completion({"content": "ok"}))

    await model_for(provider).generate([user("hi")], tools=[WEATHER, TIME], tool_choice=choice)

    assert provider.body["tool_choice"] == sent


async def test_forced_tool_not_among_tools_is_a_user_error_and_sends_nothing() -> None:
    provider = FakeProvider(completion({"content": "ok"}))
    model = model_for(provider)

    with pytest.raises(UserError, match=r"expected one of \['get_weather'\], got 'get_time'"):
        await model.generate([user("hi")], tools=[WEATHER], tool_choice=ForcedTool("get_time"))
    with pytest.raises(UserError, match="expected one of"):
        model.stream([user("hi")], tools=[WEATHER], tool_choice=ForcedTool("get_time"))
    assert provider.requests == []


async def test_tool_choice_without_tools_is_a_user_error() -> None:
    model = model_for(FakeProvider(completion({"content": "ok"})))

    with pytest.raises(UserError, match="needs tools: expected at least one tool, got none"):
        await model.generate([user("hi")], tool_choice="required")


async def test_settings_are_sent_and_override_default_settings() -> None:
    provider = FakeProvider(completion({"content": "ok"}))
    model = model_for(
        provider, default_settings=ModelSettings(temperature=0.7, max_tokens=100, extra={"top_k": 40, "min_p": 0.1})
    )

    await model.generate(
        [user("hi")], settings=ModelSettings(temperature=0.0, stop=["\n"], seed=7, top_p=0.9, extra={"top_k": 5})
    )

    body = provider.body
    assert (body["temperature"], body["max_tokens"], body["stop"], body["seed"], body["top_p"]) == (
        0.0,
        100,
        ["\n"],
        7,
        0.9,
    )
    assert (body["top_k"], body["min_p"]) == (5, 0.1)


async def test_unset_settings_are_not_sent() -> None:
    provider = FakeProvider(completion({"content": "ok"}))

    await model_for(provider).generate([user("hi")])

    assert provider.body == {"model": "test-model", "messages": [{"role": "user", "content": "hi"}], "stream": False}


CITY = JSONSchemaFormat({"type": "object", "properties": {"city": {"type": "string"}}}, name="City", strict=True)


@pytest.mark.parametrize("streaming", [False, True])
async def test_response_format_goes_on_the_wire_as_openai_json_schema(streaming: bool) -> None:
    reply = sse(chunk({"content": "{}"}, finish_reason="stop")) if streaming else completion({"content": "{}"})
    provider = FakeProvider(reply)
    model = model_for(provider)
    settings = ModelSettings(response_format=CITY)

    if streaming:
        await concat_message_stream(model.stream([user("hi")], settings=settings))
    else:
        await model.generate([user("hi")], settings=settings)

    assert provider.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "City", "schema": dict(CITY.schema), "strict": True},
    }


async def test_response_format_is_not_sent_with_tools_the_model_may_call() -> None:
    provider = FakeProvider(completion({"content": "ok"}))

    await model_for(provider).generate([user("hi")], tools=[WEATHER], settings=ModelSettings(response_format=CITY))

    assert "response_format" not in provider.body


async def test_json_object_server_gets_the_schema_beside_the_type() -> None:
    provider = FakeProvider(completion({"content": "{}"}))
    model = model_for(provider, structured_output="json_object", default_settings=ModelSettings(response_format=CITY))

    await model.generate([user("hi")])

    assert provider.body["response_format"] == {"type": "json_object", "schema": dict(CITY.schema)}


async def test_server_without_structured_output_is_sent_no_format() -> None:
    provider = FakeProvider(completion({"content": "{}"}))

    await model_for(provider, structured_output=None).generate(
        [user("hi")], settings=ModelSettings(response_format=CITY)
    )

    assert "response_format" not in provider.body


def test_unknown_structured_output_is_a_user_error() -> None:
    with pytest.raises(UserError, match=r"expected 'json_schema', 'json_object' or None, got 'grammar'"):
        model_for(FakeProvider(completion({})), structured_output="grammar")


# -- responses -------------------------------------------------------------------------------------------------


async def test_generate_parses_content_reasoning_finish_reason_and_usage() -> None:
    provider = FakeProvider(completion({"content": "42", "reasoning_content": "Let me think."}, usage=USAGE))

    answer = await model_for(provider).generate([user("6 x 7?")])

    assert (answer.role, answer.content, answer.reasoning_content) == ("assistant", "42", "Let me think.")
    assert answer.response_meta is not None
    assert answer.response_meta.finish_reason == "stop"
    assert answer.response_meta.usage == Usage(
        prompt_tokens=20, completion_tokens=5, total_tokens=25, cached_tokens=8, reasoning_tokens=3
    )


async def test_generate_parses_parallel_tool_calls_with_their_index() -> None:
    calls = [
        {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}},
        {"id": "call_b", "type": "function", "function": {"name": "get_time", "arguments": "{}"}},
    ]
    provider = FakeProvider(completion({"content": None, "tool_calls": calls}, finish_reason="tool_calls"))

    answer = await model_for(provider).generate([user("?")], tools=[WEATHER, TIME])

    assert answer.content == ""
    assert answer.tool_calls == [
        ToolCall(index=0, id="call_a", function=FunctionCall(name="get_weather", arguments='{"city": "Oslo"}')),
        ToolCall(index=1, id="call_b", function=FunctionCall(name="get_time", arguments="{}")),
    ]
    assert answer.response_meta is not None
    assert answer.response_meta.finish_reason == "tool_calls"


# -- streaming -------------------------------------------------------------------------------------------------


async def test_stream_is_lazy_and_asks_for_usage() -> None:
    provider = FakeProvider(
        sse(chunk({"role": "assistant", "content": "Hel"}), chunk({"content": "lo"}, finish_reason="stop"))
    )
    stream = model_for(provider).stream([user("hi")])
    assert provider.requests == []

    chunks = await stream.collect()

    assert [c.content for c in chunks] == ["Hel", "lo"]
    assert chunks[-1].response_meta is not None
    assert chunks[-1].response_meta.finish_reason == "stop"
    assert provider.body["stream"] is True
    assert provider.body["stream_options"] == {"include_usage": True}


async def test_a_server_that_refuses_stream_options_is_asked_again_without_them() -> None:
    refused = httpx2.Response(
        400, json={"error": {"message": "Unrecognized request argument supplied: stream_options", "type": "invalid"}}
    )
    provider = FakeProvider(refused, sse(chunk({"content": "ok"}, finish_reason="stop")))
    model = model_for(provider)

    answer = await concat_message_stream(model.stream([user("hi")]))
    await model.stream([user("hi")]).collect()

    assert answer.content == "ok"
    assert ["stream_options" in r for r in provider.requests] == [True, False, False]
    assert model.stream_usage is False


async def test_stream_usage_false_never_asks_and_other_400s_are_raised() -> None:
    provider = FakeProvider(sse(chunk({"content": "ok"}, finish_reason="stop")))
    await model_for(provider, stream_usage=False).stream([user("hi")]).collect()
    assert "stream_options" not in provider.body

    bad = FakeProvider(error_response(400, "messages: field required"))
    with pytest.raises(ModelHTTPError, match="HTTP 400: messages: field required"):
        await model_for(bad).stream([user("hi")]).collect()
    assert len(bad.requests) == 1


async def test_stream_reassembles_interleaved_parallel_tool_calls_by_index() -> None:
    def call_delta(index: int, arguments: str, *, id: str = "", name: str = "") -> dict[str, Any]:
        delta: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
        if id:
            delta |= {"id": id, "type": "function"}
            delta["function"]["name"] = name
        return {"tool_calls": [delta]}

    provider = FakeProvider(
        sse(
            chunk({"role": "assistant", "content": None}),
            chunk(call_delta(0, "", id="call_a", name="get_weather")),
            chunk(call_delta(1, "", id="call_b", name="get_time")),
            chunk(call_delta(0, '{"ci')),
            chunk(call_delta(1, '{"city"')),
            chunk(call_delta(0, 'ty": "Oslo"}')),
            chunk(call_delta(1, ': "Lima"}')),
            chunk({}, finish_reason="tool_calls"),
            chunk(usage=USAGE),
        )
    )

    answer = await concat_message_stream(model_for(provider).stream([user("?")], tools=[WEATHER, TIME]))

    assert answer.tool_calls == [
        ToolCall(index=0, id="call_a", function=FunctionCall(name="get_weather", arguments='{"city": "Oslo"}')),
        ToolCall(index=1, id="call_b", function=FunctionCall(name="get_time", arguments='{"city": "Lima"}')),
    ]
    assert answer.response_meta is not None
    assert answer.response_meta.finish_reason == "tool_calls"
    assert answer.response_meta.usage == Usage(
        prompt_tokens=20, completion_tokens=5, total_tokens=25, cached_tokens=8, reasoning_tokens=3
    )


async def test_stream_carries_reasoning_content_chunks() -> None:
    provider = FakeProvider(
        sse(
            chunk({"reasoning_content": "Hmm. "}),
            chunk({"reasoning_content": "Yes."}),
            chunk({"content": "42"}, finish_reason="stop"),
        )
    )

    answer = await concat_message_stream(model_for(provider).stream([user("?")]))

    assert (answer.reasoning_content, answer.content) == ("Hmm. Yes.", "42")


# -- errors ----------------------------------------------------------------------------------------------------


async def test_http_500_is_a_typed_error_with_the_provider_message() -> None:
    provider = FakeProvider(error_response(500, "the GPU caught fire"))

    with pytest.raises(ModelHTTPError) as caught:
        await model_for(provider).generate([user("hi")])

    assert caught.value.status_code == 500
    assert str(caught.value) == "model 'test-model' request failed: HTTP 500: the GPU caught fire"
    assert caught.value.model == "test-model"
    assert len(provider.requests) == 1  # the SDK's own retries are off


async def test_http_error_is_raised_in_stream_on_first_read() -> None:
    provider = FakeProvider(error_response(429, "slow down"))
    stream = model_for(provider).stream([user("hi")])

    with pytest.raises(ModelHTTPError, match="HTTP 429: slow down") as caught:
        await asyncio.wait_for(stream.collect(), timeout=5)
    assert caught.value.status_code == 429


async def test_a_429s_retry_after_is_kept_on_the_error_for_the_retries() -> None:
    provider = FakeProvider(
        httpx2.Response(429, headers={"retry-after": "4"}, json={"error": {"message": "slow down"}}),
        error_response(429, "slow down"),
    )

    with pytest.raises(ModelHTTPError) as told:
        await model_for(provider).generate([user("hi")])
    with pytest.raises(ModelHTTPError) as untold:
        await model_for(provider).generate([user("hi")])

    assert (told.value.retry_after, untold.value.retry_after) == (4.0, None)


async def test_http_400_keeps_status_and_body() -> None:
    provider = FakeProvider(error_response(400, "bad tool schema"))

    with pytest.raises(ModelHTTPError) as caught:
        await model_for(provider).generate([user("hi")])

    assert caught.value.status_code == 400
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["message"] == "bad tool schema"


LOGIN_PAGE = (
    "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>\n  Sign in &amp; continue\n</title></head>"
    "<body>" + "<p>Please sign in.</p>" * 500 + "</body></html>"
)
URL = "http://provider.test/v1/chat/completions"


def html_page(status: int, content_type: str = "text/html; charset=utf-8") -> httpx2.Response:
    return httpx2.Response(status, headers={"content-type": content_type}, content=LOGIN_PAGE.encode())


async def generated(model: OpenAIChatModel) -> None:
    await model.generate([user("hi")])


async def streamed(model: OpenAIChatModel) -> None:
    await model.stream([user("hi")]).collect()


@pytest.mark.parametrize("call", [generated, streamed])
async def test_an_html_page_with_a_success_status_is_a_response_error_naming_the_url_and_status(call: Any) -> None:
    with pytest.raises(ModelResponseError) as caught:
        await call(model_for(FakeProvider(html_page(200))))
    assert str(caught.value) == (
        f"model 'test-model' request failed: HTTP 200 from {URL}: expected the API's JSON, got an HTML page titled "
        "'Sign in & continue' (is base_url the API's address?)"
    )
    error = caught.value
    assert (error.url, error.status_code, error.content_type) == (URL, 200, "text/html; charset=utf-8")
    assert error.body == LOGIN_PAGE and error.model == "test-model"
    assert not is_retryable_error(error)  # the same request gets the same page


async def test_a_success_status_with_a_body_that_is_not_json_says_what_came_instead() -> None:
    reply = httpx2.Response(200, headers={"content-type": "text/plain"}, content=b"It works!\n\nApache default page")
    with pytest.raises(ModelResponseError) as caught:
        await model_for(FakeProvider(reply)).generate([user("hi")])
    assert str(caught.value) == (
        f"model 'test-model' request failed: HTTP 200 from {URL}: expected the API's JSON, got a text/plain body "
        "starting 'It works! Apache default page' (is base_url the API's address?)"
    )


@pytest.mark.parametrize("call", [generated, streamed])
@pytest.mark.parametrize("content_type", ["text/html", "text/plain"])
async def test_an_html_error_page_is_an_http_error_naming_the_url_and_the_page_not_its_markup(
    call: Any, content_type: str
) -> None:
    with pytest.raises(ModelHTTPError) as caught:
        await call(model_for(FakeProvider(html_page(502, content_type))))
    assert str(caught.value) == (
        f"model 'test-model' request failed: HTTP 502 from {URL}: expected the API's JSON, got an HTML page titled "
        "'Sign in & continue'"
    )
    assert (caught.value.status_code, caught.value.url, caught.value.body) == (502, URL, LOGIN_PAGE)
    assert is_retryable_error(caught.value)  # a proxy's 502 passes


async def test_error_event_in_the_middle_of_a_stream_reaches_the_reader_after_the_chunks() -> None:
    provider = FakeProvider(sse(chunk({"content": "Hel"}), {"error": {"message": "overloaded"}}, done=False))
    stream = model_for(provider).stream([user("hi")])

    first = await anext(stream)
    with pytest.raises(ModelError, match="overloaded"):
        await anext(stream)
    assert first.content == "Hel"
    await stream.aclose()


async def test_stream_that_ends_without_a_finish_reason_is_an_error_not_a_short_answer() -> None:
    # llama_cpp.server closes the event stream this way when its handler fails after the headers were sent.
    provider = FakeProvider(sse(chunk({"content": "Hel"})))
    stream = model_for(provider).stream([user("hi")])

    first = await anext(stream)
    with pytest.raises(ModelError, match="model 'test-model' request failed: the stream ended without a finish reason"):
        await anext(stream)
    assert first.content == "Hel"


async def test_read_timeout_from_the_transport_is_a_model_timeout_error() -> None:
    def hang(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ReadTimeout("timed out", request=request)

    model = model_for(hang, timeout=1.5)

    with pytest.raises(ModelTimeoutError, match=r"model 'test-model' request failed: no answer within 1.5 s"):
        await model.generate([user("hi")])
    with pytest.raises(ModelTimeoutError):
        await model.stream([user("hi")]).collect()


@pytest.fixture
async def silent_server() -> AsyncIterator[tuple[str, list[bytes]]]:
    """A loopback HTTP server that reads requests and never answers; yields its base URL."""
    received: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.append(await reader.read(65536))
        try:
            await reader.read()  # until the client gives up
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}/v1", received
        server.close()


async def test_server_that_never_answers_times_out_instead_of_hanging(silent_server: tuple[str, list[bytes]]) -> None:
    base_url, received = silent_server
    model = OpenAIChatModel("m", base_url=base_url, timeout=0.3)

    # The model's 0.3 s timeout, not the guard against a hang (a TimeoutError), ends each call.
    with pytest.raises(ModelTimeoutError):
        await asyncio.wait_for(model.generate([user("hi")]), timeout=60)
    with pytest.raises(ModelTimeoutError):
        await asyncio.wait_for(model.stream([user("hi")]).collect(), timeout=60)

    assert len(received) == 2  # the requests did arrive: the timeout is on the answer


async def test_stream_that_stalls_after_a_chunk_times_out_in_stream() -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(65536)
        data = f"data: {json.dumps(chunk({'content': 'Hel'}))}\n\n".encode()
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            + f"{len(data):x}\r\n".encode()
            + data
            + b"\r\n"
        )
        await writer.drain()
        await reader.read()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        stream = OpenAIChatModel("m", base_url=f"http://127.0.0.1:{port}/v1", timeout=0.3).stream([user("hi")])
        first = await asyncio.wait_for(anext(stream), timeout=10)
        with pytest.raises(ModelTimeoutError):
            await asyncio.wait_for(anext(stream), timeout=10)
        await stream.aclose()
        server.close()
    assert first.content == "Hel"


async def test_refused_connection_is_a_model_connection_error() -> None:
    base_url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there any more
    model = OpenAIChatModel("m", base_url=base_url, timeout=5)

    with pytest.raises(ModelConnectionError, match=r"model 'm' request failed: connection to http://127\.0\.0\.1"):
        await asyncio.wait_for(model.generate([user("hi")]), timeout=10)
    with pytest.raises(ModelConnectionError):
        await asyncio.wait_for(model.stream([user("hi")]).collect(), timeout=10)


# -- configuration ---------------------------------------------------------------------------------------------


def test_missing_api_key_without_base_url_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    with pytest.raises(UserError, match=r"needs an API key: expected api_key=\.\.\. or OPENAI_API_KEY"):
        OpenAIChatModel("gpt-4o-mini")


def test_local_server_needs_no_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    model = OpenAIChatModel("llama", base_url="http://127.0.0.1:8080/v1")

    assert model._client.api_key == "not-needed"
    assert str(model._client.base_url) == "http://127.0.0.1:8080/v1/"


def test_api_key_falls_back_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")

    assert OpenAIChatModel("gpt-4o-mini")._client.api_key == "sk-from-env"
    assert OpenAIChatModel("llama", base_url="http://127.0.0.1:8080/v1")._client.api_key == "sk-from-env"
    assert OpenAIChatModel("gpt-4o-mini", api_key="sk-given")._client.api_key == "sk-given"


def test_given_client_gets_the_model_timeout_and_no_sdk_retries() -> None:
    client = openai.AsyncOpenAI(api_key="sk-test", max_retries=5, timeout=600)

    model = OpenAIChatModel("gpt-4o-mini", client=client, timeout=2.5)

    assert (model._client.max_retries, model._client.timeout) == (0, 2.5)

"""RetryingModel: which failures are retried, how long it waits, and the no-retry-after-output rule for streams."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx2
import openai
import pytest

from batonflow.errors import ModelConnectionError, ModelHTTPError, ModelTimeoutError, UserError
from batonflow.models import (
    ChatModel,
    ForcedTool,
    ModelSettings,
    OpenAIChatModel,
    RetryingModel,
    ToolChoice,
    is_retryable_error,
    with_retry,
)
from batonflow.schema import Message, MessageStream, Stream, assistant, concat_message_stream, user
from batonflow.tools import ToolInfo

Step = Exception | list[Message]


class FlakyModel:
    """A model that plays ``steps`` in turn, one per call: an exception to raise, or the chunks to answer with.

    For streams, a list may end with an exception: the chunks before it are delivered, then it is raised.
    """

    model_name = "flaky"

    def __init__(self, *steps: Step | list[Message | Exception]) -> None:
        self.steps = list(steps)
        self.calls = 0
        self.closed_streams = 0

    def _next(self) -> Any:
        self.calls += 1
        return self.steps.pop(0)

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> Message:
        step = self._next()
        if isinstance(step, Exception):
            raise step
        return step[0]

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> MessageStream:
        async def chunks() -> AsyncIterator[Message]:
            try:
                step = self._next()
                for item in [step] if isinstance(step, Exception) else step:
                    if isinstance(item, Exception):
                        raise item
                    yield item
            finally:
                self.closed_streams += 1

        return Stream.from_async_iter(chunks())


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def http_error(status: int) -> ModelHTTPError:
    return ModelHTTPError(f"HTTP {status}", status_code=status, model="flaky")


ANSWER = assistant("done")


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        (ModelConnectionError("refused"), True),
        (ModelTimeoutError("slow"), True),
        (http_error(408), True),
        (http_error(409), True),
        (http_error(429), True),
        (http_error(500), True),
        (http_error(503), True),
        (http_error(400), False),
        (http_error(401), False),
        (http_error(404), False),
        (UserError("bad config"), False),
        (ValueError("bug"), False),
    ],
)
def test_default_retryable_errors_are_transient_failures_only(error: Exception, retryable: bool) -> None:
    assert is_retryable_error(error) is retryable


async def test_generate_retries_transient_failures_with_exponential_backoff() -> None:
    model = FlakyModel(ModelTimeoutError("slow"), http_error(503), [ANSWER])
    sleeps = Sleeps()

    answer = await RetryingModel(model, base_delay=0.1, jitter=0, sleep=sleeps).generate([user("hi")])

    assert answer is ANSWER
    assert model.calls == 3
    assert sleeps.delays == [0.1, 0.2]


async def test_generate_gives_up_after_max_retries_with_the_last_error() -> None:
    errors = [http_error(500) for _ in range(4)]
    model = FlakyModel(*errors)
    sleeps = Sleeps()

    with pytest.raises(ModelHTTPError) as caught:
        await RetryingModel(model, max_retries=3, jitter=0, sleep=sleeps).generate([user("hi")])

    assert caught.value is errors[-1]
    assert "'flaky': gave up after 4 attempts" in (caught.value.__notes__ or [])
    assert model.calls == 4
    assert sleeps.delays == [0.1, 0.2, 0.4]


@pytest.mark.parametrize("error", [http_error(400), http_error(401), UserError("bad"), ValueError("bug")])
async def test_generate_does_not_retry_permanent_failures(error: Exception) -> None:
    model = FlakyModel(error, [ANSWER])
    sleeps = Sleeps()

    with pytest.raises(type(error)):
        await RetryingModel(model, sleep=sleeps).generate([user("hi")])

    assert model.calls == 1
    assert sleeps.delays == []


async def test_custom_is_retryable_decides() -> None:
    model = FlakyModel(ValueError("flaky parser"), [ANSWER])

    retrying = RetryingModel(model, is_retryable=lambda e: isinstance(e, ValueError), sleep=Sleeps())

    assert await retrying.generate([user("hi")]) is ANSWER


def test_backoff_doubles_is_capped_and_adds_at_most_the_jitter_fraction() -> None:
    exact = RetryingModel(FlakyModel(), base_delay=0.1, max_delay=1.0, jitter=0)
    jittered = RetryingModel(FlakyModel(), base_delay=0.1, max_delay=1.0, jitter=0.5)

    assert [exact.backoff(n) for n in range(1, 7)] == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.0, 1.0])
    for attempt in range(1, 7):
        base = exact.backoff(attempt)
        assert all(base <= jittered.backoff(attempt) <= base * 1.5 for _ in range(50))


async def test_stream_retries_while_nothing_was_delivered() -> None:
    chunks = [assistant("Hel"), assistant("lo")]
    model = FlakyModel(ModelConnectionError("refused"), [http_error(502)], chunks)
    sleeps = Sleeps()

    received = await RetryingModel(model, jitter=0, sleep=sleeps).stream([user("hi")]).collect()

    assert received == chunks
    assert model.calls == 3
    assert model.closed_streams == 3
    assert sleeps.delays == [0.1, 0.2]


async def test_stream_error_after_a_delivered_chunk_is_not_retried() -> None:
    error = http_error(503)
    model = FlakyModel([assistant("Hel"), error], [assistant("Hello")])
    stream = RetryingModel(model, sleep=Sleeps()).stream([user("hi")])

    first = await anext(stream)
    with pytest.raises(ModelHTTPError) as caught:
        await anext(stream)

    assert first.content == "Hel"
    assert caught.value is error
    assert model.calls == 1


async def test_stream_closed_early_by_the_reader_closes_the_inner_stream() -> None:
    model = FlakyModel([assistant("a"), assistant("b"), assistant("c")])
    stream = RetryingModel(model).stream([user("hi")])

    first = await anext(stream)
    await stream.aclose()

    assert first.content == "a"
    assert model.closed_streams == 1


async def test_stream_is_lazy_and_validates_tool_choice_at_call_time() -> None:
    model = FlakyModel([ANSWER])
    retrying = RetryingModel(model)

    stream = retrying.stream([user("hi")])
    assert model.calls == 0
    await stream.aclose()
    with pytest.raises(UserError, match="expected one of"):
        retrying.stream([user("hi")], tools=[ToolInfo(name="a", description="")], tool_choice=ForcedTool("b"))


def test_retrying_model_is_a_chat_model_named_after_the_inner_one() -> None:
    retrying = with_retry(FlakyModel(), max_retries=1)

    assert isinstance(retrying, ChatModel)
    assert retrying.model_name == "flaky"
    assert retrying.max_retries == 1


def test_negative_max_retries_is_a_user_error() -> None:
    with pytest.raises(UserError, match="max_retries: expected 0 or more, got -1"):
        RetryingModel(FlakyModel(), max_retries=-1)


# -- with the real OpenAI provider over a mocked transport --------------------------------------------------------


def counting_provider(*statuses: int) -> tuple[OpenAIChatModel, list[int]]:
    """An OpenAIChatModel whose endpoint answers with ``statuses`` in turn (200 is a completion)."""
    seen: list[int] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        status = statuses[len(seen)]
        seen.append(status)
        if status != 200:
            return httpx2.Response(status, json={"error": {"message": f"status {status}"}})
        body = {"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
        ]}  # fmt: skip
        if json.loads(request.content).get("stream"):
            data = {
                **body,
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}],
            }
            return httpx2.Response(
                200,
                headers={"content-type": "text/event-stream"},
                content=f"data: {json.dumps(data)}\n\ndata: [DONE]\n\n",
            )
        return httpx2.Response(200, json=body)

    client = openai.AsyncOpenAI(
        api_key="sk-test",
        base_url="http://provider.test/v1",
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
    )
    return OpenAIChatModel("m", client=client), seen


async def test_openai_500_and_429_are_retried_until_success() -> None:
    model, seen = counting_provider(500, 429, 200)

    answer = await with_retry(model, sleep=Sleeps()).generate([user("hi")])

    assert answer.content == "ok"
    assert seen == [500, 429, 200]


async def test_openai_400_is_not_retried() -> None:
    model, seen = counting_provider(400, 200)

    with pytest.raises(ModelHTTPError, match="HTTP 400: status 400"):
        await with_retry(model, sleep=Sleeps()).generate([user("hi")])

    assert seen == [400]


async def test_openai_stream_is_retried_after_a_500_before_any_chunk() -> None:
    model, seen = counting_provider(500, 200)

    answer = await concat_message_stream(with_retry(model, sleep=Sleeps()).stream([user("hi")]))

    assert answer.content == "ok"
    assert seen == [500, 200]


async def test_a_retry_after_replaces_the_backoff_and_one_past_max_delay_is_not_waited() -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    asked = ModelHTTPError("slow down", status_code=429, retry_after=2.0)
    model = FlakyModel(asked, [assistant("ok")])
    answer = await RetryingModel(model, sleep=sleep).generate([user("hi")])
    assert answer.content == "ok" and waits == [2.0]

    too_long = ModelHTTPError("slow down", status_code=429, retry_after=60.0)
    with pytest.raises(ModelHTTPError):
        await RetryingModel(FlakyModel(too_long, [assistant("ok")]), max_delay=10, sleep=sleep).generate([user("hi")])
    assert waits == [2.0]
    assert "asked to wait 60 s, more than max_delay (10 s)" in too_long.__notes__[-1]

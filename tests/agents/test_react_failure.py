"""A ReActAgent whose model keeps failing ends with Solon's apology for the kind of failure, not an error event."""

from collections.abc import Iterator
from typing import Any

import pytest

from batonflow.adk import AgentEvent, ModelRetryConfig, Runner, collect_events, set_language
from batonflow.agents import ReActAgent, Session
from batonflow.agents import Runner as ConversationRunner
from batonflow.errors import ModelConnectionError, ModelError, ModelHTTPError, ModelTimeoutError, UserError
from batonflow.observe import ReasonEnd, TraceEvent
from batonflow.schema import Message
from batonflow.store import MemorySessionStore
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import tool

NO_WAIT = ModelRetryConfig(max_retries=2, base_delay=0.0, max_delay=0.0)


@tool(threaded=False)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


@pytest.fixture
def chinese() -> Iterator[None]:
    set_language("zh")
    try:
        yield
    finally:
        set_language("en")


def chained() -> RuntimeError:
    try:
        raise ModelTimeoutError("read timed out")
    except ModelTimeoutError as cause:
        error = RuntimeError("request failed")
        error.__cause__ = cause
        return error


FAILURES: dict[str, tuple[Any, str, str]] = {
    "timeout": (
        lambda: ModelTimeoutError("no answer within 60 s"),
        "Sorry, the model service timed out. Please try again later.",
        "抱歉，模型服务响应超时。请稍后重试。",
    ),
    "builtin-timeout": (
        TimeoutError,
        "Sorry, the model service timed out. Please try again later.",
        "抱歉，模型服务响应超时。请稍后重试。",
    ),
    "timeout-in-the-message": (
        lambda: ModelError("upstream Timeout"),
        "Sorry, the model service timed out. Please try again later.",
        "抱歉，模型服务响应超时。请稍后重试。",
    ),
    "timeout-as-the-cause": (
        chained,
        "Sorry, the model service timed out. Please try again later.",
        "抱歉，模型服务响应超时。请稍后重试。",
    ),
    "connection": (
        lambda: ModelConnectionError("connection refused"),
        "Sorry, the connection to the model service failed. Please try again later.",
        "抱歉，模型服务连接失败。请稍后重试。",
    ),
    "builtin-connection": (
        ConnectionRefusedError,
        "Sorry, the connection to the model service failed. Please try again later.",
        "抱歉，模型服务连接失败。请稍后重试。",
    ),
    "http": (
        lambda: ModelHTTPError("bad gateway", status_code=502),
        "Sorry, the model service answered with an error (CODE: 502). Please try again later.",
        "抱歉，模型服务响应出错（CODE: 502）。请稍后重试。",
    ),
    "other": (
        lambda: RuntimeError("kaput"),
        "Sorry, the model service is unavailable for now (see the logs for details). Please try again later.",
        "抱歉，暂时无法使用模型服务（具体参考日志）。请稍后重试。",
    ),
}


def failing(make: Any, *, calls: int = 3, first: Message | None = None, **options: Any) -> ReActAgent:
    script: list[Message | BaseException] = [first] if first is not None else []
    script += [make() for _ in range(calls)]
    return ReActAgent(model=ScriptedModel(script), tools=[lookup], model_retry=NO_WAIT, **options)


def streamed(event: AgentEvent) -> bool:
    return event.message_output is not None and event.message_output.is_streaming


def answers(events: list[AgentEvent]) -> list[str]:
    found = []
    for event in events:
        message = event.message_output.message if event.message_output is not None else None
        if message is not None and message.role == "assistant" and not message.tool_calls:
            found.append(message.content)
    return found


@pytest.mark.parametrize("streaming", [False, True], ids=["generate", "stream"])
@pytest.mark.parametrize("kind", list(FAILURES))
async def test_a_model_that_keeps_failing_ends_with_solons_answer_for_the_failure(kind: str, streaming: bool) -> None:
    make, english, _ = FAILURES[kind]
    agent = failing(make, output_key="out")
    trace: list[TraceEvent] = []
    runner = Runner(agent, enable_streaming=streaming, callbacks=[trace.append])
    events = await collect_events(runner.query("go"))
    # Streamed, the reply the caller was reading fails: its stream has the error. No error event follows it.
    assert [e.error for e in events if e.error is not None and not streamed(e)] == []
    assert events[-1].message_output is not None and events[-1].message_output.message is not None
    assert events[-1].message_output.message.content == english
    # The error is still in the trace: each failed attempt ends with it.
    failed = [e.error for e in trace if isinstance(e, ReasonEnd) and e.error is not None]
    assert failed and all(type(error) is type(make()) for error in failed)


@pytest.mark.parametrize("kind", list(FAILURES))
async def test_the_answers_are_solons_own_words_in_chinese(kind: str, chinese: None) -> None:
    make, _, words = FAILURES[kind]
    events = await collect_events(Runner(failing(make)).query("go"))
    assert answers(events) == [words]


async def test_a_failure_after_some_turns_keeps_what_was_said_and_is_the_answer() -> None:
    agent = failing(lambda: ModelHTTPError("overloaded", status_code=503), first=tool_calls(("lookup", {"key": "a"})))
    events = await collect_events(Runner(agent).query("go"))
    tool_results = [e for e in events if e.message_output is not None and e.message_output.role == "tool"]
    assert len(tool_results) == 1
    assert answers(events) == ["Sorry, the model service answered with an error (CODE: 503). Please try again later."]


async def test_the_answer_is_the_output_and_joins_the_conversation() -> None:
    agent = failing(lambda: ModelConnectionError("refused"), output_key="out")
    store = MemorySessionStore()
    events = await collect_events(ConversationRunner(agent, session_store=store).query("hi", session_id="c"))
    assert [e.error for e in events if e.error is not None] == []
    session = await Session.load(store, "c")
    assert [(m.role, m.content) for m in session.messages] == [
        ("user", "hi"),
        ("assistant", "Sorry, the connection to the model service failed. Please try again later."),
    ]


async def test_model_failure_error_keeps_the_error_event() -> None:
    agent = failing(lambda: ModelHTTPError("overloaded", status_code=503), model_failure="error")
    events = await collect_events(Runner(agent).query("go"))
    assert isinstance(events[-1].error, ModelHTTPError)
    assert answers(events) == []


async def test_a_developer_mistake_from_the_model_stays_an_error_event() -> None:
    agent = failing(lambda: UserError("tool_choice forces an unknown tool"), calls=1)
    events = await collect_events(Runner(agent).query("go"))
    assert isinstance(events[-1].error, UserError)


async def test_a_failure_that_is_not_the_models_stays_an_error_event() -> None:
    agent = ReActAgent(model=ScriptedModel([]), instruction="Help {customer}.", model_retry=NO_WAIT)
    events = await collect_events(Runner(agent).query("go"))
    assert isinstance(events[-1].error, UserError)


def test_model_failure_must_be_answer_or_error() -> None:
    with pytest.raises(UserError, match="ReActAgent model_failure: expected 'answer' or 'error', got 'log'"):
        ReActAgent(model=ScriptedModel([]), model_failure="log")  # type: ignore[arg-type]

import ast
from pathlib import Path

import pytest

import batonflow
from batonflow.adk import AgentInput, RunContext, collect_events
from batonflow.adk.loop import ModelRetryConfig, ModelStep, ReactState
from batonflow.agents import SimpleAgent
from batonflow.codec import decode, encode
from batonflow.errors import ModelHTTPError
from batonflow.observe import ReasonEnd, TraceEvent
from batonflow.schema import ToolInfo, assistant, user
from batonflow.testing import ScriptedModel
from batonflow.trace import RunTrace

PACKAGE = Path(batonflow.__file__).parent


def model_callers() -> set[str]:
    """The modules that call ``x.generate(...)`` or ``x.stream(...)`` on something that is not a model step, outside
    the model step itself and the models (providers, wrappers such as RetryingModel, the fakes)."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        module = path.relative_to(PACKAGE).as_posix()
        if module.startswith("models/") or module in ("testing.py", "adk/loop/_model_step.py"):
            continue
        tree = ast.parse(path.read_text())
        inside_models: set[int] = set()
        for cls in [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]:
            methods = {n.name for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
            if {"generate", "stream"} <= methods:
                # A ChatModel itself (a wrapper that delegates to another model).
                inside_models.update(id(n) for n in ast.walk(cls))
        for node in ast.walk(tree):
            if id(node) in inside_models or not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            receiver = ast.unparse(node.func.value)
            method = node.args[0] if node.args else None
            if isinstance(method, ast.Constant) and method.value in ("GET", "POST"):
                continue  # an HTTP client's stream("GET", url), not a model's
            if node.func.attr in ("generate", "stream") and "step" not in receiver and receiver != "self":
                found.add(module)
    return found


def test_the_model_step_is_the_only_caller_of_a_chat_model() -> None:
    assert model_callers() == set()


async def test_a_step_retries_a_transient_failure_and_traces_each_attempt() -> None:
    model = ScriptedModel([ModelHTTPError("busy", status_code=429), assistant("ok")])
    step = ModelStep(model, retry=ModelRetryConfig(max_retries=1, base_delay=0.0).rule("'scripted'"))
    trace: list[TraceEvent] = []
    ctx = RunContext(trace=RunTrace([trace.append], agent_name="a").root())
    message = await step.generate([user("hi")], None, ctx)
    assert message.content == "ok" and len(model.requests) == 2
    assert [type(e.error).__name__ for e in trace if isinstance(e, ReasonEnd)] == ["ModelHTTPError", "NoneType"]


async def test_a_step_gives_up_with_a_note_saying_how_often_it_tried() -> None:
    model = ScriptedModel([ModelHTTPError("busy", status_code=503)] * 3)
    step = ModelStep(model, retry=ModelRetryConfig(max_retries=2, base_delay=0.0).rule("'scripted'"))
    with pytest.raises(ModelHTTPError) as failure:
        await step.generate([user("hi")], None, RunContext())
    assert failure.value.__notes__ == ["'scripted': gave up after 3 attempts"]


@pytest.mark.parametrize("streamed", [False, True])
async def test_a_step_waits_the_retry_after_the_provider_asks_for_instead_of_its_backoff(streamed: bool) -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    first = ModelHTTPError("busy", status_code=429, retry_after=4.0)
    model = ScriptedModel([[first], [assistant("ok")]] if streamed else [first, assistant("ok")])
    step = ModelStep(model, retry=ModelRetryConfig(max_retries=2, base_delay=0.5).rule("'scripted'", sleep))
    if streamed:
        reply = await step.stream([user("hi")], None, RunContext())
        assert reply is not None and (await reply.message()).content == "ok"
    else:
        assert (await step.generate([user("hi")], None, RunContext())).content == "ok"
    assert waits == [4.0]


async def test_a_step_does_not_retry_a_wait_longer_than_max_delay() -> None:
    model = ScriptedModel([ModelHTTPError("busy", status_code=429, retry_after=120.0), assistant("never")])
    step = ModelStep(model, retry=ModelRetryConfig(max_retries=3, max_delay=10.0).rule("'scripted'"))
    with pytest.raises(ModelHTTPError) as failure:
        await step.generate([user("hi")], None, RunContext())
    assert failure.value.__notes__ == ["'scripted': not retried: the provider asked to wait 120 s, more than 10 s"]
    assert len(model.requests) == 1


async def test_a_held_back_stream_that_ends_empty_is_asked_again_unseen() -> None:
    async def no_sleep(_: float) -> None:
        return None

    model = ScriptedModel([[assistant("")], [assistant("Hel"), assistant("lo")]])
    agent = SimpleAgent(model=model, sleep=no_sleep)
    events = await collect_events(agent.run(AgentInput(messages=[user("hi")], enable_streaming=True)))
    assert [await e.message_output.get_message() for e in events if e.message_output] == [assistant("Hello")]
    assert len(model.requests) == 2


async def test_a_stream_that_fails_before_its_first_chunk_is_retried_and_each_attempt_traced() -> None:
    model = ScriptedModel([[ModelHTTPError("busy", status_code=503)], [assistant("Hel"), assistant("lo")]])
    step = ModelStep(model, retry=ModelRetryConfig(max_retries=1, base_delay=0.0).rule("'scripted'"))
    trace: list[TraceEvent] = []
    ctx = RunContext(trace=RunTrace([trace.append], agent_name="a").root())
    reply = await step.stream([user("hi")], None, ctx)
    assert reply is not None
    assert reply.event.message_output is not None and reply.event.message_output.message_stream is not None
    shown = [chunk.content async for chunk in reply.event.message_output.message_stream]
    assert shown == ["Hel", "lo"] and (await reply.message()).content == "Hello"
    assert [type(e.error).__name__ for e in trace if isinstance(e, ReasonEnd)] == ["ModelHTTPError", "NoneType"]


async def test_a_stream_that_fails_after_a_chunk_reached_the_reader_is_not_retried() -> None:
    model = ScriptedModel([[assistant("Hel"), ModelHTTPError("gone", status_code=503)], [assistant("never")]])
    step = ModelStep(model, retry=ModelRetryConfig(max_retries=3, base_delay=0.0).rule("'scripted'"))
    reply = await step.stream([user("hi")], None, RunContext())
    assert reply is not None
    with pytest.raises(ModelHTTPError):
        await reply.message()
    assert len(model.requests) == 1


def test_the_tools_offered_are_not_saved_with_the_loop_state() -> None:
    state = ReactState(messages=[user("hi")], remaining=3)
    state.tools = [ToolInfo(name="lookup", description="Look up.", parameters={"type": "object"})]
    restored = decode(encode(state))
    assert isinstance(restored, ReactState) and restored.tools == [] and restored.messages == [user("hi")]

import asyncio
import logging

import pytest

from batonflow.adk import (
    AgentEvent,
    AgentTool,
    ChatModelAgent,
    RunContext,
    Runner,
    RunStep,
    collect_events,
    set_sub_agents,
)
from batonflow.schema import Message, ResponseMeta, Usage, assistant
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import ToolContext, tool
from batonflow.trace import (
    ActionEnd,
    AgentEnd,
    AgentStart,
    ReasonEnd,
    ReasonStart,
    RunEnd,
    RunStart,
    ToolCallEnd,
    ToolCallStart,
    TraceEvent,
)


@tool
async def lookup(order_id: int) -> str:
    """Look an order up."""
    return f"order {order_id}: shipped"


@tool
async def broken(order_id: int) -> str:
    """Always fails."""
    raise RuntimeError(f"database down for {order_id}")


def agent(name: str, *responses: Message | BaseException, **kw: object) -> ChatModelAgent:
    return ChatModelAgent(name=name, description=f"{name} agent", model=ScriptedModel(list(responses)), **kw)


def path(*names: str) -> tuple[RunStep, ...]:
    return tuple(RunStep(n) for n in names)


async def traced(runner_agent: ChatModelAgent | object, text: str = "q", **kw: object) -> list[TraceEvent]:
    seen: list[TraceEvent] = []
    await collect_events(Runner(runner_agent, callbacks=[seen.append], **kw).query(text))  # type: ignore[arg-type]
    return seen


async def test_a_tool_turn_emits_run_agent_reason_action_and_tool_events_in_order() -> None:
    a = agent("clerk", tool_calls(("lookup", {"order_id": 7})), assistant("It shipped."), tools=[lookup])
    seen = await traced(a)
    assert [e.kind for e in seen] == [
        "run_start",
        "agent_start",
        "reason_start",
        "reason_end",
        "action_start",
        "tool_call_start",
        "tool_call_end",
        "action_end",
        "reason_start",
        "reason_end",
        "agent_end",
        "run_end",
    ]
    assert len({e.run_id for e in seen}) == 1
    start = seen[2]
    assert isinstance(start, ReasonStart)
    assert (start.model, start.message_count, start.tools) == ("scripted", 1, ("lookup",))
    end = seen[6]
    assert isinstance(end, ToolCallEnd)
    assert (end.call_id, end.tool_name, end.arguments, end.observation, end.error) == (
        "call_1",
        "lookup",
        '{"order_id": 7}',
        "order 7: shipped",
        None,
    )
    last_reason = seen[9]
    assert isinstance(last_reason, ReasonEnd) and last_reason.message is not None
    assert last_reason.message.content == "It shipped."


async def test_spans_nest_run_then_agent_then_model_action_and_tool_calls() -> None:
    a = agent("clerk", tool_calls(("lookup", {"order_id": 7})), assistant("ok"), tools=[lookup])
    seen = await traced(a)
    by_kind = {e.kind: e for e in seen}
    run, agent_start = by_kind["run_start"], by_kind["agent_start"]
    assert run.parent_id is None and agent_start.parent_id == run.span_id
    assert by_kind["reason_start"].parent_id == agent_start.span_id
    assert by_kind["action_start"].parent_id == agent_start.span_id
    assert by_kind["tool_call_start"].parent_id == agent_start.span_id
    # Each end event closes the span its start opened.
    for kind in ("run", "agent", "reason", "action", "tool_call"):
        assert by_kind[f"{kind}_start"].span_id == by_kind[f"{kind}_end"].span_id
    assert all(e.run_path == path("clerk") for e in seen if e.kind not in ("run_start", "run_end"))


async def test_a_transfer_nests_the_target_agent_under_the_router_with_its_run_path() -> None:
    router = agent("router", tool_calls(("transfer_to_agent", {"agent_name": "refund"})))
    refund = agent("refund", assistant("Refunded."))
    seen = await traced(set_sub_agents(router, [refund]))
    agents = [(e.kind, e.agent_name, e.run_path) for e in seen if isinstance(e, AgentStart | AgentEnd)]
    assert agents == [
        ("agent_start", "router", path("router")),
        ("agent_start", "refund", path("router", "refund")),
        ("agent_end", "refund", path("router", "refund")),
        ("agent_end", "router", path("router")),
    ]
    router_start, refund_start = (e for e in seen if isinstance(e, AgentStart))
    assert refund_start.parent_id == router_start.span_id
    tool_end = next(e for e in seen if isinstance(e, ToolCallEnd))
    assert (tool_end.tool_name, tool_end.run_path) == ("transfer_to_agent", path("router"))


async def test_an_agent_tools_inner_agent_is_traced_under_the_tool_call_with_the_callers_path() -> None:
    inner = agent("helper", assistant("42"))
    outer = agent("boss", tool_calls(("helper", {"request": "compute"})), assistant("done"), tools=[AgentTool(inner)])
    seen = await traced(outer)
    tool_start = next(e for e in seen if isinstance(e, ToolCallStart))
    helper_start = next(e for e in seen if isinstance(e, AgentStart) and e.agent_name == "helper")
    assert helper_start.parent_id == tool_start.span_id
    assert helper_start.run_path == path("boss", "helper")
    helper_reason = next(e for e in seen if isinstance(e, ReasonEnd) and e.agent_name == "helper")
    assert helper_reason.parent_id == helper_start.span_id
    assert helper_reason.message is not None and helper_reason.message.content == "42"


async def test_a_tool_that_raises_ends_its_tool_call_action_agent_and_run_with_the_error() -> None:
    a = agent("clerk", tool_calls(("broken", {"order_id": 7})), tools=[broken])
    seen = await traced(a)
    tool_end = next(e for e in seen if isinstance(e, ToolCallEnd))
    assert isinstance(tool_end.error, RuntimeError) and tool_end.observation is None
    for kind in (ActionEnd, AgentEnd, RunEnd):
        end = next(e for e in seen if isinstance(e, kind))
        assert end.error is tool_end.error, kind


async def test_bad_tool_arguments_are_an_observation_not_an_error() -> None:
    a = agent("clerk", tool_calls(("lookup", {"order_id": "seven"})), assistant("sorry"), tools=[lookup])
    seen = await traced(a)
    tool_end = next(e for e in seen if isinstance(e, ToolCallEnd))
    assert tool_end.error is None
    assert tool_end.observation is not None and "order_id" in tool_end.observation


async def test_a_model_error_is_reported_in_reason_end_agent_end_and_run_end() -> None:
    boom = RuntimeError("model down")
    seen = await traced(agent("clerk", boom))
    assert [e.kind for e in seen] == ["run_start", "agent_start", "reason_start", "reason_end", "agent_end", "run_end"]
    assert [getattr(e, "error", None) for e in seen[3:]] == [boom, boom, boom]


async def test_a_callback_that_raises_is_logged_and_the_run_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[TraceEvent] = []

    def fails(event: TraceEvent) -> None:
        raise ValueError("bad callback")

    runner = Runner(agent("clerk", assistant("hi")), callbacks=[fails, seen.append])
    with caplog.at_level(logging.ERROR, logger="batonflow.observe"):
        events = await collect_events(runner.query("q"))
    assert [e.error for e in events] == [None]
    assert events[0].message_output is not None and events[0].message_output.message is not None
    assert events[0].message_output.message.content == "hi"
    assert [e.kind for e in seen][-1] == "run_end"
    assert "bad callback" in caplog.text and "run_start" in caplog.text


async def test_async_callbacks_are_awaited_before_the_run_goes_on() -> None:
    seen: list[str] = []

    async def slow(event: TraceEvent) -> None:
        await asyncio.sleep(0)
        seen.append(event.kind)

    events = await collect_events(Runner(agent("clerk", assistant("hi")), callbacks=[slow]).query("q"))
    assert seen == ["run_start", "agent_start", "reason_start", "reason_end", "agent_end", "run_end"]
    assert len(events) == 1


async def test_stream_trace_interleaves_agent_events_after_the_trace_events_that_produced_them() -> None:
    a = agent("clerk", tool_calls(("lookup", {"order_id": 7})), assistant("It shipped."), tools=[lookup])
    items = [item async for item in Runner(a).stream_trace("where is order 7?")]
    assert [item.kind if not isinstance(item, AgentEvent) else "EVENT" for item in items] == [
        "run_start",
        "agent_start",
        "reason_start",
        "reason_end",
        "EVENT",  # the assistant's tool call
        "action_start",
        "tool_call_start",
        "tool_call_end",
        "EVENT",  # the tool result, sent as soon as its call ends
        "action_end",
        "reason_start",
        "reason_end",
        "EVENT",  # the answer
        "agent_end",
        "run_end",
    ]
    assert isinstance(items[-1], RunEnd) and items[-1].metrics is not None


async def test_stream_trace_also_feeds_the_runners_callbacks() -> None:
    seen: list[TraceEvent] = []
    items = [item async for item in Runner(agent("clerk", assistant("hi")), callbacks=[seen.append]).stream_trace("q")]
    assert seen == [item for item in items if not isinstance(item, AgentEvent)]


async def test_a_streamed_answer_ends_its_reason_span_with_the_joined_message_and_usage() -> None:
    answer = assistant("It has shipped today.")
    answer.response_meta = ResponseMeta(finish_reason="stop", usage=Usage(prompt_tokens=5, completion_tokens=4))
    seen = await traced(agent("clerk", answer), enable_streaming=True)
    end = next(e for e in seen if isinstance(e, ReasonEnd))
    assert end.message is not None and end.message.content == "It has shipped today."
    assert (end.finish_reason, end.usage) == ("stop", Usage(prompt_tokens=5, completion_tokens=4))


async def test_a_run_without_callbacks_has_no_trace_on_its_context() -> None:
    contexts: list[object] = []

    @tool
    async def probe(ctx: ToolContext) -> str:
        """Record the run context."""
        contexts.append(ctx.run)
        return "ok"

    a = agent("clerk", tool_calls(("probe", {})), assistant("done"), tools=[probe])
    await collect_events(Runner(a).query("q"))
    assert len(contexts) == 1 and isinstance(contexts[0], RunContext)
    assert contexts[0].trace is None


async def test_run_start_and_end_bracket_a_run_that_is_closed_early() -> None:
    seen: list[TraceEvent] = []
    a = agent("clerk", tool_calls(("lookup", {"order_id": 7})), assistant("It shipped."), tools=[lookup])
    stream = Runner(a, callbacks=[seen.append]).query("q")
    async for _ in stream:
        break
    await stream.aclose()
    assert isinstance(seen[0], RunStart) and isinstance(seen[-1], RunEnd)


async def test_concurrent_agent_tools_each_nest_their_inner_agent_under_their_own_call() -> None:
    first, second = agent("first", assistant("1")), agent("second", assistant("2"))
    outer = agent(
        "boss",
        tool_calls(("first", {"request": "a"}), ("second", {"request": "b"})),
        assistant("done"),
        tools=[AgentTool(first), AgentTool(second)],
    )
    seen = await traced(outer)
    calls = {e.tool_name: e.span_id for e in seen if isinstance(e, ToolCallStart)}
    inner = {e.agent_name: e.parent_id for e in seen if isinstance(e, AgentStart) and e.agent_name != "boss"}
    assert inner == {"first": calls["first"], "second": calls["second"]}

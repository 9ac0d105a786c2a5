import asyncio
from collections.abc import AsyncIterator

import pytest

from batonflow.adk import (
    AgentAction,
    AgentEvent,
    AgentInput,
    AgentTool,
    BreakLoopAction,
    ChatModelAgent,
    LoopAgent,
    RunContext,
    Runner,
    collect_events,
    event_from_message,
    exit_action,
    set_sub_agents,
    transfer_action,
)
from batonflow.errors import RunError, UserError
from batonflow.schema import Message, assistant
from batonflow.testing import PushModel, ScriptedModel, tool_calls
from batonflow.tools import ToolContext, tool


def agent(name: str, *responses: Message, **kw: object) -> ChatModelAgent:
    return ChatModelAgent(name=name, description=f"{name} agent", model=ScriptedModel(list(responses)), **kw)


def texts(events: list[AgentEvent]) -> list[str]:
    return [e.message_output.message.content for e in events if e.message_output and e.message_output.message]


def test_agent_tool_info_names_the_agent_and_takes_a_request() -> None:
    info = AgentTool(agent("helper")).info
    assert (info.name, info.description) == ("helper", "helper agent")
    assert info.parameters == {
        "type": "object",
        "properties": {"request": {"type": "string", "description": "request to be processed"}},
        "required": ["request"],
    }


def test_an_agent_without_description_cannot_be_a_tool() -> None:
    with pytest.raises(UserError, match="expected the agent to have a description"):
        AgentTool(ChatModelAgent(name="x", model=ScriptedModel([])))


async def test_the_result_is_the_text_of_the_inner_agents_last_message() -> None:
    inner = agent("helper", assistant("the answer is 42"))
    outer = agent(
        "boss", tool_calls(("helper", {"request": "compute it"})), assistant("done"), tools=[AgentTool(inner)]
    )
    events = await collect_events(Runner(outer).query("q"))
    assert texts(events) == ["", "the answer is 42", "done"]
    assert isinstance(inner.model, ScriptedModel)
    assert [(m.role, m.content) for m in inner.model.requests[0].messages] == [("user", "compute it")]


async def test_session_values_are_shared_but_history_is_not() -> None:
    @tool(threaded=False)
    def remember(ctx: ToolContext) -> str:
        """Remember."""
        ctx.add_session_value("from_inner", "yes")
        return "ok"

    inner = agent("helper", tool_calls(("remember", {})), assistant("done inside"), tools=[remember])
    outer = agent(
        "boss", tool_calls(("helper", {"request": "r"})), assistant("x"), tools=[AgentTool(inner)], output_key="out"
    )
    ctx = RunContext(root_input=AgentInput(messages=[]))
    ctx.add_session_value("from_outer", 1)
    async for _ in outer.run(AgentInput(messages=[Message(role="user", content="q")]), ctx):
        pass
    assert ctx.get_session_values() == {"from_outer": 1, "from_inner": "yes", "out": "x"}
    assert ctx.session.events == []  # the inner run recorded its history in its own session


async def test_full_chat_history_passes_the_conversation_rewritten() -> None:
    inner = agent("helper", assistant("ok"))
    outer = agent(
        "boss",
        tool_calls(("helper", {"request": "ignored"})),
        assistant("x"),
        instruction="You are the boss.",
        tools=[AgentTool(inner, full_chat_history=True)],
    )
    await collect_events(Runner(outer).query("please help"))
    assert isinstance(inner.model, ScriptedModel)
    sent = inner.model.requests[0].messages
    assert [m.role for m in sent] == ["user", "user", "user"]
    assert sent[0].content == "please help"
    assert sent[1].content == "For context: [boss] called tool: `transfer_to_agent` with arguments: helper."
    assert (
        sent[2].content
        == "For context: [boss] `transfer_to_agent` tool returned result: successfully transferred to agent [helper]."
    )


async def test_custom_input_schema_passes_the_raw_arguments() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    inner = agent("weather", assistant("sunny"))
    outer = agent(
        "boss", tool_calls(("weather", {"city": "Oslo"})), assistant("x"), tools=[AgentTool(inner, input_schema=schema)]
    )
    await collect_events(Runner(outer).query("q"))
    assert isinstance(inner.model, ScriptedModel)
    assert inner.model.requests[0].messages[0].content == '{"city": "Oslo"}'


class Acting:
    """An inner agent that answers and then takes an action that must not escape the tool."""

    def __init__(self, action: AgentAction) -> None:
        self.name, self.description, self.action = "acting", "acts", action

    async def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        event = event_from_message(assistant("inner answer"))
        event.action = self.action
        yield event


@pytest.mark.parametrize(
    "action",
    [exit_action(), AgentAction(break_loop=BreakLoopAction(from_agent="acting"))],
    ids=["exit", "break_loop"],
)
async def test_only_interrupts_escape_an_agent_tool(action: AgentAction) -> None:
    outer = agent(
        "boss",
        tool_calls(("acting", {"request": "r"})),
        assistant("outer continues"),
        tools=[AgentTool(Acting(action))],
    )
    loop = LoopAgent(name="loop", max_iterations=2, sub_agents=[outer])
    events = await collect_events(Runner(loop).query("q"))
    # The outer agent went on after the tool, and the loop ran its two iterations: nothing leaked.
    assert texts(events).count("outer continues") == 1  # the scripted model has one answer: the second iteration errors
    assert all(e.action is None or e.action.exit is False for e in events)
    assert all(e.action is None or e.action.transfer_to_agent is None for e in events)
    assert all(e.action is None or e.action.break_loop is None for e in events)
    assert texts(events)[1] == "inner answer"


async def test_a_transfer_inside_an_agent_tool_stays_inside() -> None:
    deep = agent("deep", assistant("deep answer"))
    inner = set_sub_agents(Acting(transfer_action("deep")), [deep])
    outer = agent(
        "boss", tool_calls(("acting", {"request": "r"})), assistant("outer continues"), tools=[AgentTool(inner)]
    )
    events = await collect_events(Runner(outer).query("q"))
    assert texts(events) == ["", "deep answer", "outer continues"]
    assert [str(s) for s in events[-1].run_path] == ["boss"]


async def test_an_inner_error_is_the_tools_error() -> None:
    inner = agent("helper")  # no scripted answer: its model call fails
    outer = agent("boss", tool_calls(("helper", {"request": "r"})), tools=[AgentTool(inner)])
    events = await collect_events(Runner(outer).query("q"))
    assert isinstance(events[-1].error, UserError)
    assert "ScriptedModel has no response left" in str(events[-1].error)


class Silent:
    name, description = "silent", "says nothing"

    async def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        return
        yield


async def test_an_inner_agent_without_events_is_an_error() -> None:
    outer = agent("boss", tool_calls(("silent", {"request": "r"})), tools=[AgentTool(Silent())])
    events = await collect_events(Runner(outer).query("q"))
    assert isinstance(events[-1].error, RunError)
    assert str(events[-1].error) == "no event returned"


async def test_emit_internal_events_forwards_inner_events_with_the_run_path_prefixed() -> None:
    inner = agent("helper", tool_calls(("noop", {})), assistant("inner done"), tools=[noop])
    outer = agent(
        "boss",
        tool_calls(("helper", {"request": "r"})),
        assistant("x"),
        tools=[AgentTool(inner, emit_internal_events=True)],
    )
    events = await collect_events(Runner(outer).query("q"))
    paths = [tuple(str(s) for s in e.run_path) for e in events]
    assert paths == [("boss",), ("boss", "helper"), ("boss", "helper"), ("boss", "helper"), ("boss",), ("boss",)]
    assert texts(events) == ["", "", "noop!", "inner done", "inner done", "x"]


@tool(threaded=False)
def noop() -> str:
    """Do nothing."""
    return "noop!"


async def test_tokens_stream_through_agent_tool_inside_a_loop_inside_a_flow() -> None:
    model = PushModel()
    inner = ChatModelAgent(name="writer", description="writes", model=model)  # type: ignore[arg-type]
    outer = agent("editor", tool_calls(("writer", {"request": "write"})), assistant("edited"), tools=[AgentTool(inner)])
    loop = LoopAgent(name="rounds", max_iterations=1, sub_agents=[outer])
    router = agent("router", tool_calls(("transfer_to_agent", {"agent_name": "rounds"})))
    stream = Runner(set_sub_agents(router, [loop]), enable_streaming=True).query("go")

    async def next_stream_event() -> AgentEvent:
        async for event in stream:
            if event.run_path[-1].agent_name == "writer":
                return event
        raise AssertionError("no event from the writer")

    event = await asyncio.wait_for(next_stream_event(), 2)
    assert [str(s) for s in event.run_path] == ["router", "rounds", "editor", "writer"]
    variant = event.message_output
    assert variant is not None
    assert variant.is_streaming
    assert variant.message_stream is not None
    model.push(assistant("Once "))
    first = await asyncio.wait_for(variant.message_stream.__anext__(), 2)
    assert first.content == "Once "  # delivered while the model is still writing
    model.push(assistant("upon a time."))
    model.finish()
    assert [c.content async for c in variant.message_stream] == ["upon a time."]
    rest = await collect_events(stream)
    assert texts(rest)[-1] == "edited"
    assert isinstance(outer.model, ScriptedModel)
    assert outer.model.requests[1].messages[-1].content == "Once upon a time."


async def test_deeply_nested_arguments_are_an_observation_the_calling_model_can_read() -> None:
    inner = agent("helper", assistant("never"))
    outer = agent("boss", tool_calls(("helper", "[" * 100_000)), assistant("sorry"), tools=[AgentTool(inner)])
    events = await collect_events(Runner(outer).query("q"))
    assert [e.error for e in events if e.error is not None] == []
    assert isinstance(outer.model, ScriptedModel) and isinstance(inner.model, ScriptedModel)
    assert outer.model.requests[1].messages[-1].content == (
        "Invalid arguments for tool [helper]: expected JSON nested at most 100 levels deep, got 100,000 levels"
    )
    assert inner.model.requests == []

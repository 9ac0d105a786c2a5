import dataclasses

import pytest

from batonflow.adk import AgentInput, ChatModelAgent, MessageVariant, RunContext, Runner, RunStep, set_sub_agents
from batonflow.schema import Stream, assistant, user
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import ToolContext, tool


def test_run_step_is_read_only_comparable_and_prints_its_name() -> None:
    step = RunStep("router")
    assert step == RunStep("router") and step != RunStep("refund")
    assert str(step) == "router"
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.agent_name = "other"  # type: ignore[misc]


async def test_message_variant_get_message_joins_a_stream() -> None:
    variant = MessageVariant(is_streaming=True, message_stream=Stream.from_list([assistant("a"), assistant("b")]))
    assert (await variant.get_message()).content == "ab"
    assert (await variant.get_message()).content == "ab"  # joined once, kept


async def test_events_are_numbered_in_order() -> None:
    root = set_sub_agents(
        ChatModelAgent(name="r", model=ScriptedModel([tool_calls(("transfer_to_agent", {"agent_name": "s"}))])),
        [ChatModelAgent(name="s", model=ScriptedModel([assistant("done")]))],
    )
    events = [e async for e in Runner(root).run([user("x")])]
    assert [e.seq for e in events] == [1, 2, 3]


async def test_session_values_are_seeded_per_run_and_shared_by_agents_and_tools() -> None:
    @tool(threaded=False)
    def note(ctx: ToolContext) -> str:
        """Note."""
        ctx.add_session_value("noted", f"for {ctx.get_session_value('user')}")
        return "ok"

    second = ChatModelAgent(name="s", instruction="Remember: {noted}.", model=ScriptedModel([assistant("fine")]))
    first = ChatModelAgent(
        name="f",
        model=ScriptedModel([tool_calls(("note", {}), ("transfer_to_agent", {"agent_name": "s"}))]),
        tools=[note],
    )
    runner = Runner(set_sub_agents(first, [second]), session_values={"user": "ann"})
    await runner.query("x").collect()
    assert isinstance(second.model, ScriptedModel)
    assert second.model.requests[0].messages[0].content.startswith("Remember: for ann.")
    assert runner.session_values == {"user": "ann"}  # the seed is not changed by a run


async def test_run_level_session_values_override_the_seed() -> None:
    agent = ChatModelAgent(name="a", instruction="Hi {name}.", model=ScriptedModel([assistant("x")]))
    await Runner(agent, session_values={"name": "seed"}).query("q", session_values={"name": "run"}).collect()
    assert isinstance(agent.model, ScriptedModel)
    assert agent.model.requests[0].messages[0].content == "Hi run."


def test_query_sync_returns_every_event_with_streams_joined() -> None:
    agent = ChatModelAgent(name="a", model=ScriptedModel([assistant("hello there")]))
    events = Runner(agent, enable_streaming=True).query_sync("hi")
    variant = events[0].message_output
    assert variant is not None and variant.is_streaming
    assert variant.message is not None and variant.message.content == "hello there"


def test_run_sync_takes_messages() -> None:
    agent = ChatModelAgent(name="a", model=ScriptedModel([assistant("ok")]))
    events = Runner(agent).run_sync([user("a"), assistant("b"), user("c")])
    assert isinstance(agent.model, ScriptedModel)
    assert [m.content for m in agent.model.requests[0].messages] == ["a", "b", "c"]
    assert events[-1].message_output is not None


async def test_an_agent_run_on_its_own_works_without_a_runner() -> None:
    agent = ChatModelAgent(name="a", model=ScriptedModel([assistant("solo")]))
    events = [e async for e in agent.run(AgentInput(messages=[user("x")]), RunContext())]
    assert events[0].message_output is not None and events[0].message_output.message == assistant("solo")
    assert events[0].run_path == ()  # only a flow agent sets run paths

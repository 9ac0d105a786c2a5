"""``RemoteA2AAgent`` against an A2A server made of the ``a2a-sdk`` package's own classes: the remote's streamed
text as a batonflow message, its ``input-required`` as an interrupt that resumes the remote task, the agent as a
sub-agent to transfer to, an ``AgentTool``, a team member and a graph node; and a remote that goes away, answers
garbage or never answers, as a ``RemoteAgentError``."""

from __future__ import annotations

import re
from typing import Any

import pytest

from batonflow import ChatModelAgent, Runner
from batonflow.adk import TRANSFER_TOOL_NAME, AgentTool, set_sub_agents
from batonflow.errors import RemoteAgentError, UserError
from batonflow.graph import GraphAgent, GraphSpec, NodeType
from batonflow.interop import RemoteA2AAgent
from batonflow.schema import Message, assistant
from batonflow.store import MemoryCheckpointStore
from batonflow.team import TeamAgent
from batonflow.testing import FunctionModel, tool_calls

from .a2a_checks import BASE, Weather, broken_app, over, weather_app


def remote(http: Any, path: str = "/weather", **options: Any) -> RemoteA2AAgent:
    return RemoteA2AAgent(name="weather", url=f"{BASE}{path}", http_client=http, **options)


async def test_the_remote_answer_streams_as_an_assistant_message() -> None:
    executor = Weather()
    async with over(weather_app(executor)) as http:
        runner = Runner(remote(http), enable_streaming=True)
        events = [event async for event in runner.query("Paris")]
    [event] = events
    variant = event.message_output
    assert variant is not None and variant.is_streaming
    assert (await variant.get_message()).content == "sunny in Paris"
    assert executor.told == ["Paris"]


async def test_a_remote_that_does_not_stream_answers_whole() -> None:
    async with over(weather_app(Weather(), streaming=False)) as http:
        result = await Runner(remote(http)).call("Rome")
    assert result.text == "sunny in Rome"


async def test_input_required_is_an_interrupt_whose_resume_answers_the_remote_task() -> None:
    executor = Weather()
    store = MemoryCheckpointStore()
    async with over(weather_app(executor)) as http:
        runner = Runner(remote(http), checkpoint_store=store)
        paused = await runner.call("ask", checkpoint_id="c1")
        assert paused.interrupt is not None
        [asked] = paused.interrupt.interrupt_contexts
        assert asked.info == {"agent": "weather", "asked": "Which city?"}
        done = await runner.call_resume("c1", {asked.id: "Oslo"})
    assert done.text == "sunny in Oslo"
    assert executor.told == ["ask", "Oslo"]


async def test_a_remote_agent_is_a_sub_agent_to_transfer_to() -> None:
    def route(messages: list[Message], tools: Any) -> Message:
        return tool_calls((TRANSFER_TOOL_NAME, {"agent_name": "weather"}))

    executor = Weather()
    async with over(weather_app(executor)) as http:
        router = ChatModelAgent(name="router", description="routes", model=FunctionModel(route))
        result = await Runner(set_sub_agents(router, [remote(http)])).call("Lima")
    assert result.text.startswith("sunny in ")
    assert "Lima" in executor.told[0]  # the transfer's history, as a transcript


async def test_a_remote_agent_is_an_agent_tool_and_a_team_member() -> None:
    def ask(messages: list[Message], tools: Any) -> Message:
        results = [m.content for m in messages if m.role == "tool"]
        return assistant(f"told: {results[-1]}") if results else tool_calls(("weather", {"request": "Kyiv"}))

    async with over(weather_app(Weather())) as http:
        boss = ChatModelAgent(
            name="boss", description="asks", model=FunctionModel(ask), tools=[AgentTool(remote(http))]
        )
        tool_result = await Runner(boss).call("weather?")
        team = TeamAgent(protocol="sequential", members=[remote(http)])
        team_result = await Runner(team).call("Quito")
    assert tool_result.text == "told: sunny in Kyiv"
    assert team_result.text == "sunny in Quito"


async def test_a_remote_that_goes_away_mid_stream_is_a_remote_agent_error() -> None:
    async with over(broken_app("cut")) as http:
        result = Runner(remote(http, "/broken")).call("hi")
        with pytest.raises(RemoteAgentError, match="went away mid-task") as raised:
            await result
    assert raised.value.url == f"{BASE}/broken" and raised.value.task_id == "t-1"


async def test_a_remote_that_answers_garbage_is_a_remote_agent_error() -> None:
    async with over(broken_app("garbage")) as http:
        with pytest.raises(RemoteAgentError, match="expected an A2A answer"):
            await Runner(remote(http, "/broken")).call("hi")


async def test_a_remote_that_never_answers_is_a_remote_agent_error_after_the_timeout() -> None:
    async with over(broken_app("silent")) as http:
        with pytest.raises(RemoteAgentError, match=re.escape("within 0.2 s")):
            await Runner(remote(http, "/broken", timeout=0.2)).call("hi")


async def test_an_unreachable_remote_is_a_remote_agent_error_naming_its_card() -> None:
    agent = RemoteA2AAgent(name="gone", url="http://127.0.0.1:9/a2a/gone", timeout=5)
    with pytest.raises(RemoteAgentError, match=re.escape("expected its agent card at http://127.0.0.1:9/a2a/gone")):
        await Runner(agent).call("hi")


def test_a_bad_url_or_timeout_is_a_user_error() -> None:
    with pytest.raises(UserError, match="expected an http"):
        RemoteA2AAgent(name="x", url="ftp://nowhere")
    with pytest.raises(UserError, match="seconds > 0"):
        RemoteA2AAgent(name="x", url="http://nowhere", timeout=0)


async def test_a_remote_agent_is_a_graph_node_whose_question_pauses_the_graph() -> None:
    executor = Weather()
    async with over(weather_app(executor)) as http:
        spec = GraphSpec("forecast")
        spec.add(NodeType.START, "start").link_add("ask")
        spec.add(NodeType.ACTIVITY, "ask", task=remote(http)).link_add("end")
        spec.add(NodeType.END, "end")
        runner = Runner(GraphAgent(spec.build()), checkpoint_store=MemoryCheckpointStore())
        paused = await runner.call("ask", checkpoint_id="g1")
        assert paused.interrupt is not None
        [asked] = [c for c in paused.interrupt.interrupt_contexts if c.is_root_cause]
        done = await runner.call_resume("g1", {asked.id: "Bern"})
    assert done.text == "sunny in Bern"
    assert executor.told == ["ask", "Bern"]

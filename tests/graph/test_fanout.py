"""Agent nodes of a graph agent on the worker pool (meta ``distribute: true``): each travels through the codec to
the run's dispatcher, and the flow sees the same answers, variables and history as when the nodes run here; an
interrupt in a remote node pauses the graph and resumes it; a bad ``distribute`` is refused naming the node."""

from __future__ import annotations

from typing import Any

import pytest

from batonflow import ChatModelAgent, Runner, ToolContext, tool
from batonflow.adk import Branch, dispatching, run_branch
from batonflow.graph import GraphAgent, GraphError, GraphSpec
from batonflow.schema import Message, assistant
from batonflow.store import MemoryCheckpointStore
from batonflow.testing import CodecDispatcher, FunctionModel, tool_calls
from batonflow.tools import ToolInfo


@tool
def check(city: str, ctx: ToolContext) -> str:
    """Ask a human whether a city may be reported.

    Args:
        city: the city
    """
    return "checked" if ctx.ask({"check": city}) == "yes" else "refused"


def reporter(city: str, *, asks: bool = False) -> ChatModelAgent:
    def answer(messages: list[Message], tools: list[ToolInfo]) -> Message:
        result = next((m for m in reversed(messages) if m.role == "tool"), None)
        if asks and result is None:
            return tool_calls(("check", {"city": city}))
        return assistant(f"{city} is sunny" + (f" ({result.content})" if result is not None else ""))

    return ChatModelAgent(
        name=f"{city}_reporter", description="reports", model=FunctionModel(answer), tools=[check] if asks else []
    )


def tally() -> ChatModelAgent:
    def answer(messages: list[Message], tools: list[ToolInfo]) -> Message:
        return assistant(f"{sum('is sunny' in m.content for m in messages)} reports seen")

    return ChatModelAgent(name="tally", description="counts", model=FunctionModel(answer))


def weather(*, distribute: Any = True, asks: str = "") -> GraphAgent:
    spec = GraphSpec("weather")
    spec.add_start("s").link_add("fork")
    fork = spec.add_parallel("fork")
    for city in ("oslo", "lima", "pune"):
        fork.link_add(city)
        meta = {"output": city, "distribute": distribute}
        spec.add_activity(city, task=reporter(city, asks=city == asks), meta=meta).link_add("join")
    spec.add_parallel("join").link_add("sum")
    spec.add_activity("sum", task=tally(), meta={"output": "summary"}).link_add("e")
    spec.add_end("e")
    return GraphAgent(spec.build())


def said(events: list[Any]) -> list[tuple[str, str]]:
    return sorted(
        (e.agent_name, e.message_output.message.content)
        for e in events
        if e.message_output is not None and e.message_output.message is not None
    )


async def test_distributed_agent_nodes_travel_and_the_flow_sees_what_it_sees_in_process() -> None:
    here = await Runner(weather(distribute=False)).call("weather?")
    agent = weather()
    dispatcher = CodecDispatcher(agent)
    with dispatching(dispatcher):
        there = await Runner(agent).call("weather?")
    assert sorted(b.step for b in dispatcher.branches) == ["lima", "oslo", "pune"]
    assert {b.name for b in dispatcher.branches} == {"oslo_reporter", "lima_reporter", "pune_reporter"}
    assert there.text == here.text == "3 reports seen"  # the tally after the join saw every remote node's answer
    assert said(there.events) == said(here.events)
    paths = {tuple(s.agent_name for s in e.run_path) for e in there.events if e.agent_name == "oslo_reporter"}
    assert paths == {("weather", "oslo", "oslo_reporter")}


@pytest.mark.parametrize("asker", ["oslo", "lima", "pune"])
async def test_an_interrupt_in_a_remote_node_pauses_the_graph_and_resumes_there(asker: str) -> None:
    store = MemoryCheckpointStore()
    agent = weather(asks=asker)
    dispatcher = CodecDispatcher(agent)
    runner = Runner(agent, checkpoint_store=store)
    with dispatching(dispatcher):
        paused = await runner.call("weather?", checkpoint_id="g1")
        assert paused.interrupt is not None and len(paused.interrupt_ids) == 1
        assert [c.info for c in paused.interrupt.interrupt_contexts] == [{"check": asker}]
        done = await runner.call_resume("g1", targets={paused.interrupt_ids[0]: "yes"})
    resumed = dispatcher.branches[3:]
    # Only the waiting node went to the pool again, to resume; the two that had finished were not sent again.
    assert [b.step for b in resumed] == [asker] and resumed[0].resume_records is not None
    assert said(done.events) == [
        (f"{asker}_reporter", "checked"),
        (f"{asker}_reporter", f"{asker} is sunny (checked)"),
        ("tally", "3 reports seen"),
    ]
    assert done.text == "3 reports seen"  # the tally saw each branch's report once


def test_distribute_must_be_true_or_false() -> None:
    with pytest.raises(GraphError, match="graph 'weather', node 'oslo', meta 'distribute': expected true or false, "):
        weather(distribute="yes")


async def test_a_remote_node_the_worker_cannot_find_is_refused() -> None:
    agent = weather()
    dispatcher = CodecDispatcher(agent)
    with dispatching(dispatcher):
        await Runner(agent).call("weather?")
    branch = dispatcher.branches[0]
    fields = {name: getattr(branch, name) for name in Branch.__dataclass_fields__}
    with pytest.raises(Exception, match="expected an agent node 'nowhere' in graph 'weather', got no such node"):
        await run_branch(agent, Branch(**{**fields, "step": "nowhere"}))
    with pytest.raises(Exception, match="expected an agent node 's' in graph 'weather', got a node whose task"):
        await run_branch(agent, Branch(**{**fields, "step": "s"}))
    with pytest.raises(Exception, match=r"to be 'someone', got the agents \['lima_reporter', 'oslo_reporter'"):
        await run_branch(agent, Branch(**{**fields, "name": "someone"}))

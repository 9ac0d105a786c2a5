from __future__ import annotations

from batonflow import Runner
from batonflow.graph import FlowContext, GraphSpec, Node
from batonflow.team import TeamAgent, current_trace

from .conftest import member, paths


async def test_sequential_runs_the_members_in_order_without_a_model() -> None:
    team = TeamAgent(protocol="sequential", members=[member("draft", "a draft"), member("edit", "the edited text")])
    result = await Runner(team).call("Write")
    assert result.text == "the edited text"
    assert paths(result) == [["team_agent", "draft"], ["team_agent", "edit"], ["team_agent"]]
    trace = result.session_values["__team_agent"]
    stages = trace.protocol_context["sequence_state_obj"]["stages"]
    assert [(name, stage["status"]) for name, stage in stages.items()] == [
        ("draft", "COMPLETED"),
        ("edit", "COMPLETED"),
    ]


async def test_sequential_retries_a_poor_stage_once_then_moves_on() -> None:
    team = TeamAgent(protocol="sequential", members=[member("a", "x", "y"), member("b", "fine output")])
    result = await Runner(team).call("Go")
    trace = result.session_values["__team_agent"]
    assert [(r.source, r.content) for r in trace.records] == [("a", "x"), ("a", "y"), ("b", "fine output")]
    stages = trace.protocol_context["sequence_state_obj"]["stages"]
    assert stages["a"] == {"status": "FAILED", "retries": 1, "summary": "Quality check failed"}


async def test_none_runs_the_users_graph_with_members_as_nodes() -> None:
    writer, reviewer = member("writer", "text"), member("reviewer", "looks good")

    def aggregate(context: FlowContext, node: Node) -> None:
        trace = current_trace()
        trace.final_answer = " + ".join(r.content for r in trace.records)

    def shape(spec: GraphSpec) -> None:
        spec.add_start("start").link_add("fork")
        spec.add_parallel("fork").link_add("writer").link_add("reviewer")
        spec.add_activity("writer", task=writer).link_add("join")
        spec.add_activity("reviewer", task=reviewer).link_add("join")
        spec.add_parallel("join", task=aggregate).link_add("end")
        spec.add_end("end")

    team = TeamAgent(protocol="none", members=[writer, reviewer], graph_adjuster=shape)
    result = await Runner(team).call("Go")
    assert sorted(result.text.split(" + ")) == ["looks good", "text"]


def test_none_without_a_graph_is_the_engines_error() -> None:
    import pytest

    from batonflow.graph import GraphError

    with pytest.raises(GraphError, match="No start node found"):
        TeamAgent(protocol="none", members=[member("a")])

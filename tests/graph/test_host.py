"""The graph-as-agent host that ``GraphAgent`` and ``TeamAgent`` share: the flow paced by its reader and cancelled
when the reader leaves, the run a flow belongs to (carried on its run context, so that a flow evaluated inside a
node is no part of it), and agents at nodes of a team's graph run as a graph agent's."""

from __future__ import annotations

import asyncio

from batonflow import AgentInput, ChatModelAgent, RunContext, Runner, SqliteCheckpointStore, ToolContext, tool
from batonflow.graph import FlowContext, FlowEngine, GraphAgent, GraphSpec, HostRun, Node, current_host
from batonflow.schema import assistant, user
from batonflow.team import TeamAgent
from batonflow.testing import ScriptedModel, tool_calls


def answering(name: str, *answers: str) -> ChatModelAgent:
    return ChatModelAgent(name=name, description=name, model=ScriptedModel([assistant(a) for a in answers]))


async def test_leaving_a_graph_agent_s_events_early_cancels_its_flow_and_waits_for_it() -> None:
    ran: list[str] = []

    def after(context: FlowContext, node: Node) -> None:
        ran.append(node.id)

    spec = GraphSpec("g")
    spec.add_start("start").link_add("first")
    spec.add_activity("first", task=answering("first", "one")).link_add("second")
    spec.add_activity("second", task=answering("second", "two")).link_add("after")
    spec.add_activity("after", task=after).link_add("end")
    spec.add_end("end")
    agent = GraphAgent(spec.build())
    events = agent.run(AgentInput(messages=[user("go")]))

    first = await anext(events)
    await events.aclose()  # type: ignore[attr-defined]

    assert first.output is not None and first.output.message_output is not None
    assert first.output.message_output.message == assistant("one")
    assert ran == []  # the flow waited for its reader at the first agent's event, and was cancelled there
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_the_flow_knows_the_run_it_belongs_to_while_a_graph_agent_runs_it() -> None:
    seen: list[tuple[RunContext | None, bool]] = []

    def look(context: FlowContext, node: Node) -> None:
        seen.append((context.run, current_host() is not None))

    spec = GraphSpec("g")
    spec.add_start("start").link_add("look")
    spec.add_activity("look", task=look).link_add("end")
    spec.add_end("end")
    graph = spec.build()
    context = FlowContext()
    await GraphAgent(graph).engine.eval(graph, context)
    await Runner(GraphAgent(graph, name="hosted")).call("go")

    alone, hosted = seen
    assert alone == (None, False)
    assert hosted[0] is not None and [str(step) for step in hosted[0].run_path] == ["hosted"] and hosted[1]
    assert context.run is None


async def test_an_agent_node_of_a_team_s_graph_runs_on_the_team_s_run_and_resumes_there(tmp_path: object) -> None:
    refunds: list[int] = []

    @tool
    def refund(order_id: int, ctx: ToolContext) -> str:
        """Refund an order once a person approved it."""
        refunds.append(order_id)
        return "refunded" if ctx.ask({"approve_refund": order_id}) == "yes" else "not refunded"

    def team(script: list[object]) -> TeamAgent:
        clerk = ChatModelAgent(name="clerk", description="refunds", model=ScriptedModel(script), tools=[refund])
        writer = answering("writer", "Noted.")

        def shape(spec: GraphSpec) -> None:
            spec.add_start("start").link_add("writer")
            spec.add_activity("writer").link_add("refunds")
            spec.add_activity("refunds", task=clerk).link_add("end")  # an agent that is not a member
            spec.add_end("end")

        return TeamAgent(name="desk", protocol="none", members=[writer], graph_adjuster=shape)

    db = f"{tmp_path}/checkpoints.db"
    async with SqliteCheckpointStore(db) as store:
        first = await Runner(team([tool_calls(("refund", {"order_id": 7}))]), checkpoint_store=store).call(
            "refund 7", checkpoint_id="c"
        )
    assert len(first.interrupt_ids) == 1
    async with SqliteCheckpointStore(db) as store:
        second = await Runner(team([assistant("Order 7 is refunded.")]), checkpoint_store=store).call_resume(
            "c", targets=dict.fromkeys(first.interrupt_ids, "yes")
        )

    paths = [[str(step) for step in event.run_path] for event in second.events]
    assert ["desk", "refunds", "clerk"] in paths
    assert refunds == [7, 7]  # asked, then resumed once to read the answer


async def test_a_flow_evaluated_inside_a_hosted_node_is_no_part_of_the_hosted_run() -> None:
    inner = GraphSpec("inner")
    inner.add_start("start").link_add("ask")
    inner.add_activity("ask", task=answering("inside", "from the inner flow")).link_add("end")
    inner.add_end("end")
    inner_graph = inner.build()
    seen: list[tuple[object, bool, bool]] = []

    async def nested(context: FlowContext, node: Node) -> None:
        ran = await FlowEngine().eval(inner_graph, FlowContext())
        host = current_host()
        seen.append((ran.get("message"), host is not None, host is not None and host.ctx is context.run))

    outer = GraphSpec("outer")
    outer.add_start("start").link_add("nested")
    outer.add_activity("nested", task=nested).link_add("after")
    outer.add_activity("after", task=answering("after", "outer done")).link_add("end")
    outer.add_end("end")
    result = await Runner(GraphAgent(outer.build(), name="outer")).call("go")

    # The inner flow ran its agent on a run of its own: its answer stayed in the inner flow, not in the outer run's
    # events; back in the outer node, the hosted run is the outer one again.
    assert seen == [("from the inner flow", True, True)]
    assert [e.agent_name for e in result.events] == ["after"]
    assert result.text == "outer done"


async def test_a_graph_agent_at_a_node_hosts_its_own_run_and_leaves_the_outer_one_as_it_was() -> None:
    hosts: list[tuple[str, str]] = []

    def look(context: FlowContext, node: Node) -> None:
        host = current_host()
        assert host is not None and context.run is not None
        found = context.run.scope.get(HostRun)
        assert found is host
        hosts.append((node.graph.id, host.graph_id))

    inner = GraphSpec("inner")
    inner.add_start("start").link_add("look_in")
    inner.add_activity("look_in", task=look).link_add("end")
    inner.add_end("end")
    outer = GraphSpec("outer")
    outer.add_start("start").link_add("before")
    outer.add_activity("before", task=look).link_add("graph")
    outer.add_activity("graph", task=GraphAgent(inner.build(), name="inner")).link_add("after")
    outer.add_activity("after", task=look).link_add("end")
    outer.add_end("end")
    await Runner(GraphAgent(outer.build(), name="outer")).call("go")

    assert hosts == [("outer", "outer"), ("inner", "inner"), ("outer", "outer")]

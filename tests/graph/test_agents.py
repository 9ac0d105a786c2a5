"""Agents as graph nodes, and graphs as agents: run paths, answers in variables, HITL interrupts resumed from
SQLite without re-running finished nodes or tools, NodeStart/NodeEnd trace events, nesting."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from batonflow import ChatModelAgent, Runner, SqliteCheckpointStore, ToolContext, tool
from batonflow.graph import AgentTask, FlowContext, FlowEngine, FlowRunError, Graph, GraphAgent, GraphSpec, Node
from batonflow.schema import assistant, user
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.trace import NodeEnd, NodeStart, TraceEvent


def writer(*answers: str, name: str = "writer") -> ChatModelAgent:
    return ChatModelAgent(name=name, description="writes", model=ScriptedModel([assistant(a) for a in answers]))


def two_writers(seen: list[Any]) -> GraphSpec:
    spec = GraphSpec("pipeline", title="A writing pipeline")
    spec.add_start("start").link_add("draft")
    spec.add_activity("draft", task=writer("first draft", name="drafter"), meta={"output": "draft"}).link_add("polish")
    spec.add_activity("polish", task=writer("polished text", name="polisher")).link_add("check")
    spec.add_activity("check", task=lambda ctx, node: seen.append(dict(ctx.data))).link_add("end")
    spec.add_end("end")
    return spec


async def test_agent_nodes_stream_with_run_paths_and_leave_answers_in_variables() -> None:
    seen: list[Any] = []
    agent = GraphAgent(two_writers(seen).build())
    assert (agent.name, agent.description) == ("pipeline", "A writing pipeline")
    events = [event async for event in Runner(agent).run([user("write about graphs")])]
    paths = [[step.agent_name for step in event.run_path] for event in events]
    assert paths == [["pipeline", "draft", "drafter"], ["pipeline", "polish", "polisher"]]
    assert seen == [{"message": "polished text", "draft": "first draft"}]
    # The input started the flow in "message"; the polisher's answer replaced it, and is the graph's answer.


async def test_the_flow_output_is_the_answer_when_no_agent_said_it() -> None:
    spec = GraphSpec("shout")
    spec.add_activity("up", task=lambda ctx, node: ctx.put("message", str(ctx.get("message")).upper()))
    result = await Runner(GraphAgent(spec.build())).call("hello")
    assert result.text == "HELLO"


async def test_a_graph_agent_is_a_node_of_another_graph() -> None:
    inner = GraphSpec("inner")
    inner.add_activity("say", task=writer("inner says hi", name="speaker"))
    outer = GraphSpec("outer")
    outer.add_start("s").link_add("sub")
    outer.add_activity("sub", task=GraphAgent(inner.build(), name="inner_agent")).link_add("e")
    outer.add_end("e")
    events = [event async for event in Runner(GraphAgent(outer.build())).run([user("go")])]
    assert [[step.agent_name for step in event.run_path] for event in events] == [
        ["outer", "sub", "inner_agent", "say", "speaker"]
    ]


async def test_an_agent_node_outside_a_graph_agent_runs_on_its_input_variable() -> None:
    engine = FlowEngine()
    engine.register("writer", writer("an answer"))
    graph = Graph.from_yaml("id: g\nlayout:\n  - {task: '@writer', meta: {input: question, output: answer}}\n")
    ctx = await engine.eval(graph, FlowContext(variables={"question": "why?"}))
    assert ctx.get("answer") == "an answer"
    assert repr(AgentTask(writer())) == "AgentTask('writer')"


async def test_trace_events_for_each_node_reach_the_callbacks() -> None:
    seen: list[TraceEvent] = []
    await Runner(GraphAgent(two_writers([]).build()), callbacks=[seen.append]).call("go")
    nodes = [(type(e).__name__, e.node_id, e.node_type) for e in seen if isinstance(e, NodeStart | NodeEnd)]
    assert nodes[:2] == [("NodeStart", "start", "start"), ("NodeEnd", "start", "start")]
    assert ("NodeStart", "polish", "activity") in nodes and nodes[-1] == ("NodeEnd", "end", "end")
    ends = [e for e in seen if isinstance(e, NodeEnd)]
    assert all(e.graph_id == "pipeline" and e.duration_ms >= 0 for e in ends)


RAN: dict[str, int] = {}


def approval_graph(model_script: list[Any]) -> Graph:
    @tool
    def refund(order_id: int, ctx: ToolContext) -> str:
        """Refund an order once a person approved it.

        Args:
            order_id: the order number
        """
        RAN["tool"] = RAN.get("tool", 0) + 1
        return "refunded" if ctx.ask({"approve_refund": order_id}) == "yes" else "not refunded"

    def count(ctx: FlowContext, node: Node) -> None:
        RAN[node.id] = RAN.get(node.id, 0) + 1

    agent = ChatModelAgent(name="refunds", description="refunds", model=ScriptedModel(model_script), tools=[refund])
    spec = GraphSpec("support")
    spec.add_start("start").link_add("intake")
    spec.add_activity("intake", task=count).link_add("refund")
    spec.add_activity("refund", task=agent, meta={"output": "outcome"}).link_add("close")
    spec.add_activity("close", task=count).link_add("end")
    spec.add_end("end")
    return spec.build()


async def test_an_agent_nodes_hitl_interrupt_stops_the_flow_and_resumes_from_sqlite(tmp_path: Path) -> None:
    RAN.clear()
    db = tmp_path / "checkpoints.db"
    async with SqliteCheckpointStore(db) as store:
        graph = approval_graph([tool_calls(("refund", {"order_id": 42}))])
        first = await Runner(GraphAgent(graph), checkpoint_store=store).call("refund 42", checkpoint_id="case-1")
        interrupt_ids = first.interrupt_ids
    assert len(interrupt_ids) == 1
    assert RAN == {"intake": 1, "tool": 1}  # the flow waits at the refund node; close has not run

    async with SqliteCheckpointStore(db) as store:  # a new store, new agents: as another process would
        graph = approval_graph([assistant("Order 42 is refunded.")])
        second = await Runner(GraphAgent(graph), checkpoint_store=store).call_resume(
            "case-1", targets=dict.fromkeys(interrupt_ids, "yes")
        )
    assert second.text == "Order 42 is refunded."
    # intake is not run again; the tool body runs once more to read the answer (as any resumed tool does)
    assert RAN == {"intake": 1, "tool": 2, "close": 1}


async def test_an_interrupt_outside_a_graph_agent_is_a_run_error() -> None:
    RAN.clear()
    with pytest.raises(FlowRunError, match="can be interrupted and resumed only in a GraphAgent run"):
        await FlowEngine().eval(approval_graph([tool_calls(("refund", {"order_id": 1}))]))


async def test_a_graph_agent_refuses_a_foreign_resume_state_and_a_non_graph() -> None:
    from batonflow.adk import ResumeInfo
    from batonflow.graph import GraphError

    agent = GraphAgent(two_writers([]).build())
    events = [event async for event in agent.resume(ResumeInfo(interrupt_state="nonsense"))]
    assert len(events) == 1 and "cannot resume: expected its saved flow, got str" in str(events[0].error)
    with pytest.raises(GraphError, match="GraphAgent expects a Graph"):
        GraphAgent("pipeline")  # type: ignore[arg-type]


async def test_streamed_answers_reach_the_reader_and_the_variables() -> None:
    seen: list[Any] = []
    agent = GraphAgent(two_writers(seen).build())
    chunks: list[str] = []
    async for event in Runner(agent, enable_streaming=True).run([user("go")]):
        variant = event.output.message_output if event.output is not None else None
        assert variant is not None and variant.is_streaming
        assert variant.message_stream is not None
        async for chunk in variant.message_stream:
            chunks.append(chunk.text)
    assert "".join(chunks) == "first draftpolished text"
    assert seen == [{"message": "polished text", "draft": "first draft"}]


async def test_a_graph_agent_in_a_sequence_and_as_an_agent_tool() -> None:
    from batonflow import AgentTool, SequentialAgent

    inner = GraphSpec("summary", title="Summarises the request")
    inner.add_activity("sum", task=lambda ctx, node: ctx.put("message", f"summary of: {ctx.get('message')}"))
    after = ChatModelAgent(name="after", description="answers last", model=ScriptedModel([assistant("done")]))
    sequence = SequentialAgent(name="seq", sub_agents=[GraphAgent(inner.build()), after])
    result = await Runner(sequence).call("a long request")
    assert result.text == "done"
    request = after.model.requests[0]  # type: ignore[attr-defined]
    assert any("summary of: a long request" in message.text for message in request.messages)

    caller = ChatModelAgent(
        name="caller",
        description="delegates",
        model=ScriptedModel([tool_calls(("summary", {"request": "abc"})), assistant("relayed")]),
        tools=[AgentTool(GraphAgent(inner.build()))],
    )
    result = await Runner(caller).call("summarise abc")
    assert result.text == "relayed"
    tool_reply = caller.model.requests[1].messages[-1]  # type: ignore[attr-defined]
    assert tool_reply.role == "tool" and "summary of:" in tool_reply.text


async def test_node_trace_events_interleave_with_agent_events_in_stream_trace() -> None:
    kinds: list[str] = []
    async for item in Runner(GraphAgent(two_writers([]).build())).stream_trace("go"):
        if isinstance(item, NodeStart | NodeEnd):
            kinds.append(f"{item.kind}:{item.node_id}")
        elif not isinstance(item, TraceEvent.__args__):  # type: ignore[attr-defined]
            kinds.append("event:" + "/".join(str(step) for step in item.run_path))
    draft = kinds.index("node_start:draft")
    assert kinds[draft + 1 :].index("event:pipeline/draft/drafter") < kinds[draft + 1 :].index("node_end:draft")
    assert kinds[-1] == "node_end:end"


async def test_an_agent_in_a_sub_graph_interrupts_and_resumes_under_its_graphs_name(tmp_path: Path) -> None:
    RAN.clear()

    def engine_with_sub(script: list[Any]) -> tuple[FlowEngine, Graph]:
        engine = FlowEngine()
        engine.load(approval_graph(script))  # graph "support", as a sub-graph
        main = GraphSpec("main")
        main.add_start("start").link_add("intake")  # the same node ids as the sub-graph's
        main.add_activity("intake", task="#support").link_add("end")
        main.add_end("end")
        return engine, main.build()

    async with SqliteCheckpointStore(tmp_path / "c.db") as store:
        engine, main = engine_with_sub([tool_calls(("refund", {"order_id": 7}))])
        first = await Runner(GraphAgent(main, engine=engine), checkpoint_store=store).call(
            "refund 7", checkpoint_id="x"
        )
        paths = {"/".join(str(step) for step in event.run_path) for event in first.events}
        assert "main/support/refund/refunds" in paths
        engine, main = engine_with_sub([assistant("Refunded 7.")])
        second = await Runner(GraphAgent(main, engine=engine), checkpoint_store=store).call_resume(
            "x", targets=dict.fromkeys(first.interrupt_ids, "yes")
        )
    assert second.text == "Refunded 7."
    assert RAN == {"intake": 1, "tool": 2, "close": 1}


async def test_a_graph_agent_as_a_transfer_target_in_an_agent_tree() -> None:
    from batonflow import TRANSFER_TOOL_NAME, set_sub_agents

    summary = GraphSpec("summary", title="Summarises the request")
    summary.add_activity("sum", task=lambda ctx, node: ctx.put("message", f"summary of: {ctx.get('message')}"))
    router = ChatModelAgent(
        name="router",
        description="routes",
        model=ScriptedModel([tool_calls((TRANSFER_TOOL_NAME, {"agent_name": "summary"}))]),
    )
    tree = set_sub_agents(router, [GraphAgent(summary.build())])
    result = await Runner(tree).call("a long request")
    assert result.text == "summary of: a long request"
    assert [str(step) for step in result.events[-1].run_path] == ["router", "summary"]

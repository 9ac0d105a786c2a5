"""``FlowContext.outcome``: whether a run finished (nothing left to run, nothing waiting, end node or not), and
otherwise where each branch stopped and why."""

from __future__ import annotations

import asyncio

from batonflow.graph import (
    MAX_STOPS,
    FlowContext,
    FlowEngine,
    FlowInterceptor,
    FlowOutcome,
    FlowStop,
    Graph,
    GraphSpec,
    Node,
    NodeType,
)

WAITING = """
id: g
layout:
  - {id: s, type: start, link: x}
  - id: x
    type: exclusive
    link: [{nextId: a, when: "k == 1"}, {nextId: b, when: "k == 2"}, {nextId: c}]
  - {id: a, link: join1}
  - {id: b, link: join1}
  - {id: c, link: join1}
  - {id: join1, type: parallel, link: e}
  - {id: e, type: end}
"""


async def _outcome(graph: Graph, variables: dict[str, object] | None = None, **options: object) -> FlowOutcome:
    engine = FlowEngine()
    engine.load(graph)
    context = await engine.eval(graph, FlowContext(variables=variables), **options)  # type: ignore[arg-type]
    assert context.outcome is not None
    return context.outcome


async def test_a_join_still_waiting_says_where_and_how_many_arrived_from_where() -> None:
    outcome = await _outcome(Graph.from_yaml(WAITING, check_joins=False), {"k": 1})
    assert not outcome.finished and not outcome.reached_end
    assert (outcome.stopped_at, outcome.reason) == (
        "join1",
        "parallel join waits for 3 inbound links, 1 arrived (from a)",
    )
    assert outcome.to_dict() == {
        "finished": False,
        "reached_end": False,
        "stopped_at": "join1",
        "reason": "parallel join waits for 3 inbound links, 1 arrived (from a)",
        "stops": [
            {"graph": "g", "node": "join1", "reason": "parallel join waits for 3 inbound links, 1 arrived (from a)"}
        ],
    }


async def test_a_run_that_ran_every_node_finished_with_or_without_an_end_node() -> None:
    without_end = await _outcome(Graph.from_yaml("id: g\nlayout: [{id: a}, {id: b}]"))
    assert without_end == FlowOutcome(finished=True, reached_end=False)
    with_end = await _outcome(Graph.from_yaml("id: g\nlayout: [{id: a}, {id: e, type: end}]"))
    assert with_end == FlowOutcome(finished=True, reached_end=True)
    assert (with_end.stopped_at, with_end.reason) == (None, None)


async def test_no_link_whose_condition_holds_is_a_stop_at_that_node() -> None:
    graph = Graph.from_yaml(
        "id: g\nlayout:\n  - {id: x, type: exclusive, link: [{nextId: a, when: 'n > 1'}, {nextId: b, when: 'n < 0'}]}\n"
        "  - {id: a, link: e}\n  - {id: b, link: e}\n  - {id: e, type: end}\n"
    )
    outcome = await _outcome(graph, {"n": 0})
    assert (outcome.finished, outcome.stopped_at) == (False, "x")
    assert outcome.reason == "no outgoing link whose condition holds (links to 'a', 'b')"
    activity = await _outcome(Graph.from_yaml("id: g\nlayout: [{id: a, link: [{nextId: b, when: 'go'}]}, {id: b}]"))
    assert (activity.stopped_at, activity.reason) == ("a", "no outgoing link whose condition holds (links to 'b')")
    inclusive = await _outcome(
        Graph.from_yaml("id: g\nlayout: [{id: i, type: inclusive, link: [{nextId: b, when: 'go'}]}, {id: b}]")
    )
    assert inclusive.stopped_at == "i"


async def test_a_task_that_stops_the_run_or_ends_its_branch_is_named_and_a_resume_finishes() -> None:
    def approve(context: FlowContext, node: Node) -> None:
        if not context.get("approved"):
            context.stop()

    spec = GraphSpec("g")
    spec.add(NodeType.START, "s").link_add("review")
    spec.add(NodeType.ACTIVITY, "review", task=approve).link_add("e")
    spec.add(NodeType.END, "e")
    graph = spec.build()
    engine = FlowEngine()
    context = await engine.eval(graph)
    assert context.outcome is not None
    assert context.outcome.stops == (FlowStop("g", "review", "its task stopped the run (context.stop())"),)
    context.set("approved", True)
    await engine.eval(graph, context)
    assert context.outcome == FlowOutcome(finished=True, reached_end=True)

    spec.nodes["review"].task = lambda context, node: context.interrupt()
    outcome = await _outcome(spec.build())
    assert (outcome.stopped_at, outcome.reason) == ("review", "its task ended its branch (context.interrupt())")


async def test_only_the_branch_that_stopped_a_parallel_run_is_named() -> None:
    async def stops(context: FlowContext, node: Node) -> None:
        context.stop()

    async def finishes(context: FlowContext, node: Node) -> None:
        await asyncio.sleep(0)

    spec = GraphSpec("g")
    spec.add(NodeType.PARALLEL, "fork").link_add("a").link_add("b")
    spec.add(NodeType.ACTIVITY, "a", task=finishes).link_add("join")
    spec.add(NodeType.ACTIVITY, "b", task=stops).link_add("join")
    spec.add(NodeType.PARALLEL, "join")
    outcome = await _outcome(spec.build())
    assert [(stop.node_id, stop.reason) for stop in outcome.stops] == [
        ("b", "its task stopped the run (context.stop())")
    ]


async def test_the_steps_limit_an_interceptor_an_unfinished_sub_graph_and_an_empty_loop_are_named() -> None:
    chain = Graph.from_yaml("id: g\nlayout: [{id: a}, {id: b}, {id: c}]")
    assert (await _outcome(chain, steps=2)).stops == (
        FlowStop("g", "c", "the steps limit (2) was reached before this node"),
    )

    class Gate(FlowInterceptor):
        def on_node_start(self, context: FlowContext, node: Node) -> None:
            if node.id == "b":
                context.stop()

    stopped = await _outcome(chain, interceptors=[Gate()])
    assert (stopped.stopped_at, stopped.reason) == (
        "b",
        "an interceptor's on_node_start stopped the run (context.stop())",
    )

    engine = FlowEngine()
    engine.load(Graph.from_yaml(WAITING.replace("id: g", "id: inner"), check_joins=False))
    outer = Graph.from_yaml("id: outer\nlayout: [{id: call, task: '#inner'}, {id: after}]")
    context = await engine.eval(outer, FlowContext(variables={"k": 2}))
    assert context.outcome is not None and context.outcome.stops == (
        FlowStop("inner", "join1", "parallel join waits for 3 inbound links, 1 arrived (from b)"),
        FlowStop(
            "outer", "call", "its sub-graph '#inner' did not reach an end node, which holds the branch that called it"
        ),
    )

    loop = Graph.from_yaml(
        "id: g\nlayout:\n  - {id: rows, type: loop, meta: {$for: i, $in: []}, link: body}\n  - {id: body}\n"
        "  - {id: done, type: loop, link: e}\n  - {id: e, type: end}\n"
    )
    empty = await _outcome(loop)
    assert (empty.stopped_at, empty.reason) == (
        "rows",
        "the loop has no items, and a loop that walks none never reaches its join",
    )


async def test_an_inclusive_join_still_waiting_says_how_many_branches_its_fork_took() -> None:
    spec = GraphSpec("g")
    spec.add(NodeType.INCLUSIVE, "fork").link_add("a").link_add("b")
    spec.add(NodeType.ACTIVITY, "a").link_add("join")
    spec.add(NodeType.ACTIVITY, "b", task=lambda context, node: context.interrupt()).link_add("join")
    spec.add(NodeType.INCLUSIVE, "join")
    outcome = await _outcome(spec.build())
    assert [stop.node_id for stop in outcome.stops] == ["b", "join"]
    assert (
        outcome.stops[1].reason == "inclusive join waits for 2 branches (as many as its fork took), 1 arrived (from a)"
    )


async def test_the_outcome_is_none_before_a_run_and_not_saved() -> None:
    context = FlowContext()
    assert context.outcome is None
    await FlowEngine().eval(Graph.from_yaml("id: g\nlayout: [{id: a}]"), context)
    assert context.outcome is not None and FlowContext.from_json(context.to_json()).outcome is None


async def test_a_branch_where_no_link_held_does_not_count_once_the_run_reached_an_end_node() -> None:
    spec = GraphSpec("g")
    spec.add(NodeType.PARALLEL, "fork").link_add("a").link_add("b")
    spec.add(NodeType.ACTIVITY, "a").link_add("e")
    spec.add(NodeType.ACTIVITY, "b").link_add("notify", when="vip")
    spec.add(NodeType.ACTIVITY, "notify")
    spec.add(NodeType.END, "e")
    outcome = await _outcome(spec.build(), {"vip": False})
    assert (outcome.finished, outcome.stops) == (True, ())  # reached_end: whether e was the last node recorded


async def test_no_link_held_inside_a_loop_with_items_left_is_not_a_stop() -> None:
    graph = Graph.from_yaml(
        "id: g\nlayout:\n  - {id: rows, type: loop, meta: {$for: i, $in: [0, 1, 2]}, link: body}\n"
        "  - {id: body, link: [{nextId: done, when: 'i == 2'}]}\n  - {id: done, type: loop}\n  - {id: after}\n"
    )
    assert await _outcome(graph) == FlowOutcome(finished=True, reached_end=False)
    last_fails = await _outcome(Graph.from_yaml(graph.to_yaml().replace("i == 2", "i == 1")))
    assert (last_fails.stopped_at, last_fails.reason) == (
        "body",
        "no outgoing link whose condition holds (links to 'done')",
    )


async def test_an_outcome_keeps_at_most_max_stops() -> None:
    spec = GraphSpec("g")
    spec.add(NodeType.LOOP, "rows", meta={"$for": "i", "$in": "0:150:1"}).link_add("body")
    spec.add(NodeType.ACTIVITY, "body", task=lambda context, node: context.interrupt())
    outcome = await _outcome(spec.build())
    assert len(outcome.stops) == MAX_STOPS and outcome.stops[0].node_id == "body"

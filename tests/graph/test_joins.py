"""Parallel joins that can never go on are refused when the graph is built, naming the join, the exclusive
gateway and the links; graphs whose joins some run can fire (forks, nested forks, inclusive forks, cycles,
loops) build as before; ``check_joins=False`` keeps solon-flow's behaviour (the join waits)."""

from __future__ import annotations

from pathlib import Path

import pytest

from batonflow.graph import FlowContext, FlowEngine, Graph, GraphError, GraphSpec, JoinError, NodeType

THREE_WAYS = """
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


def test_a_join_fed_by_the_branches_of_one_exclusive_gateway_is_refused_naming_join_gateway_and_links() -> None:
    with pytest.raises(JoinError) as caught:
        Graph.from_yaml(THREE_WAYS)
    error = caught.value
    assert (error.graph_id, error.node_id, error.gateways) == ("g", "join1", ("x",))
    assert error.links == (("a", "join1"), ("b", "join1"), ("c", "join1"))
    assert str(error).startswith(
        "graph 'g', node 'join1': a parallel join waits for all its 3 inbound links (a -> join1, b -> join1,"
        " c -> join1), but at most 1 can arrive in a run: they come from different links of the exclusive gateway"
        " 'x', which follows only one."
    )
    assert "check_joins=False" in str(error)


def test_the_file_is_named_when_a_loaded_graph_has_a_dead_join(tmp_path: Path) -> None:
    path = tmp_path / "flow.yml"
    path.write_text(THREE_WAYS, encoding="utf-8")
    with pytest.raises(JoinError) as caught:
        Graph.load(path)
    assert caught.value.file == str(path) and str(caught.value).startswith(f"file {str(path)!r}, graph 'g'")


async def test_check_joins_false_builds_it_and_the_join_waits_as_in_solon_flow(tmp_path: Path) -> None:
    path = tmp_path / "flow.yml"
    path.write_text(THREE_WAYS, encoding="utf-8")
    graphs = [
        Graph.from_yaml(THREE_WAYS, check_joins=False),
        Graph.from_json(Graph.from_yaml(THREE_WAYS, check_joins=False).to_json(), check_joins=False),
        Graph.load(path, check_joins=False),
        Graph.from_yaml(THREE_WAYS, check_joins=False).to_spec().build(check_joins=False),
        Graph.copy(Graph.from_yaml(THREE_WAYS, check_joins=False), check_joins=False),
    ]
    for graph in graphs:
        context = await FlowEngine().eval(graph, FlowContext(variables={"k": 2}))
        assert context.last_node_id == "join1" and not context.trace.is_end("g")
    with pytest.raises(JoinError):
        Graph.copy(graphs[0], check_joins=True)
    assert Graph.copy(graphs[0]).to_spec().check_joins is False  # a copy is checked as its graph was built


async def test_check_joins_false_in_the_file_builds_it_and_is_kept_through_yaml(tmp_path: Path) -> None:
    text = "checkJoins: false\n" + THREE_WAYS
    path = tmp_path / "flow.yml"
    path.write_text(text, encoding="utf-8")
    for graph in (Graph.from_yaml(text), Graph.load(path), Graph.from_yaml(Graph.from_yaml(text).to_yaml())):
        assert graph.to_dict()["checkJoins"] is False
        context = await FlowEngine().eval(graph, FlowContext(variables={"k": 2}))
        assert context.last_node_id == "join1" and not context.trace.is_end("g")
    with pytest.raises(JoinError):
        Graph.from_yaml(text, check_joins=True)  # the code's word over the file's


def test_check_joins_in_a_file_must_be_a_boolean() -> None:
    with pytest.raises(GraphError) as caught:
        Graph.from_yaml("checkJoins: 'no'\n" + THREE_WAYS)
    assert "checkJoins" in str(caught.value) and "boolean" in str(caught.value)


def test_a_join_a_node_the_start_never_reaches_feeds_is_refused() -> None:
    spec = GraphSpec("g")
    spec.add(NodeType.START, "s").link_add("a")
    spec.add(NodeType.ACTIVITY, "a").link_add("join")
    spec.add(NodeType.START, "orphan").link_add("join")  # a second start: the first one is the graph's
    spec.add(NodeType.PARALLEL, "join")
    with pytest.raises(JoinError, match=r"at most 1 can arrive in a run: no branch reaches 'orphan'") as caught:
        spec.build()
    assert caught.value.gateways == ()


def _fork_and_join(spec: GraphSpec, fork: str, branches: dict[str, str | None], join: str) -> None:
    """``fork`` links to each branch; a branch links on to ``join`` (or to the node its value names)."""
    node = spec.nodes[fork]
    for branch, then in branches.items():
        node.link_add(branch)
        spec.add(NodeType.ACTIVITY, branch).link_add(then or join)


def test_joins_some_run_can_fire_build_as_before() -> None:
    forks = GraphSpec("forks")  # nested forks, and an exclusive choice that rejoins inside one branch
    forks.add(NodeType.START, "s").link_add("p")
    forks.add(NodeType.PARALLEL, "p")
    _fork_and_join(forks, "p", {"a": "x", "b": None}, "join")
    forks.add(NodeType.EXCLUSIVE, "x").link_add("x1", when="k == 1").link_add("x2")
    forks.add(NodeType.ACTIVITY, "x1").link_add("m")
    forks.add(NodeType.ACTIVITY, "x2").link_add("m")
    forks.add(NodeType.ACTIVITY, "m").link_add("q")
    forks.add(NodeType.PARALLEL, "q")
    _fork_and_join(forks, "q", {"q1": None, "q2": None}, "inner")
    forks.add(NodeType.PARALLEL, "inner").link_add("join")
    forks.add(NodeType.PARALLEL, "join").link_add("e")
    forks.add(NodeType.END, "e")

    inclusive = GraphSpec("inclusive")  # both conditions may hold
    inclusive.add(NodeType.INCLUSIVE, "i").link_add("a", when="a").link_add("b", when="b")
    inclusive.add(NodeType.ACTIVITY, "a").link_add("join")
    inclusive.add(NodeType.ACTIVITY, "b").link_add("join")
    inclusive.add(NodeType.PARALLEL, "join")

    cycle = GraphSpec("cycle")  # the exclusive gateway is visited again: a, then b
    cycle.add(NodeType.START, "s").link_add("x")
    cycle.add(NodeType.EXCLUSIVE, "x").link_add("a", when="n == 0").link_add("b")
    cycle.add(NodeType.ACTIVITY, "a").link_add("join").link_add("x")
    cycle.add(NodeType.ACTIVITY, "b").link_add("join")
    cycle.add(NodeType.PARALLEL, "join")

    loop = GraphSpec("loop")  # one item takes a, the next b
    loop.add(NodeType.LOOP, "rows", meta={"$for": "i", "$in": [0, 1]}).link_add("x")
    loop.add(NodeType.EXCLUSIVE, "x").link_add("a", when="i == 0").link_add("b")
    loop.add(NodeType.ACTIVITY, "a").link_add("join")
    loop.add(NodeType.ACTIVITY, "b").link_add("join")
    loop.add(NodeType.PARALLEL, "join").link_add("done")
    loop.add(NodeType.LOOP, "done")

    for spec in (forks, inclusive, cycle, loop):
        assert spec.build().id == spec.id


async def test_the_joins_kept_do_fire() -> None:
    cycle = GraphSpec("cycle")
    cycle.add(NodeType.START, "s").link_add("x")
    cycle.add(NodeType.EXCLUSIVE, "x").link_add("a", when="n == 0").link_add("b")
    cycle.add(NodeType.ACTIVITY, "a", task=lambda ctx, node: ctx.set("n", 1)).link_add("join").link_add("x")
    cycle.add(NodeType.ACTIVITY, "b").link_add("join")
    cycle.add(NodeType.PARALLEL, "join").link_add("e")
    cycle.add(NodeType.END, "e")
    context = await FlowEngine().eval(cycle.build(), FlowContext(variables={"n": 0}))
    assert context.trace.is_end("cycle")


def test_a_long_chain_above_a_join_is_checked_without_recursion() -> None:
    spec = GraphSpec("long")
    spec.add(NodeType.START, "s").link_add("x")
    spec.add(NodeType.EXCLUSIVE, "x").link_add("n0", when="k").link_add("b")
    for index in range(5_000):
        spec.add(NodeType.ACTIVITY, f"n{index}").link_add(f"n{index + 1}" if index < 4_999 else "join")
    spec.add(NodeType.ACTIVITY, "b").link_add("join")
    spec.add(NodeType.PARALLEL, "join")
    with pytest.raises(JoinError, match="exclusive gateway 'x'"):
        spec.build()


def test_a_dead_join_below_a_fork_and_its_join_is_found_and_a_long_chain_of_diamonds_builds() -> None:
    spec = GraphSpec("g")
    spec.add(NodeType.START, "s").link_add("fork")
    spec.add(NodeType.PARALLEL, "fork")
    _fork_and_join(spec, "fork", {"a": None, "b": None}, "joined")
    spec.add(NodeType.PARALLEL, "joined").link_add("x")  # goes on once, for both arrivals
    spec.add(NodeType.EXCLUSIVE, "x").link_add("c", when="k").link_add("d")
    spec.add(NodeType.ACTIVITY, "c").link_add("join")
    spec.add(NodeType.ACTIVITY, "d").link_add("join")
    spec.add(NodeType.PARALLEL, "join")
    with pytest.raises(JoinError) as caught:
        spec.build()
    assert (caught.value.node_id, caught.value.gateways) == ("join", ("x",))

    diamonds = GraphSpec("diamonds")
    diamonds.add(NodeType.START, "s").link_add("f0")
    for index in range(1_000):
        diamonds.add(NodeType.PARALLEL, f"f{index}")
        _fork_and_join(diamonds, f"f{index}", {f"a{index}": None, f"b{index}": None}, f"j{index}")
        diamonds.add(NodeType.PARALLEL, f"j{index}").link_add(f"f{index + 1}" if index < 999 else "e")
    diamonds.add(NodeType.END, "e")
    assert len(diamonds.build().nodes) == 4_002

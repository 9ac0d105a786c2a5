"""Graph documents and the code builder: parsing, defaults, checks, round trips, Mermaid."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from batonflow.errors import UserError
from batonflow.graph import (
    ComponentError,
    Graph,
    GraphError,
    GraphSpec,
    LoopError,
    NodeType,
    ScriptTaskError,
)


def test_nodes_without_ids_types_or_links_chain_in_layout_order() -> None:
    graph = Graph.from_yaml(
        """
id: chat_case1
layout:
  - task: "@VarInput"
    meta: { message: "hello" }
  - task: "@VarCopy"
  - task: "@ConsoleOutput"
"""
    )
    assert list(graph.nodes) == ["n-1", "n-2", "n-3"]
    assert [node.type for node in graph.nodes.values()] == [NodeType.ACTIVITY] * 3
    assert [link.next_id for link in graph.nodes["n-1"].links] == ["n-2"]
    assert [link.next_id for link in graph.nodes["n-2"].links] == ["n-3"]
    assert graph.nodes["n-3"].links == ()
    assert graph.start.id == "n-1"  # no start node: the first without an inbound link
    assert graph.title == "chat_case1" and graph.nodes["n-2"].title == "n-2"
    assert graph.nodes["n-1"].meta == {"message": "hello"}


def test_the_three_link_forms_and_legacy_condition() -> None:
    graph = Graph.from_yaml(
        """
id: links
layout:
  - { id: a, type: start, link: b }
  - { id: b, type: exclusive, link: { nextId: c, title: to c, when: "x > 1", meta: { w: 1 } } }
  - id: c
    type: inclusive
    link:
      - d
      - { nextId: e, condition: "y == 2" }
  - { id: d, type: end }
  - { id: e, type: end, link: [] }
"""
    )
    (b_link,) = graph.nodes["b"].links
    assert (b_link.next_id, b_link.title, b_link.when, dict(b_link.meta)) == ("c", "to c", "x > 1", {"w": 1})
    d_link, e_link = graph.nodes["c"].links
    assert (d_link.next_id, d_link.when) == ("d", None)
    assert (e_link.next_id, e_link.when) == ("e", "y == 2")
    assert [link.next_id for link in graph.nodes["d"].links] == ["e"]  # omitted: chains to the next node
    assert graph.nodes["e"].links == ()
    assert [link.prev_id for link in graph.nodes["c"].prev_links] == ["b"]


def test_an_explicit_empty_link_list_means_no_links_and_legacy_nodes_key_and_iterator_type() -> None:
    graph = Graph.from_yaml(
        """
id: legacy
nodes:
  - { id: a, link: [] }
  - { id: b, type: iterator, meta: { "$for": i, "$in": [1] } }
"""
    )
    assert graph.nodes["a"].links == ()
    assert graph.nodes["b"].type is NodeType.LOOP


def test_start_is_the_start_typed_node_even_when_not_first() -> None:
    graph = Graph.from_yaml("id: g\nlayout:\n  - {id: x, link: s}\n  - {id: s, type: start, link: x}\n")
    assert graph.start.id == "s"


def test_unknown_keys_from_designer_tools_are_ignored() -> None:
    graph = Graph.from_yaml(
        "id: g\nv: 2\ncanvas: {zoom: 3}\nlayout:\n  - {id: a, x: 10, y: 20, link: [{nextId: b, points: [1, 2]}]}\n"
        "  - {id: b}\n"
    )
    assert [link.next_id for link in graph.nodes["a"].links] == ["b"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id: g\nlayout: [ {id: a, type: widget} ]", "graph 'g', node 'a', field 'type': unknown node type 'widget'"),
        ("id: g\nlayout: [ {id: a, link: nowhere} ]", "graph 'g', node 'a', field 'link': link to a missing node"),
        ("id: g\nlayout: [ {id: a, link: b}, {id: b, link: a} ]", "No start node found, graph: g"),
        ("id: g\nlayout: [ {id: a}, {id: a} ]", "graph 'g', node 'a', field 'id': duplicate node id"),
        ("id: g\nlayout: [ {id: a, when: 5} ]", "graph 'g', node 'a', field 'when': Input should be a valid string"),
        ("id: g\nlayout: [ {id: a, link: [{title: t}]} ]", "graph 'g', node 'a', field 'link[0].nextId': missing"),
        ("id: g\nlayout: [ {id: a, link: [7]} ]", "graph 'g', node 'a', field 'link[0]': expected a node id"),
        ("id: g\nlayout: [ 3 ]", "graph 'g', node 'n-1': a node must be a mapping, got int 3"),
        ("title: no id\nlayout: []", "field 'id': missing"),
        ("- just\n- a list", "a graph document must be a mapping, got list"),
        ("id: g\nlayout: [ {id: a, task: '$nothing.here'} ]", "Graph meta not found: nothing.here"),
        ("id: g\nlayout: [ {id: a, task: '@'} ]", "'@' needs a name after it"),
    ],
)
def test_bad_documents_name_graph_node_and_field(text: str, expected: str) -> None:
    with pytest.raises(GraphError) as caught:
        Graph.from_yaml(text)
    assert expected in str(caught.value)
    assert isinstance(caught.value, UserError)


def test_invalid_yaml_and_json_are_graph_errors() -> None:
    with pytest.raises(GraphError, match="invalid YAML"):
        Graph.from_yaml("id: [unclosed")
    with pytest.raises(GraphError, match="invalid JSON"):
        Graph.from_json("{")


def test_yaml_tags_that_build_objects_are_refused() -> None:
    with pytest.raises(GraphError, match="invalid YAML"):
        Graph.from_yaml("id: !!python/object/apply:os.system ['true']\nlayout: []")


def test_inline_script_tasks_are_refused_at_load_time() -> None:
    with pytest.raises(ScriptTaskError) as caught:
        Graph.from_yaml("id: g\nlayout:\n  - {id: a, task: 'context.put(\"x\", 1);'}\n")
    assert (caught.value.graph_id, caught.value.node_id, caught.value.field) == ("g", "a", "task")
    assert "not run (no eval, no exec)" in str(caught.value)


def test_a_meta_path_task_resolves_to_the_task_it_names_and_refuses_a_script_there() -> None:
    graph = Graph.from_yaml("id: g\nmeta: {tasks: {say: '@say'}}\nlayout:\n  - {id: a, task: '$tasks.say'}\n")
    assert graph.nodes["a"].task == "$tasks.say"
    with pytest.raises(ScriptTaskError):
        Graph.from_yaml("id: g\nmeta: {s: 'print(1)'}\nlayout:\n  - {id: a, task: '$s'}\n")


@pytest.mark.parametrize("source", [{"a": 1}, 5, "", "1:5", "x...", "1:9:0", "a:b:c"])
def test_bad_loop_sources_are_refused_at_load_time(source: object) -> None:
    spec = GraphSpec("g")
    spec.add_loop("l", meta={"$for": "i", "$in": source})
    with pytest.raises(LoopError) as caught:
        spec.build()
    assert (caught.value.graph_id, caught.value.node_id, caught.value.field) == ("g", "l", "meta.$in")


def test_builder_links_priority_ordering_is_stable_and_link_remove() -> None:
    spec = GraphSpec("g", title="A graph")
    spec.add_start("s").link_add("a").link_add("b", priority=5).link_add("c").link_add("d", priority=5)
    for node_id in "abcd":
        spec.add_end(node_id)
    graph = spec.build()
    assert [link.next_id for link in graph.start.links] == ["b", "d", "a", "c"]
    spec.nodes["s"].link_remove("b")
    assert [link.next_id for link in spec.build().start.links] == ["d", "a", "c"]
    assert [link.next_id for link in graph.start.links] == ["b", "d", "a", "c"]  # the built graph is unchanged


def test_builder_refuses_duplicates_and_bad_ids() -> None:
    spec = GraphSpec("g")
    spec.add_activity("a")
    with pytest.raises(GraphError, match="duplicate node id"):
        spec.add_end("a")
    with pytest.raises(GraphError, match="non-empty string id"):
        GraphSpec("")


def test_a_built_graph_is_immutable() -> None:
    spec = GraphSpec("g", meta={"k": [1]})
    spec.add_activity("a", meta={"m": 1})
    built = spec.build()
    spec.meta["k"].append(2)
    with pytest.raises(TypeError):
        built.nodes["a"].meta["m"] = 2  # type: ignore[index]
    with pytest.raises(TypeError):
        built.meta["x"] = 1  # type: ignore[index]
    assert built.to_dict()["meta"] == {"k": [1]}
    with pytest.raises(TypeError):
        Graph()


YAML = """
id: full
title: Full graph
driver: custom
meta: {owner: ops, tasks: {hello: "@hello"}}
layout:
  - {id: s, type: start, link: x}
  - id: x
    type: exclusive
    title: Choose
    meta: {k: v}
    when: "go == 1"
    task: "@decide"
    link:
      - {nextId: l, title: many, when: "n > 2"}
      - {nextId: p}
  - {id: l, type: loop, meta: {"$for": i, "$in": "1...4"}, link: lj}
  - {id: lj, type: loop, link: e}
  - {id: p, type: parallel, link: [a, b]}
  - {id: a, task: "$tasks.hello", link: j}
  - {id: b, task: "#other", link: j}
  - {id: j, type: parallel, link: e}
  - {id: e, type: end}
"""


def test_yaml_and_json_round_trip_equal(tmp_path: Path) -> None:
    graph = Graph.from_yaml(YAML)
    assert Graph.from_yaml(graph.to_yaml()) == graph
    assert Graph.from_json(graph.to_json()) == graph
    assert Graph.from_yaml(graph.to_yaml()).to_dict() == graph.to_dict()
    assert json.loads(graph.to_json())["layout"][1]["when"] == "go == 1"
    path = tmp_path / "full.json"
    path.write_text(graph.to_json(), encoding="utf-8")
    assert Graph.load(path) == graph
    (tmp_path / "full.yml").write_text(YAML, encoding="utf-8")
    assert Graph.load(tmp_path / "full.yml") == graph


def test_round_trip_keeps_priorities_and_empty_links() -> None:
    spec = GraphSpec("g")
    spec.add_start("s").link_add("a", priority=1).link_add("b", priority=2)
    spec.add_end("a")
    spec.add_end("b")
    graph = spec.build()
    again = Graph.from_yaml(graph.to_yaml())
    assert [link.next_id for link in again.start.links] == ["b", "a"]
    assert again.nodes["a"].links == ()  # written as link: [], not chained to b on reading


def test_load_refuses_other_files(tmp_path: Path) -> None:
    with pytest.raises(GraphError, match=r"expected a \.yml, \.yaml or \.json file, got \.txt"):
        Graph.load(tmp_path / "graph.txt")
    with pytest.raises(GraphError, match=r"missing\.yml': cannot read it: No such file or directory"):
        Graph.load(tmp_path / "missing.yml")


def test_python_tasks_cannot_be_written_to_documents() -> None:
    spec = GraphSpec("g")
    spec.add_activity("a", task=lambda ctx, node: None)
    graph = spec.build()
    with pytest.raises(GraphError, match="graph 'g', node 'a', field 'task': a document holds only text"):
        graph.to_yaml()


def test_copy_edits_a_new_graph_and_keeps_python_tasks() -> None:
    def task(ctx: object, node: object) -> None:
        return None

    spec = GraphSpec("g")
    spec.add_start("s").link_add("a")
    spec.add_activity("a", task=task).link_add("e")
    spec.add_end("e")
    graph = spec.build()

    def edit(copy: GraphSpec) -> None:
        copy.nodes["a"].link_remove("e").link_add("b")
        copy.add_activity("b").link_add("e")

    edited = Graph.copy(graph, edit)
    assert [link.next_id for link in edited.nodes["a"].links] == ["b"]
    assert edited.nodes["a"].task is task
    assert [link.next_id for link in graph.nodes["a"].links] == ["e"]
    with pytest.raises(GraphError, match="link to a missing node 'nowhere'"):
        Graph.copy(graph, lambda copy: copy.nodes["a"].link_add("nowhere"))


def test_mermaid_shapes_and_labels() -> None:
    text = Graph.from_yaml(YAML).to_mermaid()
    lines = text.splitlines()
    assert lines[0] == "flowchart TD"
    assert '    n0(["s"])' in lines
    assert '    n1{"Choose"}' in lines
    assert '    n2{{"l"}}' in lines
    assert '    n5["a"]' in lines
    assert '    n1 -->|"many [n > 2]"| n2' in lines
    assert "    n1 --> n4" in lines
    quoted = GraphSpec("q", title="q")
    quoted.add_activity("a", title='say "hi"')
    assert 'n0["say #quot;hi#quot;"]' in quoted.build().to_mermaid()


def test_bad_task_and_condition_objects_are_refused() -> None:
    spec = GraphSpec("g")
    spec.add_activity("a", task=42)  # type: ignore[arg-type]
    with pytest.raises(GraphError, match="field 'task': expected a task string"):
        spec.build()
    spec = GraphSpec("g")
    spec.add_activity("a", when=42)  # type: ignore[arg-type]
    with pytest.raises(GraphError, match="field 'when': expected an expression"):
        spec.build()


def test_component_error_is_a_graph_error() -> None:
    assert issubclass(ComponentError, GraphError)


@pytest.mark.parametrize(
    "condition",
    ["a >", "x.__class__", "().__class__.__bases__[0].__subclasses__()", "__import__('os')", "lipsum.__globals__"],
)
def test_a_bad_or_escaping_condition_fails_at_load_time_naming_graph_and_node(condition: str) -> None:
    from batonflow.graph import ExpressionError

    text = f"id: g\nlayout:\n  - {{id: a, link: [{{nextId: b, when: {json.dumps(condition)}}}]}}\n  - {{id: b}}\n"
    with pytest.raises(ExpressionError) as caught:
        Graph.from_yaml(text)
    assert (caught.value.graph_id, caught.value.node_id) == ("g", "a")
    assert str(caught.value).startswith("graph 'g', node 'a': ")
    node_when = f"id: g\nlayout:\n  - {{id: a, when: {json.dumps(condition)}}}\n"
    with pytest.raises(ExpressionError):
        Graph.from_yaml(node_when)


def test_add_makes_a_node_of_any_type_by_enum_or_by_name() -> None:
    spec = GraphSpec("g")
    spec.add(NodeType.START, "s", title="begin").link_add("x")
    spec.add("exclusive", "x", meta={"k": 1}).link_add("e")
    spec.add("iterator", "l")  # the document's legacy name of a loop
    spec.add(NodeType.END, "e")

    assert [(n.id, n.type) for n in spec.nodes.values()] == [
        ("s", NodeType.START),
        ("x", NodeType.EXCLUSIVE),
        ("l", NodeType.LOOP),
        ("e", NodeType.END),
    ]
    assert spec.nodes["s"].title == "begin" and spec.nodes["x"].meta == {"k": 1}


def test_the_solon_builder_names_are_aliases_of_add() -> None:
    by_alias, by_add = GraphSpec("g"), GraphSpec("g")
    for kind in NodeType:
        getattr(by_alias, f"add_{kind.value}")(kind.value, task="@t", when="a > 1", meta={"m": 1}, title="T")
        by_add.add(kind, kind.value, task="@t", when="a > 1", meta={"m": 1}, title="T")

    assert by_alias.to_dict() == by_add.to_dict()


@pytest.mark.parametrize("kind", ["gateway", "", 3, None])
def test_add_of_an_unknown_type_is_a_graph_error_and_adds_nothing(kind: object) -> None:
    spec = GraphSpec("g")
    with pytest.raises(GraphError, match=r"expected .*one of start, end, activity") as caught:
        spec.add(kind, "n")  # type: ignore[arg-type]
    assert (caught.value.graph_id, caught.value.node_id) == ("g", "n")
    assert spec.nodes == {}

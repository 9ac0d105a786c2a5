"""``Graph``, ``Node`` and ``Link``: a checked, immutable graph, and its document forms (YAML, JSON, Mermaid).

Building checks everything that can be checked before a run: node types, links to missing nodes, the start node,
task forms (inline scripts are refused: no ``eval``, no ``exec``), ``$meta`` references, loop ``$in`` shapes,
conditions, which are compiled here so that a bad expression fails at load time, naming graph and node, and
parallel joins that can never go on (``_joins``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from ..adk import Agent
from ._document import parse_json, parse_yaml, read_text
from ._errors import GraphError, GraphFileError, LoopError, ScriptTaskError, where
from ._expr import Expression, ExpressionError, compile_expression
from ._joins import refuse_dead_joins
from ._spec import ConditionLike, GraphSpec, LinkSpec, NodeSpec, NodeType, TaskLike

__all__ = ["ComponentRef", "Graph", "GraphRef", "Link", "Node"]


class ComponentRef:
    """``"@name"``: a component the engine's container holds, looked up when the node runs."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class GraphRef:
    """``"#graph_id"``: a sub-graph the engine knows, looked up when the node runs."""

    __slots__ = ("graph_id",)

    def __init__(self, graph_id: str) -> None:
        self.graph_id = graph_id


Condition = ComponentRef | Expression | Callable[..., Any] | object
"""A compiled condition: a component reference, an expression, or a Python callable or object."""


class Link:
    """An out-link of ``prev_id`` to ``next_id``; ``next_node`` is the node it leads to."""

    __slots__ = ("_condition", "meta", "next_id", "next_node", "prev_id", "priority", "title", "when")

    def __init__(self, prev_id: str, spec: LinkSpec, condition: Condition | None) -> None:
        self.prev_id = prev_id
        self.next_id = spec.next_id
        self.title = spec.title
        self.meta: Mapping[str, Any] = MappingProxyType(dict(spec.meta))
        self.when: ConditionLike | None = spec.when
        self.priority = spec.priority
        self._condition = condition
        self.next_node: Node = None  # type: ignore[assignment]  # set once every node exists

    def __repr__(self) -> str:
        return f"Link({self.prev_id!r} -> {self.next_id!r})"


class Node:
    """A node of a built graph. ``links`` are its out-links in the order they run (priority, then declaration);
    ``prev_links`` its in-links; ``graph`` the graph it belongs to."""

    __slots__ = ("_condition", "_target", "graph", "id", "links", "meta", "prev_links", "task", "title", "type", "when")

    def __init__(self, graph: Graph, spec: NodeSpec, links: tuple[Link, ...]) -> None:
        self.graph = graph
        self.id = spec.id
        self.type = spec.type
        self.title = spec.title if spec.title is not None else spec.id
        self.meta: Mapping[str, Any] = MappingProxyType(dict(spec.meta))
        self.when: ConditionLike | None = spec.when
        self.task: TaskLike | None = spec.task
        self.links = links
        self.prev_links: tuple[Link, ...] = ()
        self._condition: Condition | None = None
        self._target: object = None

    @property
    def next_nodes(self) -> tuple[Node, ...]:
        return tuple(link.next_node for link in self.links)

    def __repr__(self) -> str:
        return f"Node({self.graph.id!r}/{self.id!r}, {self.type.value})"


class Graph:
    """A checked, immutable graph. Build one with ``GraphSpec(...).build()``, ``Graph.from_yaml``,
    ``Graph.from_json`` or ``Graph.load``; edit a copy with ``Graph.copy(graph, edit)``."""

    __slots__ = ("_spec", "driver", "id", "links", "meta", "nodes", "start", "title")

    id: str
    title: str
    driver: str
    meta: Mapping[str, Any]
    nodes: Mapping[str, Node]
    links: tuple[Link, ...]
    start: Node
    _spec: GraphSpec

    def __init__(self) -> None:
        raise TypeError("build a Graph with GraphSpec(...).build(), Graph.from_yaml, Graph.from_json or Graph.load")

    @classmethod
    def _from_spec(cls, spec: GraphSpec, *, check_joins: bool) -> Graph:
        graph = object.__new__(cls)
        graph.id = spec.id
        graph.title = spec.title if spec.title is not None else spec.id
        graph.driver = spec.driver
        graph.meta = MappingProxyType(dict(spec.meta))
        nodes: dict[str, Node] = {}
        for node_spec in spec.nodes.values():
            links = tuple(
                sorted(
                    (
                        Link(node_spec.id, link, _condition(link.when, spec.id, node_spec.id, f"link {link.next_id!r}"))
                        for link in node_spec.links
                    ),
                    key=lambda link: -link.priority,
                )
            )
            node = Node(graph, node_spec, links)
            node._condition = _condition(node_spec.when, spec.id, node_spec.id, "when")
            node._target = _target(node_spec.task, spec, node_spec.id)
            _check_loop(node)
            nodes[node.id] = node
        inbound: dict[str, list[Link]] = {node_id: [] for node_id in nodes}
        for node in nodes.values():
            for link in node.links:
                target = nodes.get(link.next_id)
                if target is None:
                    raise GraphError(
                        f"link to a missing node {link.next_id!r}", graph_id=spec.id, node_id=node.id, field="link"
                    )
                link.next_node = target
                inbound[target.id].append(link)
        for node_id, prev in inbound.items():
            nodes[node_id].prev_links = tuple(prev)
        graph.nodes = MappingProxyType(nodes)
        graph.links = tuple(link for node in nodes.values() for link in node.links)
        start = next((n for n in nodes.values() if n.type is NodeType.START), None)
        if start is None:
            start = next((n for n in nodes.values() if not n.prev_links), None)
        if start is None:
            raise GraphError(f"No start node found, graph: {spec.id}", graph_id=spec.id)
        graph.start = start
        if check_joins:
            refuse_dead_joins(nodes, start, spec.id)
        graph._spec = _snapshot(spec)
        graph._spec.check_joins = check_joins  # what it was built with: a copy is checked alike
        return graph

    # -- reading -----------------------------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, document: Any, *, check_joins: bool | None = None) -> Graph:
        return GraphSpec.from_dict(document).build(check_joins=check_joins)

    @classmethod
    def from_yaml(cls, text: str, *, check_joins: bool | None = None) -> Graph:
        """The graph of a YAML document, read by PyYAML's safe loader (no tags that build objects) within the
        limits on documents (``MAX_DOCUMENT_BYTES``, ``MAX_DOCUMENT_DEPTH``, ``MAX_DOCUMENT_VALUES``, aliases
        counted as what they name): a ``GraphFileError`` past one of them. ``check_joins=False`` keeps a parallel
        join that can never go on (see ``GraphSpec.build``), as ``checkJoins: false`` in the document does; given,
        ``check_joins`` is what counts."""
        return cls.from_dict(parse_yaml(text), check_joins=check_joins)

    @classmethod
    def from_json(cls, text: str, *, check_joins: bool | None = None) -> Graph:
        """The graph of a JSON document, within the same limits as ``from_yaml``."""
        return cls.from_dict(parse_json(text), check_joins=check_joins)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, check_joins: bool | None = None) -> Graph:
        """The graph in a ``.yml``, ``.yaml`` or ``.json`` file (a regular file of UTF-8 text, within the limits
        of ``from_yaml``). Every error names the file: a ``GraphFileError`` when it cannot be read, else the
        ``GraphError`` (or ``ExpressionError``) of the graph it holds, with ``file`` set."""
        file = Path(path)
        name = str(file)
        suffix = file.suffix.lower()
        if suffix not in (".yml", ".yaml", ".json"):
            raise GraphFileError(f"expected a .yml, .yaml or .json file, got {suffix or 'no suffix'}", file=name)
        text = read_text(file)
        parse = parse_json if suffix == ".json" else parse_yaml
        try:
            return cls.from_dict(parse(text, file=name), check_joins=check_joins)
        except GraphFileError:
            raise
        except (GraphError, ExpressionError) as error:
            # The graph's own error, of its own type, with the file named first.
            error.file = name
            joint = ", " if error.graph_id else ": "  # after "graph 'g'", the place goes on; else the file is all
            error.args = (f"{where('', file=name)}{joint}{error}", *error.args[1:])
            raise

    # -- writing -----------------------------------------------------------------------------------------------

    def to_spec(self) -> GraphSpec:
        """A fresh, mutable spec of this graph (Python tasks and conditions included)."""
        return _snapshot(self._spec)

    @staticmethod
    def copy(
        graph: Graph, edit: Callable[[GraphSpec], object] | None = None, *, check_joins: bool | None = None
    ) -> Graph:
        """A new graph: this one's spec, changed by ``edit`` (if given), built and checked again."""
        spec = graph.to_spec()
        if edit is not None:
            edit(spec)
        return spec.build(check_joins=check_joins)

    def to_dict(self) -> dict[str, Any]:
        return self._spec.to_dict()

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    def to_mermaid(self) -> str:
        """A Mermaid flowchart: start and end as stadiums, activities as boxes, gateways as diamonds, loops as
        hexagons; links labelled with their title and condition."""
        shapes = {
            NodeType.START: ("([", "])"),
            NodeType.END: ("([", "])"),
            NodeType.ACTIVITY: ("[", "]"),
            NodeType.LOOP: ("{{", "}}"),
        }
        names = {node_id: f"n{index}" for index, node_id in enumerate(self.nodes)}
        lines = ["flowchart TD"]
        for node in self.nodes.values():
            opening, closing = shapes.get(node.type, ("{", "}"))
            lines.append(f'    {names[node.id]}{opening}"{_label(node.title)}"{closing}')
        for link in self.links:
            label = " ".join(
                part for part in (link.title or "", f"[{link.when}]" if isinstance(link.when, str) else "") if part
            )
            arrow = f'-->|"{_label(label)}"|' if label else "-->"
            lines.append(f"    {names[link.prev_id]} {arrow} {names[link.next_id]}")
        return "\n".join(lines) + "\n"

    def get_node(self, node_id: str) -> Node | None:
        return self.nodes.get(node_id)

    def __eq__(self, other: object) -> bool:
        """Equal graphs have equal documents (graphs with Python tasks compare by identity)."""
        if not isinstance(other, Graph):
            return NotImplemented
        if other is self:
            return True
        try:
            return self.to_dict() == other.to_dict()
        except GraphError:
            return False

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        return f"Graph({self.id!r}, {len(self.nodes)} nodes)"


def _label(text: str) -> str:
    return text.replace('"', "#quot;")


def _snapshot(spec: GraphSpec) -> GraphSpec:
    """A copy of ``spec`` that later edits of either do not reach (documents copied, Python objects shared)."""
    copy = GraphSpec(spec.id, title=spec.title, driver=spec.driver, meta=_deep(spec.meta), check_joins=spec.check_joins)
    for node in spec.nodes.values():
        clone = NodeSpec(node.id, node.type, task=node.task, when=node.when, meta=_deep(node.meta), title=node.title)
        for link in node.links:
            clone.link_add(
                link.next_id, when=link.when, title=link.title, meta=_deep(link.meta), priority=link.priority
            )
        copy.add_node(clone)
    return copy


def _deep(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _deep(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_deep(item) for item in value]
    return value


def _condition(when: ConditionLike | None, graph_id: str, node_id: str, field: str) -> Condition | None:
    if when is None or when == "":
        return None
    if isinstance(when, str):
        if when.startswith("@"):
            if len(when) == 1:
                raise GraphError("'@' needs a component name", graph_id=graph_id, node_id=node_id, field=field)
            return ComponentRef(when[1:])
        return compile_expression(when, graph_id=graph_id, node_id=node_id)
    if callable(when) or callable(getattr(when, "test", None)):
        return when
    raise GraphError(
        f"expected an expression, '@name', a callable or an object with test(context), got {type(when).__name__}",
        graph_id=graph_id,
        node_id=node_id,
        field=field,
    )


def _target(task: TaskLike | None, spec: GraphSpec, node_id: str) -> object:
    """What a node's task runs: None, a component or graph reference, or a Python callable or object."""
    if task is None or task == "":
        return None
    if not isinstance(task, str):
        if isinstance(task, Agent):
            from ._agent import AgentTask

            return AgentTask(task)
        if callable(task) or callable(getattr(task, "run", None)):
            return task
        raise GraphError(
            f"expected a task string, a callable or an object with run(context, node), got {type(task).__name__}",
            graph_id=spec.id,
            node_id=node_id,
            field="task",
        )
    if task.startswith("$"):
        path = task[1:]
        value: Any = spec.meta
        for key in path.split("."):
            value = value.get(key) if isinstance(value, Mapping) else None
        if value is None or value == "":
            raise GraphError(f"Graph meta not found: {path}", graph_id=spec.id, node_id=node_id, field="task")
        if isinstance(value, str) and value.startswith("$"):
            raise GraphError(
                f"graph meta {path!r} refers to another meta path {value!r}; write the task there directly",
                graph_id=spec.id,
                node_id=node_id,
                field="task",
            )
        return _target(value, spec, node_id)
    if task.startswith(("@", "#")):
        if len(task) == 1:
            raise GraphError(f"{task!r} needs a name after it", graph_id=spec.id, node_id=node_id, field="task")
        return ComponentRef(task[1:]) if task[0] == "@" else GraphRef(task[1:])
    raise ScriptTaskError(
        f"inline script tasks are not run (no eval, no exec), got {task[:60]!r}; write the code as a component and "
        "refer to it as '@name', or use '#graph_id' or a '$meta.path' that names one",
        graph_id=spec.id,
        node_id=node_id,
        field="task",
    )


def _check_loop(node: Node) -> None:
    if node.type is not NodeType.LOOP or not node.meta.get("$for"):
        return
    source = node.meta.get("$in")
    if not isinstance(source, list | str) or source == "":
        raise LoopError(
            f"the '$in' must be a list or a string (a variable name, 'a...b' or 'a:b:step'), got {source!r}",
            graph_id=node.graph.id,
            node_id=node.id,
            field="meta.$in",
        )
    if isinstance(source, str) and (":" in source or "..." in source):
        from ._loop import stepper

        stepper(source, graph_id=node.graph.id, node_id=node.id)

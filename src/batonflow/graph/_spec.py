"""What a graph is made of before it is built: ``GraphSpec``, ``NodeSpec``, ``LinkSpec``, and their document form.

A spec is mutable and unchecked; ``GraphSpec.build()`` checks it and returns an immutable ``Graph``. Documents
(parsed YAML or JSON) enter through pydantic models here, so that every mistake in a file becomes a ``GraphError``
naming the graph, the node and the field, and keys a designer tool adds are ignored.
"""

from __future__ import annotations

import copy
import enum
import itertools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, TypedDict, Unpack

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

from ._errors import GraphError

if TYPE_CHECKING:
    from ._context import FlowContext
    from ._graph import Graph, Node

__all__ = [
    "ConditionComponent",
    "ConditionLike",
    "GraphSpec",
    "LinkSpec",
    "NodeSpec",
    "NodeType",
    "TaskComponent",
    "TaskLike",
]


class NodeType(enum.Enum):
    """The seven node types; a document writes them in lower case."""

    START = "start"
    END = "end"
    ACTIVITY = "activity"
    EXCLUSIVE = "exclusive"
    INCLUSIVE = "inclusive"
    PARALLEL = "parallel"
    LOOP = "loop"

    @classmethod
    def parse(cls, text: str | None, *, graph_id: str, node_id: str) -> NodeType:
        """The type a document names; none is an activity, and the legacy ``iterator`` is a loop."""
        if text is None or text == "":
            return cls.ACTIVITY
        name = text.lower()
        if name == "iterator":
            return cls.LOOP
        try:
            return cls(name)
        except ValueError:
            expected = ", ".join(t.value for t in cls)
            raise GraphError(
                f"unknown node type {text!r}; expected one of {expected}",
                graph_id=graph_id,
                node_id=node_id,
                field="type",
            ) from None


class TaskComponent(Protocol):
    """A task object: ``run(context, node)``, plain or ``async``."""

    def run(self, context: FlowContext, node: Node) -> Any: ...


class ConditionComponent(Protocol):
    """A condition object: ``test(context)``, plain or ``async``, truthy to pass."""

    def test(self, context: FlowContext) -> Any: ...


TaskLike: TypeAlias = "str | TaskComponent | Callable[[FlowContext, Node], Any]"
"""A node's task: ``"@name"``, ``"#graph_id"``, ``"$meta.path"``, a task object, or a callable ``(context, node)``."""

ConditionLike: TypeAlias = "str | ConditionComponent | Callable[[FlowContext], Any]"
"""A condition: an expression, ``"@name"``, a condition object, or a callable ``(context)``."""


class LinkSpec:
    """An out-link of a node. Links run in ``priority`` order, highest first; equal priorities keep their order."""

    __slots__ = ("meta", "next_id", "priority", "title", "when")

    def __init__(
        self,
        next_id: str,
        *,
        when: ConditionLike | None = None,
        title: str | None = None,
        meta: Mapping[str, Any] | None = None,
        priority: int = 0,
    ) -> None:
        self.next_id = next_id
        self.when = when
        self.title = title
        self.meta: dict[str, Any] = dict(meta or {})
        self.priority = priority


class NodeSpec:
    """A node being specified; ``link_add`` and ``link_remove`` return the spec, so that calls chain."""

    __slots__ = ("id", "links", "meta", "task", "title", "type", "when")

    def __init__(
        self,
        id: str,
        type: NodeType = NodeType.ACTIVITY,
        *,
        task: TaskLike | None = None,
        when: ConditionLike | None = None,
        meta: Mapping[str, Any] | None = None,
        title: str | None = None,
    ) -> None:
        self.id = id
        self.type = type
        self.task = task
        self.when = when
        self.meta: dict[str, Any] = dict(meta or {})
        self.title = title
        self.links: list[LinkSpec] = []

    def link_add(
        self,
        next_id: str,
        *,
        when: ConditionLike | None = None,
        title: str | None = None,
        meta: Mapping[str, Any] | None = None,
        priority: int = 0,
    ) -> NodeSpec:
        self.links.append(LinkSpec(next_id, when=when, title=title, meta=meta, priority=priority))
        return self

    def link_remove(self, next_id: str) -> NodeSpec:
        """Drop every link to ``next_id``."""
        self.links = [link for link in self.links if link.next_id != next_id]
        return self


class NodeOptions(TypedDict, total=False):
    """The options of a node that ``GraphSpec``'s Solon-named builders pass on to ``add``."""

    task: TaskLike | None
    when: ConditionLike | None
    meta: Mapping[str, Any] | None
    title: str | None


class GraphSpec:
    """A graph being specified, in code or from a document. Nodes keep the order they were added in (the layout
    order), which decides the start node when none is of type ``start``."""

    def __init__(
        self,
        id: str,
        *,
        title: str | None = None,
        driver: str = "",
        meta: Mapping[str, Any] | None = None,
        check_joins: bool = True,
    ) -> None:
        if not isinstance(id, str) or not id:
            raise GraphError(f"a graph needs a non-empty string id, got {id!r}", field="id")
        self.id = id
        self.title = title
        self.driver = driver
        self.meta: dict[str, Any] = dict(meta or {})
        self.check_joins = check_joins
        """Whether ``build`` refuses a parallel join that can never go on (a document's ``checkJoins``)."""
        self.nodes: dict[str, NodeSpec] = {}

    def add_node(self, node: NodeSpec) -> NodeSpec:
        if not isinstance(node.id, str) or not node.id:
            raise GraphError(f"a node needs a non-empty string id, got {node.id!r}", graph_id=self.id, field="id")
        if node.id in self.nodes:
            raise GraphError("duplicate node id", graph_id=self.id, node_id=node.id, field="id")
        self.nodes[node.id] = node
        return node

    def remove_node(self, node_id: str) -> NodeSpec | None:
        return self.nodes.pop(node_id, None)

    def get_node(self, node_id: str) -> NodeSpec | None:
        return self.nodes.get(node_id)

    def add(
        self,
        type: NodeType | str,
        id: str,
        *,
        task: TaskLike | None = None,
        when: ConditionLike | None = None,
        meta: Mapping[str, Any] | None = None,
        title: str | None = None,
    ) -> NodeSpec:
        """Add a node of ``type`` (a ``NodeType``, or its name as a document writes it: ``"exclusive"``) and return
        it, to link it: ``spec.add(NodeType.START, "s").link_add("a")``. A duplicate id is a ``GraphError``."""
        if not isinstance(type, NodeType):
            if not isinstance(type, str) or not type:
                expected = ", ".join(t.value for t in NodeType)
                raise GraphError(
                    f"expected a NodeType or one of {expected}, got {type!r}", graph_id=self.id, node_id=str(id)
                )
            type = NodeType.parse(type, graph_id=self.id, node_id=str(id))
        return self.add_node(NodeSpec(id, type, task=task, when=when, meta=meta, title=title))

    # Solon's builder names (addStart, addActivity, ...), kept as aliases of add(NodeType.X, ...).

    def add_start(self, id: str, **options: Unpack[NodeOptions]) -> NodeSpec:
        """``add(NodeType.START, id, ...)``, by Solon's name."""
        return self.add(NodeType.START, id, **options)

    def add_end(self, id: str, **options: Unpack[NodeOptions]) -> NodeSpec:
        """``add(NodeType.END, id, ...)``, by Solon's name."""
        return self.add(NodeType.END, id, **options)

    def add_activity(self, id: str, **options: Unpack[NodeOptions]) -> NodeSpec:
        """``add(NodeType.ACTIVITY, id, ...)``, by Solon's name."""
        return self.add(NodeType.ACTIVITY, id, **options)

    def add_exclusive(self, id: str, **options: Unpack[NodeOptions]) -> NodeSpec:
        """``add(NodeType.EXCLUSIVE, id, ...)``, by Solon's name."""
        return self.add(NodeType.EXCLUSIVE, id, **options)

    def add_inclusive(self, id: str, **options: Unpack[NodeOptions]) -> NodeSpec:
        """``add(NodeType.INCLUSIVE, id, ...)``, by Solon's name."""
        return self.add(NodeType.INCLUSIVE, id, **options)

    def add_parallel(self, id: str, **options: Unpack[NodeOptions]) -> NodeSpec:
        """``add(NodeType.PARALLEL, id, ...)``, by Solon's name."""
        return self.add(NodeType.PARALLEL, id, **options)

    def add_loop(self, id: str, **options: Unpack[NodeOptions]) -> NodeSpec:
        """``add(NodeType.LOOP, id, ...)``, by Solon's name."""
        return self.add(NodeType.LOOP, id, **options)

    def build(self, *, check_joins: bool | None = None) -> Graph:
        """The checked, immutable graph (``GraphError`` on the first mistake found). A parallel join that no run
        can bring a branch down each inbound link of is a ``JoinError``; ``check_joins=False`` builds it anyway, as
        solon-flow does (the join then waits in every run). Not given, it is the spec's ``check_joins`` (in a
        document, ``checkJoins: false`` at the top)."""
        from ._graph import Graph

        return Graph._from_spec(self, check_joins=self.check_joins if check_joins is None else check_joins)

    # -- documents ---------------------------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, document: Any) -> GraphSpec:
        """The spec a parsed YAML or JSON document describes; ``GraphError`` naming graph, node and field."""
        if not isinstance(document, Mapping):
            raise GraphError(f"a graph document must be a mapping, got {_kind(document)}")
        raw_id = document.get("id")
        graph_id = raw_id if isinstance(raw_id, str) else ""
        try:
            doc = _GraphDoc.model_validate(document)
        except ValidationError as exc:
            raise _invalid(exc, graph_id=graph_id) from None
        layout = doc.layout if doc.layout is not None else doc.nodes
        spec = cls(doc.id, title=doc.title, driver=doc.driver or "", meta=doc.meta, check_joins=doc.check_joins)
        nodes: list[tuple[NodeSpec, bool]] = []
        for index, raw in enumerate(layout or [], start=1):
            node_id = f"n-{index}"
            if isinstance(raw, Mapping) and isinstance(raw.get("id"), str) and raw["id"]:
                node_id = raw["id"]
            if not isinstance(raw, Mapping):
                raise GraphError(f"a node must be a mapping, got {_kind(raw)}", graph_id=spec.id, node_id=node_id)
            try:
                node_doc = _NodeDoc.model_validate(raw)
            except ValidationError as exc:
                raise _invalid(exc, graph_id=spec.id, node_id=node_id) from None
            node = NodeSpec(
                node_id,
                NodeType.parse(node_doc.type, graph_id=spec.id, node_id=node_id),
                task=node_doc.task or None,
                when=node_doc.when or None,
                meta=node_doc.meta,
                title=node_doc.title,
            )
            has_link = "link" in node_doc.model_fields_set and node_doc.link is not None
            if has_link:
                _add_links(node, node_doc.link, graph_id=spec.id)
            spec.add_node(node)
            nodes.append((node, has_link))
        # An omitted link chains to the next node in layout order; the last node gets none.
        for (node, has_link), following in itertools.pairwise(nodes):
            if not has_link:
                node.link_add(following[0].id)
        return spec

    def to_dict(self) -> dict[str, Any]:
        """The document form, links always explicit (so that reading it back changes nothing); ``GraphError``
        when a task or condition is a Python object, which a document cannot hold."""
        root: dict[str, Any] = {"id": self.id}
        if self.title is not None and self.title != self.id:
            root["title"] = self.title
        if self.driver:
            root["driver"] = self.driver
        if self.meta:
            root["meta"] = copy.deepcopy(self.meta)
        if not self.check_joins:
            root["checkJoins"] = False
        layout: list[dict[str, Any]] = []
        for node in self.nodes.values():
            item: dict[str, Any] = {"id": node.id, "type": node.type.value}
            if node.title is not None and node.title != node.id:
                item["title"] = node.title
            if node.meta:
                item["meta"] = copy.deepcopy(node.meta)
            if node.when is not None:
                item["when"] = _text(node.when, self.id, node.id, "when")
            if node.task is not None:
                item["task"] = _text(node.task, self.id, node.id, "task")
            links: list[dict[str, Any]] = []
            for link in node.links:
                entry: dict[str, Any] = {"nextId": link.next_id}
                if link.title is not None:
                    entry["title"] = link.title
                if link.meta:
                    entry["meta"] = copy.deepcopy(link.meta)
                if link.when is not None:
                    entry["when"] = _text(link.when, self.id, node.id, f"link {link.next_id!r} when")
                if link.priority:
                    entry["priority"] = link.priority
                links.append(entry)
            item["link"] = links
            layout.append(item)
        root["layout"] = layout
        return root


def _text(value: object, graph_id: str, node_id: str, field: str) -> str:
    if isinstance(value, str):
        return value
    raise GraphError(
        f"a document holds only text here, got the Python object {value!r}",
        graph_id=graph_id,
        node_id=node_id,
        field=field,
    )


class _GraphDoc(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str
    title: str | None = None
    driver: str | None = None
    meta: dict[str, Any] | None = None
    check_joins: StrictBool = Field(True, alias="checkJoins")
    layout: list[Any] | None = None
    nodes: list[Any] | None = None  # the legacy name of layout


class _NodeDoc(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str | None = None
    type: str | None = None
    title: str | None = None
    meta: dict[str, Any] | None = None
    when: str | None = None
    task: str | None = None
    link: Any = None  # an id, a link object, or a list of either: checked by _add_links


class _LinkDoc(BaseModel):
    model_config = ConfigDict(extra="ignore")

    nextId: str  # the document's key
    title: str | None = None
    meta: dict[str, Any] | None = None
    when: str | None = None
    condition: str | None = None  # the legacy name of when
    priority: int = 0


def _add_links(node: NodeSpec, raw: Any, *, graph_id: str) -> None:
    items = raw if isinstance(raw, list) else [raw]
    for index, item in enumerate(items):
        field = f"link[{index}]" if isinstance(raw, list) else "link"
        if isinstance(item, str):
            node.link_add(item)
            continue
        if not isinstance(item, Mapping):
            raise GraphError(
                f"expected a node id or a link object, got {_kind(item)}",
                graph_id=graph_id,
                node_id=node.id,
                field=field,
            )
        try:
            link = _LinkDoc.model_validate(item)
        except ValidationError as exc:
            raise _invalid(exc, graph_id=graph_id, node_id=node.id, prefix=field + ".") from None
        when = link.when if "when" in link.model_fields_set else link.condition
        node.link_add(link.nextId, when=when or None, title=link.title, meta=link.meta, priority=link.priority)


def _invalid(exc: ValidationError, *, graph_id: str, node_id: str = "", prefix: str = "") -> GraphError:
    error = exc.errors()[0]
    field = prefix + ".".join(str(part) for part in error["loc"])
    if error["type"] == "missing":
        return GraphError("missing, expected a value", graph_id=graph_id, node_id=node_id, field=field)
    return GraphError(
        f"{error['msg']}, got {_kind(error.get('input'))}", graph_id=graph_id, node_id=node_id, field=field
    )


def _kind(value: Any) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"

"""``FlowContext``: a flow's variables, trace, event bus and stop/interrupt switches, and its JSON snapshot.

The trace keeps the last node visited per graph, and how each visit of the last run ended; an engine given a
context with a recorded node replays the graph up to it (see the engine), which is how a stopped flow resumes, in
this process or another (``to_json`` / ``FlowContext.from_json``, through the checkpoint codec, so that the same
types travel and corrupt data is a ``CodecError``).
"""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..codec import decode_json, encode_json, register_type
from ..errors import CodecError
from ._spec import NodeType

if TYPE_CHECKING:
    from ..adk import RunContext
    from ._exchanger import Branch, Exchanger
    from ._graph import Graph, Node

__all__ = [
    "DONE",
    "ENDED",
    "FANNED",
    "FINISHED",
    "OUTCOMES",
    "PENDING",
    "FlowContext",
    "FlowOutcome",
    "FlowStop",
    "FlowTrace",
    "NodeRecord",
]

register_type(NodeType, name="FlowNodeType")

# How a visit ended, one letter per visit in the journal a trace keeps of the last run (see the engine).
PENDING = "p"  # cut short: stopped by its own branch, by the steps limit, an error, a sub-graph that did not end
DONE = "d"  # its task finished (a join arrival was counted) and its branch went on, or would have but for a stop
ENDED = "e"  # its task finished and ``interrupt()`` ended its branch there
FANNED = "f"  # a parallel gateway whose branches then ran concurrently
OUTCOMES = frozenset((PENDING, DONE, ENDED, FANNED))
FINISHED = frozenset((DONE, ENDED, FANNED))

# The run and branch the running code belongs to: each parallel branch is an asyncio task with its own value, so
# that interrupt() ends that branch only, and a context used by two runs at once stops only its own.
CURRENT: ContextVar[tuple[Exchanger, Branch] | None] = ContextVar("batonflow_graph_run", default=None)


def running_context() -> FlowContext | None:
    """The flow context of the graph whose node (task, condition, interceptor) is running now, or None outside one.
    A graph evaluated inside a node of another (a plain ``eval`` in a task or a tool) has its own."""
    current = CURRENT.get()
    return current[0].context if current is not None else None


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """The last node a graph visited: where a resumed run picks up."""

    graph_id: str
    id: str
    title: str
    type: NodeType
    timestamp: float

    @property
    def is_end(self) -> bool:
        return self.type is NodeType.END


register_type(NodeRecord, name="FlowNodeRecord")


class FlowTrace:
    """The last ``NodeRecord`` of each graph a context has run (the first graph recorded is the root), and the
    engine's journal of how the last run's visits ended: per graph and node, one letter per visit, which is how a
    resumed run knows the branches of a parallel gateway that finished before the run stopped."""

    def __init__(self) -> None:
        self.enabled = True
        self._root: str | None = None
        self._last: dict[str, NodeRecord] = {}
        self._visits: dict[str, dict[str, str]] = {}

    def record(self, graph: Graph, node: Node | None) -> None:
        """Remember ``node`` as ``graph``'s last, where the next run resumes; ``None`` forgets it, so that the next
        run starts afresh. Either way the journal of the graph's last run is forgotten: the next run replays to
        the node recorded here as the original does, without it."""
        if not self.enabled:
            return
        self._visits.pop(graph.id, None)
        self._note(graph, node)

    def _note(self, graph: Graph, node: Node | None) -> None:
        """The engine's record of a visit: as ``record``, the journal kept."""
        if not self.enabled:
            return
        if self._root is None:
            self._root = graph.id
        if node is None:
            self._last.pop(graph.id, None)
        else:
            self._last[graph.id] = NodeRecord(graph.id, node.id, node.title, node.type, time.time())

    def record_node_id(self, graph: Graph, node_id: str | None) -> None:
        node = None if node_id is None else graph.nodes.get(node_id)
        if node_id is not None and node is None:
            from ._errors import GraphError

            raise GraphError("no such node to record", graph_id=graph.id, node_id=node_id)
        self.record(graph, node)

    def last_record(self, graph_id: str | None = None) -> NodeRecord | None:
        if not self.enabled:
            return None
        graph_id = self._root if graph_id is None else graph_id
        return None if graph_id is None else self._last.get(graph_id)

    def last_node_id(self, graph_id: str | None = None) -> str | None:
        record = self.last_record(graph_id)
        return None if record is None else record.id

    def last_node(self, graph: Graph) -> Node:
        """The node a run of ``graph`` resumes at: its recorded one, else its start."""
        record = self.last_record(graph.id)
        if record is None:
            return graph.start
        node = graph.nodes.get(record.id)
        if node is None:
            from ._errors import GraphError

            raise GraphError(
                "the context's trace records a node this graph does not have", graph_id=graph.id, node_id=record.id
            )
        return node

    def is_end(self, graph_id: str | None = None) -> bool:
        record = self.last_record(graph_id)
        return record is not None and record.is_end

    def records(self) -> tuple[NodeRecord, ...]:
        return tuple(self._last.values())

    def clear(self) -> None:
        self._root = None
        self._last.clear()
        self._visits.clear()


@dataclass(frozen=True, slots=True)
class _ContextSnapshot:
    instance_id: str
    stopped: bool
    data: dict[str, Any]
    root_graph_id: str | None = None
    records: list[NodeRecord] = field(default_factory=list)
    visits: dict[str, dict[str, str]] = field(default_factory=dict)


register_type(_ContextSnapshot, name="FlowContext")

Handler = Callable[[Any], Any]


@dataclass(frozen=True, slots=True)
class FlowStop:
    """A place where a branch of a run ended short of an end node: the graph, the node, and why."""

    graph_id: str
    node_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class FlowOutcome:
    """How the last ``eval`` of a context ended. ``finished``: it ran to completion, nothing left to run and nothing
    waiting, with or without an end node. ``stops`` are the places where it did not (a join still waiting, no
    outgoing link whose condition held, a node that stopped the run or ended its branch, the steps limit…), in the
    order they happened; ``stopped_at`` and ``reason`` are the first. ``reached_end`` is solon-flow's
    ``isEnd``: the graph's last recorded node is an end node."""

    finished: bool
    reached_end: bool
    stops: tuple[FlowStop, ...] = ()

    @property
    def stopped_at(self) -> str | None:
        return self.stops[0].node_id if self.stops else None

    @property
    def reason(self) -> str | None:
        return self.stops[0].reason if self.stops else None

    def to_dict(self) -> dict[str, Any]:
        """As the HTTP flow endpoint and ``batonflow run`` report it."""
        return {
            "finished": self.finished,
            "reached_end": self.reached_end,
            "stopped_at": self.stopped_at,
            "reason": self.reason,
            "stops": [{"graph": stop.graph_id, "node": stop.node_id, "reason": stop.reason} for stop in self.stops],
        }


class FlowContext:
    """The state of a flow run: variables (``set`` skips ``None``; Solon's ``put`` is its alias), the trace, an event
    bus, and ``stop()`` (the whole run) versus ``interrupt()`` (the current branch only).

    ``run`` is the agent run the flow belongs to while a graph agent or a team runs it (its tasks call models and
    agents on it, so that they are traced, counted and resumable); None for a plain ``eval``. It is not saved."""

    def __init__(self, instance_id: str = "", variables: Mapping[str, Any] | None = None) -> None:
        self.instance_id = instance_id
        self.run: RunContext | None = None
        self._data: dict[str, Any] = {}
        self._trace = FlowTrace()
        self._stopped = False
        self._listeners: dict[str, list[Handler]] = {}
        self._outcome: FlowOutcome | None = None
        if variables:
            self.update(variables)

    # -- variables ---------------------------------------------------------------------------------------------

    @property
    def data(self) -> Mapping[str, Any]:
        """A read-only view of the variables (what expressions see)."""
        return MappingProxyType(self._data)

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def set(self, key: str, value: Any) -> None:
        """Set ``key``; a ``None`` value is skipped, as the original's ``put`` does (``remove`` deletes)."""
        if value is not None:
            self._data[key] = value

    def update(self, variables: Mapping[str, Any]) -> None:
        """``set`` each of ``variables``."""
        for key, value in variables.items():
            self.set(key, value)

    def set_if_absent(self, key: str, value: Any) -> None:
        """Set ``key`` unless it is set (or ``value`` is ``None``)."""
        if value is not None and key not in self._data:
            self._data[key] = value

    # Solon's setters, which return the context so that calls chain: aliases of the three above.

    def put(self, key: str, value: Any) -> FlowContext:
        """``set``, returning the context (Solon's ``put``)."""
        self.set(key, value)
        return self

    def put_all(self, variables: Mapping[str, Any]) -> FlowContext:
        """``update``, returning the context (Solon's ``putAll``)."""
        self.update(variables)
        return self

    def put_if_absent(self, key: str, value: Any) -> FlowContext:
        """``set_if_absent``, returning the context (Solon's ``putIfAbsent``)."""
        self.set_if_absent(key, value)
        return self

    def compute_if_absent(self, key: str, factory: Callable[[str], Any]) -> Any:
        if key not in self._data:
            value = factory(key)
            if value is None:
                return None
            self._data[key] = value
        return self._data[key]

    def remove(self, key: str) -> None:
        self._data.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    @contextlib.contextmanager
    def with_(self, key: str, value: Any) -> Iterator[FlowContext]:
        """``key`` set to ``value`` inside the block, then restored (removed if it was not set)."""
        missing = key not in self._data
        previous = self._data.get(key)
        self.set(key, value)
        try:
            yield self
        finally:
            if missing:
                self._data.pop(key, None)
            else:
                self._data[key] = previous

    # -- event bus ---------------------------------------------------------------------------------------------

    def listen(self, topic: str, handler: Handler) -> Callable[[], None]:
        """Call ``handler(payload)`` (plain or ``async``) for each ``send`` on ``topic``; returns the unsubscriber."""
        handlers = self._listeners.setdefault(topic, [])
        handlers.append(handler)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                handlers.remove(handler)

        return unsubscribe

    async def send(self, topic: str, payload: Any = None) -> int:
        """Deliver ``payload`` to ``topic``'s listeners in the order they subscribed; returns how many got it."""
        handlers = list(self._listeners.get(topic, ()))
        for handler in handlers:
            result = handler(payload)
            if inspect.isawaitable(result):
                await result
        return len(handlers)

    # -- control -----------------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop the whole run (every branch, and the graphs that called this one)."""
        self._stopped = True
        current = CURRENT.get()
        if current is not None and current[0].context is self:
            current[1].stopped = True  # this branch's node waits; another branch's running task can still finish
            current[0].stop()

    def interrupt(self) -> None:
        """End the current branch after its node; other branches go on. Outside a run it does nothing."""
        current = CURRENT.get()
        if current is not None and current[0].context is self:
            current[1].interrupted = True

    @property
    def is_stopped(self) -> bool:
        return self._stopped

    @property
    def trace(self) -> FlowTrace:
        return self._trace

    @property
    def last_record(self) -> NodeRecord | None:
        """The root graph's last node."""
        return self._trace.last_record()

    @property
    def last_node_id(self) -> str | None:
        return self._trace.last_node_id()

    @property
    def outcome(self) -> FlowOutcome | None:
        """How the last ``eval`` on this context ended (None before one returned). It is not saved."""
        return self._outcome

    # -- snapshots ---------------------------------------------------------------------------------------------

    def to_json(self) -> str:
        """The context as JSON text: variables, stopped flag and trace. A variable the codec cannot write (a
        function, an open file, an unregistered class) is a ``CodecError`` naming it, not left out."""
        trace = self._trace
        snapshot = _ContextSnapshot(
            self.instance_id,
            self._stopped,
            dict(self._data),
            trace._root,
            list(trace._last.values()),
            {graph_id: dict(nodes) for graph_id, nodes in trace._visits.items()},
        )
        try:
            return encode_json(snapshot, what="flow context")
        except CodecError as exc:
            key = _variable_at(exc.path)
            if key is None:
                raise
            raise CodecError(f"cannot save the flow context's variable {key!r}: {exc}", path=exc.path) from None

    @classmethod
    def from_json(cls, text: str | bytes) -> FlowContext:
        """The context ``to_json`` wrote; corrupt or foreign text is a ``CodecError``."""
        snapshot = decode_json(text, what="flow context")
        if not isinstance(snapshot, _ContextSnapshot):
            raise CodecError(
                f"cannot decode flow context: expected a FlowContext snapshot, got {type(snapshot).__name__}"
            )
        context = cls(snapshot.instance_id)
        context._data.update(snapshot.data)
        context._stopped = snapshot.stopped
        context._trace._root = snapshot.root_graph_id
        context._trace._last = {record.graph_id: record for record in snapshot.records}
        context._trace._visits = _checked_visits(snapshot.visits)
        return context

    def __repr__(self) -> str:
        return f"FlowContext({self.instance_id!r}, {len(self._data)} variables, last={self.last_node_id!r})"


def _checked_visits(visits: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    for graph_id, nodes in visits.items():
        for node_id, outcomes in nodes.items():
            strange = sorted(set(outcomes) - OUTCOMES)
            if strange:
                raise CodecError(
                    f"cannot decode flow context: the visits of node {node_id!r} in graph {graph_id!r} are letters "
                    f"of {''.join(sorted(OUTCOMES))}, found {''.join(strange)!r}",
                    path=f"$.visits.{graph_id}.{node_id}",
                )
    return visits


def _variable_at(path: str | None) -> str | None:
    prefix = "$.data"
    if path is None or not path.startswith(prefix) or len(path) == len(prefix):
        return None
    rest = path[len(prefix) :]
    if rest.startswith("."):
        return rest[1:].split(".", 1)[0].split("[", 1)[0]
    if rest.startswith('["'):
        end = rest.find('"]')
        return rest[2:end] if end > 0 else None
    return None

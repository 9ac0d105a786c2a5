"""The graph layer's errors: each names the graph, and the node and field where there is one.

A ``GraphError`` is a mistake in a graph or in how it is used (bad YAML, a link to a missing node, an unknown
component, an inline script): fix the graph. A ``FlowRunError`` is a failure while a flow runs (a task raised, a
cycle ran past the visit limit): the context keeps everything recorded up to there.
"""

from __future__ import annotations

from ..errors import RunError, UserError

__all__ = ["ComponentError", "FlowRunError", "GraphError", "LoopError", "ScriptTaskError", "VisitLimitError"]


def where(graph_id: str, node_id: str = "", field: str = "") -> str:
    """``graph 'g', node 'n', field 'f'``: the place an error message starts with (the parts known)."""
    parts = [f"graph {graph_id!r}"] if graph_id else []
    if node_id:
        parts.append(f"node {node_id!r}")
    if field:
        parts.append(f"field {field!r}")
    return ", ".join(parts)


class GraphError(UserError):
    """A graph that cannot be built or run as written. ``graph_id``, ``node_id`` and ``field`` say where."""

    def __init__(self, message: str, *, graph_id: str = "", node_id: str = "", field: str = "") -> None:
        prefix = where(graph_id, node_id, field)
        super().__init__(f"{prefix}: {message}" if prefix else message)
        self.graph_id = graph_id
        self.node_id = node_id
        self.field = field


class ScriptTaskError(GraphError):
    """A task written as inline script: batonflow runs no scripts from graph files (no ``eval``, no ``exec``)."""


class ComponentError(GraphError):
    """An ``@name`` task or condition the engine has no component for, or one of the wrong kind."""

    def __init__(self, message: str, *, name: str, graph_id: str = "", node_id: str = "") -> None:
        super().__init__(message, graph_id=graph_id, node_id=node_id)
        self.name = name


class LoopError(GraphError):
    """A loop node whose ``$in`` is not something to iterate over."""


class FlowRunError(RunError):
    """A failure while a flow ran: a task or a condition raised (the cause is chained), or a limit was passed."""

    def __init__(self, message: str, *, graph_id: str, node_id: str = "") -> None:
        super().__init__(f"{where(graph_id, node_id)}: {message}")
        self.graph_id = graph_id
        self.node_id = node_id


class VisitLimitError(FlowRunError):
    """A node visited more often than the engine's ``max_visits`` in one run with no steps limit: most likely a
    cycle that never ends."""

    def __init__(self, message: str, *, graph_id: str, node_id: str, visits: int) -> None:
        super().__init__(message, graph_id=graph_id, node_id=node_id)
        self.visits = visits

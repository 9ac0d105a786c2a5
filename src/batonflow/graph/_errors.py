"""The graph layer's errors: each names the graph, and the node and field where there is one.

A ``GraphError`` is a mistake in a graph or in how it is used (bad YAML, a link to a missing node, an unknown
component, an inline script): fix the graph. A ``GraphFileError`` is a file or document that could not be read at all,
or that passed one of the limits on reading one. A ``FlowRunError`` is a failure while a flow runs (a task raised, a
cycle ran past the visit limit): the context keeps everything recorded up to there.
"""

from __future__ import annotations

from ..errors import RunError, UserError

__all__ = [
    "ComponentError",
    "FlowRunError",
    "GraphError",
    "GraphFileError",
    "LoopError",
    "ScriptTaskError",
    "VisitLimitError",
]


def where(graph_id: str, node_id: str = "", field: str = "", *, file: str = "") -> str:
    """``file 'f.yml', graph 'g', node 'n', field 'f'``: the place an error message starts with (the parts known)."""
    parts = [f"file {file!r}"] if file else []
    if graph_id:
        parts.append(f"graph {graph_id!r}")
    if node_id:
        parts.append(f"node {node_id!r}")
    if field:
        parts.append(f"field {field!r}")
    return ", ".join(parts)


class GraphError(UserError):
    """A graph that cannot be built or run as written. ``file`` (when it was read from one), ``graph_id``,
    ``node_id`` and ``field`` say where."""

    def __init__(self, message: str, *, graph_id: str = "", node_id: str = "", field: str = "", file: str = "") -> None:
        prefix = where(graph_id, node_id, field, file=file)
        super().__init__(f"{prefix}: {message}" if prefix else message)
        self.graph_id = graph_id
        self.node_id = node_id
        self.field = field
        self.file = file


class GraphFileError(GraphError):
    """A graph file or document that cannot be read: missing, not a regular file, not UTF-8 text, not valid YAML or
    JSON, or past one of the limits of ``batonflow.graph``'s reading (``MAX_DOCUMENT_BYTES``, ``MAX_DOCUMENT_DEPTH``,
    ``MAX_DOCUMENT_VALUES``). ``file`` names it (empty for a text given in code) and ``limit`` is the name of the
    limit it passed (empty when it passed none)."""

    def __init__(self, message: str, *, file: str = "", limit: str = "") -> None:
        super().__init__(message, file=file)
        self.limit = limit


class ScriptTaskError(GraphError):
    """A task written as inline script: batonflow runs no scripts from graph files (no ``eval``, no ``exec``)."""


class ComponentError(GraphError):
    """An ``@name`` task or condition the engine has no component for, or one of the wrong kind."""

    def __init__(self, message: str, *, name: str, graph_id: str = "", node_id: str = "") -> None:
        super().__init__(message, graph_id=graph_id, node_id=node_id)
        self.name = name


class LoopError(GraphError):
    """A loop node whose ``$in`` is not something to iterate over."""


class JoinError(GraphError):
    """A parallel join that can never go on: no run can bring a branch down each of its inbound links.
    ``node_id`` is the join, ``links`` its inbound links as ``(from, to)`` pairs, and ``gateways`` the exclusive
    gateways that send a run down only one of them (empty when the cause is elsewhere)."""

    def __init__(
        self,
        message: str,
        *,
        graph_id: str,
        node_id: str,
        gateways: tuple[str, ...],
        links: tuple[tuple[str, str], ...],
    ) -> None:
        super().__init__(message, graph_id=graph_id, node_id=node_id)
        self.gateways = gateways
        self.links = links


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

"""The flow layer's errors: each names the graph, the node and the meta it is about.

A ``FlowMetaError`` is a node written wrong (a meta of the wrong type, an unknown provider, a tool provider nobody
registered, a repository without an embedding model): fix the graph. A ``FlowComponentError`` is a component that
failed while the flow ran (a model call, an MCP server that died, a document that could not be fetched). A
``FlowPermissionError`` is a node that asks for what the engine's owner did not allow in code: a command, a file
outside ``base_dir``, a host outside ``allowed_hosts``, or more than a fetch may bring.
"""

from __future__ import annotations

from ..graph import FlowRunError, GraphError

__all__ = ["FlowComponentError", "FlowMetaError", "FlowPermissionError"]


def _where(graph_id: str, node_id: str, meta: str) -> str:
    parts = [f"graph {graph_id!r}", f"node {node_id!r}"]
    if meta:
        parts.append(f"meta {meta!r}")
    return ", ".join(parts)


class FlowMetaError(GraphError):
    """A component's meta that cannot be used as written. ``graph_id``, ``node_id`` and ``meta`` say where."""

    def __init__(self, message: str, *, graph_id: str, node_id: str, meta: str = "") -> None:
        super().__init__(f"{_where(graph_id, node_id, meta)}: {message}")
        self.graph_id = graph_id
        self.node_id = node_id
        self.field = meta
        self.meta = meta


class FlowPermissionError(FlowMetaError):
    """A node that asks for what the engine does not allow. ``rule`` names the engine's option that decides it
    (``allowed_commands``, ``base_dir``, ``allowed_hosts``, ``max_fetch_bytes``, ``http_timeout``,
    ``content_type``); the message says what was asked and how the owner allows it in code."""

    def __init__(self, message: str, *, graph_id: str, node_id: str, meta: str, rule: str) -> None:
        super().__init__(f"{message} [rule {rule}]", graph_id=graph_id, node_id=node_id, meta=meta)
        self.rule = rule


class FlowComponentError(FlowRunError):
    """A component that failed while the flow ran; the cause is chained. ``meta`` names what it was doing."""

    def __init__(self, message: str, *, graph_id: str, node_id: str, meta: str = "") -> None:
        super().__init__(message, graph_id=graph_id, node_id=node_id)
        # FlowRunError wrote "graph, node: message"; say the meta too.
        self.args = (f"{_where(graph_id, node_id, meta)}: {message}",)
        self.meta = meta

"""What a served target is made of, for the dev UI's diagrams: an agent tree (each agent and whom it may transfer
to), a team (its members and protocol, and the graph the protocol runs), or a graph flow (its nodes and links).

Every structure is nodes and links, ids as data (the page draws them as text), their number bounded:
``MAX_NODES`` nodes and ``MAX_LINKS`` links, ``truncated`` set when a target has more.
"""

from typing import Annotated, Any

from fastapi import Depends

from ..adk import FlowAgent
from ..graph import Graph
from ..team import TeamAgent
from ._flows import flow_graph
from ._server import Server, state

__all__ = ["MAX_LINKS", "MAX_NODES", "agent_structure", "flow_structure", "graph_structure"]

MAX_NODES = 200
MAX_LINKS = 400

Srv = Annotated[Server, Depends(state)]


class _Drawing:
    """Nodes and links as they are added, each kept once, up to the bounds."""

    def __init__(self, kind: str, name: str) -> None:
        self.kind = kind
        self.name = name
        self.nodes: dict[str, dict[str, str]] = {}
        self.links: list[dict[str, str]] = []
        self.protocol: str | None = None
        self.truncated = False

    def node(self, node_id: str, title: str, type_: str) -> bool:
        if node_id in self.nodes:
            return True
        if len(self.nodes) >= MAX_NODES:
            self.truncated = True
            return False
        self.nodes[node_id] = {"id": node_id, "title": title, "type": type_}
        return True

    def link(self, source: str, target: str, title: str = "") -> None:
        if source not in self.nodes or target not in self.nodes:
            return
        if len(self.links) >= MAX_LINKS:
            self.truncated = True
            return
        self.links.append({"from": source, "to": target, "title": title})

    def json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "protocol": self.protocol,
            "nodes": list(self.nodes.values()),
            "links": self.links,
            "truncated": self.truncated,
        }


def graph_structure(graph: Graph, kind: str = "graph") -> dict[str, Any]:
    """A graph's nodes (id, title, type) and links (with their titles), in declaration order."""
    drawing = _Drawing(kind, graph.id)
    for node in graph.nodes.values():
        drawing.node(node.id, node.title, node.type.value)
    for node in graph.nodes.values():
        for link in node.links:
            drawing.link(link.prev_id, link.next_id, link.title or "")
    return drawing.json()


def _tree(drawing: _Drawing, agent: FlowAgent) -> None:
    inner = agent.agent
    if not drawing.node(agent.name, agent.name, "team" if isinstance(inner, TeamAgent) else "agent"):
        return
    if isinstance(inner, TeamAgent):
        drawing.protocol = drawing.protocol or inner.protocol.name
        for member in inner.config.members:
            if drawing.node(member.name, member.name, "member"):
                drawing.link(agent.name, member.name, "member")
    for sub in agent.sub_agents:
        _tree(drawing, sub)
        drawing.link(agent.name, sub.name, "transfer")


def agent_structure(name: str, server: Srv) -> dict[str, Any]:
    """An agent's tree: each agent (a team, its members too) and the transfers it may make; a team alone is
    drawn as its protocol's graph, with the members the graph's nodes run."""
    root = server.agent(name)
    inner = root.agent
    if isinstance(inner, TeamAgent) and not root.sub_agents:
        drawing = graph_structure(inner.graph, "team")
        drawing["name"] = name
        drawing["protocol"] = inner.protocol.name
        return drawing
    drawing_ = _Drawing("agent", name)
    _tree(drawing_, root)
    return drawing_.json()


def flow_structure(flow_id: str, server: Srv) -> dict[str, Any]:
    """A served flow's nodes and links."""
    return graph_structure(flow_graph(server, flow_id))

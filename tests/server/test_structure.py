"""What a served target is made of (``GET /agents/{name}/structure``, ``GET /flows/{id}/structure``): an agent
tree with its transfers, a team as its protocol's graph, a flow's nodes and links; bounded, and a 404 that lists
the served ones for an unknown id."""

from __future__ import annotations

from typing import Any

from batonflow.graph import Graph
from batonflow.schema import assistant
from batonflow.server import create_app
from batonflow.team import TeamAgent
from batonflow.testing import FunctionModel

from . import apps
from .conftest import asgi_client

MAX_NODES = 200  # the bound docs/serving.md gives

ORDER = """
id: order
layout:
  - {id: start, type: start}
  - id: check
    type: exclusive
    link:
      - {nextId: review, when: "amount > 100", title: big}
      - {nextId: end}
  - {id: review, title: Review it, link: end}
  - {id: end, type: end}
"""


def crew() -> TeamAgent:
    supervisor = FunctionModel(lambda messages, tools: assistant("done"))
    return TeamAgent(name="crew", model=supervisor, members=[apps.echo(), apps.refunds()], protocol="sequential")


async def structure(path: str, **targets: Any) -> Any:
    app = create_app([apps.router(), crew()], flows=[Graph.from_yaml(ORDER)], **targets)
    async with asgi_client(app) as client:
        return await client.get(path)


async def test_an_agent_tree_is_its_agents_and_their_transfers() -> None:
    answer = (await structure("/agents/router/structure")).json()
    assert answer["kind"] == "agent"
    assert [(n["id"], n["type"]) for n in answer["nodes"]] == [("router", "agent"), ("refunds", "agent")]
    assert answer["links"] == [{"from": "router", "to": "refunds", "title": "transfer"}]
    assert answer["truncated"] is False


async def test_a_team_is_its_protocols_graph_with_a_node_for_each_member() -> None:
    answer = (await structure("/agents/crew/structure")).json()
    assert (answer["kind"], answer["name"], answer["protocol"]) == ("team", "crew", "SEQUENTIAL")
    ids = [n["id"] for n in answer["nodes"]]
    assert {"echo", "refunds"} <= set(ids)
    assert all(link["from"] in ids and link["to"] in ids for link in answer["links"])


async def test_a_flow_is_its_nodes_with_titles_and_types_and_its_links() -> None:
    answer = (await structure("/flows/order/structure")).json()
    assert answer["nodes"] == [
        {"id": "start", "title": "start", "type": "start"},
        {"id": "check", "title": "check", "type": "exclusive"},
        {"id": "review", "title": "Review it", "type": "activity"},
        {"id": "end", "title": "end", "type": "end"},
    ]
    assert answer["links"] == [
        {"from": "start", "to": "check", "title": ""},
        {"from": "check", "to": "review", "title": "big"},
        {"from": "check", "to": "end", "title": ""},
        {"from": "review", "to": "end", "title": ""},
    ]


async def test_a_structure_is_bounded_and_says_it_was_cut() -> None:
    steps = "".join(f"  - {{id: n{i}}}\n" for i in range(MAX_NODES + 50))
    graph = Graph.from_yaml(f"id: long\nlayout:\n  - {{id: start, type: start}}\n{steps}  - {{type: end}}\n")
    async with asgi_client(create_app(flows=[graph])) as client:
        answer = (await client.get("/flows/long/structure")).json()
    assert (len(answer["nodes"]), answer["truncated"]) == (MAX_NODES, True)
    assert len(answer["links"]) == MAX_NODES - 1  # the links between the nodes kept


async def test_an_unknown_target_is_a_404_that_lists_the_served_ones() -> None:
    agent = await structure("/agents/nobody/structure")
    assert agent.status_code == 404
    assert agent.json()["error"]["expected"] == ["crew", "router"]
    flow = await structure("/flows/nothing/structure")
    assert (flow.status_code, flow.json()["error"]["expected"]) == (404, ["order"])


async def test_a_structure_wants_the_token_like_every_endpoint() -> None:
    answer = await structure("/agents/router/structure", auth_token="t0ken")
    assert answer.status_code == 401

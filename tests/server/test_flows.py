"""Graph flows served by the app: listed, evaluated on the variables given, and refused when unknown."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from batonflow import UserError
from batonflow.graph import FlowContext, FlowEngine, Graph, Node
from batonflow.server import ServerLimits, create_app

from . import apps
from .conftest import asgi_client

ORDER = """
id: order
title: Order approval
layout:
  - {id: start, type: start}
  - id: check
    type: exclusive
    link:
      - {nextId: review, when: "amount > 100"}
      - {nextId: pay}
  - {id: review, task: "@mark", link: pay}
  - {id: pay, task: "@mark"}
  - {id: end, type: end}
"""


def engine() -> FlowEngine:
    def mark(context: FlowContext, node: Node) -> None:
        context.put("visited", [*context.get("visited", []), node.id])

    def explode(context: FlowContext, node: Node) -> None:
        raise ValueError("the payment service is down")

    flows = FlowEngine()
    flows.register("mark", mark)
    flows.register("explode", explode)
    return flows


def app(**kwargs: Any) -> Any:
    failing = Graph.from_yaml("id: broken\nlayout:\n  - {id: start, type: start}\n  - {id: boom, task: '@explode'}\n")
    unknown = Graph.from_yaml("id: lost\nlayout:\n  - {id: start, type: start}\n  - {id: a, task: '@nobody'}\n")
    return create_app([apps.echo()], flows=[Graph.from_yaml(ORDER), failing, unknown], flow_engine=engine(), **kwargs)


async def test_flows_are_listed_and_evaluated_on_the_variables_given() -> None:
    async with asgi_client(app()) as client:
        listed = (await client.get("/flows")).json()["flows"]
        big = (await client.post("/flows/order/eval", json={"variables": {"amount": 250}})).json()
        small = (await client.post("/flows/order/eval", json={"variables": {"amount": 5}})).json()
        stepped = (await client.post("/flows/order/eval", json={"variables": {"amount": 250}, "steps": 2})).json()
        health = (await client.get("/health")).json()
    assert listed[0] == {"id": "order", "title": "Order approval", "nodes": ["start", "check", "review", "pay", "end"]}
    assert (big["status"], big["finished"], big["variables"]["visited"]) == ("completed", True, ["review", "pay"])
    assert small["variables"]["visited"] == ["pay"]
    assert (stepped["status"], stepped["finished"], stepped["stopped_at"]) == ("stopped", False, "review")
    assert health["flows"] == 3


async def test_a_flow_says_whether_it_finished_and_where_and_why_it_stopped() -> None:
    waiting = Graph.from_yaml(
        "id: waiting\nlayout:\n  - {id: x, type: exclusive, link: [{nextId: a, when: 'k == 1'}, b]}\n"
        "  - {id: a, link: join1}\n  - {id: b, link: join1}\n  - {id: join1, type: parallel}\n",
        check_joins=False,
    )
    plain = Graph.from_yaml("id: plain\nlayout: [{id: a}, {id: b}]\n")
    served = create_app([apps.echo()], flows=[waiting, plain], flow_engine=engine())
    async with asgi_client(served) as client:
        waits = (await client.post("/flows/waiting/eval", json={"variables": {"k": 1}})).json()
        done = (await client.post("/flows/plain/eval", json={})).json()
    reason = "parallel join waits for 2 inbound links, 1 arrived (from a)"
    assert (waits["status"], waits["finished"], waits["stopped_at"], waits["reason"]) == (
        "paused",
        False,
        "join1",
        reason,
    )
    assert waits["stops"] == [{"graph": "waiting", "node": "join1", "reason": reason}]
    assert (done["status"], done["finished"], done["reached_end"], done["stopped_at"]) == (
        "completed",
        True,
        False,
        None,
    )


async def test_a_flow_that_fails_says_why_and_a_missing_component_or_flow_is_a_4xx() -> None:
    async with asgi_client(app()) as client:
        failed = (await client.post("/flows/broken/eval", json={})).json()
        lost = await client.post("/flows/lost/eval", json={})
        unknown = await client.post("/flows/nope/eval", json={})
        bad = await client.post("/flows/order/eval", json={"steps": -2})
    assert failed["status"] == "failed" and "the payment service is down" in failed["error"]["message"]
    assert lost.status_code == 422 and lost.json()["error"]["code"] == "invalid_flow"
    assert "nobody" in lost.json()["error"]["message"]
    assert unknown.status_code == 404
    assert unknown.json()["error"]["message"] == "flow: expected one of ['broken', 'lost', 'order'], got 'nope'"
    assert bad.status_code == 422


async def test_an_app_may_serve_flows_alone_but_not_nothing() -> None:
    async with asgi_client(create_app(flows=Graph.from_yaml(ORDER), flow_engine=engine())) as client:
        assert (await client.get("/agents")).json()["agents"] == []
    with pytest.raises(UserError, match=r"agents: expected at least one agent \(or flows\), got none"):
        create_app()
    with pytest.raises(UserError, match=r"flows: expected graphs \(batonflow.graph.Graph\), got str"):
        create_app(flows=["order.yml"])  # type: ignore[list-item]


LONG = """
id: long
layout:
  - {id: start, type: start}
  - {id: rows, type: loop, meta: {"$for": i, "$in": "0...99999"}}
  - {id: row, task: "@first"}
  - {id: rows_done, type: loop}
  - {id: end, type: end}
"""


async def test_a_long_eval_leaves_the_server_answering_and_counts_as_an_active_run() -> None:
    started = asyncio.Event()
    flows = FlowEngine()
    flows.register("first", lambda context, node: started.set())
    served = create_app([apps.echo()], flows=[Graph.from_yaml(LONG)], flow_engine=flows)
    order: list[str] = []
    async with asgi_client(served) as client:

        async def evaluate() -> Any:
            answer = await client.post("/flows/long/eval", json={})
            order.append("eval")
            return answer

        running = asyncio.create_task(evaluate())
        await asyncio.wait_for(started.wait(), 30)  # a guard against a hang, not a limit on time
        health = (await client.get("/health")).json()
        order.append("health")
        ended = await asyncio.wait_for(running, 60)
    assert order == ["health", "eval"]  # /health answered while the 99,999 items were walked
    assert health["active_evals"] == 1
    assert ended.json()["status"] == "completed" and ended.json()["variables"]["i"] == 99_998


async def test_an_eval_past_max_active_runs_is_a_429_as_a_run_is() -> None:
    entered, release = asyncio.Event(), asyncio.Event()
    flows = FlowEngine()

    async def wait(context: FlowContext, node: Node) -> None:
        entered.set()
        await release.wait()

    flows.register("wait", wait)
    slow = Graph.from_yaml("id: slow\nlayout: [{id: start, type: start}, {id: w, task: '@wait'}, {id: end, type: end}]")
    served = create_app([apps.echo()], flows=[slow], flow_engine=flows, limits=ServerLimits(max_active_runs=1))
    async with asgi_client(served) as client:
        running = asyncio.create_task(client.post("/flows/slow/eval", json={}))
        await asyncio.wait_for(entered.wait(), 30)  # a guard against a hang
        second_eval = await client.post("/flows/slow/eval", json={})
        run = await client.post("/runs", json={"agent": "echo", "input": "x"})
        release.set()
        first = await asyncio.wait_for(running, 30)
        after = await client.post("/runs", json={"agent": "echo", "input": "x"})
    for refused in (second_eval, run):
        assert refused.status_code == 429 and refused.json()["error"]["code"] == "too_many_runs"
        assert refused.headers["Retry-After"] == "1"
    assert first.json()["status"] == "completed"
    assert after.status_code == 200  # the place is given back when the eval ends


async def test_a_served_flow_without_an_engine_of_its_own_reaches_no_command_file_or_host(tmp_path: Any) -> None:
    marker = tmp_path / "ran"
    hostile = Graph.from_yaml(
        "id: hostile\nlayout:\n"
        '  - {id: chat, task: "@ChatModel", meta: {message: hi, chatConfig: {model: m, apiUrl: "http://127.0.0.1:9/v1"},'
        f' mcpServers: {{x: {{type: stdio, command: sh, args: [-c, "id > {marker}"]}}}}}}}}\n'
        '  - {id: docs, task: "@InMemoryRepository", meta: {documentSources: [/etc/passwd]}}\n'
    )
    async with asgi_client(create_app(flows=hostile)) as client:
        answer = await client.post("/flows/hostile/eval", json={})

    assert answer.status_code == 422 and answer.json()["error"]["code"] == "invalid_flow"
    assert "meta 'chatConfig'" in answer.json()["error"]["message"]
    assert answer.json()["error"]["message"].endswith("[rule allowed_hosts]") and not marker.exists()

from __future__ import annotations

from batonflow import ChatModelAgent, Runner
from batonflow.schema import assistant
from batonflow.team import Member, TeamAgent
from batonflow.testing import ScriptedModel, tool_calls

from .conftest import member


def sync(**args: str) -> object:
    return tool_calls(("__sync_to_blackboard__", args))


async def test_blackboard_todos_hold_the_finish_until_they_are_done() -> None:
    planner = ChatModelAgent(
        name="planner",
        description="plans",
        model=ScriptedModel([sync(result="plan ready", todo="1. write tests; - fix bug")]),
    )
    worker = ChatModelAgent(
        name="worker",
        description="works",
        model=ScriptedModel([sync(completed_todo="write tests"), sync(result="fix bug done")]),
    )
    supervisor = ScriptedModel(
        [
            assistant("planner"),
            assistant("worker"),
            assistant("[TEAM_AGENT_FINISH] too soon"),  # a todo remains: refused, the last member goes again
            assistant("[TEAM_AGENT_FINISH] all done"),
        ]
    )
    team = TeamAgent(model=supervisor, protocol="blackboard", members=[planner, worker])
    result = await Runner(team).call("Ship it")
    trace = result.session_values["__team_agent"]
    updated = "System: Blackboard updated. Subsequent experts will proceed based on this state."
    assert [(r.source, r.content) for r in trace.records] == [
        ("planner", updated),
        ("worker", updated),
        ("system", "[Routing] FINISH rejected by protocol; re-assign to [worker]"),
        ("worker", updated),
    ]
    board = trace.protocol_context["blackboard_state_obj"]
    assert board["todos"] == [] and result.text == "all done"
    assert board["data"] == {"output_planner": "plan ready", "output_worker": "fix bug done"}
    snapshot = worker.model.requests[0].messages[-1].content  # type: ignore[attr-defined]
    assert snapshot.startswith("[Blackboard Snapshot]\n```json\n")
    assert '"todo":["write tests","fix bug"],"_meta":{"last_updater":"planner"}}' in snapshot
    assert "\n### Global Blackboard\n- Empty\n" in supervisor.requests[0].messages[0].content


async def test_blackboard_failed_status_goes_back_to_its_writer() -> None:
    a = ChatModelAgent(
        name="a",
        description="a",
        model=ScriptedModel([sync(state='{"status": "FAILED"}'), sync(state='{"status": "ok"}')]),
    )
    supervisor = ScriptedModel(
        [assistant("a"), assistant("[TEAM_AGENT_FINISH] no"), assistant("[TEAM_AGENT_FINISH] yes")]
    )
    result = await Runner(TeamAgent(model=supervisor, protocol="blackboard", members=[a, member("b")])).call("Go")
    records = result.session_values["__team_agent"].records
    assert [r.source for r in records] == ["a", "a"] and result.text == "yes"


async def test_the_market_prices_members_by_their_work() -> None:
    cheap = Member(member("cheap", "```py\nok\n``` [Done]"), meta={"base_price": 0.5})
    costly = Member(member("costly", "I'm sorry"), input_modes=["image"])
    supervisor = ScriptedModel([assistant("cheap"), assistant("costly"), assistant("[TEAM_AGENT_FINISH] ok")])
    result = await Runner(TeamAgent(model=supervisor, protocol="market_based", members=[cheap, costly])).call("Go")
    first = supervisor.requests[0].messages[0].content
    assert (
        "\n### Expert Marketplace\n```json\n"
        '{"cheap":{"score":"0.80","price":"0.50","roi":"1.28","deals":0},'
        '"costly":{"score":"0.80","price":"1.00","roi":"0.64","deals":0}}\n```\n'
        "> Strategy Tips:\n> - Prefer lower Price agents for simple/light tasks.\n"
        "> - Prefer higher Score/ROI agents for deep/critical tasks.\n"
        "> - Assign lower Price agents for routine tasks under budget constraints.\n"
        "> **Top ROI Agent**:cheap\n> **Budget Pick**:cheap\n## Hierarchical Dashboard\n"
    ) in first
    market = result.session_values["__team_agent"].protocol_context["market_state_obj"]
    assert market["cheap"]["completed_tasks"] == 1
    assert round(market["cheap"]["quality"], 4) == round(0.8 * 0.6 + 0.9 * 0.4, 4)
    assert round(market["costly"]["quality"], 4) == round(0.8 * 0.6 + 0.3 * 0.4, 4)
    import math

    assert round(market["costly"]["current_price"], 6) == round(1.0 * (0.5 + 0.6) * (1 + math.log1p(1) * 0.15) * 1.5, 6)
    assert "\n### Guidelines: Price for simple tasks; Score/ROI for critical challenges." in first

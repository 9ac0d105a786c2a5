from __future__ import annotations

from batonflow import Runner
from batonflow.schema import assistant
from batonflow.team import ContractNetProtocol, Member, TeamAgent, TeamTrace
from batonflow.testing import ScriptedModel, tool_calls

from .conftest import member


def members() -> list[Member]:
    return [
        Member(member("coder", "print(1)", description="writes code"), capabilities=["python"]),
        Member(member("tester", "tested", description="tests things")),
    ]


async def test_a_call_for_bids_an_award_and_the_winners_work() -> None:
    supervisor = ScriptedModel(
        [
            tool_calls(("__call_for_bids__", {"requirement": "write python code"})),
            assistant("coder"),
            assistant("[TEAM_AGENT_FINISH] shipped"),
        ]
    )
    team = TeamAgent(model=supervisor, protocol="contract_net", members=members())
    result = await Runner(team).call("Make a script")
    trace = result.session_values["__team_agent"]
    assert [(r.source, r.content) for r in trace.records] == [
        ("bidding", "Bidding finished. 2 bids collected (0 manual, 2 auto)."),
        ("coder", "print(1)"),
    ]
    assert result.text == "shipped"
    assert [t.name for t in supervisor.requests[0].tools] == ["__call_for_bids__"]
    dashboard = supervisor.requests[1].messages[0].content
    assert (
        '{"phase":"EVALUATING","current_round":1,"history_count":0,"winner":"none","requirement":"write python code",'
        '"bids_board":{"coder":{"score":75,"plan":"Auto-matched keywords: [role:code, python]; capabilities: '
        '[assistant, python]","source":"Capability_Match"},"tester":{"score":60,"plan":"Auto-matched by '
        'capabilities: [assistant]","source":"Capability_Match"}}}'
    ) in dashboard
    assert "> Tips: Award the best candidate by `score`/`plan`. Remaining bidding rounds: 1\n" in dashboard
    coder_model = team.members[0].agent.model  # type: ignore[attr-defined]
    assert coder_model.requests[0].messages[-1].content == (
        "\n [Award Execution Order] \n> You won the bid. Execute strictly according to your plan:\n"
        "Auto-matched keywords: [role:code, python]; capabilities: [assistant, python]"
    )


async def test_an_award_to_a_member_with_no_bid_and_no_rounds_left_ends_the_team() -> None:
    supervisor = ScriptedModel([assistant("coder")])
    team = TeamAgent(model=supervisor, protocol=ContractNetProtocol(max_bidding_rounds=0), members=members())
    result = await Runner(team).call("Make a script")
    records = result.session_values["__team_agent"].records
    assert [(r.source, r.content) for r in records] == [
        (
            "bidding",
            "[System] Invalid assignment. You must call __call_for_bids__ first and only assign experts listed in "
            "bids_board.",
        ),
        ("bidding", "Cannot award: target has no bid and bidding rounds are exhausted."),
    ]
    assert result.text == "Cannot award: target has no bid and bidding rounds are exhausted."


async def test_a_finish_before_an_award_reassigns_which_calls_for_bids() -> None:
    supervisor = ScriptedModel(
        [assistant("[TEAM_AGENT_FINISH] now"), assistant("tester"), assistant("[TEAM_AGENT_FINISH] done")]
    )
    result = await Runner(TeamAgent(model=supervisor, protocol="contract_net", members=members())).call("Test it")
    records = result.session_values["__team_agent"].records
    assert [r.content for r in records] == [
        "[Routing] FINISH rejected by protocol; re-assign to [coder]",
        "Bidding finished. 2 bids collected (0 manual, 2 auto).",
        "tested",
    ]
    assert result.text == "done"


async def test_malformed_call_for_bids_arguments_start_nothing() -> None:
    supervisor = ScriptedModel(
        [tool_calls(("__call_for_bids__", "{not json")), assistant("coder"), assistant("[TEAM_AGENT_FINISH] ok")]
    )
    result = await Runner(TeamAgent(model=supervisor, protocol="contract_net", members=members())).call("Go")
    records = result.session_values["__team_agent"].records
    # The call's error is no decision: the supervisor falls back, and the fallback to a member with no bid bids.
    assert [r.content for r in records][:2] == [
        "[Routing] empty supervisor decision; retry via [coder]",
        "Bidding finished. 2 bids collected (0 manual, 2 auto).",
    ]
    assert result.session_values["__team_agent"].protocol_context["contract_state_obj"]["requirement"] is None


async def test_members_bid_themselves_only_while_a_round_is_open() -> None:
    team = TeamAgent(model=ScriptedModel([]), protocol="contract_net", members=members())
    protocol, coder = team.protocol, team.members[0]
    trace = TeamTrace(team_name="team_agent")
    assert protocol.agent_tools(trace, coder) == []
    trace.route = "bidding"
    [submit] = protocol.agent_tools(trace, coder)
    assert submit.info.name == "__submit_proposal__" and submit.meta == {"_agent_": "coder"}
    assert submit.handle({"score": "250", "plan": " "}) == "Bid rejected: plan is required."
    assert submit.handle({"score": "250", "plan": "do it well"}) == "Bid received."
    bids = trace.protocol_context["contract_state_obj"]["bids"]
    assert bids == {"coder": {"score": 100, "plan": "do it well", "auto_bid": False}}  # scores are 1 to 100
    assert submit.handle({"score": "many", "plan": "a new plan"}) == "Bid received."
    assert bids["coder"]["score"] == 50  # a score that is no number counts 50


async def test_the_trace_of_a_finished_team_survives_the_codec() -> None:
    from batonflow.codec import decode, encode

    supervisor = ScriptedModel(
        [
            tool_calls(("__call_for_bids__", {"requirement": "write python code"})),
            assistant("coder"),
            assistant("[TEAM_AGENT_FINISH] shipped"),
        ]
    )
    result = await Runner(TeamAgent(model=supervisor, protocol="contract_net", members=members())).call("Go")
    trace = result.session_values["__team_agent"]
    again = decode(encode(trace))
    assert again == trace and isinstance(again, TeamTrace)
    assert again.protocol_context["contract_state_obj"]["bids"]["coder"]["score"] == 75

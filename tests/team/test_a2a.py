from __future__ import annotations

from batonflow import ChatModelAgent, Runner
from batonflow.schema import assistant
from batonflow.team import A2AProtocol, TeamAgent
from batonflow.testing import ScriptedModel, tool_calls

from .conftest import member, paths


def agent(name: str, *steps: object) -> ChatModelAgent:
    return ChatModelAgent(name=name, description=f"the {name}", model=ScriptedModel(list(steps)))  # type: ignore[arg-type]


def transfer(target: str, **more: str) -> object:
    return tool_calls(("__transfer_to__", {"target": target, **more}))


async def test_members_hand_over_and_the_supervisor_finishes() -> None:
    a = agent("a", transfer("b", memo="half done", state='{"step": 1}'))
    b = agent("b", assistant("all done"))
    supervisor = ScriptedModel([assistant("[TEAM_AGENT_FINISH]")])
    team = TeamAgent(model=supervisor, protocol="a2a", members=[a, b])
    result = await Runner(team).call("Do it")
    assert result.text == "all done"
    trace = result.session_values["__team_agent"]
    assert [(r.source, r.content) for r in trace.records] == [("a", "Transfer to [b] requested."), ("b", "all done")]
    assert trace.protocol_context["a2a_state_obj"]["transfer_count"] == 1
    assert paths(result)[0] == ["team_agent", "a"]  # the first member starts, without the supervisor
    offered = a.model.requests[0].tools  # type: ignore[attr-defined]
    assert [tool.name for tool in offered] == ["__transfer_to__"]
    assert offered[0].parameters["properties"]["target"]["description"] == (
        'Expert name. Options: [{"name":"b","role":"the b","capabilities":["assistant"],"inputModes":["text"]}]'
    )
    instruction = b.model.requests[0].messages[0].content  # type: ignore[attr-defined]
    assert instruction.endswith(
        "\n## Active Session Context\n> This snapshot records the current state of the task. Continue execution "
        "based on this data.\n\n- **Collaboration Trail**: a\n- **Prior Expert**: a\n- **Pending Output**: half "
        'done\n- **Global State**: {"step": 1}\n'
    )
    assert "\n## Collaboration Guidelines\n- You must choose the target precisely" in instruction
    system_prompt = supervisor.requests[0].messages[0].content
    assert "\n### A2A Collaboration Rules:\n1. **Direct Delivery**: Output `[TEAM_AGENT_FINISH]` directly." in (
        system_prompt
    )
    assert system_prompt.endswith('\n### A2A Dashboard\n- Global State: {"step": 1}\n- Handovers: 1\n')


async def test_a_transfer_to_a_missing_member_goes_back_and_does_not_count() -> None:
    a = agent("a", transfer("zed"), assistant("did it myself"))
    supervisor = ScriptedModel([assistant("[TEAM_AGENT_FINISH] fine")])
    result = await Runner(TeamAgent(model=supervisor, protocol="a2a", members=[a, member("b")])).call("Do it")
    trace = result.session_values["__team_agent"]
    assert [(r.source, r.content) for r in trace.records] == [
        ("a", "Transfer to [zed] requested."),
        (
            "Supervisor",
            "[System] Transfer failed: Expert [zed] is invalid or lacks required capabilities. Please re-select or "
            "resolve yourself.",
        ),
        ("a", "did it myself"),
    ]
    assert trace.protocol_context["a2a_state_obj"]["transfer_count"] == 0
    assert result.text == "fine"


async def test_the_transfer_limit_ends_the_team() -> None:
    a = agent("a", transfer("b"))
    b = agent("b", transfer("a"))
    team = TeamAgent(model=ScriptedModel([]), protocol=A2AProtocol(max_transfer_rounds=1), members=[a, b])
    result = await Runner(team).call("Ping pong")
    assert result.text == "Max transfer limit reached."
    assert [r.source for r in result.session_values["__team_agent"].records] == ["a", "b"]


async def test_malformed_transfer_arguments_are_an_error_the_member_reads() -> None:
    a = ChatModelAgent(
        name="a",
        description="the a",
        model=ScriptedModel([tool_calls(("__transfer_to__", "not json")), assistant("never mind")]),
    )
    supervisor = ScriptedModel([assistant("[TEAM_AGENT_FINISH]")])
    result = await Runner(TeamAgent(model=supervisor, protocol="a2a", members=[a, member("b")])).call("Go")
    told = a.model.requests[1].messages[-1]  # type: ignore[attr-defined]
    assert told.role == "tool"
    assert told.content == "Error: __transfer_to__ expects a JSON object of arguments, got 'not json'"
    trace = result.session_values["__team_agent"]
    assert trace.protocol_context["a2a_state_obj"]["last_temp_target"] == ""
    assert result.text == "never mind"


async def test_outside_the_team_the_member_is_not_offered_the_tool() -> None:
    a = agent("a", assistant("alone"))
    TeamAgent(model=ScriptedModel([]), protocol="a2a", members=[a, member("b")])
    assert (await Runner(a).call("Hi")).text == "alone"
    assert a.model.requests[0].tools == []  # type: ignore[attr-defined]

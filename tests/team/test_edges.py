"""Edges of a team run: members that raise, prompts the protocols must not change, a node that stops the flow,
an approval inside a sequential team, the supervisor's role."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from batonflow import (
    HITL,
    AgentEvent,
    AgentInput,
    MemoryCheckpointStore,
    ModelTimeoutError,
    ReActAgent,
    RunContext,
    Runner,
    UserError,
    tool,
)
from batonflow.agents import human_approval
from batonflow.graph import FlowContext, GraphSpec, Node
from batonflow.schema import assistant, user
from batonflow.team import Member, TeamAgent, TeamInterceptor, TeamMemberError, TeamTrace, current_trace
from batonflow.testing import ScriptedModel, tool_calls

from .conftest import member


class Raises:
    name = "raiser"
    description = "raises"

    async def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        raise ValueError("the disk is full")
        yield AgentEvent()  # pragma: no cover - makes this an async generator


async def test_a_member_that_raises_is_an_error_event_with_its_message() -> None:
    ended: list[int] = []

    class Hooks(TeamInterceptor):
        def on_team_end(self, trace: TeamTrace) -> None:
            ended.append(len(trace.records))

    team = TeamAgent(model=ScriptedModel([assistant("raiser")]), members=[Raises()], interceptors=[Hooks()])
    events = [event async for event in team.run(AgentInput(messages=[user("Go")]))]
    error = events[-1].error
    assert isinstance(error, TeamMemberError)
    assert str(error) == "team 'team_agent': member 'raiser' failed: the disk is full"
    assert ended == [0]


async def test_protocols_never_change_the_working_memory() -> None:
    supervisor = ScriptedModel([assistant("a"), assistant("b"), assistant("[TEAM_AGENT_FINISH] ok")])
    team = TeamAgent(model=supervisor, members=[member("a", "x"), member("b", "y")])
    result = await Runner(team).call("Go")
    trace = result.session_values["__team_agent"]
    # The task, then the team's answer: the members' extra messages (the supervisor's directive) were copies.
    assert [m.content for m in trace.working_memory] == ["Go", "ok"]


async def test_a_node_that_stops_the_flow_resumes_there_on_an_empty_prompt() -> None:
    opened: list[bool] = []

    def gate(context: FlowContext, node: Node) -> None:
        if not opened:
            opened.append(True)
            context.stop()  # waits, say for a person; the next run comes back here

    def summary(context: FlowContext, node: Node) -> None:
        trace = current_trace()
        trace.final_answer = " / ".join(r.content for r in trace.records)

    a, b = member("a", "from a"), member("b", "from b")

    def shape(spec: GraphSpec) -> None:
        spec.add_start("start").link_add("a")
        spec.add_activity("a").link_add("gate")
        spec.add_activity("gate", task=gate).link_add("b")
        spec.add_activity("b").link_add("sum")
        spec.add_activity("sum", task=summary).link_add("end")
        spec.add_end("end")

    team = TeamAgent(protocol="none", members=[a, b], graph_adjuster=shape)
    first = await Runner(team).call("Go")
    assert first.text == "from a"  # stopped at the gate: the last member's output so far
    second = await Runner(team, session_values=first.session_values).call("")
    assert second.text == "from a / from b"
    assert len(a.model.requests) == 1  # type: ignore[attr-defined]


async def test_an_approval_inside_a_sequential_team_resumes_the_stage() -> None:
    paid: list[int] = []

    @tool
    def pay(amount: int) -> str:
        """Pay an amount.

        Args:
            amount: how much
        """
        paid.append(amount)
        return f"paid {amount}"

    payer = ReActAgent(
        name="payer",
        description="pays",
        model=ScriptedModel([tool_calls(("pay", {"amount": 5})), assistant("payment sent")]),
        tools=[pay],
        middlewares=[human_approval(sensitive_tools=["pay"])],
    )
    checker = member("checker", "all checked")
    team = TeamAgent(protocol="sequential", members=[checker, payer, member("closer", "closed")])
    runner = Runner(team, checkpoint_store=MemoryCheckpointStore())
    first = await runner.call("Pay 5", checkpoint_id="pay-1")
    [cause] = first.interrupt_contexts
    assert paid == []
    done = await runner.call_resume("pay-1", targets={cause.id: {"call_1": HITL.approve()}})
    trace = done.session_values["__team_agent"]
    assert paid == [5] and done.text == "closed"
    assert [r.source for r in trace.records] == ["checker", "payer", "closer"]
    assert len(checker.model.requests) == 1  # type: ignore[attr-defined]
    stages = trace.protocol_context["sequence_state_obj"]["stages"]
    assert [s["status"] for s in stages.values()] == ["COMPLETED", "COMPLETED", "COMPLETED"]


async def test_the_supervisor_role_and_member_profiles_in_its_prompt() -> None:
    supervisor = ScriptedModel([assistant("a"), assistant("[TEAM_AGENT_FINISH] ok")])
    seer = Member(member("a", "seen", description="looks at images"), input_modes=["image"], capabilities=["vision"])
    await Runner(TeamAgent(model=supervisor, members=[seer], role="The chief editor")).call("Look")
    prompt = supervisor.requests[0].messages[0].content
    assert prompt.startswith("## Your Role\nThe chief editor\n\n## Team Members\n```json\n")
    assert (
        '[{"name":"a","role":"looks at images","capabilities":["assistant","vision"],"inputModes":["text","image"]}]'
        in prompt
    )


async def test_the_supervisor_retries_a_transient_failure_and_a_lasting_one_ends_the_team() -> None:
    supervisor = ScriptedModel([ModelTimeoutError("slow"), assistant("a"), assistant("[TEAM_AGENT_FINISH] ok")])
    team = TeamAgent(model=supervisor, members=[member("a", "x")], retry_delay=0.001)
    assert (await Runner(team).call("Go")).text == "ok"
    assert len(supervisor.requests) == 3

    broken = ScriptedModel([ModelTimeoutError("slow")] * 3)
    team = TeamAgent(model=broken, members=[member("a", "x")], retry_delay=0.001)
    result = await Runner(team).call("Go")
    record = result.session_values["__team_agent"].records[-1]
    assert (record.source, record.content) == ("supervisor", "Runtime Error: slow")
    assert len(broken.requests) == 3 and result.text == ""
    with pytest.raises(UserError, match=r"retry_delay: expected 0 or more seconds, got -1"):
        TeamAgent(model=broken, members=[member("a")], retry_delay=-1)


async def test_a_resume_without_the_teams_saved_flow_is_an_error() -> None:
    from batonflow import ResumeError, ResumeInfo

    team = TeamAgent(model=ScriptedModel([]), members=[member("a")])
    [event] = [e async for e in team.resume(ResumeInfo(interrupt_state="not a flow"))]
    assert isinstance(event.error, ResumeError)
    assert str(event.error) == ("team 'team_agent' cannot resume: expected its saved flow and trace, got str")

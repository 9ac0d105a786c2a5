"""A distributed ``ParallelAgent``: each branch travels through the codec to a dispatcher, runs there with what it
carries, and comes back; the run sees the same events, history and values as when the branches run here, an
interrupt in a branch pauses and resumes the run, and a branch that cannot run is an error that names it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from batonflow.adk import (
    AgentEvent,
    AgentInput,
    Branch,
    BranchResult,
    ChatModelAgent,
    FlowAgent,
    ParallelAgent,
    RunContext,
    Runner,
    SequentialAgent,
    collect_events,
    dispatching,
    run_branch,
)
from batonflow.errors import BranchFailedError, UserError
from batonflow.schema import Message, assistant, user
from batonflow.store import MemoryCheckpointStore
from batonflow.testing import CodecDispatcher, FunctionModel, tool_calls
from batonflow.tools import ToolContext, ToolInfo, tool


@tool
def measure(city: str, ctx: ToolContext) -> str:
    """Measure the weather of a city.

    Args:
        city: the city
    """
    ctx.session_values[f"measured {city}"] = True
    return f"{city}: sunny"


@tool
def approve(city: str, ctx: ToolContext) -> str:
    """Ask a human before reporting a city.

    Args:
        city: the city
    """
    return "approved" if ctx.ask({"report": city}) == "yes" else "refused"


def _reporter(city: str, tool_name: str) -> ChatModelAgent:
    def answer(messages: list[Message], tools: list[ToolInfo]) -> Message:
        result = next((m for m in reversed(messages) if m.role == "tool"), None)
        if result is None:
            return tool_calls((tool_name, {"city": city}))
        return assistant(f"{city} report: {result.content}")

    tools = [measure] if tool_name == "measure" else [approve]
    return ChatModelAgent(name=city, description=f"Reports on {city}.", model=FunctionModel(answer), tools=tools)


def _summarizer() -> ChatModelAgent:
    def answer(messages: list[Message], tools: list[ToolInfo]) -> Message:
        return assistant(f"summary of {len(messages)} messages")

    return ChatModelAgent(name="summary", description="Sums up.", model=FunctionModel(answer))


def _team(*, distribute: bool, hitl: str = "") -> SequentialAgent:
    cities = ["oslo", "lima", "pune", "kobe"]
    branches = [_reporter(c, "approve" if c == hitl else "measure") for c in cities]
    fan = ParallelAgent(name="fan", sub_agents=branches, distribute=distribute)
    return SequentialAgent(name="weather", sub_agents=[fan, _summarizer()])


def _said(events: list[AgentEvent]) -> list[tuple[str, str]]:
    out = []
    for event in events:
        variant = event.message_output
        if variant is not None and variant.message is not None:
            out.append((event.agent_name, variant.message.content))
    return sorted(out)


async def _run(team: Any, dispatcher: Any, **options: Any) -> tuple[list[AgentEvent], dict[str, Any]]:
    values: dict[str, Any] = {}
    runner = Runner(team, **options)
    with dispatching(dispatcher):
        events = await asyncio.wait_for(collect_events(runner.query("weather?", session_values=values)), 10)
    return events, values


async def test_distributed_branches_travel_and_the_run_sees_what_it_sees_in_process() -> None:
    here, _ = await _run(_team(distribute=False), None)
    team = _team(distribute=True)
    dispatcher = CodecDispatcher(team)
    there, _ = await _run(team, dispatcher)
    assert [e.error for e in there if e.error is not None] == []
    assert sorted(b.name for b in dispatcher.branches) == ["kobe", "lima", "oslo", "pune"]
    assert _said(there) == _said(here)  # the same messages, the summary included
    # The summary after the join saw every branch's history (four tool calls, results and reports, and the input).
    summary = [c for name, c in _said(there) if name == "summary"]
    assert summary == [c for name, c in _said(here) if name == "summary"] == ["summary of 13 messages"]
    assert {tuple(str(s) for s in e.run_path[:2]) for e in there if e.agent_name != "summary"} == {("weather", "fan")}


async def test_a_branch_carries_the_history_before_the_fork_and_brings_back_its_values() -> None:
    team = _team(distribute=True)
    dispatcher = CodecDispatcher(team)
    runner = Runner(team)
    with dispatching(dispatcher):
        events = await collect_events(runner.run([user("weather?")], session_values={"unit": "C"}))
    assert [e.error for e in events if e.error is not None] == []
    branch = dispatcher.branches[0]
    assert [e.message.content for e in branch.committed if e.message is not None] == []  # the fork is first
    assert branch.root_messages[0].content == "weather?" and branch.values == {"unit": "C"}
    assert [a.id for a in branch.address] == ["weather", "fan"]


async def test_values_a_remote_branch_sets_reach_the_rest_of_the_run() -> None:
    team = _team(distribute=True)
    seen: dict[str, Any] = {}

    @tool
    def peek(ctx: ToolContext) -> str:
        """Look at the session."""
        seen.update(ctx.session_values)
        return "peeked"

    def look(messages: list[Message], tools: list[ToolInfo]) -> Message:
        done = any(m.role == "tool" for m in messages[-1:])
        return assistant("looked") if done else tool_calls(("peek", {}))

    after = ChatModelAgent(name="after", description="Looks.", model=FunctionModel(look), tools=[peek])
    whole = SequentialAgent(name="weather", sub_agents=[team.sub_agents[0].agent, after])
    await _run(whole, CodecDispatcher(whole))
    assert {k for k in seen if k.startswith("measured")} == {
        "measured oslo",
        "measured lima",
        "measured pune",
        "measured kobe",
    }


async def test_an_interrupt_in_a_remote_branch_pauses_the_run_and_resumes_it() -> None:
    store = MemoryCheckpointStore()
    team = _team(distribute=True, hitl="lima")
    dispatcher = CodecDispatcher(team)
    runner = Runner(team, checkpoint_store=store)
    with dispatching(dispatcher):
        paused = await collect_events(runner.query("weather?", checkpoint_id="w1"))
        interrupted = [e for e in paused if e.action is not None and e.action.interrupted is not None]
        assert len(interrupted) == 1
        contexts = interrupted[0].action.interrupted.interrupt_contexts  # type: ignore[union-attr]
        assert [c.info for c in contexts] == [{"report": "lima"}]
        assert len(dispatcher.branches) == 4
        resumed = await collect_events(runner.resume("w1", {contexts[0].id: "yes"}))
    assert [e.error for e in resumed if e.error is not None] == []
    # Only the interrupted branch ran again, from its saved state; the others' reports were kept.
    assert [b.name for b in dispatcher.branches[4:]] == ["lima"]
    assert dispatcher.branches[4].resume_records is not None
    assert ("lima", "lima report: approved") in _said(resumed)
    assert [c for name, c in _said(resumed) if name == "summary"] == ["summary of 13 messages"]
    assert await store.get("w1") is None


async def test_without_a_dispatcher_a_distributed_parallel_agent_runs_its_branches_here() -> None:
    events, _ = await _run(_team(distribute=True), None)
    here, _ = await _run(_team(distribute=False), None)
    assert _said(events) == _said(here)


async def test_a_run_keeps_the_dispatcher_its_context_was_made_with_wherever_its_events_are_read() -> None:
    team = _team(distribute=True)
    ours, theirs = CodecDispatcher(team), CodecDispatcher(team)
    with dispatching(ours):
        made_inside = RunContext()
    made_outside = RunContext()
    assert made_inside.dispatcher is ours and made_outside.dispatcher is None

    # Read outside the block, the run made inside it still sends its branches to its dispatcher.
    there = await collect_events(FlowAgent(team).run(AgentInput(messages=[user("weather?")]), made_inside))
    # Read inside another run's block, the run made outside it runs its branches here.
    with dispatching(theirs):
        here = await collect_events(FlowAgent(team).run(AgentInput(messages=[user("weather?")]), made_outside))

    assert sorted(b.name for b in ours.branches) == ["kobe", "lima", "oslo", "pune"]
    assert theirs.branches == []
    assert [e.error for e in [*there, *here] if e.error is not None] == []
    assert _said(there) == _said(here)


async def test_a_branch_the_pool_cannot_run_is_an_error_naming_it() -> None:
    class Broken:
        async def run_branch(self, branch: Branch) -> BranchResult:
            raise ConnectionError("database is down")

    events, _ = await _run(_team(distribute=True), Broken())
    errors = [e.error for e in events if e.error is not None]
    assert errors and all(isinstance(e, BranchFailedError) for e in errors)
    assert "branch agent:weather;agent:fan;agent:oslo could not run on the pool: ConnectionError: database is down" in [
        str(e) for e in errors
    ]


async def test_a_branch_is_refused_when_the_worker_finds_another_agent_there() -> None:
    team = _team(distribute=True)
    dispatcher = CodecDispatcher(team)
    await _run(team, dispatcher)
    branch = next(b for b in dispatcher.branches if b.index == 0)
    other = _team(distribute=True)
    wrong_name = Branch(**{**_fields(branch), "name": "paris"})
    with pytest.raises(
        UserError, match=r"expected branch 0 of 'fan' to be 'paris', got the agents \['oslo', 'lima', 'pune', 'kobe'\]"
    ):
        await run_branch(other, wrong_name)
    with pytest.raises(UserError, match="expected a host of branches below 'elsewhere', got another root"):
        await run_branch(ChatModelAgent(name="elsewhere", description="x", model=FunctionModel(_echo)), branch)
    lost = Branch(**{**_fields(branch), "address": (*branch.address[:1], branch.address[0].__class__("agent", "x"))})
    with pytest.raises(UserError, match="expected a sub-agent 'x' of 'weather', got none"):
        await run_branch(other, lost)
    summary = Branch(
        **{**_fields(branch), "address": (*branch.address[:1], branch.address[0].__class__("agent", "summary"))}
    )
    with pytest.raises(UserError, match="expected a ParallelAgent or a graph agent there, got ChatModelAgent"):
        await run_branch(other, summary)


def test_distribute_must_be_a_bool() -> None:
    with pytest.raises(UserError, match="distribute: expected True or False, got 'yes'"):
        ParallelAgent(name="p", sub_agents=[], distribute="yes")  # type: ignore[arg-type]


def _echo(messages: list[Message], tools: list[ToolInfo]) -> Message:
    return assistant(messages[-1].content)


def _fields(branch: Branch) -> dict[str, Any]:
    return {name: getattr(branch, name) for name in Branch.__dataclass_fields__}

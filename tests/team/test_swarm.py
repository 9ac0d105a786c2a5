from __future__ import annotations

from batonflow import ChatModelAgent, Runner
from batonflow.schema import assistant
from batonflow.team import TeamAgent
from batonflow.testing import ScriptedModel, tool_calls

from .conftest import paths


def agent(name: str, *steps: object) -> ChatModelAgent:
    return ChatModelAgent(name=name, description=f"the {name}", model=ScriptedModel(list(steps)))  # type: ignore[arg-type]


async def test_the_pool_holds_the_finish_and_pheromones_pick_who_goes() -> None:
    a = agent(
        "a",
        tool_calls(("__emerge_tasks__", {"tasks": "review code; write docs", "agents": "B; zed"})),
        assistant("tested"),
    )
    b = agent("b", assistant('reviewed {"sub_tasks": [{"task": "test it", "agent": "a"}]}'), assistant("docs written"))
    supervisor = ScriptedModel([assistant("[TEAM_AGENT_FINISH]")] * 3 + [assistant("[TEAM_AGENT_FINISH] done at last")])
    team = TeamAgent(model=supervisor, protocol="swarm", members=[a, b], max_turns=4)
    result = await Runner(team).call("Build it")
    trace = result.session_values["__team_agent"]
    assert [(r.source, r.content) for r in trace.records] == [
        ("a", "System: Tasks added to pool."),
        ("b", 'reviewed {"sub_tasks": [{"task": "test it", "agent": "a"}]}'),
        ("a", "tested"),
        ("b", "docs written"),
    ]
    assert paths(result)[0] == ["team_agent", "a"]  # the first member starts
    assert result.text == "done at last"
    state = trace.protocol_context["swarm_state_obj"]
    assert state["taskPool"] == [{"task": "write docs"}]  # untagged: no member's route takes it
    assert state["pheromones"] == {"a": 7, "b": 8}  # each turn: all decay by 1, the one who ran gains 5
    first = supervisor.requests[0].messages[0].content
    assert first.endswith(
        "\n### Swarm Intelligence Dashboard\n```json\n"
        '{"pheromones":{"a":5},"taskPool":[{"task":"review code","agent":"b"},{"task":"write docs"}]}\n```\n'
        "> **Instruction**:\n> 1. **Load Balancing**: Prioritize agents with lower pheromone values.\n"
        "> 2. **Skill Match**: Ensure emergent tasks in task_pool align with Agent's Capabilities.\n"
        "> 3. **Cool-down**: Avoid re-assigning the agent that just finished.\n"
        "> 4. **Recommended next**: `b`\n"
    )
    snapshot = b.model.requests[0].messages[-1].content  # type: ignore[attr-defined]
    assert (
        snapshot
        == '[Swarm Task Pool Snapshot]\n```json\n{"pheromones":{"a":5},"taskPool":[{"task":"write docs"}]}\n```'
    )


async def test_an_empty_pool_lets_the_supervisor_finish() -> None:
    a = agent("a", assistant("all done"))
    supervisor = ScriptedModel([assistant("[TEAM_AGENT_FINISH] fine")])
    result = await Runner(TeamAgent(model=supervisor, protocol="swarm", members=[a, agent("b")])).call("Go")
    assert result.text == "fine"

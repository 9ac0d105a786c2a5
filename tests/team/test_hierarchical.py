from __future__ import annotations

from batonflow import Runner
from batonflow.schema import assistant
from batonflow.team import TeamAgent, TeamTrace
from batonflow.testing import ScriptedModel

from .conftest import member, paths


async def test_supervisor_routes_members_and_finishes_with_its_text() -> None:
    supervisor = ScriptedModel(
        [assistant("researcher"), assistant("next: writer"), assistant("[TEAM_AGENT_FINISH] The final report.")]
    )
    team = TeamAgent(
        model=supervisor,
        members=[member("researcher", "facts"), member("writer", 'A draft {"status": "done"}')],
    )
    result = await Runner(team).call("Write a report")
    assert result.text == "The final report."
    assert paths(result) == [
        ["team_agent", "supervisor"],
        ["team_agent", "researcher"],
        ["team_agent", "supervisor"],
        ["team_agent", "writer"],
        ["team_agent", "supervisor"],
        ["team_agent"],
    ]
    trace = result.session_values["__team_agent"]
    assert isinstance(trace, TeamTrace)
    assert [(r.role, r.source, r.content) for r in trace.records] == [
        ("assistant", "researcher", "facts"),
        ("assistant", "writer", 'A draft {"status": "done"}'),
    ]
    assert trace.turn_count == 3 and trace.route == "end" and trace.final_answer == "The final report."

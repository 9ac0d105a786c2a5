from __future__ import annotations

import pytest

from batonflow import AgentInput, ChatModelAgent, ModelError, Runner, UserError, set_language
from batonflow.graph import FlowContext, Node
from batonflow.schema import Message, assistant, user
from batonflow.team import LoopingTeamInterceptor, Member, TeamAgent, TeamInterceptor, TeamMemberError, TeamTrace
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


SYSTEM_PROMPT_EN = """## Your Role
Team Supervisor, responsible for coordinating agents to complete the task

## Team Members
```json
[{"name":"coder","role":"writes code","capabilities":["assistant","python"],"inputModes":["text"]}]
```

## Current Task
Add two numbers

## Collaboration Protocol: HIERARCHICAL
- Candidates: [coder]
- Requirement: Output [TEAM_AGENT_FINISH] when finished.
### Management Guidelines:
1. **Modality Match**: Assign experts based on capabilities.
2. **Error Recovery**: Handle `_meta.errors` by re-assignment.
3. **Load Balance**: Use `agent_usage` for efficient distribution.

## Output Specification
1. **Termination**: If the task is finished, output: [TEAM_AGENT_FINISH] followed by the final result. If responding directly to the user, **DO NOT** include any analysis process.
2. **Routing**: If the task is ongoing, output **ONLY** the name of the next Agent to execute. Do not provide extra text.

## History Analysis & Guidelines
- Reference collaboration history to avoid redundant turns.
- Task Finish Marker: [TEAM_AGENT_FINISH].
- Note: Do not terminate prematurely; ensure necessary expert input is obtained.

## Core Task Instructions
Be brief.

"""

DASHBOARD_EN = """
## Hierarchical Dashboard
> No reports yet. Issue instructions.
```json
{"_meta":{"capabilities":{"coder":["text"]}}}
```

### Directive Standards (SOP):
> 1. **Explicit Data Transfer**: Always restate core parameters from `_results`.

### Management & Decision Hints:
> **Decision Hint**: Check progress. Keep scheduling if errors exist or key steps are missing.
> **Workflow Integrity**: Ensure both design and implementation (e.g., `implementer`) roles have participated. Do not skip execution steps.
> **Final Delivery**: If satisfied, output `[TEAM_AGENT_FINISH]` and **consolidate the final code/result** in this response for the USER.
> **Crucial**: Once the marker is output, the workflow ends. You cannot assign agents anymore. Ensure the final delivery is complete.
> **Load Balance**: Refer to `agent_usage`. If an agent fails repeatedly, switch approach or adjust instructions.
"""


def coder_team(supervisor: ScriptedModel, *answers: str) -> TeamAgent:
    coder = Member(member("coder", *answers, description="writes code"), capabilities=["python"])
    return TeamAgent(model=supervisor, members=[coder], instruction="Be brief.")


async def test_the_supervisor_prompt_and_turn_content_are_solons() -> None:
    supervisor = ScriptedModel([assistant("coder"), assistant("[TEAM_AGENT_FINISH] 3")])
    await Runner(coder_team(supervisor, 'Done {"result": "3", "status": "done"}')).call("Add two numbers")
    first = supervisor.requests[0].messages
    assert [m.role for m in first] == ["system", "user", "user"]
    assert first[0].content == SYSTEM_PROMPT_EN + "\n\n" + DASHBOARD_EN
    assert first[1].content == "Add two numbers"  # the working memory: the prompt
    assert first[2].content == (
        "## Collaboration Progress (Last 8 rounds)\nNo progress yet.\n\n---\nCurrent Iteration: 1\n"
        "Command: Assign next agent or output [TEAM_AGENT_FINISH] to finish.\n> **Pending Experts**: [coder]."
    )
    second = supervisor.requests[1].messages
    assert second[-1].content == (
        '## Collaboration Progress (Last 8 rounds)\n### Expert Output from [coder]:\nDone {"result": "3", '
        '"status": "done"}\n\n---\nCurrent Iteration: 2\nCommand: Assign next agent or output [TEAM_AGENT_FINISH] '
        "to finish."
    )
    assert '{"_reports":{"coder":"Done"},"_results":{"coder":{"result":"3","status":"done"}},' in second[0].content
    assert '"_meta":{"agent_usage":{"coder":1},"capabilities":{"coder":["text"]}}}' in second[0].content


async def test_the_chinese_prompt_after_set_language() -> None:
    set_language("zh")
    supervisor = ScriptedModel([assistant("coder"), assistant("[TEAM_AGENT_FINISH] 3")])
    await Runner(coder_team(supervisor, "好的，结果是 3")).call("两数相加")
    prompt = supervisor.requests[0].messages[0].content
    assert prompt.startswith("## 你的角色\n团队协作主管 (Supervisor)，负责协调成员完成任务\n\n## 团队成员\n```json\n")
    assert "\n## 当前任务\n两数相加\n\n## 协作协议：HIERARCHICAL\n- 备选成员: [coder]\n" in prompt
    assert "- 任务完成信号：[TEAM_AGENT_FINISH]。\n" in prompt and "\n## 核心任务指令\nBe brief.\n\n" in prompt
    assert supervisor.requests[0].messages[-1].content == (
        "## 协作进度 (最近 8 轮历史)\nNo progress yet.\n\n---\n当前迭代轮次: 1\n"
        "指令：请指派下一位执行者。已完成则输出 [TEAM_AGENT_FINISH]\n> **待命专家**：[coder]."
    )


async def test_a_member_reads_its_system_context_and_the_supervisor_directive() -> None:
    supervisor = ScriptedModel([assistant("coder"), assistant("[TEAM_AGENT_FINISH]")])
    team = coder_team(supervisor, "42")
    coder_model = team.members[0].agent.model  # type: ignore[attr-defined]
    result = await Runner(team).call("Add two numbers")
    assert result.text == "42"  # an empty finish text: the last member's content
    sent = coder_model.requests[0].messages
    assert [m.role for m in sent] == ["system", "user", "user"]  # the member has no instruction of its own
    assert sent[0].content == (
        "## SYSTEM CONTEXT\n### Your Identity\nInput: Text only | Capabilities: assistant, python\n\n"
        "### Collaboration Records (Last 8 entries)\nNo progress yet.\n\n---\n"
        "Please complete your task based on the progress.\n\n---\n## Collaboration & Reporting\n\n"
        '1. Reporting Requirement:\n- End response with a JSON block for key data (e.g., {"result": "...", '
        '"status": "done"}).'
    )
    assert sent[1].content == "Add two numbers"
    assert sent[2].content == "\n\n### Supervisor Directive\n> coder\n---\n"


async def test_a_supervisor_that_never_finishes_stops_at_max_turns() -> None:
    supervisor = ScriptedModel([assistant("coder")] * 2)
    team = TeamAgent(model=supervisor, members=[member("coder", "one", "two")], max_turns=2)
    result = await Runner(team).call("Loop")
    trace = result.session_values["__team_agent"]
    assert trace.records[-1].content == "[Terminated] Max turns reached"
    assert trace.records[-1].source == "system" and result.text == "two"
    assert trace.turn_count == 2


async def test_a_decision_naming_no_member_falls_back_to_the_first() -> None:
    supervisor = ScriptedModel([assistant("I am not sure"), assistant("[TEAM_AGENT_FINISH] ok")])
    team = TeamAgent(model=supervisor, members=[member("a", "from a"), member("b", "from b")])
    result = await Runner(team).call("Go")
    trace = result.session_values["__team_agent"]
    assert trace.records[0].content == "[Routing] unable to extract agent name; retry via [a]"
    assert trace.records[1].source == "a" and result.text == "ok"


async def test_an_unresolvable_decision_on_the_last_turn_ends_the_team() -> None:
    supervisor = ScriptedModel([assistant("nobody")])
    team = TeamAgent(model=supervisor, members=[member("a", "x")], max_turns=1)
    result = await Runner(team).call("Go")
    trace = result.session_values["__team_agent"]
    assert trace.records[-1].content == "[Terminated] unable to extract agent name: nobody"
    assert result.text == "Supervisor decision unresolved: unable to extract agent name"


async def test_a_finish_before_any_member_ran_is_refused_and_reassigned() -> None:
    supervisor = ScriptedModel([assistant("[TEAM_AGENT_FINISH] done already"), assistant("[TEAM_AGENT_FINISH] now")])
    team = TeamAgent(model=supervisor, members=[member("a", "work")])
    result = await Runner(team).call("Go")
    trace = result.session_values["__team_agent"]
    assert trace.records[0].content == "[Routing] FINISH rejected by protocol; re-assign to [a]"
    assert trace.records[1].source == "a" and result.text == "now"


async def test_a_finish_while_a_member_failed_sends_it_back() -> None:
    supervisor = ScriptedModel([assistant("a"), assistant("[TEAM_AGENT_FINISH] x"), assistant("[TEAM_AGENT_FINISH] y")])
    team = TeamAgent(model=supervisor, members=[member("a", '{"status": "FAILED"}', "fixed")])
    result = await Runner(team).call("Go")
    trace = result.session_values["__team_agent"]
    assert [r.content for r in trace.records] == [
        '{"status": "FAILED"}',
        "[System] Task cannot end because errors exist. Assign agents to fix them.",
        "fixed",
    ]
    assert result.text == "y"
    assert "### Error Correction Required:\n- Your previous response failed validation: **Task reported as failed" in (
        team.members[0].agent.model.requests[1].messages[-1].content  # type: ignore[attr-defined]
    )


@pytest.mark.parametrize(
    ("decision", "routed"),
    [
        ("**Writer**", "writer"),
        ("Let us go on. next agent: writer, then maybe reader", "writer"),
        ("派 reader", "reader"),
        ("reader did well; writer should go", "writer"),
        ("the writers_room is busy, ask reader", "reader"),
    ],
)
async def test_name_matching(decision: str, routed: str) -> None:
    supervisor = ScriptedModel([assistant(decision), assistant("[TEAM_AGENT_FINISH] ok")])
    team = TeamAgent(model=supervisor, members=[member("reader", "r"), member("writer", "w")])
    result = await Runner(team).call("Go")
    assert result.session_values["__team_agent"].records[0].source == routed


async def test_a_member_that_fails_ends_the_team_with_its_message_and_the_end_hooks_run() -> None:
    ended: list[str] = []

    class Hooks(TeamInterceptor):
        def on_team_end(self, trace: TeamTrace) -> None:
            ended.append(trace.team_name)

    broken = ChatModelAgent(name="broken", description="fails", model=ScriptedModel([ModelError("boom", model="m")]))
    team = TeamAgent(model=ScriptedModel([assistant("broken")]), members=[broken], interceptors=[Hooks()])
    events = [event async for event in team.run(AgentInput(messages=[user("Go")]))]
    assert isinstance(events[-1].error, TeamMemberError)
    assert "member 'broken' failed" in str(events[-1].error) and "boom" in str(events[-1].error)
    assert ended == ["team_agent"]


async def test_interceptor_hooks_and_a_cancelled_member() -> None:
    seen: list[str] = []

    class Hooks(TeamInterceptor):
        def on_team_start(self, trace: TeamTrace) -> None:
            seen.append("team_start")

        def on_model_start(self, trace: TeamTrace, messages: list[Message]) -> None:
            seen.append("model_start")

        def on_supervisor_decision(self, trace: TeamTrace, decision: str) -> None:
            seen.append(f"decision {decision}")

        def on_model_end(self, trace: TeamTrace, message: Message) -> None:
            seen.append(f"model_end {message.content}")

        def should_agent_continue(self, trace: TeamTrace, agent: Member) -> bool:
            return agent.name != "b"

        def on_agent_end(self, trace: TeamTrace, agent: Member) -> None:
            seen.append(f"agent_end {agent.name}")

        def on_team_end(self, trace: TeamTrace) -> None:
            seen.append("team_end")

        def on_node_start(self, context: FlowContext, node: Node) -> None:
            seen.append(f"> {node.id}")

    supervisor = ScriptedModel([assistant("b"), assistant("a"), assistant("[TEAM_AGENT_FINISH] done")])
    team = TeamAgent(model=supervisor, members=[member("a", "from a"), member("b")], interceptors=[Hooks()])
    result = await Runner(team).call("Go")
    assert result.session_values["__team_agent"].records[0].content == "[Skipped] Cancelled by Hooks"
    assert seen == [
        "team_start",
        "> start",
        "> supervisor",
        "model_start",
        "model_end b",
        "decision b",
        "> b",  # skipped: no agent_end
        "> supervisor",
        "model_start",
        "model_end a",
        "decision a",
        "> a",
        "agent_end a",
        "> supervisor",
        "model_start",
        "model_end [TEAM_AGENT_FINISH] done",
        "decision [TEAM_AGENT_FINISH] done",
        "> end",
        "team_end",
    ]


async def test_a_looping_team_is_stopped() -> None:
    supervisor = ScriptedModel([assistant("a")] * 5)
    same = "the very same long answer"
    team = TeamAgent(
        model=supervisor, members=[member("a", same, same, same, same, same)], interceptors=[LoopingTeamInterceptor()]
    )
    result = await Runner(team).call("Go")
    records = result.session_values["__team_agent"].records
    assert [r.source for r in records] == ["a", "a", "a", "a", "supervisor"]
    assert records[-1].content == "[Skipped] Intercepted by LoopingTeamInterceptor"


def test_bad_settings_are_refused() -> None:
    with pytest.raises(UserError, match=r"At least one agent or a graphAdjuster is required\."):
        TeamAgent(model=ScriptedModel([]))
    with pytest.raises(UserError, match=r"max_turns: expected an int of at least 1, got 0"):
        TeamAgent(model=ScriptedModel([]), members=[member("a")], max_turns=0)
    with pytest.raises(UserError, match=r"protocol: expected one of .* got 'ring'"):
        TeamAgent(model=ScriptedModel([]), members=[member("a")], protocol="ring")
    with pytest.raises(UserError, match=r"unique member names \(case-insensitive\), got 'A' and 'a'"):
        TeamAgent(model=ScriptedModel([]), members=[member("a"), member("A")])
    with pytest.raises(UserError, match=r"has a supervisor: expected a model, got None"):
        TeamAgent(members=[member("a")])
    with pytest.raises(UserError, match=r"Member expects an Agent"):
        TeamAgent(model=ScriptedModel([]), members=["a"])  # type: ignore[list-item]


def test_defaults() -> None:
    team = TeamAgent(model=ScriptedModel([]), members=[member("a")])
    assert team.name == "team_agent" and team.finish_marker == "[TEAM_AGENT_FINISH]"
    assert team.protocol.name == "HIERARCHICAL"
    assert (team.config.max_turns, team.config.max_retries, team.config.session_window) == (8, 3, 8)
    assert team.config.record_window == 8 and team.config.members.canonical("A") == "a"

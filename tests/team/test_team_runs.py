"""A team as an agent among others: trace events, metrics, nesting, new and empty prompts."""

from __future__ import annotations

from dataclasses import replace

from batonflow import AgentTool, ChatModelAgent, MemorySessionStore, Runner, set_sub_agents
from batonflow.graph import GraphAgent, GraphSpec
from batonflow.schema import ResponseMeta, Usage, assistant
from batonflow.team import TeamAgent
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.trace import NodeEnd, NodeStart, SupervisorDelta, TeamEnd, TeamStart, TraceEvent

from .conftest import member, paths


def costed(text: str, prompt: int, completion: int) -> object:
    usage = Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)
    return replace(assistant(text), response_meta=ResponseMeta(usage=usage))


async def test_team_trace_events_and_metrics() -> None:
    seen: list[TraceEvent] = []
    worker = ChatModelAgent(name="worker", description="works", model=ScriptedModel([costed("done", 7, 3)]))
    supervisor = ScriptedModel([costed("worker", 10, 1), costed("[TEAM_AGENT_FINISH] ok", 20, 2)])
    result = await Runner(TeamAgent(model=supervisor, members=[worker]), callbacks=[seen.append]).call("Go")
    kinds = [type(e).__name__ for e in seen if isinstance(e, TeamStart | TeamEnd | SupervisorDelta)]
    assert kinds == ["TeamStart", "SupervisorDelta", "SupervisorDelta", "TeamEnd"]
    assert [e.content for e in seen if isinstance(e, SupervisorDelta)] == ["worker", "[TEAM_AGENT_FINISH] ok"]
    nodes = [(type(e).__name__, e.node_id) for e in seen if isinstance(e, NodeStart | NodeEnd)]
    assert nodes[:2] == [("NodeStart", "start"), ("NodeEnd", "start")] and nodes[-1] == ("NodeEnd", "end")
    assert ("NodeStart", "worker") in nodes
    metrics = result.session_values["__team_agent"].metrics
    assert (metrics.model_calls, metrics.prompt_tokens, metrics.completion_tokens) == (3, 37, 6)


async def test_a_team_inside_a_team_adds_its_metrics_and_keeps_its_own_trace() -> None:
    inner = TeamAgent(
        name="inner",
        description="a small team",
        model=ScriptedModel([costed("leaf", 1, 1), costed("[INNER_FINISH] inner result", 1, 1)]),
        members=[ChatModelAgent(name="leaf", description="leaf", model=ScriptedModel([costed("leaf says", 5, 5)]))],
    )
    outer = TeamAgent(
        name="outer", model=ScriptedModel([assistant("inner"), assistant("[OUTER_FINISH]")]), members=[inner]
    )
    result = await Runner(outer).call("Nest")
    assert result.text == "inner result"
    assert ["outer", "inner", "leaf"] in paths(result)
    assert result.session_values["__inner"].final_answer == "inner result"
    outer_trace = result.session_values["__outer"]
    assert outer_trace.records[0].content == "inner result"
    # The outer supervisor's two calls, and the inner team's three (its supervisor's two, its member's one).
    assert (outer_trace.metrics.model_calls, outer_trace.metrics.prompt_tokens) == (5, 7)


async def test_a_team_as_a_tool_and_as_a_graph_node() -> None:
    def team() -> TeamAgent:
        return TeamAgent(
            name="helpers",
            description="answers questions",
            model=ScriptedModel([assistant("w"), assistant("[HELPERS_FINISH] 42")]),
            members=[member("w", "forty-two")],
        )

    caller = ChatModelAgent(
        name="caller",
        description="asks",
        model=ScriptedModel([tool_calls(("helpers", {"request": "the answer?"})), assistant("It is 42.")]),
        tools=[AgentTool(team())],
    )
    assert (await Runner(caller).call("Ask")).text == "It is 42."
    spec = GraphSpec("flow")
    spec.add_start("start").link_add("ask")
    spec.add_activity("ask", task=team()).link_add("end")
    spec.add_end("end")
    result = await Runner(GraphAgent(spec.build())).call("Ask")
    assert result.text == "42"
    assert ["flow", "ask", "helpers", "w"] in paths(result)


async def test_a_new_prompt_resets_the_trace_and_an_empty_one_keeps_it() -> None:
    supervisor = ScriptedModel(
        [assistant("a"), assistant("[TEAM_AGENT_FINISH] one"), assistant("a"), assistant("[TEAM_AGENT_FINISH] two")]
    )
    team = TeamAgent(model=supervisor, members=[member("a", "first", "second")])
    runner = Runner(team)
    first = await runner.call("Task one")
    values = first.session_values
    again = await Runner(team, session_values=values).call("")
    assert again.text == "one"  # nothing to do: the finished flow is not run again
    assert supervisor.remaining == 2
    second = await Runner(team, session_values=values).call("Task two")
    trace = second.session_values["__team_agent"]
    assert second.text == "two" and [r.content for r in trace.records] == ["second"]
    assert trace.user_content == "Task two"


async def test_feedback_mode_asks_the_user_and_an_empty_prompt_goes_on() -> None:
    supervisor = ScriptedModel(
        [
            tool_calls(("__ask_for_feedback", {"reason": "Which city?"})),
            assistant("a"),
            assistant("[TEAM_AGENT_FINISH] Sunny in Paris."),
        ]
    )
    team = TeamAgent(model=supervisor, members=[member("a", "Paris: sunny")], feedback=True)
    first = await Runner(team).call("What is the weather?")
    trace = first.session_values["__team_agent"]
    assert first.text == "Which city?" and trace.pending and trace.route == "end"
    assert [t.name for t in supervisor.requests[0].tools] == ["__ask_for_feedback"]
    again = await Runner(team, session_values=first.session_values).call("")
    assert again.text == "Sunny in Paris."
    assert not again.session_values["__team_agent"].pending


async def test_feedback_that_names_a_member_routes_to_it() -> None:
    supervisor = ScriptedModel(
        [tool_calls(("__ask_for_feedback", {"reason": "next: a"})), assistant("[TEAM_AGENT_FINISH] done")]
    )
    team = TeamAgent(model=supervisor, members=[member("a", "work")], feedback=True)
    result = await Runner(team).call("Go")
    assert result.text == "done" and result.session_values["__team_agent"].records[0].source == "a"


async def test_output_key_and_the_conversation_window() -> None:
    supervisor = ScriptedModel(
        [assistant("a"), assistant("[TEAM_AGENT_FINISH] one"), assistant("a"), assistant("[TEAM_AGENT_FINISH] two")]
    )
    team = TeamAgent(model=supervisor, members=[member("a", "x", "y")], output_key="reply", session_window=2)
    runner = Runner(team, session_store=MemorySessionStore())
    first = await runner.call("Question one", session_id="s")
    assert first.session_values["reply"] == "one"
    second = await runner.call("Question two", session_id="s")
    assert second.session_values["reply"] == "two"
    # The second task's supervisor reads the last two messages of the conversation before it, then the task.
    sent = [m.content for m in supervisor.requests[2].messages[1:-1]]
    assert sent == ["Question one", "one", "Question two"]


async def test_a_nested_team_reads_the_outer_prompt_without_the_member_instruction() -> None:
    inner_supervisor = ScriptedModel([assistant("leaf"), assistant("[INNER_FINISH] done")])
    inner = TeamAgent(name="inner", description="d", model=inner_supervisor, members=[member("leaf", "ok")])
    outer = TeamAgent(
        name="outer", model=ScriptedModel([assistant("inner"), assistant("[OUTER_FINISH]")]), members=[inner]
    )
    await Runner(outer).call("The task")
    sent = inner_supervisor.requests[0].messages
    assert [m.role for m in sent] == ["system", "user", "user", "user"]
    assert sent[1].content == "The task"
    # Solon's current task is the prompt's last user message: here the outer supervisor's directive.
    assert "\n## Current Task\n\n\n### Supervisor Directive\n> inner\n---\n\n" in sent[0].content


async def test_streamed_members_are_recorded_whole() -> None:
    supervisor = ScriptedModel([assistant("a"), assistant("[TEAM_AGENT_FINISH]")])
    team = TeamAgent(model=supervisor, members=[member("a", "a streamed answer")])
    result = await Runner(team, enable_streaming=True).call("Go")
    streamed = [
        e for e in result.events if e.output and e.output.message_output and e.output.message_output.is_streaming
    ]
    assert streamed  # the member's answer came as a stream
    assert result.session_values["__team_agent"].records[0].content == "a streamed answer"
    assert result.text == "a streamed answer"


async def test_a_team_as_a_sub_agent_takes_over_after_a_transfer() -> None:
    team = TeamAgent(
        name="helpers",
        description="answers hard questions",
        model=ScriptedModel([assistant("w"), assistant("[HELPERS_FINISH] 42")]),
        members=[member("w", "forty-two")],
    )
    router = ChatModelAgent(
        name="router",
        description="routes",
        model=ScriptedModel([tool_calls(("transfer_to_agent", {"agent_name": "helpers"}))]),
    )
    root = set_sub_agents(router, [team])
    result = await Runner(root).call("What is the answer?")
    assert result.text == "42"
    assert ["router", "helpers", "w"] in paths(result)
    assert result.session_values["__helpers"].user_content == "What is the answer?"

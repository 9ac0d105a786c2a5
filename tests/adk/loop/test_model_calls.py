"""Every place in the library that calls a model calls it through the one model step, under the run's context:
each call, a retried attempt included, is traced once and counted once, streaming or not — agents, the planner,
executor and replanner, a flow ``@ChatModel`` node in a graph agent, a team's supervisor, and compression."""

from collections.abc import Callable

import pytest

from batonflow.adk import (
    Agent,
    ChatModelAgent,
    ModelRetryConfig,
    Runner,
    collect_events,
    new_executor,
    new_planner,
    new_replanner,
    plan_execute_replan,
)
from batonflow.agents import ReActAgent, SimpleAgent
from batonflow.agents.compression import ContextCompressionInterceptor, LLMSummaryStrategy
from batonflow.errors import ModelHTTPError
from batonflow.flow import AiFlowEngine
from batonflow.graph import Graph, GraphAgent
from batonflow.observe import ReasonEnd, ReasonStart, RunEnd, TraceEvent
from batonflow.schema import assistant
from batonflow.team import TeamAgent
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import tool

NO_WAIT = ModelRetryConfig(max_retries=2, base_delay=0.0, max_delay=0.0)


def unavailable() -> ModelHTTPError:
    return ModelHTTPError("unavailable", status_code=503)


@tool(threaded=False)
def lookup(order: int) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


async def no_sleep(_: float) -> None:
    return None


def chat_model_agent() -> tuple[Agent, dict[str, ScriptedModel]]:
    model = ScriptedModel([unavailable(), tool_calls(("lookup", {"order": 1})), assistant("It shipped.")])
    agent = ChatModelAgent(name="chat", model=model, tools=[lookup], model_retry=NO_WAIT)
    return agent, {"chat": model}


def react_agent() -> tuple[Agent, dict[str, ScriptedModel]]:
    model = ScriptedModel([tool_calls(("lookup", {"order": 1})), unavailable(), assistant("It shipped.")])
    agent = ReActAgent(name="react", model=model, tools=[lookup], model_retry=NO_WAIT)
    return agent, {"react": model}


def simple_agent() -> tuple[Agent, dict[str, ScriptedModel]]:
    model = ScriptedModel([unavailable(), assistant(""), assistant("Hello.")])
    return SimpleAgent(name="simple", model=model, sleep=no_sleep), {"simple": model}


def plan_execute() -> tuple[Agent, dict[str, ScriptedModel]]:
    models = {
        "planner": ScriptedModel([tool_calls(("plan", {"steps": ["look up order 1", "answer"]}))], model_name="p"),
        "executor": ScriptedModel(
            [tool_calls(("lookup", {"order": 1})), assistant("order 1 shipped"), assistant("answered")], model_name="e"
        ),
        "replanner": ScriptedModel(
            [tool_calls(("plan", {"steps": ["answer"]})), tool_calls(("respond", {"response": "It shipped."}))],
            model_name="r",
        ),
    }
    agent = plan_execute_replan(
        new_planner(model=models["planner"]),
        new_executor(model=models["executor"], tools=[lookup]),
        new_replanner(model=models["replanner"]),
    )
    return agent, models


def chat_model_node() -> tuple[Agent, dict[str, ScriptedModel]]:
    model = ScriptedModel([tool_calls(("lookup", {"order": 1})), assistant("It shipped.")], model_name="node")
    engine = AiFlowEngine()
    engine.register("scripted", model)
    engine.register("tools", lookup)
    graph = Graph.from_yaml(
        "id: g\nlayout:\n  - {id: chat, task: '@ChatModel', meta: {chatConfig: {model: scripted},"
        " toolProviders: [tools]}}\n"
    )
    return GraphAgent(graph, engine=engine, name="graph"), {"chat": model}


def team_supervisor() -> tuple[Agent, dict[str, ScriptedModel]]:
    supervisor = ScriptedModel(
        [unavailable(), assistant("writer"), assistant("[TEAM_AGENT_FINISH] It shipped.")], model_name="supervisor"
    )
    writer = ScriptedModel([assistant("order 1 shipped")], model_name="writer")
    member = ChatModelAgent(name="writer", description="writes", model=writer)
    team = TeamAgent(model=supervisor, members=[member], retry_delay=0.0)
    return team, {"team_agent": supervisor, "writer": writer}


def compression() -> tuple[Agent, dict[str, ScriptedModel]]:
    summarizer = ScriptedModel([unavailable(), assistant("Looked up orders 0 to 2.")], model_name="summarizer")
    calls = [tool_calls(("lookup", {"order": i}), id_prefix=f"c{i}_") for i in range(6)]
    model = ScriptedModel([*calls, assistant("They shipped.")], model_name="agent")
    interceptor = ContextCompressionInterceptor(max_messages=10, strategy=LLMSummaryStrategy(summarizer), max_retries=2)
    agent = ChatModelAgent(name="compressed", model=model, tools=[lookup], middlewares=[interceptor])
    return agent, {"compressed": model, "summarizer": summarizer}


# Each kind: how to build a run in which it calls its model, the model whose calls are checked, and the agent the
# calls are counted for (the planner, the executor and the replanner run together, as plan-execute-replan; a
# summary is one of the compressed agent's calls).
KINDS: dict[str, tuple[Callable[[], tuple[Agent, dict[str, ScriptedModel]]], str, str]] = {
    "ChatModelAgent": (chat_model_agent, "chat", "chat"),
    "ReActAgent": (react_agent, "react", "react"),
    "SimpleAgent": (simple_agent, "simple", "simple"),
    "planner": (plan_execute, "planner", "planner"),
    "executor": (plan_execute, "executor", "executor"),
    "replanner": (plan_execute, "replanner", "replanner"),
    "flow @ChatModel node": (chat_model_node, "chat", "chat"),
    "team supervisor": (team_supervisor, "team_agent", "team_agent"),
    "compression": (compression, "summarizer", "compressed"),
}


@pytest.mark.parametrize("streaming", [False, True], ids=["generate", "stream"])
@pytest.mark.parametrize("kind", list(KINDS))
async def test_every_model_call_is_traced_and_counted_once(kind: str, streaming: bool) -> None:
    build, key, name = KINDS[kind]
    agent, models = build()
    trace: list[TraceEvent] = []
    events = await collect_events(Runner(agent, enable_streaming=streaming, callbacks=[trace.append]).query("hi"))
    assert [e.error for e in events if e.error is not None] == []
    model = models[key]
    model.assert_complete()
    starts = [e for e in trace if isinstance(e, ReasonStart) and e.model == model.model_name]
    ends = [e for e in trace if isinstance(e, ReasonEnd) and e.model == model.model_name]
    assert len(starts) == len(ends) == len(model.requests) > 0
    assert {e.agent_name for e in starts} == {name}
    run_end = trace[-1]
    assert isinstance(run_end, RunEnd) and run_end.metrics is not None
    counted = [e for e in trace if isinstance(e, ReasonStart) and e.agent_name == name]
    assert run_end.metrics.agents[name].model_calls == len(counted) >= len(model.requests)
    assert run_end.metrics.total.model_calls == sum(len(m.requests) for m in models.values())


async def test_a_retried_attempt_ends_in_an_error_span_of_its_own() -> None:
    agent, _ = chat_model_agent()
    trace: list[TraceEvent] = []
    await collect_events(Runner(agent, callbacks=[trace.append]).query("hi"))
    ends = [e for e in trace if isinstance(e, ReasonEnd)]
    assert [(type(e.error).__name__ if e.error is not None else e.message and e.message.content) for e in ends] == [
        "ModelHTTPError",
        "",
        "It shipped.",
    ]

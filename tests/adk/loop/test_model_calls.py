"""Every model-driven agent calls its model through the one model step: each call, a retried attempt included, is
traced once and counted once, streaming or not."""

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
from batonflow.errors import ModelHTTPError
from batonflow.observe import ReasonEnd, ReasonStart, RunEnd, TraceEvent
from batonflow.schema import assistant
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
        "planner": ScriptedModel([tool_calls(("plan", {"steps": ["look up order 1", "answer"]}))]),
        "executor": ScriptedModel(
            [tool_calls(("lookup", {"order": 1})), assistant("order 1 shipped"), assistant("answered")]
        ),
        "replanner": ScriptedModel(
            [tool_calls(("plan", {"steps": ["answer"]})), tool_calls(("respond", {"response": "It shipped."}))]
        ),
    }
    agent = plan_execute_replan(
        new_planner(model=models["planner"]),
        new_executor(model=models["executor"], tools=[lookup]),
        new_replanner(model=models["replanner"]),
    )
    return agent, models


# Each kind: how to build a run in which it calls its model, and the agent whose calls are checked (the planner,
# the executor and the replanner run together, as plan-execute-replan).
KINDS: dict[str, tuple[Callable[[], tuple[Agent, dict[str, ScriptedModel]]], str]] = {
    "ChatModelAgent": (chat_model_agent, "chat"),
    "ReActAgent": (react_agent, "react"),
    "SimpleAgent": (simple_agent, "simple"),
    "planner": (plan_execute, "planner"),
    "executor": (plan_execute, "executor"),
    "replanner": (plan_execute, "replanner"),
}


@pytest.mark.parametrize("streaming", [False, True], ids=["generate", "stream"])
@pytest.mark.parametrize("kind", list(KINDS))
async def test_every_model_call_is_traced_and_counted_once(kind: str, streaming: bool) -> None:
    build, name = KINDS[kind]
    agent, models = build()
    trace: list[TraceEvent] = []
    events = await collect_events(Runner(agent, enable_streaming=streaming, callbacks=[trace.append]).query("hi"))
    assert [e.error for e in events if e.error is not None] == []
    model = models[name]
    model.assert_complete()
    starts = [e for e in trace if isinstance(e, ReasonStart) and e.agent_name == name]
    ends = [e for e in trace if isinstance(e, ReasonEnd) and e.agent_name == name]
    assert len(starts) == len(ends) == len(model.requests) > 0
    run_end = trace[-1]
    assert isinstance(run_end, RunEnd) and run_end.metrics is not None
    assert run_end.metrics.agents[name].model_calls == len(model.requests)
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

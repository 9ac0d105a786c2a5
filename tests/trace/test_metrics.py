from batonflow.adk import AgentTool, ChatModelAgent, Runner, collect_events, set_sub_agents
from batonflow.schema import Message, ResponseMeta, Usage, assistant
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import tool
from batonflow.trace import Metrics, RunEnd, RunMetrics, TraceEvent


@tool
async def lookup(order_id: int) -> str:
    """Look an order up."""
    return f"order {order_id}: shipped"


def used(message: Message, prompt: int, completion: int, cached: int = 0) -> Message:
    message.response_meta = ResponseMeta(
        finish_reason="stop",
        usage=Usage(
            prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion, cached_tokens=cached
        ),
    )
    return message


def agent(name: str, *responses: Message, **kw: object) -> ChatModelAgent:
    return ChatModelAgent(name=name, description=f"{name} agent", model=ScriptedModel(list(responses)), **kw)


async def run_metrics(root: object) -> RunMetrics:
    seen: list[TraceEvent] = []
    await collect_events(Runner(root, callbacks=[seen.append]).query("q"))  # type: ignore[arg-type]
    end = seen[-1]
    assert isinstance(end, RunEnd) and end.metrics is not None
    return end.metrics


def counts(m: Metrics) -> tuple[int, int, int, int, int, int]:
    return (m.prompt_tokens, m.completion_tokens, m.total_tokens, m.cached_tokens, m.model_calls, m.tool_calls)


async def test_a_transfer_run_counts_each_agent_apart_and_the_total_is_their_sum() -> None:
    router = agent("router", used(tool_calls(("transfer_to_agent", {"agent_name": "refund"})), 100, 10, cached=50))
    refund = agent(
        "refund",
        used(tool_calls(("lookup", {"order_id": 7})), 200, 20),
        used(assistant("Refunded."), 300, 30),
        tools=[lookup],
    )
    metrics = await run_metrics(set_sub_agents(router, [refund]))
    assert counts(metrics.agents["router"]) == (100, 10, 110, 50, 1, 1)  # the transfer is a tool call
    assert counts(metrics.agents["refund"]) == (500, 50, 550, 0, 2, 1)
    assert counts(metrics.total) == (600, 60, 660, 50, 3, 2)
    assert metrics.total.duration_ms > 0 and metrics.agents["refund"].duration_ms > 0


async def test_an_agent_tools_inner_usage_is_added_to_the_calling_agent() -> None:
    inner = agent("helper", used(assistant("42"), 40, 4))
    outer = agent(
        "boss",
        used(tool_calls(("helper", {"request": "compute"})), 100, 10),
        used(assistant("done"), 200, 20),
        tools=[AgentTool(inner)],
    )
    metrics = await run_metrics(outer)
    assert counts(metrics.agents["helper"]) == (40, 4, 44, 0, 1, 0)
    assert counts(metrics.agents["boss"]) == (340, 34, 374, 0, 3, 1)
    # The inner call counts once in the run.
    assert counts(metrics.total) == counts(metrics.agents["boss"])


async def test_usage_without_a_total_counts_prompt_plus_completion() -> None:
    answer = assistant("hi")
    answer.response_meta = ResponseMeta(usage=Usage(prompt_tokens=7, completion_tokens=3))
    metrics = await run_metrics(agent("a", answer))
    assert metrics.total.total_tokens == 10


async def test_a_model_call_without_usage_still_counts_as_a_call() -> None:
    metrics = await run_metrics(agent("a", assistant("hi")))
    assert counts(metrics.total) == (0, 0, 0, 0, 1, 0)


def test_adding_metrics_sums_counts_but_not_the_duration() -> None:
    a = Metrics(prompt_tokens=10, cached_tokens=5, model_calls=1, duration_ms=3.0)
    a.add(Metrics(prompt_tokens=30, cached_tokens=5, model_calls=2, tool_calls=1, duration_ms=9.0))
    assert (a.prompt_tokens, a.cached_tokens, a.model_calls, a.tool_calls, a.duration_ms) == (40, 10, 3, 1, 3.0)
    assert a.cache_rate == 25.0
    assert Metrics().cache_rate == 0.0


def test_the_cache_rate_is_capped_at_100_and_rounded_to_two_decimals_as_solons() -> None:
    # Some providers count cached prompt tokens apart from the prompt tokens: the rate could pass 100.
    assert Metrics(prompt_tokens=10, cached_tokens=30).cache_rate == 100.0
    assert Metrics(prompt_tokens=3, cached_tokens=1).cache_rate == 33.33


async def test_a_simple_agents_model_calls_are_traced_and_counted_retries_included() -> None:
    from batonflow.agents import SimpleAgent

    async def no_wait(_: float) -> None:
        return None

    for streaming in (False, True):
        model = ScriptedModel([used(assistant(""), 5, 0), used(assistant("hello"), 10, 2)])
        simple = SimpleAgent(name="s", model=model, sleep=no_wait)
        seen: list[TraceEvent] = []
        runner = Runner(simple, callbacks=[seen.append], enable_streaming=streaming)
        await collect_events(runner.query("q"))
        kinds = [e.kind for e in seen]
        assert kinds == [
            "run_start",
            "agent_start",
            "reason_start",
            "reason_end",
            "reason_start",
            "reason_end",
            "agent_end",
            "run_end",
        ], streaming
        end = seen[-1]
        assert isinstance(end, RunEnd) and end.metrics is not None
        assert counts(end.metrics.agents["s"]) == (15, 2, 17, 0, 2, 0)

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from batonflow.adk import ChatModelAgent, Runner, collect_events, set_sub_agents
from batonflow.observe import OpenTelemetryTracer
from batonflow.schema import Message, ResponseMeta, Usage, assistant
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import tool


@tool
async def lookup(order_id: int) -> str:
    """Look an order up."""
    return f"order {order_id}: shipped"


def used(message: Message, prompt: int, completion: int, finish: str) -> Message:
    message.response_meta = ResponseMeta(
        finish_reason=finish, usage=Usage(prompt_tokens=prompt, completion_tokens=completion)
    )
    return message


def exporter_and_tracer() -> tuple[InMemorySpanExporter, OpenTelemetryTracer]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter, OpenTelemetryTracer(tracer_provider=provider)


def tree(spans: tuple[ReadableSpan, ...]) -> dict[str, str | None]:
    """Each span's name mapped to its parent's name."""
    by_id = {s.context.span_id: s.name for s in spans}
    return {s.name: by_id[s.parent.span_id] if s.parent is not None else None for s in spans}


async def test_a_transfer_run_with_a_tool_call_gives_a_genai_span_tree() -> None:
    exporter, tracer = exporter_and_tracer()
    router = ChatModelAgent(
        name="router",
        model=ScriptedModel(
            [used(tool_calls(("transfer_to_agent", {"agent_name": "refund"})), 100, 10, "tool_calls")],
            model_name="small-router",
        ),
    )
    refund = ChatModelAgent(
        name="refund",
        description="Refunds orders.",
        model=ScriptedModel(
            [
                used(tool_calls(("lookup", {"order_id": 7})), 200, 20, "tool_calls"),
                used(assistant("Done."), 300, 30, "stop"),
            ],
            model_name="big-refund",
        ),
        tools=[lookup],
    )
    await collect_events(Runner(set_sub_agents(router, [refund]), callbacks=[tracer]).query("refund order 7"))
    spans = exporter.get_finished_spans()
    assert sorted(s.name for s in spans) == sorted(
        [
            "run router",
            "invoke_agent router",
            "chat small-router",
            "execute_tool transfer_to_agent",
            "invoke_agent refund",
            "chat big-refund",
            "chat big-refund",
            "execute_tool lookup",
        ]
    )
    assert tree(spans) == {
        "run router": None,
        "invoke_agent router": "run router",
        "chat small-router": "invoke_agent router",
        "execute_tool transfer_to_agent": "invoke_agent router",
        "invoke_agent refund": "invoke_agent router",
        "chat big-refund": "invoke_agent refund",
        "execute_tool lookup": "invoke_agent refund",
    }
    assert len({s.context.trace_id for s in spans}) == 1
    chats = [s for s in spans if s.name == "chat big-refund"]
    assert [dict(s.attributes or {}) for s in chats] == [
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "big-refund",
            "gen_ai.usage.input_tokens": 200,
            "gen_ai.usage.output_tokens": 20,
            "gen_ai.response.finish_reasons": ("tool_calls",),
        },
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "big-refund",
            "gen_ai.usage.input_tokens": 300,
            "gen_ai.usage.output_tokens": 30,
            "gen_ai.response.finish_reasons": ("stop",),
        },
    ]
    tool_span = next(s for s in spans if s.name == "execute_tool lookup")
    assert tool_span.attributes is not None
    assert (tool_span.attributes["gen_ai.tool.name"], tool_span.attributes["gen_ai.tool.call.id"]) == (
        "lookup",
        "call_1",
    )
    agent_span = next(s for s in spans if s.name == "invoke_agent refund")
    assert agent_span.attributes is not None and agent_span.attributes["gen_ai.agent.name"] == "refund"
    assert all(s.status.status_code is StatusCode.UNSET for s in spans)


async def test_a_failing_model_call_marks_its_span_and_the_agents_as_errors() -> None:
    exporter, tracer = exporter_and_tracer()
    failing = ChatModelAgent(name="a", model=ScriptedModel([RuntimeError("model down")]))
    await collect_events(Runner(failing, callbacks=[tracer]).query("q"))
    status = {
        s.name: (s.status.status_code, (s.attributes or {}).get("error.type")) for s in exporter.get_finished_spans()
    }
    assert status == {
        "run a": (StatusCode.ERROR, "RuntimeError"),
        "invoke_agent a": (StatusCode.ERROR, "RuntimeError"),
        "chat scripted": (StatusCode.ERROR, "RuntimeError"),
    }


async def test_a_run_closed_early_ends_every_span_it_opened() -> None:
    exporter, tracer = exporter_and_tracer()
    a = ChatModelAgent(
        name="a", model=ScriptedModel([tool_calls(("lookup", {"order_id": 7})), assistant("ok")]), tools=[lookup]
    )
    stream = Runner(a, callbacks=[tracer]).query("q")
    async for _ in stream:
        break  # stop after the model's tool call: the agent span is still open
    await stream.aclose()
    assert sorted(s.name for s in exporter.get_finished_spans()) == ["chat scripted", "invoke_agent a", "run a"]
    assert not tracer._spans

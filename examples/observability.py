"""Observability: a run printed as it happens with ``ConsoleRenderer``, its spans recorded with OpenTelemetry
(``OpenTelemetryTracer``, a trace callback), and its metrics from the last trace event, ``RunEnd``.

The spans need ``opentelemetry-sdk`` (``pip install opentelemetry-sdk``); here they go to an in-memory exporter, and
any other exporter (OTLP, the console) takes its place the usual way.
"""

import asyncio

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from batonflow import TRANSFER_TOOL_NAME, ChatModelAgent, Runner, set_sub_agents, tool
from batonflow.observe import ConsoleRenderer, OpenTelemetryTracer, RunEnd, TraceCallback, TraceEvent
from batonflow.schema import assistant
from batonflow.testing import ScriptedModel, tool_calls


@tool
def lookup(order_id: int) -> str:
    """Look an order up.

    Args:
        order_id: the order number
    """
    return f"order {order_id} shipped on Monday"


def build(callbacks: list[TraceCallback]) -> Runner:
    router = ChatModelAgent(
        name="router",
        description="Routes requests.",
        model=ScriptedModel([tool_calls((TRANSFER_TOOL_NAME, {"agent_name": "orders"}))]),
    )
    orders = ChatModelAgent(
        name="orders",
        description="Answers questions about orders.",
        model=ScriptedModel([tool_calls(("lookup", {"order_id": 7})), assistant("Order 7 shipped on Monday.")]),
        tools=[lookup],
    )
    return Runner(set_sub_agents(router, [orders]), callbacks=callbacks)


async def main() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    ends: list[RunEnd] = []

    def keep_end(event: TraceEvent) -> None:
        if isinstance(event, RunEnd):
            ends.append(event)

    runner = build([OpenTelemetryTracer(tracer_provider=provider), keep_end])
    await ConsoleRenderer().print_events(runner.query("Where is order 7?"))

    print("spans:", sorted({span.name for span in exporter.get_finished_spans()}))
    [end] = ends
    assert end.metrics is not None
    for agent, metrics in sorted(end.metrics.agents.items()):
        print(f"{agent}: {metrics.model_calls} model call(s), {metrics.tool_calls} tool call(s)")


asyncio.run(main())

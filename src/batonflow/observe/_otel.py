"""OpenTelemetry spans from trace events, after the GenAI semantic conventions.

A span per run (``run <agent>``), per agent (``invoke_agent <name>``), per model call (``chat <model>``) and per
tool call (``execute_tool <name>``), nested as the trace events' ``parent_id`` say. It is a trace callback:
``Runner(agent, callbacks=[OpenTelemetryTracer()])``; nothing is imported or done unless it is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..trace import (
    AgentEnd,
    AgentStart,
    ReasonEnd,
    ReasonStart,
    RunEnd,
    RunStart,
    ToolCallEnd,
    ToolCallStart,
    TraceEvent,
)

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

__all__ = ["OpenTelemetryTracer"]

_SCOPE = "batonflow"


class OpenTelemetryTracer:
    """A trace callback that records spans with ``opentelemetry-api`` (the global tracer provider by default).

    Message contents are not recorded (they may hold personal data); tool arguments are not either.
    """

    def __init__(self, tracer_provider: TracerProvider | None = None) -> None:
        try:
            from opentelemetry import trace
        except ImportError as error:  # pragma: no cover - depends on the environment
            raise ImportError(
                "OpenTelemetryTracer needs opentelemetry-api: pip install opentelemetry-api opentelemetry-sdk"
            ) from error
        self._api = trace
        self._tracer: Tracer = trace.get_tracer(_SCOPE, tracer_provider=tracer_provider)
        # Open spans by (run id, span id); several runs may share one tracer.
        self._spans: dict[tuple[str, int], Span] = {}

    def __call__(self, event: TraceEvent) -> None:
        if isinstance(event, RunStart):
            self._start(event, f"run {event.agent_name}", {"batonflow.run_id": event.run_id})
        elif isinstance(event, AgentStart):
            self._start(
                event,
                f"invoke_agent {event.agent_name}",
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": event.agent_name,
                    "batonflow.run_path": [str(step) for step in event.run_path],
                },
            )
        elif isinstance(event, ReasonStart):
            self._start(
                event,
                f"chat {event.model}",
                {"gen_ai.operation.name": "chat", "gen_ai.request.model": event.model},
                client=True,
            )
        elif isinstance(event, ToolCallStart):
            self._start(
                event,
                f"execute_tool {event.tool_name}",
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": event.tool_name,
                    "gen_ai.tool.call.id": event.call_id,
                    "gen_ai.tool.type": "function",
                },
            )
        elif isinstance(event, ReasonEnd):
            attributes: dict[str, Any] = {}
            if event.usage is not None:
                attributes["gen_ai.usage.input_tokens"] = event.usage.prompt_tokens
                attributes["gen_ai.usage.output_tokens"] = event.usage.completion_tokens
            if event.finish_reason:
                attributes["gen_ai.response.finish_reasons"] = [event.finish_reason]
            self._end(event, attributes, event.error)
        elif isinstance(event, (ToolCallEnd, AgentEnd)):
            self._end(event, {}, event.error)
        elif isinstance(event, RunEnd):
            # A run closed early leaves spans open: end them with it, innermost (newest) first.
            for key in sorted((k for k in self._spans if k[0] == event.run_id and k[1] != event.span_id), reverse=True):
                self._spans.pop(key).end(end_time=event.ts)
            self._end(event, {}, event.error)

    def _start(self, event: TraceEvent, name: str, attributes: dict[str, Any], *, client: bool = False) -> None:
        api = self._api
        parent = self._spans.get((event.run_id, event.parent_id)) if event.parent_id is not None else None
        context = api.set_span_in_context(parent) if parent is not None else None
        span = self._tracer.start_span(
            name,
            context=context,
            kind=api.SpanKind.CLIENT if client else api.SpanKind.INTERNAL,
            attributes=attributes,
            start_time=event.ts,
        )
        self._spans[(event.run_id, event.span_id)] = span

    def _end(self, event: TraceEvent, attributes: dict[str, Any], error: BaseException | None) -> None:
        span = self._spans.pop((event.run_id, event.span_id), None)
        if span is None:
            return
        if attributes:
            span.set_attributes(attributes)
        if error is not None:
            span.set_attribute("error.type", type(error).__qualname__)
            span.record_exception(error)
            span.set_status(self._api.Status(self._api.StatusCode.ERROR, str(error)))
        span.end(end_time=event.ts)

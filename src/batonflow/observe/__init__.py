"""Observability: trace events, run metrics, callbacks and OpenTelemetry spans, the stream beside the agent events.

``Runner(agent, callbacks=[cb])`` sends every trace event of a run to ``cb`` (sync or async);
``Runner.stream_trace(...)`` gives one stream of agent events and trace events in order. The last trace event
of a run is ``RunEnd``, whose ``metrics`` (a ``RunMetrics``) hold the run's tokens, calls and durations, in
total and by agent. ``OpenTelemetryTracer()`` is a callback that records GenAI spans. ``ConsoleRenderer`` prints
a run's agent events as lines of text.
"""

from typing import TYPE_CHECKING, Any

from ._events import ActionEnd as ActionEnd
from ._events import ActionStart as ActionStart
from ._events import AgentEnd as AgentEnd
from ._events import AgentStart as AgentStart
from ._events import ContextSize as ContextSize
from ._events import HITLDecided as HITLDecided
from ._events import HITLPending as HITLPending
from ._events import PlanEvent as PlanEvent
from ._events import ReasonEnd as ReasonEnd
from ._events import ReasonStart as ReasonStart
from ._events import RunEnd as RunEnd
from ._events import RunStart as RunStart
from ._events import SupervisorDelta as SupervisorDelta
from ._events import TeamEnd as TeamEnd
from ._events import TeamStart as TeamStart
from ._events import ToolCallEnd as ToolCallEnd
from ._events import ToolCallStart as ToolCallStart
from ._events import TraceEvent as TraceEvent
from ._metrics import Metrics as Metrics
from ._metrics import RunMetrics as RunMetrics
from ._otel import OpenTelemetryTracer as OpenTelemetryTracer
from ._trace import TraceCallback as TraceCallback
from ._trace import TraceScope as TraceScope

if TYPE_CHECKING:
    from ._console import ConsoleRenderer as ConsoleRenderer


def __getattr__(name: str) -> Any:
    # The renderer reads agent events, a layer above the trace events the runtime imports from here: imported on
    # first use, so that importing the runtime does not import the agents while the agents import the runtime.
    if name == "ConsoleRenderer":
        from ._console import ConsoleRenderer

        return ConsoleRenderer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ActionEnd",
    "ActionStart",
    "AgentEnd",
    "AgentStart",
    "ConsoleRenderer",
    "ContextSize",
    "HITLDecided",
    "HITLPending",
    "Metrics",
    "OpenTelemetryTracer",
    "PlanEvent",
    "ReasonEnd",
    "ReasonStart",
    "RunEnd",
    "RunMetrics",
    "RunStart",
    "SupervisorDelta",
    "TeamEnd",
    "TeamStart",
    "ToolCallEnd",
    "ToolCallStart",
    "TraceCallback",
    "TraceEvent",
    "TraceScope",
]

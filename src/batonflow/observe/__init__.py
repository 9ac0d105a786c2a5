"""Observability: trace events, run metrics, callbacks and OpenTelemetry spans, the stream beside the agent events.

``Runner(agent, callbacks=[cb])`` sends every trace event of a run to ``cb`` (sync or async);
``Runner.stream_trace(...)`` gives one stream of agent events and trace events in order. The last trace event
of a run is ``RunEnd``, whose ``metrics`` (a ``RunMetrics``) hold the run's tokens, calls and durations, in
total and by agent. ``OpenTelemetryTracer()`` is a callback that records GenAI spans; ``ConsoleRenderer`` prints
a run's agent events as lines of text.

This package holds the exporters, which sit on top of everything else; the events, scopes and metrics themselves
live in ``batonflow.trace``, below the runtime that emits them, and are re-exported here for applications.
"""

from ..trace import ActionEnd as ActionEnd
from ..trace import ActionStart as ActionStart
from ..trace import AgentEnd as AgentEnd
from ..trace import AgentStart as AgentStart
from ..trace import ContextSize as ContextSize
from ..trace import HITLDecided as HITLDecided
from ..trace import HITLPending as HITLPending
from ..trace import Metrics as Metrics
from ..trace import PlanEvent as PlanEvent
from ..trace import ReasonEnd as ReasonEnd
from ..trace import ReasonStart as ReasonStart
from ..trace import RunEnd as RunEnd
from ..trace import RunMetrics as RunMetrics
from ..trace import RunStart as RunStart
from ..trace import SupervisorDelta as SupervisorDelta
from ..trace import TeamEnd as TeamEnd
from ..trace import TeamStart as TeamStart
from ..trace import ToolCallEnd as ToolCallEnd
from ..trace import ToolCallStart as ToolCallStart
from ..trace import TraceCallback as TraceCallback
from ..trace import TraceEvent as TraceEvent
from ..trace import TraceScope as TraceScope
from ._console import ConsoleRenderer as ConsoleRenderer
from ._otel import OpenTelemetryTracer as OpenTelemetryTracer

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

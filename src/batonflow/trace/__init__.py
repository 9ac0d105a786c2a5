"""Tracing: the events a run emits about itself, the scopes it emits them from, and the metrics they add up to.

Trace events are the second stream next to ``AgentEvent``: lifecycle and observability (runs, agents, model and
tool calls, plan changes, HITL decisions, context sizes), never content an application must read. The runtime
emits them through a ``TraceScope`` (``RunContext.trace``) into a ``RunTrace``, which hands each one to the run's
callbacks and counts model and tool calls into ``RunMetrics``; the last event of a run is ``RunEnd`` with them.

This package sits low, below the stores and the runtime, so that every layer that calls models or tools (the
runtime, the agent kinds, and whatever is built on them) can emit the same events. Exporters that turn events into
something else (OpenTelemetry spans) live in ``batonflow.observe``, on top.
"""

from ._events import ActionEnd as ActionEnd
from ._events import ActionStart as ActionStart
from ._events import AgentEnd as AgentEnd
from ._events import AgentStart as AgentStart
from ._events import ContextSize as ContextSize
from ._events import HITLDecided as HITLDecided
from ._events import HITLPending as HITLPending
from ._events import NodeEnd as NodeEnd
from ._events import NodeStart as NodeStart
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
from ._scope import OpenAction as OpenAction
from ._scope import OpenReason as OpenReason
from ._scope import RunTrace as RunTrace
from ._scope import TraceCallback as TraceCallback
from ._scope import TraceScope as TraceScope
from ._scope import current_scope as current_scope

__all__ = [
    "ActionEnd",
    "ActionStart",
    "AgentEnd",
    "AgentStart",
    "ContextSize",
    "HITLDecided",
    "HITLPending",
    "Metrics",
    "NodeEnd",
    "NodeStart",
    "OpenAction",
    "OpenReason",
    "PlanEvent",
    "ReasonEnd",
    "ReasonStart",
    "RunEnd",
    "RunMetrics",
    "RunStart",
    "RunTrace",
    "SupervisorDelta",
    "TeamEnd",
    "TeamStart",
    "ToolCallEnd",
    "ToolCallStart",
    "TraceCallback",
    "TraceEvent",
    "TraceScope",
    "current_scope",
]

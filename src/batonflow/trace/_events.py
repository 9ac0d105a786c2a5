"""Trace events: what a run did, for callbacks, metrics, OpenTelemetry and UIs (Solon's agent event kinds).

They are the second stream next to ``AgentEvent``: lifecycle and observability, never content an application
must read. Each carries the run id, the agent and its run path (absolute: an agent tool's inner agents are
shown under the caller), a wall-clock timestamp, and span ids: ``span_id`` names what a start/end pair
brackets, ``parent_id`` the span it nests in, so a consumer can rebuild the run as a tree.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from ..schema import Message, RunStep, ToolCall, Usage

if TYPE_CHECKING:
    from ._metrics import Metrics, RunMetrics

__all__ = [
    "ActionEnd",
    "ActionStart",
    "AgentEnd",
    "AgentStart",
    "ContextSize",
    "HITLDecided",
    "HITLPending",
    "NodeEnd",
    "NodeStart",
    "PlanEvent",
    "ReasonEnd",
    "ReasonStart",
    "RunEnd",
    "RunStart",
    "SupervisorDelta",
    "TeamEnd",
    "TeamStart",
    "ToolCallEnd",
    "ToolCallStart",
    "TraceEvent",
]


@dataclass(slots=True, kw_only=True)
class _Base:
    run_id: str
    agent_name: str
    run_path: tuple[RunStep, ...] = ()
    span_id: int = 0
    parent_id: int | None = None
    ts: int = field(default_factory=time.time_ns)


# -- emitted by the runtime now ----------------------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class RunStart(_Base):
    """A Runner started (or resumed) a run; ``agent_name`` is the root agent."""

    kind: Literal["run_start"] = "run_start"
    resumed: bool = False


@dataclass(slots=True, kw_only=True)
class RunEnd(_Base):
    """The run's event stream ended. ``metrics`` holds the run's token counts, calls and durations."""

    kind: Literal["run_end"] = "run_end"
    duration_ms: float = 0.0
    error: BaseException | None = None
    metrics: RunMetrics | None = None


@dataclass(slots=True, kw_only=True)
class AgentStart(_Base):
    kind: Literal["agent_start"] = "agent_start"


@dataclass(slots=True, kw_only=True)
class AgentEnd(_Base):
    """An agent finished; its span covers any agent it transferred to, as its run path does.

    ``metrics`` is the agent's own entry (its model and tool calls, plus those of agents it ran as tools).
    """

    kind: Literal["agent_end"] = "agent_end"
    duration_ms: float = 0.0
    error: BaseException | None = None
    metrics: Metrics | None = None


@dataclass(slots=True, kw_only=True)
class ReasonStart(_Base):
    """A model call is about to be made."""

    kind: Literal["reason_start"] = "reason_start"
    model: str = ""
    message_count: int = 0
    tools: tuple[str, ...] = ()


@dataclass(slots=True, kw_only=True)
class ReasonEnd(_Base):
    """A model call ended: its whole message (streams joined) and usage, or the error it raised."""

    kind: Literal["reason_end"] = "reason_end"
    model: str = ""
    duration_ms: float = 0.0
    message: Message | None = None
    usage: Usage | None = None
    finish_reason: str = ""
    error: BaseException | None = None


@dataclass(slots=True, kw_only=True)
class ActionStart(_Base):
    """The tool calls of one turn are about to run (on resume: those that had not finished)."""

    kind: Literal["action_start"] = "action_start"
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(slots=True, kw_only=True)
class ActionEnd(_Base):
    kind: Literal["action_end"] = "action_end"
    duration_ms: float = 0.0
    error: BaseException | None = None
    interrupted: bool = False


@dataclass(slots=True, kw_only=True)
class ToolCallStart(_Base):
    kind: Literal["tool_call_start"] = "tool_call_start"
    call_id: str = ""
    tool_name: str = ""
    arguments: str = ""


@dataclass(slots=True, kw_only=True)
class ToolCallEnd(_Base):
    """A tool call ended. A failed call that the model is told about (bad arguments, unknown tool) has its
    ``observation``; one that ended the agent has its ``error``; an interrupt is not an error."""

    kind: Literal["tool_call_end"] = "tool_call_end"
    call_id: str = ""
    tool_name: str = ""
    arguments: str = ""
    observation: str | None = None
    error: BaseException | None = None
    interrupted: bool = False
    duration_ms: float = 0.0


# -- emitted by Solon's agent kinds and interceptors -------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class PlanEvent(_Base):
    """A ReActAgent in planning mode created, advanced or revised its plan; ``current`` is the 0-based index of the
    step under way (``len(plans)`` when all are done)."""

    kind: Literal["plan"] = "plan"
    stage: Literal["create", "progress", "revise"] = "create"
    plans: tuple[str, ...] = ()
    current: int = 0


@dataclass(slots=True, kw_only=True)
class HITLPending(_Base):
    """A batch of tool calls waits for a person; ``tasks`` are the HITL interceptor's ``PendingTask``s."""

    kind: Literal["hitl_pending"] = "hitl_pending"
    tasks: tuple[Any, ...] = ()


@dataclass(slots=True, kw_only=True)
class HITLDecided(_Base):
    """A person's decision (a ``HITLDecision``) was applied to a pending call."""

    kind: Literal["hitl_decided"] = "hitl_decided"
    call_id: str = ""
    tool_name: str = ""
    decision: Any = None


@dataclass(slots=True, kw_only=True)
class ContextSize(_Base):
    """The size of the context a model call is about to get, after any compression: ``removed`` messages were
    replaced (by a summary when ``summarized``)."""

    kind: Literal["context_size"] = "context_size"
    message_count: int = 0
    tokens: int = 0
    removed: int = 0
    summarized: bool = False


# -- declared for the parts of the runtime that do not exist yet (teams) -----------------------------------------


@dataclass(slots=True, kw_only=True)
class TeamStart(_Base):
    kind: Literal["team_start"] = "team_start"


@dataclass(slots=True, kw_only=True)
class TeamEnd(_Base):
    kind: Literal["team_end"] = "team_end"
    duration_ms: float = 0.0
    error: BaseException | None = None


@dataclass(slots=True, kw_only=True)
class NodeStart(_Base):
    """A graph agent's flow started a node's task (its hooks; not while the flow replays to resume)."""

    kind: Literal["node_start"] = "node_start"
    graph_id: str = ""
    node_id: str = ""
    node_type: str = ""


@dataclass(slots=True, kw_only=True)
class NodeEnd(_Base):
    """A graph agent's flow ended a node; ``duration_ms`` is from its ``NodeStart``."""

    kind: Literal["node_end"] = "node_end"
    graph_id: str = ""
    node_id: str = ""
    node_type: str = ""
    duration_ms: float = 0.0


@dataclass(slots=True, kw_only=True)
class SupervisorDelta(_Base):
    kind: Literal["supervisor_delta"] = "supervisor_delta"
    content: str = ""


TraceEvent: TypeAlias = (
    RunStart
    | RunEnd
    | AgentStart
    | AgentEnd
    | ReasonStart
    | ReasonEnd
    | ActionStart
    | ActionEnd
    | ToolCallStart
    | ToolCallEnd
    | PlanEvent
    | HITLPending
    | HITLDecided
    | ContextSize
    | TeamStart
    | TeamEnd
    | SupervisorDelta
    | NodeStart
    | NodeEnd
)
"""Any trace event; ``event.kind`` tells which."""

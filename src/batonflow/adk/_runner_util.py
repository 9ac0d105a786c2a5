"""The Runner's helpers that need no Runner: tracing a run, interleaving trace events, checking ids and trees."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing

from ..errors import UserError
from ..store import HistoryRetention
from ..trace import RunTrace, TraceCallback, TraceEvent
from ._context import RunContext
from ._events import AgentEvent
from ._flow import FlowAgent
from ._lease import installed_fence
from ._result import Capture
from .loop import FenceSteps, StepLog, chained_steps

__all__ = ["check_tree", "fenced", "interleave", "retention_of", "run_id_of", "trace_of"]


async def interleave(
    events: AsyncIterator[AgentEvent], pending: deque[TraceEvent]
) -> AsyncIterator[AgentEvent | TraceEvent]:
    """Each agent event after the trace events emitted while it was produced."""
    async with aclosing(events) as source:  # type: ignore[type-var]
        async for event in source:
            while pending:
                yield pending.popleft()
            yield event
    while pending:
        yield pending.popleft()


def trace_of(
    ctx: RunContext, agent_name: str, callbacks: Sequence[TraceCallback], cap: Capture | None
) -> RunTrace | None:
    """The run's trace, when someone listens (the callbacks, or a ``call`` that counts the metrics), set on ``ctx``;
    a ``call`` is told of both."""
    if cap is not None:
        cap.ctx = ctx
    if not callbacks and (cap is None or not cap.metrics):
        return None
    trace = RunTrace(callbacks, agent_name=agent_name)
    ctx.trace = trace.root()
    if cap is not None:
        cap.trace = trace
    return trace


_RUN_ID = re.compile(r"[0-9a-f]{32}")


def run_id_of(run_id: str | None) -> str | None:
    """``run_id`` if it can be a run's id: 32 lowercase hex digits, as the Runner makes them (so that idempotency keys
    keep their length)."""
    if run_id is not None and (not isinstance(run_id, str) or _RUN_ID.fullmatch(run_id) is None):
        shown = repr(run_id[:40] if isinstance(run_id, str) else run_id)[:60]  # not the repr of a megabyte
        raise UserError(f"run_id: expected 32 lowercase hex digits (such as os.urandom(16).hex()), got {shown}")
    return run_id


def check_tree(root: FlowAgent) -> None:
    names = [agent.name for agent in root.walk()]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise UserError(f"agent tree of '{root.name}': expected unique agent names, got {repeated} more than once")
    if not all(names):
        raise UserError(f"agent tree of '{root.name}': expected every agent to have a name, got an empty one")


def fenced(steps: StepLog | None) -> StepLog | None:
    """``steps`` and the process's fence (``fenced_by``), checked before each tool batch, when one is installed."""
    process = installed_fence()
    return steps if process is None else chained_steps(steps, FenceSteps(process))


def retention_of(keep_history: bool | HistoryRetention) -> HistoryRetention | None:
    """What ``Runner(keep_history=...)`` means: None (off), the default retention (True), or the one given."""
    if keep_history is False:
        return None
    if keep_history is True:
        return HistoryRetention()
    if isinstance(keep_history, HistoryRetention):
        return keep_history
    raise UserError(f"keep_history: expected True, False or a HistoryRetention, got {keep_history!r}")

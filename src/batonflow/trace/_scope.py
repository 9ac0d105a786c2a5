"""How the runtime emits trace events: one ``RunTrace`` per traced run, and ``TraceScope``s on the run context.

A run is traced only when its Runner was given callbacks; otherwise ``RunContext.trace`` is ``None`` and each
emission point in the runtime costs one ``is not None`` check. A scope knows the span new spans nest in, the
absolute run path, and which ``Metrics`` entries the model and tool calls made in it count in.

An ``AgentTool`` builds a fresh run context for its inner agent; the tool call's scope reaches it through a
context variable that ``RunContext`` reads when it is created (set only while a traced tool runs), so that
nested runs join the caller's trace without the tool knowing about tracing.
"""

from __future__ import annotations

import inspect
import logging
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import aclosing
from contextvars import ContextVar
from dataclasses import dataclass
from time import perf_counter
from typing import Any, Protocol, TypeVar

from ..schema import Message, RunStep, ToolCall
from ..tools import InterruptSignal
from ._events import (
    ActionEnd,
    ActionStart,
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
from ._metrics import Metrics, RunMetrics

__all__ = ["OpenAction", "OpenReason", "RunTrace", "TraceCallback", "TraceScope", "current_scope"]

# Named before this package existed; logging configurations refer to it.
_log = logging.getLogger("batonflow.observe")

TraceCallback = Callable[[TraceEvent], Any]
"""Called with each trace event; may be async (then awaited). What it raises is logged and ignored."""

_CURRENT: ContextVar[TraceScope | None] = ContextVar("batonflow_trace_scope", default=None)

current_scope = _CURRENT.get
"""The scope of the traced tool call running now, if any (``RunContext.trace``'s default)."""


class _HasError(Protocol):
    error: BaseException | None


E = TypeVar("E", bound=_HasError)
R = TypeVar("R")


def _ms(since: float) -> float:
    return (perf_counter() - since) * 1000.0


class RunTrace:
    """The state of one traced run: its id, callbacks, span id counter and metrics."""

    __slots__ = ("_next_id", "agent_name", "callbacks", "metrics", "run_id")

    def __init__(self, callbacks: Sequence[TraceCallback], *, agent_name: str, run_id: str | None = None) -> None:
        self.callbacks = tuple(callbacks)
        self.agent_name = agent_name
        self.run_id = run_id or uuid.uuid4().hex
        self.metrics = RunMetrics(run_id=self.run_id)
        self._next_id = 1  # span 1 is the run

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    async def emit(self, event: TraceEvent) -> None:
        for callback in self.callbacks:
            try:
                result = callback(event)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                # Observability must not change what a run does.
                _log.exception("trace callback %r failed on a %s event", callback, event.kind)

    def root(self) -> TraceScope:
        """The scope of the run itself: span 1, counted in the run total."""
        return TraceScope(
            trace=self,
            span_id=1,
            parent_id=None,
            agent_name=self.agent_name,
            run_path=(),
            prefix=(),
            owners=(self.metrics.total,),
            base=(self.metrics.total,),
        )

    async def wrap(self, events: AsyncIterator[E], *, resumed: bool = False) -> AsyncGenerator[E, None]:
        """``events`` between a ``RunStart`` and a ``RunEnd`` (sent even if the reader stops early)."""
        started = perf_counter()
        await self.emit(RunStart(run_id=self.run_id, agent_name=self.agent_name, span_id=1, resumed=resumed))
        error: BaseException | None = None
        try:
            async with aclosing(events) as source:  # type: ignore[type-var]
                async for event in source:
                    error = event.error
                    yield event
        except Exception as exc:
            error = exc
            raise
        finally:
            self.metrics.total.duration_ms = _ms(started)
            await self.emit(
                RunEnd(
                    run_id=self.run_id,
                    agent_name=self.agent_name,
                    span_id=1,
                    duration_ms=self.metrics.total.duration_ms,
                    error=error,
                    metrics=self.metrics,
                )
            )


@dataclass(slots=True, kw_only=True)
class TraceScope:
    """Where trace events are emitted from: a run, an agent, or a tool call (what ``RunContext.trace`` holds)."""

    trace: RunTrace
    span_id: int
    parent_id: int | None
    agent_name: str
    run_path: tuple[RunStep, ...]
    # The caller's path when inside an agent tool: inner run paths are relative to it.
    prefix: tuple[RunStep, ...]
    # Where the model and tool calls made in this scope count: the agent's entry first, then its callers'.
    owners: tuple[Metrics, ...]
    # What an agent starting in this scope counts in besides its own entry.
    base: tuple[Metrics, ...]
    started: float = 0.0

    # -- agents -------------------------------------------------------------------------------------------------

    async def enter_agent(self, name: str, run_path: tuple[RunStep, ...]) -> TraceScope:
        """Emit ``AgentStart`` and give the agent's scope."""
        trace = self.trace
        scope = TraceScope(
            trace=trace,
            span_id=trace.new_id(),
            parent_id=self.span_id,
            agent_name=name,
            run_path=(*self.prefix, *run_path),
            prefix=self.prefix,
            owners=(trace.metrics.agent(name), *self.base),
            base=self.base,
            started=perf_counter(),
        )
        await trace.emit(
            AgentStart(
                run_id=trace.run_id,
                agent_name=name,
                run_path=scope.run_path,
                span_id=scope.span_id,
                parent_id=self.span_id,
            )
        )
        return scope

    async def exit_agent(self, error: BaseException | None = None) -> None:
        """Emit the ``AgentEnd`` of the agent this scope was entered for."""
        duration = _ms(self.started)
        own = self.owners[0]
        own.duration_ms += duration
        await self.trace.emit(
            AgentEnd(**self._ids(self.span_id, self.parent_id), duration_ms=duration, error=error, metrics=own)
        )

    async def traced_agent(self, events: AsyncIterator[E]) -> AsyncGenerator[E, None]:
        """An agent's events, its ``AgentEnd`` sent when they end; the error is that of its own last error event."""
        error: BaseException | None = None
        run_path = self.run_path[len(self.prefix) :]
        try:
            async with aclosing(events) as source:  # type: ignore[type-var]
                async for event in source:
                    if event.error is not None and getattr(event, "run_path", None) == run_path:
                        error = event.error
                    yield event
        except Exception as exc:
            error = exc
            raise
        finally:
            await self.exit_agent(error)

    async def event(self, kind: Callable[..., TraceEvent], **fields: Any) -> None:
        """Emit a point event of this scope (a plan change, a HITL decision, a context size): a span of its own,
        nested in this one, with the given fields."""
        await self.trace.emit(kind(**self._ids(self.trace.new_id(), self.span_id), **fields))

    # -- model calls ----------------------------------------------------------------------------------------------

    async def reason_start(self, model: str, messages: Sequence[Message], tools: Sequence[Any]) -> OpenReason:
        """Emit ``ReasonStart``; the returned handle's ``end`` emits the ``ReasonEnd``."""
        span = self.trace.new_id()
        await self.trace.emit(
            ReasonStart(
                **self._ids(span, self.span_id),
                model=model,
                message_count=len(messages),
                tools=tuple(t.name for t in tools),
            )
        )
        return OpenReason(self, span, model, perf_counter())

    async def action_start(self, calls: Sequence[ToolCall]) -> OpenAction:
        """Emit ``ActionStart``; the returned handle's ``end`` emits the ``ActionEnd``."""
        span = self.trace.new_id()
        await self.trace.emit(ActionStart(**self._ids(span, self.span_id), tool_calls=tuple(calls)))
        return OpenAction(self, span, perf_counter())

    async def tool_call(self, call: ToolCall, running: Awaitable[tuple[Message, R]]) -> tuple[Message, R]:
        """Await ``running`` (the call's result message and action) between ``ToolCallStart`` and ``ToolCallEnd``.

        Agents run by the tool (agent tools) nest under this call and count in this agent's metrics too.
        """
        trace = self.trace
        span = trace.new_id()
        name, arguments = call.function.name, call.function.arguments
        await trace.emit(
            ToolCallStart(**self._ids(span, self.span_id), call_id=call.id, tool_name=name, arguments=arguments)
        )
        scope = TraceScope(
            trace=trace,
            span_id=span,
            parent_id=self.span_id,
            agent_name=self.agent_name,
            run_path=self.run_path,
            prefix=self.run_path,
            owners=self.owners,
            base=self.owners,
        )
        started = perf_counter()
        token = _CURRENT.set(scope)
        try:
            result = await running
        except InterruptSignal:
            _CURRENT.reset(token)
            await self._tool_end(span, call, started, None, None, True)
            raise
        except Exception as error:
            _CURRENT.reset(token)
            await self._tool_end(span, call, started, None, error, False)
            raise
        except BaseException:
            _CURRENT.reset(token)
            raise
        _CURRENT.reset(token)
        await self._tool_end(span, call, started, result[0].content, None, False)
        return result

    async def _tool_end(
        self,
        span: int,
        call: ToolCall,
        started: float,
        observation: str | None,
        error: BaseException | None,
        interrupted: bool,
    ) -> None:
        duration = _ms(started)
        for entry in self.owners:
            entry.tool_calls += 1
            entry.tool_duration_ms += duration
        await self.trace.emit(
            ToolCallEnd(
                **self._ids(span, self.span_id),
                call_id=call.id,
                tool_name=call.function.name,
                arguments=call.function.arguments,
                observation=observation,
                error=error,
                interrupted=interrupted,
                duration_ms=duration,
            )
        )

    def _ids(self, span_id: int, parent_id: int | None) -> dict[str, Any]:
        return {
            "run_id": self.trace.run_id,
            "agent_name": self.agent_name,
            "run_path": self.run_path,
            "span_id": span_id,
            "parent_id": parent_id,
        }


@dataclass(slots=True)
class OpenReason:
    """A model call under way."""

    scope: TraceScope
    span_id: int
    model: str
    started: float

    async def end(self, message: Message | None = None, error: BaseException | None = None) -> None:
        duration = _ms(self.started)
        meta = message.response_meta if message is not None else None
        usage = meta.usage if meta is not None else None
        for entry in self.scope.owners:
            entry.model_calls += 1
            entry.model_duration_ms += duration
            if usage is not None:
                entry.add_usage(usage)
        await self.scope.trace.emit(
            ReasonEnd(
                **self.scope._ids(self.span_id, self.scope.span_id),
                model=self.model,
                duration_ms=duration,
                message=message,
                usage=usage,
                finish_reason=meta.finish_reason if meta is not None else "",
                error=error,
            )
        )


@dataclass(slots=True)
class OpenAction:
    """The tool calls of a turn under way."""

    scope: TraceScope
    span_id: int
    started: float

    async def end(self, error: BaseException | None = None, interrupted: bool = False) -> None:
        await self.scope.trace.emit(
            ActionEnd(
                **self.scope._ids(self.span_id, self.scope.span_id),
                duration_ms=_ms(self.started),
                error=error,
                interrupted=interrupted,
            )
        )

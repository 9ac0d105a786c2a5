"""The agent contract: a name, a description, and ``run`` giving an async iterator of events (Eino's ``adk.Agent``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from ._context import RunContext
from ._events import AgentEvent, AgentInput
from ._interrupt import ResumeInfo

__all__ = ["Agent", "ResumableAgent"]


@runtime_checkable
class Agent(Protocol):
    """Anything that runs on an input and tells what it does as events.

    ``run`` is usually an async generator. Each event it yields belongs to the receiver (a streamed message in
    it is read by the receiver alone). An exception raised by ``run`` becomes an error event at the enclosing
    flow agent or Runner; the event stream always ends.
    """

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]: ...


@runtime_checkable
class ResumableAgent(Agent, Protocol):
    """An agent that can continue a run it interrupted; ``info`` carries its saved state and resume data."""

    def resume(self, info: ResumeInfo, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]: ...

"""What a run came to, for a caller that wants the answer rather than the events: ``RunResult`` (``Runner.call``).

The Runner's ``call`` runs to the end, reads every event (streamed messages joined), and hands back the last
message, the events, the session values, the interrupt with the ids to resume it by, and the metrics. An error that
ended the run is raised, not returned: a result always holds an answer or an interrupt. ``call_sync`` does the same
for scripts; inside a running event loop (a notebook, an async function) it cannot block, and says to await
``call`` instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..errors import UserError
from ..schema import Message, Stream, user
from ..trace import RunMetrics, RunTrace
from ._context import RunContext
from ._events import AgentEvent
from ._interrupt import InterruptCtx, InterruptInfo

__all__ = ["Capture", "RunResult", "blocking", "collect_events", "prompt_messages"]

R = TypeVar("R")


@dataclass(slots=True, kw_only=True)
class RunResult:
    """What one run (or resume) came to.

    ``message`` is the message of the run's last event that carries one (the final answer, or the result of a tool
    that returns directly; for an interrupted run, what was said before it stopped) and ``text`` its content.
    ``events`` are all of them, streamed messages joined. ``session_values`` are the run's at its end (an agent's
    ``output_key`` among them). ``interrupt`` is set when the run stopped to wait: ``interrupt_ids`` are the ids to
    resume it with (``Runner.call_resume(checkpoint_id, targets={id: data})``, or for a conversation
    ``Runner.call(session_id=..., targets=...)``); ``checkpoint_id`` is where the pending run was saved (None for a
    conversation, which keeps it in its session). ``metrics`` are the run's tokens, calls and durations (None with
    ``metrics=False``). ``windowed`` is True when the Runner's ``session_window`` left earlier messages of a
    conversation out of what the run was fed (False: it was fed all of them, and for a resume). How many is not
    counted: a turn reads only its window from the store.
    """

    events: list[AgentEvent] = field(default_factory=list)
    message: Message | None = None
    session_values: dict[str, Any] = field(default_factory=dict)
    interrupt: InterruptInfo | None = None
    checkpoint_id: str | None = None
    session_id: str | None = None
    metrics: RunMetrics | None = None
    windowed: bool = False

    @property
    def text(self) -> str:
        return self.message.content if self.message is not None else ""

    @property
    def interrupted(self) -> bool:
        return self.interrupt is not None

    @property
    def interrupt_contexts(self) -> list[InterruptCtx]:
        """The interrupts the run waits on, root causes each with its parents (empty when it did not stop)."""
        return list(self.interrupt.interrupt_contexts) if self.interrupt is not None else []

    @property
    def interrupt_ids(self) -> list[str]:
        """The ids a resume targets, one per root cause."""
        return [c.id for c in self.interrupt_contexts if c.is_root_cause]


class Capture:
    """What a run tells its ``call`` besides its events: its run context and its trace (for the metrics), handed
    over by the Runner when it builds them. ``windowed`` is set by a conversation."""

    __slots__ = ("ctx", "metrics", "trace", "windowed")

    def __init__(self, *, metrics: bool) -> None:
        self.metrics = metrics
        self.ctx: RunContext | None = None
        self.trace: RunTrace | None = None
        self.windowed = False

    async def result(
        self, events: Stream[AgentEvent], *, checkpoint_id: str | None = None, session_id: str | None = None
    ) -> RunResult:
        """Read ``events`` to the end; the result, or the error that ended the run raised."""
        collected = await collect_events(events)
        for event in collected:
            if event.error is not None:
                raise event.error
        result = RunResult(events=collected, session_id=session_id, windowed=self.windowed)
        for event in reversed(collected):
            variant = event.message_output
            if variant is not None and variant.message is not None:
                result.message = variant.message
                break
        for event in collected:
            if event.action is not None and isinstance(event.action.interrupted, InterruptInfo):
                result.interrupt = event.action.interrupted
                result.checkpoint_id = checkpoint_id
        if self.ctx is not None:
            result.session_values = dict(self.ctx.session.values)
        if self.trace is not None:
            result.metrics = self.trace.metrics
        return result


async def collect_events(events: Stream[AgentEvent]) -> list[AgentEvent]:
    """Every event of ``events``, with each streamed message read and joined into a whole message."""
    collected = []
    async with aclosing(events):
        async for event in events:
            variant = event.output.message_output if event.output is not None else None
            if variant is not None and variant.is_streaming:
                try:
                    await variant.get_message()
                except Exception as error:
                    if event.error is None:
                        event.error = error
            collected.append(event)
    return collected


def prompt_messages(messages: Sequence[Message] | str) -> list[Message]:
    """A prompt as messages: a string is one user message; anything but a string or messages is refused."""
    if isinstance(messages, str):
        return [user(messages)]
    expected = "expected a string or a sequence of messages"
    if isinstance(messages, Message):
        raise UserError(f"Runner.call: {expected}, got one Message (pass [message])")
    try:
        listed = list(messages)
    except TypeError:
        raise UserError(f"Runner.call: {expected}, got {type(messages).__qualname__}") from None
    for i, message in enumerate(listed):
        if not isinstance(message, Message):
            raise UserError(f"Runner.call: {expected}, got {type(message).__qualname__} at position {i}")
    return listed


def blocking(call: Coroutine[Any, Any, R], name: str, instead: str) -> R:
    """Run ``call`` to its end for a caller without an event loop; inside one (Jupyter's, an async function's),
    which cannot wait for itself, refuse, saying to await ``instead``."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(call)
    call.close()
    raise UserError(
        f"Runner.{name} cannot block inside a running event loop (a notebook, an async function): expected no "
        f"running loop, got one; use {instead} there instead (a notebook takes a top-level await)"
    )

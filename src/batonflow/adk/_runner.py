"""The Runner: runs an agent tree for a caller and hands back its events (reference §A.9).

It wraps the root in a flow agent, seeds the run's session, numbers the events, and turns anything an agent
raises into an error event: the event stream always ends, and a caller that stops reading early closes it all.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from typing import Any

from ..errors import UserError
from ..schema import Message, Stream, user
from ._agent import Agent
from ._context import RunContext, RunSession
from ._events import AgentEvent, AgentInput
from ._flow import FlowAgent

__all__ = ["Runner"]


class Runner:
    """Runs ``agent`` (and the tree below it) once per call of ``run`` / ``query``.

    A Runner holds configuration only; concurrent runs do not share state.
    """

    def __init__(
        self,
        agent: Agent,
        *,
        enable_streaming: bool = False,
        session_values: Mapping[str, Any] | None = None,
        skip_transfer_messages: bool = False,
    ) -> None:
        self.agent = agent if isinstance(agent, FlowAgent) else FlowAgent(agent)
        self.enable_streaming = enable_streaming
        self.session_values = dict(session_values or {})
        self.skip_transfer_messages = skip_transfer_messages
        _check_tree(self.agent)

    def run(
        self, messages: Sequence[Message], *, session_values: Mapping[str, Any] | None = None
    ) -> Stream[AgentEvent]:
        """The events of one run on ``messages``; read them with ``async for``, close the stream to stop early."""
        values = {**self.session_values, **(session_values or {})}
        ctx = RunContext(
            session=RunSession(values=values),
            enable_streaming=self.enable_streaming,
            skip_transfer_messages=self.skip_transfer_messages,
        )
        input = AgentInput(messages=list(messages), enable_streaming=self.enable_streaming)
        return Stream.from_async_iter(self._events(input, ctx))

    def query(self, text: str, *, session_values: Mapping[str, Any] | None = None) -> Stream[AgentEvent]:
        return self.run([user(text)], session_values=session_values)

    async def _events(self, input: AgentInput, ctx: RunContext) -> AsyncIterator[AgentEvent]:
        seq = 0
        try:
            async with aclosing(self.agent.run(input, ctx)) as events:  # type: ignore[type-var]
                async for event in events:
                    seq += 1
                    event.seq = seq
                    yield event
        except Exception as error:  # the root flow agent catches its agent's errors; this is the last line
            yield AgentEvent(agent_name=self.agent.name, error=error, seq=seq + 1)

    # -- conveniences for scripts ------------------------------------------------------------------------------

    def run_sync(
        self, messages: Sequence[Message], *, session_values: Mapping[str, Any] | None = None
    ) -> list[AgentEvent]:
        """All events of a run, streamed messages joined; for scripts and notebooks without an event loop."""
        return asyncio.run(collect_events(self.run(messages, session_values=session_values)))

    def query_sync(self, text: str, *, session_values: Mapping[str, Any] | None = None) -> list[AgentEvent]:
        return self.run_sync([user(text)], session_values=session_values)


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


def _check_tree(root: FlowAgent) -> None:
    names = [agent.name for agent in root.walk()]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise UserError(f"agent tree of '{root.name}': expected unique agent names, got {repeated} more than once")
    if not all(names):
        raise UserError(f"agent tree of '{root.name}': expected every agent to have a name, got an empty one")

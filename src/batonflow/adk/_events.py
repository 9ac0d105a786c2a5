"""What agents say: events carrying a message (whole or streamed), an action, or an error (Eino's ``AgentEvent``)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from ..codec import register_type
from ..errors import StreamClosedError
from ..schema import Message, MessageStream, Role, RunStep, Tap, concat_messages
from ..tools import InterruptSignal

__all__ = [
    "AgentAction",
    "AgentEvent",
    "AgentInput",
    "AgentOutput",
    "BreakLoopAction",
    "MessageVariant",
    "TransferToAgentAction",
    "break_loop_action",
    "event_from_message",
    "exit_action",
    "transfer_action",
]


@dataclass(slots=True, kw_only=True)
class AgentInput:
    messages: list[Message]
    enable_streaming: bool = False


@dataclass(slots=True, kw_only=True)
class MessageVariant:
    """A message, or a stream of its chunks when ``is_streaming``.

    A streamed variant's stream is exclusive to whoever receives the event: read it or close it. Once it is read,
    ``get_message()`` still gives the whole message, joined from the chunks the stream gave.
    """

    is_streaming: bool = False
    message: Message | None = None
    message_stream: MessageStream | None = None
    role: Role = "assistant"
    tool_name: str = ""
    # Set by producers that read the whole stream themselves (ChatModelAgent): the joined message, so that
    # recording a streamed event costs no second copy of every chunk.
    _joined: asyncio.Future[Message] | None = field(default=None, repr=False, compare=False)
    # The chunks ``message_stream`` gives, kept as its reader reads them (by the agent that streams them, or by the
    # history that records them): what ``get_message()`` joins once the reader has read the stream.
    _kept: Tap[Message] | None = field(default=None, repr=False, compare=False)

    async def get_message(self) -> Message:
        """The whole message; for a stream this reads (and closes) what its reader has not read yet, and joins every
        chunk it gave, also when the reader has read it all already."""
        if self.message is not None:
            return self.message
        stream = self.message_stream
        assert self.is_streaming and stream is not None
        kept = self._kept
        chunks: list[Message] | None
        if kept is None:
            chunks = await stream.collect()
            if not chunks:
                raise StreamClosedError(
                    "cannot join a streamed message: expected its chunks, got none (its stream was read already, by "
                    "a reader nobody kept the chunks for, or was empty)"
                )
        else:
            if not stream.closed:
                try:
                    async for _ in stream:  # what the reader has not read yet
                        pass
                finally:
                    await stream.aclose()
            chunks = kept.kept()
            if chunks is None:
                raise StreamClosedError(
                    "cannot join a streamed message: expected a stream read to its end, got one its reader closed "
                    "before the end (call get_message() instead of closing it)"
                )
        self.message = concat_messages(chunks)
        return self.message

    def peek_message(self) -> Message | None:
        """The whole message if it is known without reading the stream: always for a message; for a stream, once
        its reader has read it to the end (or the agent that streamed it has), else None."""
        if not self.is_streaming or self.message is not None:
            return self.message
        joined = self._joined
        if joined is not None and joined.done() and not joined.cancelled() and joined.exception() is None:
            return joined.result()
        return None


@dataclass(slots=True, kw_only=True)
class AgentOutput:
    message_output: MessageVariant | None = None
    customized_output: Any = None


@dataclass(slots=True, frozen=True)
class TransferToAgentAction:
    dest_agent_name: str


@dataclass(slots=True, kw_only=True)
class BreakLoopAction:
    """Asks the innermost enclosing loop agent to stop after the current sub-agent, as in Eino."""

    from_agent: str
    done: bool = False
    current_iterations: int = 0


@dataclass(slots=True, kw_only=True)
class AgentAction:
    exit: bool = False
    interrupted: Any = None
    transfer_to_agent: TransferToAgentAction | None = None
    break_loop: BreakLoopAction | None = None
    customized_action: Any = None
    # The interrupt's signal tree (ids, addresses, saved state) for the Runner's checkpoint; ``interrupted``
    # is what the caller reads.
    signal: InterruptSignal | None = field(default=None, repr=False, compare=False)


# Recorded events carry their actions into checkpoints; the names are what stored checkpoints say.
register_type(AgentAction, name="AgentAction")
register_type(TransferToAgentAction, name="TransferToAgentAction")
register_type(BreakLoopAction, name="BreakLoopAction")


@dataclass(slots=True, kw_only=True)
class AgentEvent:
    """One thing an agent did. ``run_path`` and ``agent_name`` are filled in by the framework."""

    agent_name: str = ""
    run_path: tuple[RunStep, ...] = ()
    output: AgentOutput | None = None
    action: AgentAction | None = None
    error: BaseException | None = None
    # Position in the run's event sequence, set by the Runner: consumers drop duplicates and resume by it.
    seq: int = 0

    @property
    def message_output(self) -> MessageVariant | None:
        return self.output.message_output if self.output is not None else None


def event_from_message(
    message: Message | None = None,
    stream: MessageStream | None = None,
    *,
    role: Role = "assistant",
    tool_name: str = "",
) -> AgentEvent:
    """An event carrying a whole message or a stream of its chunks."""
    variant = MessageVariant(
        is_streaming=stream is not None, message=message, message_stream=stream, role=role, tool_name=tool_name
    )
    return AgentEvent(output=AgentOutput(message_output=variant))


def exit_action() -> AgentAction:
    return AgentAction(exit=True)


def transfer_action(dest_agent_name: str) -> AgentAction:
    return AgentAction(transfer_to_agent=TransferToAgentAction(dest_agent_name))


def break_loop_action(agent_name: str) -> AgentAction:
    return AgentAction(break_loop=BreakLoopAction(from_agent=agent_name))

"""A console renderer: a run's agent events as lines of text, printed as they arrive.

Each line starts with the event's run path and agent, ``[router → refund_agent] refund_agent``, followed by what
happened: the text the agent says (streamed text chunk by chunk, so a person watches it being written), the tool
calls it makes with their arguments, tool results, transfers, interrupts (a human-approval interrupt lists each
call waiting for a decision) and errors. It reads the same streams the run's other consumers read and never
changes an event.
"""

from __future__ import annotations

import json
import sys
from contextlib import aclosing
from typing import TextIO

from ..adk import AgentEvent, InterruptCtx, InterruptInfo
from ..agents import HITLPending
from ..errors import ModelJSONError
from ..schema import Message, Stream, concat_messages
from ..tools import parse_model_json

__all__ = ["ConsoleRenderer"]


class ConsoleRenderer:
    """Prints agent events to ``out`` (standard output, looked up at each call, when None)."""

    def __init__(self, out: TextIO | None = None) -> None:
        self._out = out

    @property
    def out(self) -> TextIO:
        return sys.stdout if self._out is None else self._out

    async def print_events(self, events: Stream[AgentEvent]) -> list[InterruptCtx]:
        """Print every event of a run as it arrives; the interrupts the run stopped at, if it did."""
        stopped: list[InterruptCtx] = []
        async with aclosing(events):
            async for event in events:
                await self.print_event(event)
                interrupted = event.action.interrupted if event.action is not None else None
                if isinstance(interrupted, InterruptInfo):
                    stopped = interrupted.interrupt_contexts
        return stopped

    async def print_event(self, event: AgentEvent) -> None:
        """One event as lines: ``[run path] agent ...``."""
        path = " → ".join(str(step) for step in event.run_path) or event.agent_name
        head = f"[{path}] {event.agent_name}"
        variant = event.message_output
        if variant is not None and variant.role == "assistant":
            message = await self._print_message(event, head)
            for call in message.tool_calls if message else ():
                self._line(f"{head} calls {self.format_call(call.function.name, call.function.arguments)}")
        elif variant is not None and variant.role == "tool":
            transfer = event.action.transfer_to_agent if event.action else None
            if transfer is not None:
                self._line(f"{head} → transfer to {transfer.dest_agent_name}")
            else:
                try:
                    result = (await variant.get_message()).content  # a streaming tool's chunks, joined
                except Exception:
                    result = "[stream failed]"  # the agent reports why in an error event
                self._line(f"{head} ← {variant.tool_name}: {result}")
        interrupted = event.action.interrupted if event.action is not None else None
        if isinstance(interrupted, InterruptInfo):
            for cause in interrupted.interrupt_contexts:
                self._print_interrupt(head, cause)
        if event.error is not None:
            self._line(f"{head} error: {type(event.error).__name__}: {event.error}")

    def _print_interrupt(self, head: str, cause: InterruptCtx) -> None:
        if isinstance(cause.info, HITLPending):
            for task in cause.info.tasks:
                call = self.format_call(task.tool_name, task.arguments)
                self._line(f"{head} waits for approval: {call} ({task.comment})")
        else:
            self._line(f"{head} interrupted: {cause.info}")

    async def _print_message(self, event: AgentEvent, head: str) -> Message | None:
        """Print an assistant message's text (chunk by chunk if streamed); the whole message, or None if it failed."""
        variant = event.message_output
        assert variant is not None
        if not variant.is_streaming:
            assert variant.message is not None
            if variant.message.content:
                self._line(f"{head}: {variant.message.content.strip()}")
            return variant.message
        assert variant.message_stream is not None
        out = self.out
        chunks: list[Message] = []
        printing = False
        try:
            async with aclosing(variant.message_stream):
                async for chunk in variant.message_stream:
                    chunks.append(chunk)
                    if chunk.content and not printing:
                        printing = True
                        print(f"{head}: {chunk.content.lstrip()}", end="", file=out, flush=True)
                    elif chunk.content:
                        print(chunk.content, end="", file=out, flush=True)
        except Exception:
            # The agent reads the same stream and reports the failure as an error event, printed next.
            print(" [stream failed]" if printing else "", file=out)
            return None
        if printing:
            print(file=out)
        return concat_messages(chunks) if chunks else None

    @staticmethod
    def format_call(name: str, arguments: str) -> str:
        """A tool call as ``name(key="value", ...)``; arguments that are not a JSON object as the model wrote them."""
        try:
            parsed = parse_model_json(arguments or "{}")
        except ModelJSONError:
            return f"{name}({arguments})"
        if not isinstance(parsed, dict):
            return f"{name}({arguments})"
        shown = ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in parsed.items())
        return f"{name}({shown})"

    def _line(self, text: str) -> None:
        print(text, file=self.out, flush=True)

"""A run's agent events on the terminal, as ``batonflow chat`` and ``batonflow run`` print them: each agent's
words streamed in a colour of its own, tool calls, results and transfers as they happen, interrupts and errors."""

from __future__ import annotations

import json
import re
import zlib
from contextlib import aclosing
from typing import Any

from rich.console import Console
from rich.text import Text

from ..adk import AgentEvent, InterruptCtx, InterruptInfo
from ..observe import ConsoleRenderer
from ..schema import Message, Stream

__all__ = ["EventPrinter", "cut", "info_text", "plain"]

_COLOURS = ("cyan", "magenta", "green", "yellow", "blue", "bright_red", "bright_cyan", "bright_magenta")


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def plain(text: str, style: str = "") -> Text:
    """Data as Rich text: no markup read in it (``[/]`` prints as itself), and control characters but newline and
    tab shown escaped (``\\x1b``), so that what a model, a tool or a server sent cannot restyle, move or clear the
    terminal."""
    return Text(_CONTROL.sub(lambda m: repr(m.group())[1:-1], text), style=style)


class EventPrinter:
    """Prints agent events on ``console``; ``errors`` keeps the error events it printed, so that a command can
    tell a run that failed from one that answered."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.errors: list[BaseException] = []

    async def show(self, events: Stream[AgentEvent]) -> list[InterruptCtx]:
        """Print a run's events as they come; the interrupts it stopped at."""
        stopped: list[InterruptCtx] = []
        async with aclosing(events):
            async for event in events:
                await self._print(event)
                interrupted = event.action.interrupted if event.action is not None else None
                if isinstance(interrupted, InterruptInfo):
                    stopped = interrupted.interrupt_contexts
        return stopped

    async def _print(self, event: AgentEvent) -> None:
        colour = _COLOURS[zlib.crc32(event.agent_name.encode()) % len(_COLOURS)]
        variant = event.message_output
        action = event.action
        if variant is not None and variant.role == "assistant":
            message = await self._streamed(event, colour)
            for call in message.tool_calls if message else ():
                shown = ConsoleRenderer.format_call(call.function.name, call.function.arguments)
                self.console.print(plain(f"  ⚙ {event.agent_name} calls {shown}", "dim"))
        elif variant is not None and variant.role == "tool":
            if action is not None and action.transfer_to_agent is not None:
                target = action.transfer_to_agent.dest_agent_name
                self.console.print(plain(f"  ⇢ {event.agent_name} transfers to {target}", f"bold {colour}"))
            else:
                try:
                    result = (await variant.get_message()).content  # a streaming tool's chunks, joined
                except Exception:
                    result = "[stream failed]"  # the agent reports why in an error event
                self.console.print(plain(f"  ← {variant.tool_name}: {cut(result)}", "dim"))
        if action is not None and isinstance(action.interrupted, InterruptInfo):
            for cause in action.interrupted.interrupt_contexts:
                self.console.print(plain(f"  ? {event.agent_name} waits: {info_text(cause.info)}", "yellow"))
        if event.error is not None:
            self.errors.append(event.error)
            self.console.print(plain(f"error: {type(event.error).__name__}: {event.error}", "bold red"))

    async def _streamed(self, event: AgentEvent, colour: str) -> Message | None:
        """An assistant message, printed as its chunks come; the whole message, or None when its stream failed
        (the agent reads the same stream and reports the failure in an error event, printed next)."""
        variant = event.message_output
        assert variant is not None
        head = plain(f"{event.agent_name}› ", f"bold {colour}")
        if not variant.is_streaming or variant.message_stream is None:
            message = variant.message
            if message is not None and message.content:
                self.console.print(head + plain(message.content, colour))
            return message
        printed = False
        try:
            async with aclosing(variant.message_stream) as chunks:
                async for chunk in chunks:
                    if chunk.content:
                        if not printed:
                            self.console.print(head, end="")
                            printed = True
                        self.console.print(plain(chunk.content, colour), end="")
            message = await variant.get_message()
        except Exception:
            if printed:
                self.console.print(plain(" [stream failed]", "dim"))
            return None
        if printed:
            self.console.print()
        return message


def info_text(info: Any) -> str:
    """What an interrupt asks, as text: its info itself when a string, else as JSON."""
    return info if isinstance(info, str) else json.dumps(info, ensure_ascii=False, default=str)


def cut(text: str, limit: int = 200) -> str:
    """``text``, cut at ``limit`` characters with an ellipsis."""
    return text if len(text) <= limit else f"{text[:limit]}…"

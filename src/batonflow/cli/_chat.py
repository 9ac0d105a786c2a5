"""``batonflow chat``: a conversation with an agent tree on the terminal.

Each agent's words stream in a colour of its own, tool calls and transfers show as they happen (``EventPrinter``),
and a run that stops for a person asks on the spot (a tool's question takes any answer, JSON or text; a human approval takes y/n
per call) and resumes. Ctrl-C during a run cancels it and returns to the prompt, the message that started it kept
in the conversation; Ctrl-C at the prompt, Ctrl-D or ``/exit`` leaves.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import threading
from contextlib import suppress
from typing import Any

from rich.console import Console

from ..adk import Agent, InterruptCtx
from ..agents import HITLDecision, HITLPending, Runner, Session
from ..errors import UserError
from ..observe import ConsoleRenderer
from ..schema import user
from ..store import SessionStore
from ._events import EventPrinter, info_text, plain

__all__ = ["Chat", "Lines", "pick"]


class Lines:
    """Lines of standard input, read on a thread of their own so that the event loop (and Ctrl-C) stays free;
    None once the input ends, or once ``close`` is called."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()
        self._stdin = sys.stdin
        threading.Thread(target=self._read, name="batonflow chat input", daemon=True).start()

    def _read(self) -> None:
        while True:
            line = self._stdin.readline()
            self._loop.call_soon_threadsafe(self._queue.put_nowait, line.rstrip("\n") if line else None)
            if not line:
                return

    async def read(self) -> str | None:
        return await self._queue.get()

    def close(self) -> None:
        self._queue.put_nowait(None)


class Chat:
    """One terminal conversation with ``agent`` under ``session_id`` in ``sessions``."""

    def __init__(self, agent: Agent, *, session_id: str, sessions: SessionStore, console: Console) -> None:
        self.runner = Runner(agent, enable_streaming=True, session_store=sessions)
        self.session_id = session_id
        self.sessions = sessions
        self.console = console
        self.printer = EventPrinter(console)
        self._turn: asyncio.Task[None] | None = None
        self._quit = False

    async def loop(self) -> int:
        """Read prompts until the input ends: 0, or 130 when Ctrl-C at the prompt ended it."""
        lines = Lines()
        loop = asyncio.get_running_loop()
        with suppress(NotImplementedError, RuntimeError, ValueError):  # no signals off the main thread
            loop.add_signal_handler(signal.SIGINT, self._interrupt, lines)
        try:
            while True:
                self.console.print(plain("you> ", "bold"), end="")
                text = await lines.read()
                if text is None or text.strip() in ("/exit", "/quit"):
                    self.console.print()
                    return 130 if self._quit else 0
                if text.strip():
                    await self._run_turn(text.strip(), lines)
        finally:
            with suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signal.SIGINT)

    def _interrupt(self, lines: Lines) -> None:
        if self._turn is not None and not self._turn.done():
            self._turn.cancel()
        else:
            self._quit = True
            lines.close()

    async def _run_turn(self, text: str, lines: Lines) -> None:
        self._turn = asyncio.create_task(self.turn(text, lines))
        await asyncio.wait([self._turn])
        if self._turn.cancelled():
            self.console.print(plain("\n[cancelled: the message stays in the conversation]", "dim"))
            await self._keep(text)
        elif self._turn.exception() is not None:
            error = self._turn.exception()
            self.console.print(plain(f"error: {type(error).__name__}: {error}", "bold red"))
        self._turn = None

    async def _keep(self, text: str) -> None:
        """Add the prompt of a cancelled run to the conversation (the run saves only what it finished)."""
        session = await Session.load(self.sessions, self.session_id, window=1)
        if not session.messages or session.messages[-1].content != text:
            session.add(user(text))
            await session.save()

    async def turn(self, text: str, lines: Lines) -> None:
        """One prompt, and the answers to every interrupt it comes to."""
        stopped = await self.printer.show(self.runner.run([user(text)], session_id=self.session_id))
        while stopped:
            targets: dict[str, Any] = {}
            for cause in stopped:
                answer = await self.ask(cause, lines)
                if answer is None:
                    return
                targets[cause.id] = answer
            stopped = await self.printer.show(self.runner.run([], session_id=self.session_id, targets=targets))

    async def ask(self, cause: InterruptCtx, lines: Lines) -> Any:
        """The answer to one interrupt, read from the terminal; None when the input ended."""
        if isinstance(cause.info, HITLPending):
            decisions = {}
            for task in cause.info.tasks:
                call = ConsoleRenderer.format_call(task.tool_name, task.arguments)
                self.console.print(plain(f"  approve {call}? [y/n] ", "bold yellow"), end="")
                reply = await lines.read()
                if reply is None:
                    return None
                approved = reply.strip().lower() in ("y", "yes")
                decisions[task.call_id] = HITLDecision(action="approve" if approved else "reject")
            return decisions
        self.console.print(plain(f"  {info_text(cause.info)} > ", "bold yellow"), end="")
        reply = await lines.read()
        return None if reply is None else _value(reply)


def _value(reply: str) -> Any:
    """A reply as JSON when it is JSON (``true``, ``42``, ``{"a": 1}``), else as the text typed."""
    try:
        return json.loads(reply)
    except ValueError:
        return reply


def pick(agents: dict[str, Agent], name: str | None, command: str = "chat") -> Agent:
    """The agent ``command`` runs: ``name``, or the only one."""
    if not agents:
        raise UserError(f"{command}: expected a target with an agent, got graphs only (serve them: batonflow serve)")
    if name is None:
        if len(agents) == 1:
            return next(iter(agents.values()))
        raise UserError(f"--agent: expected one of {sorted(agents)} (the target holds several), got none")
    if name not in agents:
        raise UserError(f"--agent: expected one of {sorted(agents)}, got {name!r}")
    return agents[name]

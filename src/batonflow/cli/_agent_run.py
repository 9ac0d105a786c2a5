"""``batonflow run module:attr --input TEXT``: one run of an agent on the terminal, as one turn of ``chat`` prints
it, for scripts: the exit code says how it ended (0 answered, 1 failed, 3 waiting for a person).

A run that stops at interrupts prints each one's id and what it asks, and how to answer: its checkpoint is in the
``--store``, so with ``sqlite:PATH`` ``batonflow checkpoints resume --target`` resumes it on that file, as a server on
that file does (``batonflow checkpoints resume --agent``); in memory it ends with the command, and ``batonflow chat``
answers interrupts inline instead.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import typer
from rich.console import Console

from ..adk import Agent, AgentEvent, InterruptCtx, Runner
from ..agents import HITLPending
from ..errors import UserError
from ..schema import Stream, user
from ..store import CheckpointStore
from ._events import EventPrinter, cut, info_text, plain

__all__ = ["ANSWERED", "FAILED", "WAITING", "AgentRun", "agent_run", "answer_hint"]

ANSWERED, FAILED, WAITING = 0, 1, 3


@dataclass(slots=True, kw_only=True)
class AgentRun:
    """One run of ``agent`` (named ``name`` in ``target``) on ``checkpoints`` (described by ``store``)."""

    target: str
    name: str
    agent: Agent
    checkpoints: CheckpointStore
    store: str
    console: Console

    async def run(self, text: str, checkpoint_id: str | None = None) -> int:
        """Run on ``text``, printing as it goes; the exit code."""
        checkpoint_id = checkpoint_id or f"run-{uuid.uuid4().hex[:12]}"
        return await self._shown(lambda runner: runner.run([user(text)], checkpoint_id=checkpoint_id), checkpoint_id)

    async def resume(self, checkpoint_id: str, targets: dict[str, Any]) -> int:
        """Resume the run waiting at ``checkpoint_id`` with ``targets``, printing as it goes; the exit code."""
        return await self._shown(lambda runner: runner.resume(checkpoint_id, targets), checkpoint_id)

    async def _shown(self, start: Callable[[Runner], Stream[AgentEvent]], checkpoint_id: str) -> int:
        runner = Runner(self.agent, enable_streaming=True, checkpoint_store=self.checkpoints)
        printer = EventPrinter(self.console)
        try:
            stopped = await printer.show(start(runner))
        finally:
            await self.checkpoints.close()
        if printer.errors:
            return FAILED
        if not stopped:
            return ANSWERED
        self.console.print(plain(f"the run waits at checkpoint {checkpoint_id} for:", "bold yellow"))
        for cause in stopped:
            self.console.print(plain(f"  {cause.id}: {info_text(cause.info)}", "yellow"))
            if isinstance(cause.info, HITLPending) and len(cause.info.tasks) > 1:
                for task in cause.info.tasks:
                    call = f"{task.tool_name}({cut(task.arguments, 120)})"
                    self.console.print(plain(f"    {cause.id}:{task.call_id}: {call}", "yellow"))
        for line in self._how_to_resume(checkpoint_id, stopped):
            self.console.print(plain(line, "dim"))
        return WAITING

    def _how_to_resume(self, checkpoint_id: str, stopped: list[InterruptCtx]) -> list[str]:
        if self.store == "memory":
            return [
                "its checkpoint was in memory and ends with this command: run it with --store sqlite:PATH to "
                "resume it later, or answer inline with batonflow chat " + self.target
            ]
        answers = " ".join(answer_hint(cause) for cause in stopped)
        lines = [
            f"resume it: batonflow checkpoints resume {checkpoint_id} --target {self.target} --agent {self.name} "
            f"--store {self.store} {answers}",
            f"or on a server over the same store (batonflow serve {self.target} --store {self.store}): "
            f"batonflow checkpoints resume {checkpoint_id} --agent {self.name} {answers}",
        ]
        if any(isinstance(cause.info, HITLPending) for cause in stopped):
            lines.append(
                "  an approval takes --approve ID, --reject ID, --skip ID or --edit ID=JSON, and --comment TEXT; "
                "ID:CALL_ID decides one of its calls, --comment ID=TEXT comments one decision"
            )
        return lines


def answer_hint(cause: InterruptCtx) -> str:
    """The option that answers ``cause``: an approval is approved, a question is answered with a VALUE."""
    return f"--approve {cause.id}" if isinstance(cause.info, HITLPending) else f"--answer {cause.id}=VALUE"


def agent_run(ctx: typer.Context, target: str, name: str | None, store: str) -> AgentRun:
    """The run ``batonflow run module:attr`` makes; a target, an agent or a store it cannot use is bad usage."""
    from ._chat import pick
    from ._target import load_target, open_stores

    try:
        chosen = pick(load_target(target)[0], name, "run")
        checkpoints, _ = open_stores(store)
    except UserError as error:
        raise typer.BadParameter(str(error), ctx) from None
    console = Console(highlight=False, soft_wrap=True)
    return AgentRun(
        target=target, name=chosen.name, agent=chosen, checkpoints=checkpoints, store=store, console=console
    )

"""``batonflow run module:attr --input TEXT``: one run of an agent on the terminal, as one turn of ``chat`` prints
it, for scripts: the exit code says how it ended (0 answered, 1 failed, 3 waiting for a person).

A run that stops at interrupts prints each one's id and what it asks, and how to answer: its checkpoint is in the
``--store``, so with ``sqlite:PATH`` a server on that file resumes it (``batonflow checkpoints resume``); in memory
it ends with the command, and ``batonflow chat`` answers interrupts inline instead.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from rich.console import Console

from ..adk import Agent, Runner
from ..schema import user
from ..store import CheckpointStore
from ._events import EventPrinter, info_text, plain

__all__ = ["ANSWERED", "FAILED", "WAITING", "AgentRun"]

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
        runner = Runner(self.agent, enable_streaming=True, checkpoint_store=self.checkpoints)
        printer = EventPrinter(self.console)
        try:
            stopped = await printer.show(runner.run([user(text)], checkpoint_id=checkpoint_id))
        finally:
            await self.checkpoints.close()
        if printer.errors:
            return FAILED
        if not stopped:
            return ANSWERED
        self.console.print(plain(f"the run waits at checkpoint {checkpoint_id} for:", "bold yellow"))
        for cause in stopped:
            self.console.print(plain(f"  {cause.id}: {info_text(cause.info)}", "yellow"))
        for line in self._how_to_resume(checkpoint_id, [cause.id for cause in stopped]):
            self.console.print(plain(line, "dim"))
        return WAITING

    def _how_to_resume(self, checkpoint_id: str, ids: list[str]) -> list[str]:
        if self.store == "memory":
            return [
                "its checkpoint was in memory and ends with this command: run it with --store sqlite:PATH to "
                "resume it later, or answer inline with batonflow chat " + self.target
            ]
        answers = " ".join(f"--answer {interrupt}=VALUE" for interrupt in ids)
        return [
            f"resume it on a server over the same store: batonflow serve {self.target} --store {self.store}",
            f"then: batonflow checkpoints resume {checkpoint_id} --agent {self.name} {answers}",
        ]

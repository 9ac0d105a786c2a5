"""Running the demo: each turn as a run of the tree, its events printed, approvals decided, and the shop at the end."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Literal, TextIO, TypeAlias

from ...adk import InterruptCtx, Runner
from ...agents import HITL, HITLDecision, HITLPending, PendingTask
from ...errors import UserError
from ...models import ChatModel, load_model
from ...observe import ConsoleRenderer
from ...store import MemoryCheckpointStore
from ._agents import build_system, scripted_model
from ._shop import Shop, print_changes

__all__ = ["TURNS", "Approval", "Approver", "load_demo_model", "run_demo"]

TURNS = (
    "Order 1042 arrived damaged. Please refund it.",
    "I want to complain: the courier threw order 1043 over the fence.",
    "Do you sell headphones with noise cancelling?",
    "Please refund order 1044 too, the earbuds.",
)

Approval: TypeAlias = Literal["auto", "ask", "yes", "no"]


class Approver:
    """Decides the demo's pending refunds, as the person at the terminal or by a rule.

    ``ask`` asks ``[y/n]`` on ``stdin``; ``yes`` and ``no`` decide every refund alike; ``auto`` asks when ``stdin``
    is a terminal, and otherwise (CI, a pipe) approves the first refund and rejects the later ones, so that one
    run shows both outcomes.
    """

    def __init__(self, mode: Approval, *, stdin: TextIO, out: TextIO) -> None:
        if mode not in ("auto", "ask", "yes", "no"):
            raise UserError(f"approve: expected one of auto, ask, yes, no, got {mode!r}")
        self.mode = "ask" if mode == "auto" and stdin.isatty() else mode
        self.stdin = stdin
        self.out = out
        self.decided: list[tuple[PendingTask, HITLDecision]] = []

    def decide(self, task: PendingTask) -> HITLDecision:
        prompt = f"approve {_described(task)}? [y/n] "
        if self.mode == "ask":
            approved = self._ask(prompt)
        else:
            approved = self.mode == "yes" or (self.mode == "auto" and not self.decided)
            why = "stdin is not a terminal: the first refund is approved, later ones rejected"
            rule = why if self.mode == "auto" else f"--approve {self.mode}"
            print(f"{prompt}{'y' if approved else 'n'}  ({rule})", file=self.out)
        decision = HITL.approve("approved by the user") if approved else HITL.reject("rejected by the user")
        print(f"→ {decision.comment}", file=self.out, flush=True)
        self.decided.append((task, decision))
        return decision

    def _ask(self, prompt: str) -> bool:
        while True:
            print(prompt, end="", file=self.out, flush=True)
            line = self.stdin.readline()
            if not line:
                print("n  (no more input)", file=self.out)
                return False
            if not self.stdin.isatty():
                print(line.strip(), file=self.out)  # what a terminal would have echoed
            answer = line.strip().lower()
            if answer in ("y", "yes", "n", "no"):
                return answer.startswith("y")

    def targets(self, stopped: Sequence[InterruptCtx]) -> dict[str, dict[str, HITLDecision]]:
        """The resume's targets for the approvals a run stopped at: a decision for each pending call."""
        return {
            cause.id: {task.call_id: self.decide(task) for task in cause.info.tasks}
            for cause in stopped
            if isinstance(cause.info, HITLPending)
        }

    def print_decisions(self) -> None:
        if self.decided:
            print("\n== the approvals ==", file=self.out)
        for task, decision in self.decided:
            print(f"{'approved' if decision.action == 'approve' else 'rejected'}: {_described(task)}", file=self.out)


def _described(task: PendingTask) -> str:
    return ConsoleRenderer.format_call(task.tool_name, task.arguments)


def load_demo_model(uri: str) -> ChatModel:
    """The model ``uri`` names, or a ``UserError`` that also offers ``scripted``."""
    try:
        return load_model(uri)
    except UserError as error:
        raise UserError(f"{error} (the demo also takes 'scripted', a replay without any model)") from error


async def run_demo(
    model_uri: str,
    *,
    out: TextIO,
    turns: Sequence[str] = TURNS,
    approve: Approval = "auto",
    stdin: TextIO | None = None,
) -> None:
    """Run each of ``turns`` as its own run of the customer-service tree on ``model_uri``, printing as it goes.

    A run that stops for a refund's approval is resumed with the decision of ``approve`` (see ``Approver``; it
    reads ``stdin``, ``sys.stdin`` by default). Raises ``UserError`` for a model URI that cannot work; failures
    during the runs are printed as error events.
    """
    approver = Approver(approve, stdin=stdin or sys.stdin, out=out)
    model = scripted_model() if model_uri == "scripted" else load_demo_model(model_uri)
    local = model_uri.startswith("local:")
    # llama.cpp keeps the last prompt of a loaded model in its cache: with a model of its own, the router's long
    # prompt (instruction, agents, example routings) is read on the first turn only; measured on 2 busy cores,
    # its later calls went from 6-8 s to about 1 s.
    router_model = load_demo_model(model_uri) if local else model
    shop = Shop()
    console = ConsoleRenderer(out)
    runner = Runner(
        # The default local model (SmolLM2) tells its specialists when to call their tool by itself; other
        # llama.cpp models are guided here.
        build_system(model, shop, guided=local and not getattr(model, "guided", False), router_model=router_model),
        enable_streaming=True,
        skip_transfer_messages=True,  # the specialist sees the request, not the router's transfer call
        checkpoint_store=MemoryCheckpointStore(),  # where a run waiting for an approval is kept
    )
    print(f"batonflow demo: customer service on model {model_uri} ({model.model_name})", file=out)
    print("agents: router → refund_agent | complaint_agent | product_agent", file=out)
    total = 0.0
    for number, text in enumerate(turns, 1):
        print(f"\n== turn {number} of {len(turns)} ==\nuser: {text}", file=out, flush=True)
        checkpoint_id = f"turn-{number}"
        events = runner.query(text, checkpoint_id=checkpoint_id)
        running = 0.0  # the agents' time, without the time a person takes to decide
        while True:
            started = time.perf_counter()
            stopped = await console.print_events(events)
            running += time.perf_counter() - started
            targets = approver.targets(stopped)
            if not targets:
                break
            events = runner.resume(checkpoint_id, targets=targets)
        print(f"(turn {number}: {running:.2f} s)", file=out, flush=True)
        total += running
    print_changes(shop, out)
    approver.print_decisions()
    print(f"\n{len(turns)} turns in {total:.2f} s", file=out)

"""What every framework module provides, and the fixed shape of each workload.

Every framework runs the same six workloads against a zero-latency fake model. The fakes are stateless: they
pick their answer from the last input item (a dict lookup), so one agent definition serves sequential and
concurrent runs alike and no framework pays for rebuilding agents or models per run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "ANSWER",
    "CHUNK",
    "N_BRANCHES",
    "N_CHUNKS",
    "N_STEPS",
    "QUESTION",
    "REQUEST",
    "TOOL_RESULT",
    "WORKLOADS",
    "Counter",
    "Run",
    "Workloads",
    "branch_answer",
    "branch_name",
    "call_id",
    "check",
    "check_branches",
    "inner_answer",
    "inner_name",
]

WORKLOADS = {
    "W1": "w1_single_turn",
    "W2": "w2_tool_loop",
    "W3": "w3_transfer_chain",
    "W4": "w4_stream",
    "W5": "w5_concurrent",
    "W6": "w6_parallel_agent_tool",
}
"""Workload name → the key of its result in a worker's report."""

QUESTION = "hi"
ANSWER = "done"
TOOL_RESULT = "ok"
N_STEPS = 10
"""Tool calls in the tool-loop workload, one per model turn."""
N_CHUNKS = 2000
"""Chunks of the streamed answer."""
CHUNK = "w "
"""The text of every streamed chunk."""
N_BRANCHES = 3
"""Branches of the parallel agent; each calls its own inner agent as a tool, once."""
REQUEST = "look it up"
"""What a branch asks its inner agent."""


def call_id(step: int) -> str:
    return f"call_{step}"


def branch_name(branch: int) -> str:
    return f"branch_{branch}"


def inner_name(branch: int) -> str:
    """The inner agent of a branch, and the name of the tool that runs it."""
    return f"inner_{branch}"


def branch_answer(branch: int) -> str:
    return f"{ANSWER} {branch}"


def inner_answer(branch: int) -> str:
    return f"{TOOL_RESULT} {branch}"


Run = Callable[[], Awaitable[None]]


@dataclass(slots=True, kw_only=True)
class Workloads:
    """One validated run of each workload; each raises ``AssertionError`` unless the run really happened.

    ``single_turn`` is also what the concurrency workload gathers. ``transfer_chain`` and ``parallel_agent_tool``
    are ``None`` for a framework that cannot express them, and ``unsupported`` then says why (the table shows
    "n/a", the notes under it the reason).

    The two ``fake_*`` runs use the fake model alone, through the framework's model interface (the method a model
    implementer writes) with no agent around it: ``fake_single_turn`` is one call answering the single turn, and
    ``fake_stream`` drains the 2000 chunks of the stream workload. W4 is reported net of ``fake_stream``, so that
    a fake that costs more per chunk in one framework than in another does not count against that framework;
    ``fake_single_turn`` is reported for comparison only.
    """

    version: str
    single_turn: Run
    tool_loop: Run
    transfer_chain: Run | None
    stream: Run
    parallel_agent_tool: Run | None
    fake_single_turn: Run
    fake_stream: Run
    unsupported: dict[str, str] = field(default_factory=dict)
    """Workload result key (``w3_transfer_chain``, ``w6_parallel_agent_tool``) → why the framework cannot express it."""


class Counter:
    """Counts tool executions, so that a run that skipped its tools fails validation."""

    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0

    def take(self) -> int:
        """The count so far, starting again from 0."""
        n, self.n = self.n, 0
        return n


def check(condition: bool, what: str, *values: object) -> None:
    """``assert`` that survives ``python -O``; ``what.format(*values)`` is the message.

    The message is formatted only on failure: formatting it on every run would time the repr of the framework's
    objects, which in some frameworks costs more than the run itself.
    """
    if not condition:
        raise AssertionError(what.format(*values))


def check_branches(answers: dict[str, str], tool_results: dict[str, str], inner_runs: list[Counter]) -> None:
    """W6: every branch answered (``answers`` by branch name), every inner agent's answer came back as its
    branch's tool result (``tool_results`` by call id), and every inner agent ran once (its model was called once).

    Takes the inner agents' counts, so that the next run starts from 0.
    """
    runs = [counter.take() for counter in inner_runs]
    check(answers == {branch_name(b): branch_answer(b) for b in range(N_BRANCHES)}, "branches answered {}", answers)
    results = {call_id(b): inner_answer(b) for b in range(N_BRANCHES)}
    check(tool_results == results, "agent tools returned {}", tool_results)
    check(runs == [1] * N_BRANCHES, "inner agents ran {} times", runs)


def side_in_subprocess(module: str, key: str, name: str, quick: bool) -> dict[str, Any]:
    """``python -m benchmarks.<module> --side <key>`` in a subprocess of its own: the side's JSON report, or a
    "failed" one (named ``name``) that says why."""
    command = [sys.executable, "-m", f"benchmarks.{module}", "--side", key, *(["--quick"] if quick else [])]
    cwd = Path(__file__).resolve().parent.parent
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)
    except subprocess.TimeoutExpired:
        return {"name": name, "status": "failed", "detail": "timed out after 600 s"}
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or [f"exit code {done.returncode}"]
        return {"name": name, "status": "failed", "detail": tail[0]}
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report

"""What every framework module provides, and the fixed shape of each workload.

Every framework runs the same five workloads against a zero-latency fake model. The fakes are stateless: they
pick their answer from the last input item (a dict lookup), so one agent definition serves sequential and
concurrent runs alike and no framework pays for rebuilding agents or models per run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

__all__ = [
    "ANSWER",
    "CHUNK",
    "N_CHUNKS",
    "N_STEPS",
    "QUESTION",
    "TOOL_RESULT",
    "Counter",
    "Workloads",
    "call_id",
    "check",
]

QUESTION = "hi"
ANSWER = "done"
TOOL_RESULT = "ok"
N_STEPS = 10
"""Tool calls in the tool-loop workload, one per model turn."""
N_CHUNKS = 2000
"""Chunks of the streamed answer."""
CHUNK = "w "
"""The text of every streamed chunk."""


def call_id(step: int) -> str:
    return f"call_{step}"


Run = Callable[[], Awaitable[None]]


@dataclass(slots=True, kw_only=True)
class Workloads:
    """One validated run of each workload; each raises ``AssertionError`` unless the run really happened.

    ``single_turn`` is also what the concurrency workload gathers.
    """

    version: str
    single_turn: Run
    tool_loop: Run
    transfer_chain: Run
    stream: Run


class Counter:
    """Counts tool executions, so that a run that skipped its tools fails validation."""

    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0


def check(condition: bool, what: str) -> None:
    """``assert`` that survives ``python -O``."""
    if not condition:
        raise AssertionError(what)

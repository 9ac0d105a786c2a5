"""The team run a graph's tasks and conditions belong to: each team evaluates its graph in a task of its own,
which sets this variable, so that a nested team's tasks find theirs and the outer team's stay apart."""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING

from ..errors import RunError
from ._trace import TeamTrace

if TYPE_CHECKING:
    from ._run import TeamRun

__all__ = ["CURRENT_RUN", "current_run", "current_trace"]

CURRENT_RUN: ContextVar[TeamRun | None] = ContextVar("batonflow_team_run", default=None)


def current_run() -> TeamRun:
    run = CURRENT_RUN.get()
    if run is None:
        raise RunError("a team's node ran outside its team: expected a TeamAgent run, found none")
    return run


def current_trace() -> TeamTrace:
    return current_run().trace

"""The team run a graph's tasks and conditions belong to: a team's graph runs on the graph-as-agent host, whose
hosted run is the team's ``TeamRun``; a nested team's tasks find theirs and the outer team's stay apart, as each
host evaluates its graph in a task of its own."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import RunError
from ..graph import current_host
from ._trace import TeamTrace

if TYPE_CHECKING:
    from ._run import TeamRun

__all__ = ["current_run", "current_team_run", "current_trace"]


def current_team_run() -> TeamRun | None:
    """The team run the running code belongs to, or None (outside a team, or in a graph agent's own run)."""
    run = current_host()
    # Told apart by a class attribute rather than isinstance: _run imports this module, so it cannot be imported
    # here, and a condition asks for its run at every visit.
    return run if getattr(run, "is_team", False) else None  # type: ignore[return-value]


def current_run() -> TeamRun:
    run = current_team_run()
    if run is None:
        raise RunError("a team's node ran outside its team: expected a TeamAgent run, found none")
    return run


def current_trace() -> TeamTrace:
    return current_run().trace

"""``batonflow run FLOW.yml``: run a graph file and print where it ended and its variables, as JSON: whether it
finished, and if not, where it stopped and why.

The engine is an ``AiFlowEngine``: it knows the AI components (``@ChatModel``, ``@ConsoleOutput`` …) and reads the
console for ``@ConsoleInput``. What the flow may reach is closed but for what the command line opens: files in the
flow file's folder (or ``--base-dir``), the hosts of ``--allow-host`` and the commands of ``--allow-command``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from ..errors import UserError
from ..flow import AiFlowEngine
from ..graph import FlowContext, Graph

__all__ = ["parse_vars", "run_flow"]


def parse_vars(pairs: Sequence[str]) -> dict[str, Any]:
    """``key=value`` pairs; a value that reads as JSON (``4``, ``true``, ``[1, 2]``) is that value, else text."""
    variables: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise UserError(f"--var expects key=value, got {pair!r}")
        try:
            variables[key] = json.loads(text)
        except ValueError:
            variables[key] = text
    return variables


async def run_flow(
    path: str,
    *,
    variables: dict[str, Any],
    graphs: Sequence[str] = (),
    steps: int = -1,
    out: TextIO,
    allowed_hosts: Sequence[str] = (),
    allowed_commands: Sequence[str] = (),
    base_dir: str | None = None,
    check_joins: bool | None = None,
) -> FlowContext:
    """Load ``path`` (and ``graphs``, for its ``#id`` tasks) into a new engine, run it, and print the outcome.
    Files are read inside ``base_dir`` (default: the flow file's folder); ``allowed_hosts`` and
    ``allowed_commands`` are the engine's; ``check_joins`` is ``Graph.load``'s, for ``path``."""
    folder = Path(base_dir) if base_dir is not None else Path(path).parent
    engine = AiFlowEngine(base_dir=folder, allowed_hosts=allowed_hosts, allowed_commands=allowed_commands)
    async with engine:
        for extra in graphs:
            engine.load_all(extra)
        graph = engine.load(Graph.load(path, check_joins=check_joins))
        context = await engine.eval(graph, FlowContext(variables=variables), steps=steps)
    outcome = context.outcome
    assert outcome is not None  # eval returned
    report = {
        "graph": graph.id,
        "last_node": context.last_node_id,
        **outcome.to_dict(),
        "stopped": context.is_stopped,
        "variables": dict(context.data),
    }
    out.write(json.dumps(report, ensure_ascii=False, indent=2, default=repr) + "\n")
    return context

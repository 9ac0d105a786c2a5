"""The team benchmark of ``benchmarks/``, run small (``--quick``): both sides run and check their runs, and the
table renders. No timing is asserted; the figures are in the benchmark's own output."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Awaitable, Callable
from typing import Any


async def test_both_sides_run_the_supervisor_workload(run_benchmark: Callable[..., Awaitable[str]]) -> None:
    out = await run_benchmark("team", "--json", "--quick")
    reports: dict[str, Any] = json.loads(out.splitlines()[-1])
    assert reports["batonflow"]["status"] == "ok"
    assert reports["batonflow"]["results"]["wall_median"] > 0
    langgraph = reports["langgraph"]
    if importlib.util.find_spec("langgraph") is None:  # the bench extra is not in this environment
        assert (langgraph["status"], langgraph["detail"]) == ("not installed", "pip install langgraph")
    else:
        assert langgraph["status"] == "ok"

    from benchmarks.team import render

    table = "\n".join(render(reports))
    assert "| wall |" in table and "| cpu |" in table and "7 per run, 6 member turns" in table

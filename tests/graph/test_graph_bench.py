"""The graph benchmark of ``benchmarks/``, run small (``--quick``): both sides run both graphs, each run checked,
the units of a run counted as the benchmark says, and the table renders. No timing is asserted; the figures are
in the benchmark's own output."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Awaitable, Callable
from typing import Any


async def test_both_engines_run_both_graphs_and_the_units_of_a_run_are_counted(
    run_benchmark: Callable[..., Awaitable[str]],
) -> None:
    out = await run_benchmark("graph", "--json", "--quick")
    reports: dict[str, Any] = json.loads(out.splitlines()[-1])
    batonflow = reports["batonflow"]
    assert batonflow["status"] == "ok"
    assert {graph: result["visits"] for graph, result in batonflow["results"].items()} == {"chain": 102, "fan_out": 23}
    assert all(result["wall_median"] > 0 and result["cpu_median"] > 0 for result in batonflow["results"].values())
    langgraph = reports["langgraph"]
    if importlib.util.find_spec("langgraph") is None:  # the bench extra is not in this environment
        assert (langgraph["status"], langgraph["detail"]) == ("not installed", "pip install langgraph")
    else:
        assert langgraph["status"] == "ok"
        shapes = {graph: (r["supersteps"], r["nodes"]) for graph, r in langgraph["results"].items()}
        assert shapes == {"chain": (100, 100), "fan_out": (3, 12)}

    from benchmarks.graph import render

    table = "\n".join(render(reports))
    assert "| chain of 100 activities |" in table and "| 10-way fan-out and join |" in table
    assert "(102) |" in table and "(23) |" in table

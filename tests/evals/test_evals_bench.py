"""The evaluation benchmark (``benchmarks/evals.py``), run small: every case passes at each concurrency and the table
renders. No timing is asserted; the figures are in the benchmark's output and docs/evals.md."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable


async def test_the_benchmark_evaluates_every_case_at_each_concurrency(
    run_benchmark: Callable[..., Awaitable[str]],
) -> None:
    out = await run_benchmark("evals", "--cases", "12", "--concurrency", "1", "4", "--json")

    rows = json.loads(out.splitlines()[-1])
    assert [(r["cases"], r["concurrency"]) for r in rows] == [(12, 1), (12, 4)]
    assert all(r["wall_s"] > 0 and r["peak_alloc_mb"] > 0 for r in rows)
    assert out.splitlines()[0] == "| cases | concurrency | wall (s) | ms / case | peak allocations (MB) |"

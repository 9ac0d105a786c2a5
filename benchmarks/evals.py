"""What an evaluation costs: ``python -m benchmarks.evals [--cases 200] [--concurrency 1 4 16] [--json]``.

The eval set is the example one (``examples/evals/shop.yaml``, six cases of the demo's shop agents) repeated to
``--cases`` cases, each on a fresh agent tree over a fresh shop, on the demo's scripted model (no I/O: what is
measured is the runtime's and the evaluation's own work). For each concurrency it prints the wall time of the whole
evaluation and per case (the best of three), and the peak of Python's allocations during one more run under
``tracemalloc`` (kept apart, since tracing slows the run), with every case checked to pass.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from batonflow.cli.demo import Shop, build_system, scripted_model
from batonflow.evals import EvalSet, evaluate, load_eval_set

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "evals" / "shop.yaml"


def eval_set(cases: int) -> EvalSet:
    """The example set's cases repeated to ``cases`` of them, ids made unique."""
    base = load_eval_set(EXAMPLE)
    many = [
        dataclasses.replace(base.cases[i % len(base.cases)], id=f"{base.cases[i % len(base.cases)].id}-{i}")
        for i in range(cases)
    ]
    return dataclasses.replace(base, cases=tuple(many))


def shop_agents() -> Any:
    return build_system(scripted_model(), Shop())


async def measure(cases: int, concurrency: int) -> dict[str, Any]:
    """The best wall time of three evaluations of ``cases`` cases, and the allocation peak of a fourth."""
    evals = eval_set(cases)
    walls = []
    for _ in range(3):
        started = time.perf_counter()
        report = await evaluate(evals, shop_agents, concurrency=concurrency)
        walls.append(time.perf_counter() - started)
        if report.pass_count != cases:
            raise SystemExit(f"expected every case to pass, got {report.pass_count} of {cases}:\n{report.table()}")
    tracemalloc.start()
    await evaluate(evals, shop_agents, concurrency=concurrency)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    best = min(walls)
    return {
        "cases": cases,
        "concurrency": concurrency,
        "wall_s": round(best, 4),
        "ms_per_case": round(best / cases * 1000, 3),
        "peak_alloc_mb": round(peak / 2**20, 2),
    }


def render(rows: Sequence[dict[str, Any]]) -> list[str]:
    lines = ["| cases | concurrency | wall (s) | ms / case | peak allocations (MB) |", "|---:|---:|---:|---:|---:|"]
    lines += [
        f"| {r['cases']} | {r['concurrency']} | {r['wall_s']:.3f} | {r['ms_per_case']:.2f} | {r['peak_alloc_mb']:.1f} |"
        for r in rows
    ]
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--json", action="store_true", help="print the rows as one JSON line after the table")
    args = parser.parse_args(argv)
    rows = [asyncio.run(measure(args.cases, c)) for c in args.concurrency]
    print("\n".join(render(rows)))
    if args.json:
        print(json.dumps(rows))
    sys.stdout.flush()


if __name__ == "__main__":
    main()

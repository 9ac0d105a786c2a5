"""Runs one framework's workloads in this process and prints the results as one JSON object on stdout.

``python -m benchmarks._worker MODULE [--quick]`` times the sequential workloads (W1–W4, W6);
``python -m benchmarks._worker MODULE --concurrent N`` runs N single turns at once (W5) in a fresh process, so
that its peak RSS belongs to that framework alone.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import json
import resource
import statistics
import sys
import time
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from ._common import N_CHUNKS, N_STEPS, Run, Workloads

__all__ = ["Plan", "measure", "run_concurrent", "run_sequential", "sequential"]


@dataclass(frozen=True, slots=True)
class Plan:
    """How hard to measure: warm-up time, repetitions, and the time each repetition aims for."""

    warmup_s: float
    reps: int
    rep_s: float
    concurrent_reps: int

    @classmethod
    def for_mode(cls, quick: bool) -> Plan:
        return cls(0.02, 2, 0.01, 1) if quick else cls(0.3, 7, 0.25, 3)


async def measure(run: Any, *, units: int, plan: Plan) -> dict[str, Any]:
    """µs per unit of ``run()``: each repetition times a batch of runs; the median repetition is reported."""
    start = time.perf_counter_ns()
    await run()  # at least one warm-up run, whatever it costs
    while time.perf_counter_ns() - start < plan.warmup_s * 1e9:
        await run()
    t0 = time.perf_counter_ns()
    await run()
    one = time.perf_counter_ns() - t0
    iterations = max(1, round(plan.rep_s * 1e9 / max(one, 1)))
    samples, cpu_samples = [], []
    for _ in range(plan.reps):
        gc.collect()
        t0, c0 = time.perf_counter_ns(), time.process_time_ns()
        for _ in range(iterations):
            await run()
        samples.append((time.perf_counter_ns() - t0) / iterations / units / 1e3)
        cpu_samples.append((time.process_time_ns() - c0) / iterations / units / 1e3)
    return {
        "wall_median": statistics.median(samples),
        "wall_min": min(samples),
        "wall_max": max(samples),
        # CPU time of this process: on a machine busy with other work it is the steadier figure.
        "cpu_median": statistics.median(cpu_samples),
        "reps": plan.reps,
        "iterations": iterations,
    }


def sequential(workloads: Workloads) -> dict[str, tuple[Run | None, int]]:
    """Each sequential workload's result key, its run (``None``: the framework cannot express it) and units."""
    return {
        "w1_single_turn": (workloads.single_turn, 1),
        "w2_tool_loop": (workloads.tool_loop, N_STEPS),
        "w3_transfer_chain": (workloads.transfer_chain, 1),
        "w4_stream": (workloads.stream, N_CHUNKS),
        "w6_parallel_agent_tool": (workloads.parallel_agent_tool, 1),
    }


async def run_sequential(workloads: Workloads, plan: Plan) -> dict[str, Any]:
    return {
        key: await measure(run, units=units, plan=plan)
        for key, (run, units) in sequential(workloads).items()
        if run is not None
    }


def _max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


async def run_concurrent(workloads: Workloads, n: int, plan: Plan) -> dict[str, Any]:
    """Wall time of ``n`` concurrent single turns, and how far the peak RSS grew above the warmed-up baseline."""
    for _ in range(3):
        await workloads.single_turn()
    await asyncio.gather(*(workloads.single_turn() for _ in range(min(n, 10))))
    gc.collect()
    baseline = _max_rss_mb()
    walls, cpus = [], []
    for _ in range(plan.concurrent_reps):
        gc.collect()
        t0, c0 = time.perf_counter_ns(), time.process_time_ns()
        await asyncio.gather(*(workloads.single_turn() for _ in range(n)))
        walls.append((time.perf_counter_ns() - t0) / 1e9)
        cpus.append((time.process_time_ns() - c0) / 1e9)
    peak = _max_rss_mb()
    return {
        "concurrency": n,
        "wall_s": statistics.median(walls),
        "walls_s": walls,
        "cpu_s": statistics.median(cpus),
        "baseline_rss_mb": baseline,
        "peak_rss_mb": peak,
        "rss_growth_mb": peak - baseline,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks._worker")
    parser.add_argument("module", help="framework module in benchmarks, e.g. bf or langgraph_peer")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--concurrent", type=int, default=0, metavar="N", help="run W5 with N concurrent turns")
    args = parser.parse_args()
    plan = Plan.for_mode(args.quick)
    framework = importlib.import_module(f"benchmarks.{args.module}")
    report: dict[str, Any] = {"name": framework.NAME}
    try:
        version(framework.DISTRIBUTION)
    except PackageNotFoundError:
        report.update(status="not installed", detail=f"pip install {framework.DISTRIBUTION}")
    else:
        workloads = framework.build()  # anything it raises fails this worker, and the table says "failed"
        report.update(status="ok", version=workloads.version)
        report["unsupported"] = [key for key, (run, _) in sequential(workloads).items() if run is None]
        if args.concurrent:
            report["results"] = asyncio.run(run_concurrent(workloads, args.concurrent, plan))
        else:
            report["results"] = asyncio.run(run_sequential(workloads, plan))
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

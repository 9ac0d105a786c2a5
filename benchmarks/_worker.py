"""Runs one framework's workloads in this process and prints the results as one JSON object on stdout.

``python -m benchmarks._worker MODULE [--quick] [--workloads W1,W2]`` times the sequential workloads (W1–W4, W6);
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
from collections.abc import Collection
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from ._common import N_CHUNKS, N_STEPS, WORKLOADS, Run, Workloads

__all__ = ["Plan", "measure", "measure_net", "run_concurrent", "run_sequential", "sequential"]


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


async def _warm_up(run: Run, plan: Plan) -> int:
    """Runs ``run`` for the warm-up time (at least once); returns how many runs make one repetition."""
    start = time.perf_counter_ns()
    await run()  # at least one warm-up run, whatever it costs
    while time.perf_counter_ns() - start < plan.warmup_s * 1e9:
        await run()
    t0 = time.perf_counter_ns()
    await run()
    one = time.perf_counter_ns() - t0
    return max(1, round(plan.rep_s * 1e9 / max(one, 1)))


async def _repetition(run: Run, iterations: int, units: int) -> tuple[float, float]:
    """µs per unit of one repetition of ``iterations`` runs: wall clock and this process's CPU time."""
    gc.collect()
    t0, c0 = time.perf_counter_ns(), time.process_time_ns()
    for _ in range(iterations):
        await run()
    wall, cpu = time.perf_counter_ns() - t0, time.process_time_ns() - c0
    return wall / iterations / units / 1e3, cpu / iterations / units / 1e3


def _summary(walls: list[float], cpus: list[float], prefix: str = "") -> dict[str, float]:
    return {
        f"{prefix}wall_median": statistics.median(walls),
        f"{prefix}wall_min": min(walls),
        f"{prefix}wall_max": max(walls),
        # CPU time of this process: on a machine busy with other work it is the steadier figure.
        f"{prefix}cpu_median": statistics.median(cpus),
    }


async def measure(run: Run, *, units: int, plan: Plan) -> dict[str, Any]:
    """µs per unit of ``run()``: each repetition times a batch of runs; the median repetition is reported."""
    iterations = await _warm_up(run, plan)
    samples = [await _repetition(run, iterations, units) for _ in range(plan.reps)]
    walls, cpus = [w for w, _ in samples], [c for _, c in samples]
    return {**_summary(walls, cpus), "reps": plan.reps, "iterations": iterations}


async def measure_net(run: Run, fake: Run, *, units: int, plan: Plan) -> dict[str, Any]:
    """µs per unit of ``run()`` less that of ``fake()``, the fake model's own share of it.

    The two alternate, one repetition of each in turn, so that each difference is taken under the same load; the
    median difference is reported (``wall_median``, ``cpu_median``), with the gross and the fake's figures beside
    it (``gross_*``, ``fake_*``).
    """
    iterations = await _warm_up(run, plan)
    fake_iterations = await _warm_up(fake, plan)
    gross, alone = [], []
    for _ in range(plan.reps):
        gross.append(await _repetition(run, iterations, units))
        alone.append(await _repetition(fake, fake_iterations, units))
    net = [(g[0] - f[0], g[1] - f[1]) for g, f in zip(gross, alone, strict=True)]
    return {
        **_summary([w for w, _ in net], [c for _, c in net]),
        **_summary([w for w, _ in gross], [c for _, c in gross], "gross_"),
        **_summary([w for w, _ in alone], [c for _, c in alone], "fake_"),
        "reps": plan.reps,
        "iterations": iterations,
        "fake_iterations": fake_iterations,
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


async def run_sequential(workloads: Workloads, plan: Plan, keys: Collection[str]) -> dict[str, Any]:
    """The sequential workloads among ``keys`` that the framework expresses.

    W4 is net of the fake model's stream; W1 carries the fake's own single call beside it (``fake_*``), for
    comparison and not subtracted.
    """
    results: dict[str, Any] = {}
    for key, (run, units) in sequential(workloads).items():
        if run is None or key not in keys:
            continue
        if key == "w4_stream":
            results[key] = await measure_net(run, workloads.fake_stream, units=units, plan=plan)
        else:
            results[key] = await measure(run, units=units, plan=plan)
    if "w1_single_turn" in results:
        fake = await measure(workloads.fake_single_turn, units=1, plan=plan)
        results["w1_single_turn"].update(
            {f"fake_{k}": v for k, v in fake.items() if k.endswith(("median", "min", "max"))}
        )
    return results


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
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated, e.g. W1,W2,W4")
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
        report["unsupported"] = {
            key: workloads.unsupported.get(key, "not expressed")
            for key, (run, _) in sequential(workloads).items()
            if run is None
        }
        if args.concurrent:
            report["results"] = asyncio.run(run_concurrent(workloads, args.concurrent, plan))
        else:
            keys = {WORKLOADS[name] for name in args.workloads.split(",") if name}
            report["results"] = asyncio.run(run_sequential(workloads, plan, keys))
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

"""The durable-run probes of ``benchmarks/``, run small: two processes racing to resume one checkpoint on every
shared store, and resumes killed with SIGKILL at random points. Each must end with no refund taking effect twice
and no run lost (the figures at full size are in the probes' own output)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any


async def probe(run_benchmark: Callable[..., Awaitable[str]], module: str, *args: str) -> list[dict[str, Any]]:
    """The JSON lines a probe prints."""
    out = await run_benchmark(module, *args)
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


async def test_two_processes_resuming_one_checkpoint_let_one_refund_happen_on_every_shared_store(
    run_benchmark: Callable[..., Awaitable[str]],
) -> None:
    results = await probe(run_benchmark, "resume_race", "--trials", "5", "--stores", "sqlite", "postgres", "redis")
    assert [r["store"] for r in results] == ["sqlite", "postgres", "redis"]
    for result in results:
        assert (result["two winners"], result["refund ran twice"], result["refund took effect twice"]) == (0, 0, 0)
        assert result["answers"]["done"] == 5  # every trial had its one winner


async def test_resumes_killed_at_random_points_lose_no_run_and_refund_once(
    run_benchmark: Callable[..., Awaitable[str]],
) -> None:
    [result] = await probe(run_benchmark, "crash_resume", "--runs", "20", "--stores", "sqlite", "--spread", "1.0")
    assert result["killed before the end"] >= 1  # some kills landed mid-resume, or the probe proved nothing
    assert (result["refund took effect twice"], result["lost"]) == (0, 0)


async def test_resumes_of_histories_saved_in_parts_killed_at_random_points_lose_no_run(
    run_benchmark: Callable[..., Awaitable[str]],
) -> None:
    args = ("--runs", "10", "--stores", "sqlite", "redis", "--spread", "0.3", "--part-events", "2")
    results = await probe(run_benchmark, "crash_resume", *args)
    assert [r["store"] for r in results] == ["sqlite", "redis"]
    for result in results:
        assert result["killed before the end"] >= 1
        assert (result["refund took effect twice"], result["lost"]) == (0, 0)

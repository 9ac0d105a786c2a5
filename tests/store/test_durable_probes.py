"""The durable-run probes of ``benchmarks/``, run small: two processes racing to resume one checkpoint on every
shared store, and resumes killed with SIGKILL at random points. Each must end with no refund taking effect twice
and no run lost (the figures at full size are in the probes' own output)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


async def probe(module: str, *args: str) -> list[dict[str, Any]]:
    """Run ``python -m benchmarks.<module>`` on this checkout's code; its JSON lines."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        f"benchmarks.{module}",
        *args,
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=300)
    assert process.returncode == 0, err.decode(errors="replace")
    return [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]


async def test_two_processes_resuming_one_checkpoint_let_one_refund_happen_on_every_shared_store() -> None:
    results = await probe("resume_race", "--trials", "5", "--stores", "sqlite", "postgres", "redis")
    assert [r["store"] for r in results] == ["sqlite", "postgres", "redis"]
    for result in results:
        assert (result["two winners"], result["refund ran twice"], result["refund took effect twice"]) == (0, 0, 0)
        assert result["answers"]["done"] == 5  # every trial had its one winner


async def test_resumes_killed_at_random_points_lose_no_run_and_refund_once() -> None:
    [result] = await probe("crash_resume", "--runs", "20", "--stores", "sqlite", "--spread", "1.0")
    assert result["killed before the end"] >= 1  # some kills landed mid-resume, or the probe proved nothing
    assert (result["refund took effect twice"], result["lost"]) == (0, 0)


async def test_resumes_of_histories_saved_in_parts_killed_at_random_points_lose_no_run() -> None:
    args = ("--runs", "15", "--stores", "sqlite", "redis", "--spread", "1.0", "--part-events", "2")
    results = await probe("crash_resume", *args)
    assert [r["store"] for r in results] == ["sqlite", "redis"]
    for result in results:
        assert result["killed before the end"] >= 1
        assert (result["refund took effect twice"], result["lost"]) == (0, 0)

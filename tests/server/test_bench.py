"""``python -m benchmarks.serve`` runs, small: every streamed run completes and no hung-up run is left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_serving_benchmark_completes_its_runs_and_leaves_no_run_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.serve", "--runs", "8", "--disconnects", "4", "--words", "5", "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert (figures["runs"], figures["completed"]) == (8, 8)
    assert (figures["disconnects"], figures["left_behind"]) == (4, 0)
    assert 0 < figures["first_event_p50_ms"] <= figures["first_event_p99_ms"]
    assert figures["peak_rss_mb"] > 0
    # CPU time comes in clock ticks (10 ms): eight runs may take less than one, on either app.
    assert figures["server_cpu_us_per_run"] >= 0 and figures["raw_asgi_cpu_us_per_run"] >= 0

    monkeypatch.syspath_prepend(str(ROOT))  # the checkout's benchmarks package, for its renderer
    from benchmarks.serve import render

    table = "\n".join(render(figures))
    assert "8 concurrent streamed runs" in table and "| 8 of 8 |" in table and "| 0 of 4 |" in table
    assert "a raw ASGI app answering the same SSE stream" in table

"""``python -m benchmarks.scale`` runs, small: every run completes on both backends and the figures add up."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from .conftest import ROOT


def test_the_scale_benchmark_completes_its_runs_on_both_backends() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.scale", "--runs", "6", "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    for backend in ("in_process", "dbos"):
        row = figures[backend]
        assert row["completed"] == 6
        assert 0 < row["first_event_p50_ms"] <= row["first_event_p99_ms"] and row["runs_per_s"] > 0
    assert sum(figures["split"].values()) == 6 and len(figures["split"]) <= 2

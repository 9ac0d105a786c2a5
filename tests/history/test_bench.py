"""The history benchmark runs, small: its run with and without history, the record, and the fresh process's reads
(history, a fork, a fork with replay that runs the rest of the run to its answer)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_history_benchmark_measures_a_small_run() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.history", "--steps", "21"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("21-step run on SQLite\n")
    assert re.search(r"record: \d+ bytes, \d+ bytes per step", done.stdout)
    assert re.search(r"fork at step 10 \d+ ms; with replay=True \d+ ms", done.stdout)

"""``python -m benchmarks.conversation`` runs, small: both sides keep every turn of their conversations, and the
table names them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_conversation_benchmark_keeps_every_turn_on_both_sides(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.conversation", "--quick", "--turns", "3", "--reps", "2", "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    # A side's run checks every answer and, at the end, that its store kept a question and an answer per turn.
    for side in ("bf", "maf"):
        assert figures[side]["turns"] == 3 and figures[side]["wall_ms"] > 0, figures[side]

    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks.conversation import render

    table = "\n".join(render(figures))
    assert "conversation of 3 turns" in table and "SqliteSessionStore" in table and "FileHistoryProvider" in table


@pytest.mark.parametrize("option", ["--turns", "--reps"])
def test_the_conversation_benchmark_refuses_a_count_below_one(option: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.conversation", option, "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2 and f"{option}: expected a count >= 1, got 0" in result.stderr

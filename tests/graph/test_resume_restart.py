"""Replay resume across a process restart: the context lives in SQLite between two processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import batonflow

CHILD = Path(__file__).with_name("resume_child.py")
SRC = Path(batonflow.__file__).resolve().parent.parent


def run_child(phase: str, db: Path, flow: str = "approval") -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, str(CHILD), phase, str(db), flow],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_a_stopped_flow_resumes_in_a_new_process_without_re_running_finished_nodes(tmp_path: Path) -> None:
    db = tmp_path / "flows.db"
    first = run_child("start", db)
    assert first == {"ran": ["draft", "approve"], "stopped": True, "last": "approve", "end": False}
    second = run_child("resume", db)
    # draft is replayed without running; approve, the recorded node, runs again and this time lets the flow on
    assert second == {"ran": ["approve", "pay"], "stopped": False, "last": "end", "end": True}
    third = run_child("resume", db)
    assert third == {"ran": [], "stopped": False, "last": "end", "end": True}  # a finished flow runs nothing


def test_a_flow_stopped_in_a_concurrent_branch_resumes_in_a_new_process_without_the_finished_branch(
    tmp_path: Path,
) -> None:
    db = tmp_path / "flows.db"
    first = run_child("start", db, "fan")
    assert first == {"ran": ["note", "check"], "stopped": True, "last": "join", "end": False}
    second = run_child("resume", db, "fan")
    # note, finished before check stopped the run, is not run again, though the join was recorded last
    assert second == {"ran": ["check", "pay"], "stopped": False, "last": "end", "end": True}

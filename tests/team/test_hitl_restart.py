"""A team survives a process restart mid-approval: the member's HITL interrupt stops the team, the checkpoint (in
SQLite) holds the flow's position and the trace, and a new process resumes at the member without running the
finished member, the supervisor's finished turns or the approved tool twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import batonflow

CHILD = Path(__file__).with_name("hitl_child.py")
SRC = Path(batonflow.__file__).resolve().parent.parent


def run_child(*args: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, str(CHILD), *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_a_team_resumes_in_a_new_process_at_the_waiting_member(tmp_path: Path) -> None:
    db = str(tmp_path / "checkpoints.db")
    first = run_child("start", db)
    assert first["interrupted"] and len(first["causes"]) == 1
    assert (first["supervisor_calls"], first["researcher_calls"], first["payer_calls"]) == (2, 1, 1)
    assert first["refunded"] == [] and first["records"] == ["researcher"]
    second = run_child("resume", db, first["causes"][0])
    assert not second["interrupted"]
    # Only the payer's answer after its approved call and the supervisor's last turn run in the new process.
    assert (second["supervisor_calls"], second["researcher_calls"], second["payer_calls"]) == (1, 0, 1)
    assert second["refunded"] == [7]
    assert second["records"] == ["researcher", "payer"] and second["text"] == "Refund done."

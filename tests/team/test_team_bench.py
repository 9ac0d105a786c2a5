"""The team benchmark of ``benchmarks/``, run small (``--quick``): both sides run and check their runs, and the
table renders. No timing is asserted; the figures are in the benchmark's own output."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


async def test_both_sides_run_the_supervisor_workload(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))  # the checkout's benchmarks package, as `python -m` finds it
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "benchmarks.team",
        "--json",
        "--quick",
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=300)
    assert process.returncode == 0, err.decode(errors="replace")
    reports: dict[str, Any] = json.loads(out.decode().splitlines()[-1])
    assert reports["batonflow"]["status"] == "ok"
    assert reports["batonflow"]["results"]["wall_median"] > 0
    langgraph = reports["langgraph"]
    if importlib.util.find_spec("langgraph") is None:  # the bench extra is not in this environment
        assert (langgraph["status"], langgraph["detail"]) == ("not installed", "pip install langgraph")
    else:
        assert langgraph["status"] == "ok"

    from benchmarks.team import render

    table = "\n".join(render(reports))
    assert "| wall |" in table and "| cpu |" in table and "7 per run, 6 member turns" in table

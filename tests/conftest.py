"""What tests in several folders share: running one of the checkout's benchmarks as a program."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

RunBenchmark = Callable[..., Awaitable[str]]


async def _run_benchmark(module: str, *args: str) -> str:
    """``python -m benchmarks.<module> ARGS`` on this checkout's code: its standard output, once it exited 0."""
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
    return out.decode()


@pytest.fixture
def run_benchmark(monkeypatch: pytest.MonkeyPatch) -> RunBenchmark:
    """Runs a benchmark as a program (see ``_run_benchmark``); the checkout's ``benchmarks`` package is importable
    in the test too, for its renderers."""
    monkeypatch.syspath_prepend(str(ROOT))
    return _run_benchmark

"""``python -m benchmarks.scale`` at the size it is meant for: 400 concurrent runs on 2 worker processes, beside the
same runs in-process. Every run completes on both backends, both workers took runs, and the figures add up. The
figures themselves are written to ``build/bench/scale.md`` (and ``.json``), printed, and quoted in any failure.
A PostgreSQL that does not answer makes the benchmark say it skipped, not fail; with ``--events postgres`` it needs no
Redis."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from tests.services import POSTGRES_DSN, REDIS_URL

from .conftest import ROOT

RUNS, WORKERS = 400, 2
OUT = ROOT / "build" / "bench"


def _scale(*args: str, env: dict[str, str] | None = None) -> tuple[dict[str, Any], float]:
    """``python -m benchmarks.scale ARGS --json`` on this checkout: its figures, and the wall time it took."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.scale", *args, "--json"],
        cwd=ROOT,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
            "BATONFLOW_BENCH_POSTGRES": POSTGRES_DSN,  # the tests' services, not the benchmark's defaults
            "BATONFLOW_BENCH_REDIS": REDIS_URL,
            **(env or {}),
        },
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), time.monotonic() - started


def _pid(executor_id: str) -> int:
    """The process id in a worker's executor id (``<host>-<pid>-<suffix>``)."""
    return int(executor_id.rsplit("-", 2)[1])


@pytest.fixture(scope="module")
def benchmarks_importable() -> Iterator[None]:
    """The checkout's ``benchmarks`` package importable here, for its renderers."""
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(ROOT))
        yield


@pytest.fixture(scope="module")
def measured(benchmarks_importable: None) -> tuple[dict[str, Any], float, str]:
    """The benchmark's figures at full size, the seconds it took, and its table (also written under build/)."""
    from benchmarks.scale import render

    figures, took = _scale("--runs", str(RUNS), "--workers", str(WORKERS))
    table = "\n".join(render(figures))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "scale.json").write_text(json.dumps({**figures, "test_wall_s": round(took, 1)}, indent=2) + "\n")
    (OUT / "scale.md").write_text(f"{table}\n\nThe benchmark took {took:.1f} s, worker start-up included.\n")
    print(f"\n{table}\nthe benchmark took {took:.1f} s")
    return figures, took, table


def test_400_concurrent_runs_complete_on_2_workers_and_in_process(measured: tuple[dict[str, Any], float, str]) -> None:
    figures, took, table = measured
    seen = f"\n{table}\n(the benchmark took {took:.1f} s)"
    assert "skipped" not in figures, seen
    assert (figures["runs"], figures["workers"]) == (RUNS, WORKERS), seen
    for backend in ("in_process", "dbos"):
        row = figures[backend]
        assert row["completed"] == RUNS, seen
        assert 0 < row["first_event_p50_ms"] <= row["first_event_p99_ms"], seen
        assert row["runs_per_s"] == pytest.approx(RUNS / row["wall_s"], rel=0.05), seen
    split = figures["split"]
    assert len(set(figures["worker_pids"])) == WORKERS, seen
    assert {_pid(executor) for executor in split} == set(figures["worker_pids"]), seen  # both processes took runs
    assert all(count > 0 for count in split.values()) and sum(split.values()) == RUNS, seen


def test_make_bench_renders_the_figures_in_its_scale_out_section(measured: tuple[dict[str, Any], float, str]) -> None:
    from benchmarks.__main__ import PROBES, section

    figures, _, table = measured
    assert "scale" in [module for module, _, _ in PROBES] and "serve" in [module for module, _, _ in PROBES]
    lines = section("scale", {"status": "ok", "results": figures})
    assert "\n".join(lines) == table
    assert f"| in-process | {RUNS} of {RUNS} |" in table and f"| dbos, {WORKERS} workers | {RUNS} of {RUNS} |" in table
    counts = ", ".join(map(str, sorted(figures["split"].values(), reverse=True)))
    assert f"Runs per worker: {counts} (2 of 2 workers took runs)" in table
    assert section("scale", {"status": "failed", "detail": "exit code 1"}) == ["failed: exit code 1"]


def test_with_postgresql_events_the_benchmark_needs_no_redis(benchmarks_importable: None) -> None:
    from benchmarks.scale import render

    nowhere = "redis://127.0.0.1:1/0"  # nothing listens there
    figures, _ = _scale("--runs", "6", "--events", "postgres", env={"BATONFLOW_BENCH_REDIS": nowhere})
    assert "skipped" not in figures and figures["events"] == "postgres"
    assert figures["dbos"]["completed"] == 6 and sum(figures["split"].values()) == 6
    assert "(DBOS, live events on PostgreSQL)" in "\n".join(render(figures))


def test_without_postgresql_the_benchmark_says_it_skipped(benchmarks_importable: None) -> None:
    from benchmarks.__main__ import section

    closed = "postgresql://postgres@127.0.0.1:9/test"  # the discard port: nothing listens there
    figures, _ = _scale("--runs", "3", env={"BATONFLOW_BENCH_POSTGRES": closed})
    assert figures["runs"] == 3 and "dbos" not in figures
    assert figures["skipped"].startswith("no PostgreSQL at 127.0.0.1:9/test (")
    assert section("scale", {"status": "ok", "results": figures}) == [f"skipped: {figures['skipped']}"]


def test_bad_sizes_are_refused_with_what_was_expected() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.scale", "--runs", "0"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "expected --runs, --workers and --concurrency of 1 or more, got 0, 2, 200" in done.stderr

"""The hostile-input probe suite (``python -m benchmarks.hostile``) holds, every probe: each one tries something a
shared flow file, a served request or a crafted id must not be able to do, and checks that it did not happen and
that a typed error (or a 4xx) said why. The counts are printed so that CI's log shows them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GROUPS = ["cli ids", "expressions", "fetches", "flow files", "loading", "server"]


@pytest.mark.parametrize("group", GROUPS)
def test_every_probe_of_the_group_holds(group: str, capsys: pytest.CaptureFixture[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.hostile", "--group", group, "--verbose"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )

    with capsys.disabled():
        print(f"\n{done.stdout.strip()}")
    held = re.search(r"^hostile probes: (\d+) of (\d+) held$", done.stdout, re.M)
    assert held is not None, done.stderr
    assert done.returncode == 0 and held[1] == held[2] and int(held[2]) > 0, done.stdout


def test_the_suite_covers_each_kind_of_attack(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks import hostile

    assert sorted({probe.group for probe in hostile.PROBES}) == GROUPS
    assert len(hostile.PROBES) == len({probe.name for probe in hostile.PROBES}) >= 59

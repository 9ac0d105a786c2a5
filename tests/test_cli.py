"""The ``batonflow`` command: the demo through ``main`` and as a process."""

from __future__ import annotations

import subprocess
import sys
from typing import TextIO

import pytest

from batonflow.cli import demo, main


def test_demo_with_the_scripted_model_returns_0_and_prints_the_whole_flow(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["demo", "--model", "scripted"])

    output = capsys.readouterr().out
    assert code == 0
    assert output.startswith("batonflow demo: customer service on model scripted (scripted)\n")
    assert "[router] router → transfer to refund_agent" in output
    assert "refund issued: order 1042, 59.00 EUR" in output


def test_demo_with_an_unknown_model_provider_returns_1_with_the_reason(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["demo", "--model", "nonsense:x"])

    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == ""
    assert captured.err.startswith("batonflow: model URI 'nonsense:x': expected a provider in [")
    assert "got 'nonsense'" in captured.err


def test_batonflow_demo_with_an_unknown_model_exits_1_without_a_traceback() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "batonflow", "demo", "--model", "nonsense:x"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("batonflow: model URI 'nonsense:x'")
    assert "Traceback" not in result.stderr


def test_demo_runs_on_the_local_smollm2_model_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    async def fake_run_demo(model_uri: str, *, out: TextIO, approve: str) -> None:
        seen.append(model_uri)
        seen.append(approve)

    monkeypatch.setattr(demo, "run_demo", fake_run_demo)

    assert main(["demo"]) == 0
    assert seen == ["local:smollm2", "auto"]


def test_demo_approve_no_rejects_every_refund(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["demo", "--model", "scripted", "--approve", "no"])

    output = capsys.readouterr().out
    assert code == 0
    assert "rejected by the user" in output
    assert "approved by the user" not in output
    assert "refund issued" not in output

"""The ``batonflow`` command: the demo through ``main`` and as a process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
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


FLOW = """
id: greet
layout:
  - {type: start}
  - id: choose
    type: exclusive
    link:
      - {nextId: many, when: "n > 1"}
      - {nextId: one}
  - {id: many, type: loop, meta: {"$for": i, "$in": "0...3"}, link: done}
  - {id: done, type: loop, link: end}
  - {id: one, link: end}
  - {id: end, type: end}
"""


def test_run_a_flow_file_with_vars_prints_the_outcome_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "greet.yml"
    path.write_text(FLOW, encoding="utf-8")

    code = main(["run", str(path), "--var", "n=3", "--var", "name=Ada", "--var", "tags=[1, 2]"])

    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report == {
        "graph": "greet",
        "last_node": "end",
        "finished": True,
        "reached_end": True,
        "stopped_at": None,
        "reason": None,
        "stops": [],
        "stopped": False,
        "variables": {"n": 3, "name": "Ada", "tags": [1, 2], "i": 2},
    }


def test_run_with_a_steps_limit_stops_early_says_where_and_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "greet.yml"
    path.write_text(FLOW, encoding="utf-8")

    assert main(["run", str(path), "--var", "n=1", "--steps", "2"]) == 3
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert (report["last_node"], report["finished"], report["stopped"]) == ("one", False, True)
    assert (report["stopped_at"], report["reason"]) == ("one", "the steps limit (2) was reached before this node")
    assert captured.err == (
        "batonflow: the flow did not finish: graph 'greet', node 'one': the steps limit (2) was reached before this"
        " node\n"
    )


def test_run_a_flow_whose_join_waits_says_why_and_one_without_an_end_node_finishes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    waiting = tmp_path / "waiting.yml"
    waiting.write_text(
        "id: w\nlayout:\n  - {id: x, type: exclusive, link: [a, b]}\n  - {id: a, link: join1}\n"
        "  - {id: b, link: join1}\n  - {id: join1, type: parallel}\n",
        encoding="utf-8",
    )
    assert main(["run", str(waiting)]) == 1  # refused when it is built
    assert "node 'join1': a parallel join waits for all its 2 inbound links" in capsys.readouterr().err

    plain = tmp_path / "plain.yml"
    plain.write_text("id: p\nlayout: [{id: a}, {id: b}]\n", encoding="utf-8")
    assert main(["run", str(plain)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["finished"], report["reached_end"], report["stopped_at"]) == (True, False, None)

    dead_end = tmp_path / "dead_end.yml"
    dead_end.write_text("id: d\nlayout: [{id: a, link: [{nextId: b, when: 'go'}]}, {id: b}]\n", encoding="utf-8")
    assert main(["run", str(dead_end), "--var", "go=false"]) == 3
    captured = capsys.readouterr()
    assert json.loads(captured.out)["reason"] == "no outgoing link whose condition holds (links to 'b')"
    assert captured.err.startswith("batonflow: the flow did not finish: graph 'd', node 'a': no outgoing link")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--var", "novalue"], "batonflow: --var expects key=value, got 'novalue'"),
        ([], "batonflow: file '{path}', graph 'bad', node 'a', field 'task': inline script tasks are not run"),
    ],
)
def test_run_reports_bad_input_with_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], expected: str
) -> None:
    path = tmp_path / "bad.yml"
    path.write_text("id: bad\nlayout: [{id: a, task: 'print(1)'}]\n", encoding="utf-8")

    assert main(["run", str(path), *args]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith(expected.format(path=path))


def test_run_loads_the_sub_graphs_a_flow_calls(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "inner.yml").write_text("id: inner\nlayout: [{type: start}, {id: inner_end, type: end}]\n", "utf-8")
    path = tmp_path / "outer.yml"
    path.write_text("id: outer\nlayout: [{type: start}, {id: call, task: '#inner'}, {type: end}]\n", "utf-8")

    assert main(["run", str(path), "--graph", str(subs)]) == 0
    assert json.loads(capsys.readouterr().out)["finished"] is True
    assert main(["run", str(path)]) == 1
    assert "sub-graph '#inner' is not loaded" in capsys.readouterr().err

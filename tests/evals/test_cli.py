"""``batonflow eval SET TARGET``: the report printed, written as JSON and HTML, two targets compared; exit 0 when
every case passed, 1 when one failed, 2 for a set, a target or a judge it cannot use, and the missing extra named."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from batonflow.cli import main

ROOT = Path(__file__).resolve().parents[2]

AGENTS = """
import json

from batonflow import ChatModelAgent
from batonflow.schema import assistant
from batonflow.testing import FunctionModel, ScriptedModel

made = []


def _echo(messages, tools):
    return assistant("echo: " + messages[-1].content)


def echo():
    made.append(1)
    return ChatModelAgent(name="echo", description="echoes", model=FunctionModel(_echo))


def shout():
    return ChatModelAgent(name="shout", description="shouts", model=FunctionModel(lambda m, t: assistant("HI")))


def _grade(messages, tools):
    return assistant(json.dumps({"score": 1, "pass": True, "reason": "fine"}))


both = {"echo": echo(), "shout": shout()}
"""

SET = """
name: echoes
cases:
  - id: hi
    input: hi
    answer: {equals: "echo: hi"}
  - id: bye
    input: bye
    answer: {contains: bye}
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "echo_set.yaml").write_text(SET)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def module(folder: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    name = f"eval_agents_{uuid.uuid4().hex[:8]}"
    (folder / f"{name}.py").write_text(AGENTS)
    monkeypatch.syspath_prepend(str(folder))
    return name


def test_a_passing_set_prints_the_table_and_exits_0(module: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "echo_set.yaml", f"{module}:echo"]) == 0
    assert capsys.readouterr().out == (
        "case  result  score  checks\n"
        "----  ------  -----  ------\n"
        "hi    pass     1.00  1/1\n"
        "bye   pass     1.00  1/1\n"
        f"echoes on {module}:echo: 2 of 2 cases passed, score 1.00\n"
    )
    assert len(sys.modules[module].made) == 4  # the factory: for `both` on import, to check the target, per case


def test_a_failing_case_exits_1_and_the_reports_are_written(
    module: str, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["eval", "echo_set.yaml", f"{module}:both", "--agent", "shout", "--json", "r.json", "--html", "r.html"])

    assert code == 1
    out = capsys.readouterr().out
    assert "hi    FAIL     0.00  0/1\n" in out and "expected an answer equal to 'echo: hi', got 'HI'" in out
    data = json.loads((folder / "r.json").read_text())
    assert (data["target"], data["pass_count"], data["cases"]) == (f"{module}:both", 0, 2)
    assert (folder / "r.html").read_text().startswith("<!DOCTYPE html>")


def test_compare_prints_both_and_the_side_by_side_table(
    module: str, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["eval", "echo_set.yaml", f"{module}:echo", "--compare", f"{module}:shout", "--json", "c.json"])

    assert code == 1  # a case failed on the second
    lines = capsys.readouterr().out.splitlines()
    table = lines[lines.index("") + 1 :]
    assert table[0].split() == ["case", f"{module}:echo", f"{module}:shout", "change"]
    assert table[2].split() == ["hi", "pass", "1.00", "FAIL", "0.00", "broken"]
    assert [r["change"] for r in json.loads((folder / "c.json").read_text())["rows"]] == ["broken", "broken"]


def test_a_python_file_is_a_target(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (folder / "sub").mkdir()
    (folder / "sub" / "file_agents_x1.py").write_text(AGENTS)

    assert main(["eval", "echo_set.yaml", "sub/file_agents_x1.py:echo", "--concurrency", "1"]) == 0
    assert "2 of 2 cases passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.yaml", "{module}:echo"], "missing.yaml: expected a readable eval set file"),
        (["bad.yaml", "{module}:echo"], "bad.yaml, cases[0]: expected a field of"),
        (["echo_set.yaml", "{module}:nothing"], "expected {module} to have 'nothing'"),
        (["echo_set.yaml", "nowhere.py:echo"], "expected a python file 'nowhere.py', got none there"),
        (["echo_set.yaml", "{module}:both"], "--agent: expected one of ['echo', 'shout'] (the target holds several)"),
        (["rubric.yaml", "{module}:echo"], "expected a judge model for the rubrics of case 'r' (and 0 more), got none"),
        (["echo_set.yaml", "{module}:echo", "--judge", "nosuch:model"], "model URI"),
    ],
)
def test_what_cannot_be_used_exits_2_saying_why(
    module: str, folder: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "bad.yaml").write_text("cases: [{id: a, input: hi, expect: x}]")
    (folder / "rubric.yaml").write_text("cases: [{id: r, input: hi, rubrics: [polite]}]")

    assert main(["eval", *(a.format(module=module) for a in args)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert message.format(module=module) in err, err


def test_a_judge_model_grades_the_rubrics(module: str, folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (folder / "rubric.yaml").write_text("cases: [{id: r, input: hi, rubrics: [polite]}]")

    # a model URI the judge loads: an OpenAI-compatible server that is not there fails the rubric, not the command
    code = main(["eval", "rubric.yaml", f"{module}:echo", "--judge", "openai-compatible:http://127.0.0.1:9/v1#judge"])

    assert code == 1
    assert "JudgeError: judge on judge: expected a verdict, got a failed model call" in capsys.readouterr().out


def test_without_jsonschema_a_schema_check_names_the_extra(tmp_path: Path) -> None:
    (tmp_path / "schema.yaml").write_text("cases: [{id: a, input: hi, answer: {schema: {type: object}}}]")
    (tmp_path / "agents_x.py").write_text(AGENTS)
    child = "import sys; sys.modules['jsonschema'] = None; from batonflow.cli import main; raise SystemExit(main(sys.argv[1:]))"
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{tmp_path}", "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-c", child, "eval", "schema.yaml", "agents_x:echo"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "pip install 'batonflow[evals]'" in done.stderr

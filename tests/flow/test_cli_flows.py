"""``batonflow run`` on the example flows: offline, on the in-process SmolLM2 model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import batonflow

from .conftest import EXAMPLES

SRC = Path(batonflow.__file__).resolve().parent.parent


def batonflow_run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "batonflow", "run", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )


def report(stdout: str) -> dict[str, object]:
    start = stdout.index("\n{") + 1 if not stdout.startswith("{") else 0
    parsed: dict[str, object] = json.loads(stdout[start:])
    return parsed


def test_chat_case1_runs_offline_on_the_local_model_and_var_sets_the_question() -> None:
    result = batonflow_run(str(EXAMPLES / "chat_case1.yml"), "--var", "question=What is the capital of France?")

    assert result.returncode == 0, result.stderr
    answer_line = result.stdout.split("\n{", 1)[0]
    outcome = report(result.stdout)
    variables = outcome["variables"]
    assert isinstance(variables, dict)
    assert variables["var2"] == "What is the capital of France?"
    assert answer_line.strip() and answer_line.strip() == variables["message"].strip()
    assert outcome["graph"] == "chat_case1" and outcome["last_node"] == "n-4"


def test_chat_case3_reads_the_console_and_ends_with_its_input() -> None:
    result = batonflow_run(str(EXAMPLES / "chat_case3.yml"), stdin="Hi\nBye\n")

    assert result.returncode == 0, result.stderr
    assert sum(line.startswith("Robot: ") for line in result.stdout.splitlines()) == 2
    outcome = report(result.stdout)
    assert outcome["stopped"] is True and outcome["finished"] is False


def test_a_flow_error_exits_1_naming_graph_node_and_meta(tmp_path: Path) -> None:
    flow = tmp_path / "bad.yml"
    flow.write_text(
        'id: bad\nlayout:\n  - {id: chat, task: "@ChatModel", meta: {message: hi, stream: maybe, chatConfig: {provider: local}}}\n'
    )

    result = batonflow_run(str(flow))

    assert result.returncode == 1
    assert (
        result.stderr.strip()
        == f"batonflow: file {str(flow)!r}, graph 'bad', node 'chat', meta 'stream': expected true or false, got str 'maybe'"
    )

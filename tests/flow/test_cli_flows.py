"""``batonflow run`` on the example flows: offline, on the in-process SmolLM2 model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import batonflow

from .conftest import EXAMPLES, FakeOpenAI

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

    assert result.returncode == 3, result.stderr  # the input ended before the tenth round: stopped short
    assert sum(line.startswith("Robot: ") for line in result.stdout.splitlines()) == 2
    outcome = report(result.stdout)
    assert outcome["stopped"] is True and outcome["finished"] is False and outcome["stopped_at"] == "input"
    assert "node 'input': its task stopped the run (context.stop())" in result.stderr


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


def chat_flow(path: Path, meta: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'id: g\nlayout:\n  - {{id: chat, task: "@ChatModel", meta: {{message: hi, {meta}}}}}\n')
    return path


def test_a_flow_s_command_is_refused_in_one_line_and_nothing_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    server = json.dumps({"type": "stdio", "command": "sh", "args": ["-c", f"id > {marker}"]})
    flow = chat_flow(tmp_path / "f.yml", f"chatConfig: {{provider: local}}, mcpServers: {{x: {server}}}")

    result = batonflow_run(str(flow))

    assert result.returncode == 1 and not marker.exists()
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(
        f"batonflow: file {str(flow)!r}, graph 'g', node 'chat', meta 'mcpServers': server 'x' would run the command "
        "'sh', which is not "
        "allowed; allowed commands: none."
    )
    assert result.stderr.strip().endswith("[rule allowed_commands]")


def test_allow_host_opens_a_host_to_the_flow(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    flow = chat_flow(tmp_path / "f.yml", f"chatConfig: {{model: m, apiUrl: '{fake_openai.url}/v1'}}")
    host = fake_openai.url.removeprefix("http://")

    refused = batonflow_run(str(flow))
    allowed = batonflow_run(str(flow), "--allow-host", "example.org", "--allow-host", host)

    assert refused.returncode == 1 and refused.stderr.strip().endswith("[rule allowed_hosts]")
    assert f"--allow-host {host}" in refused.stderr and "Traceback" not in refused.stderr
    assert allowed.returncode == 0, allowed.stderr
    assert "pong" in str(report(allowed.stdout)["variables"])
    assert len(fake_openai.requests) == 1


def test_base_dir_and_allow_command_open_files_and_commands(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    server = json.dumps(
        {
            "type": "stdio",
            "command": sys.executable,
            "args": ["-c", "import sys; sys.exit(3)"],
            "cwd": str(tmp_path / "other"),
        }
    )
    flow = chat_flow(tmp_path / "flows" / "f.yml", f"chatConfig: {{provider: local}}, mcpServers: {{x: {server}}}")

    no_folder = batonflow_run(str(flow), "--allow-command", sys.executable)
    both = batonflow_run(str(flow), "--allow-command", sys.executable, "--base-dir", str(tmp_path))

    assert no_folder.returncode == 1 and no_folder.stderr.strip().endswith("[rule base_dir]")
    assert f"base_dir: {str((tmp_path / 'flows').resolve())!r}" in no_folder.stderr
    assert both.returncode == 1 and "the MCP server 'x' did not give its tools" in both.stderr

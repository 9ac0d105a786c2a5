"""The ``batonflow`` commands beyond the demo: --version, chat, serve, checkpoints; in-process and as processes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from typer.testing import CliRunner

from batonflow import SqliteSessionStore, UserError
from batonflow.cli import app, main
from batonflow.server import create_app

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", "NO_COLOR": "1"}


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == "batonflow 0.1.0\n"


def test_an_unknown_command_says_so_and_returns_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["nonsense"]) == 2
    assert "No such command 'nonsense'" in capsys.readouterr().err


def test_chat_streams_tool_calls_and_answers_an_interrupt_inline() -> None:
    result = CliRunner().invoke(app, ["chat", "tests.server.apps:refunds"], input="refund please\nyes\n")
    out = result.output
    assert result.exit_code == 0, out
    assert "⚙ refunds calls refund(order_id=42)" in out
    assert '? refunds waits: {"approve_refund": 42}' in out
    assert "← refund: refunded" in out
    assert "refunds› order 42: refunded" in out


def test_chat_shows_a_transfer_and_picks_an_agent_of_a_factory() -> None:
    result = CliRunner().invoke(app, ["chat", "tests.server.apps:agents", "--agent", "router"], input="refund\nno\n")
    assert result.exit_code == 0, result.output
    assert "⇢ router transfers to refunds" in result.output
    assert "refunds› order 42: not refunded" in result.output
    several = CliRunner().invoke(app, ["chat", "tests.server.apps:agents"], input="")
    assert isinstance(several.exception, UserError)
    assert "--agent: expected one of ['echo', 'refunds', 'router']" in str(several.exception)


def test_chat_continues_a_session_kept_in_sqlite(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'chat.db'}"
    for text in ("first", "second"):
        result = CliRunner().invoke(
            app, ["chat", "tests.server.apps:echo", "--session", "s1", "--store", store], input=f"{text}\n"
        )
        assert result.exit_code == 0, result.output

    async def messages() -> list[str]:
        async with SqliteSessionStore(tmp_path / "chat.db") as sessions:
            data = await sessions.get("s1")
        assert data is not None
        return [m.content for m in data.messages]

    assert asyncio.run(messages()) == ["first", "echo: first", "second", "echo: second"]


def _read_until(stream: object, marker: str, seen: list[str], timeout: float = 20.0) -> None:
    fd = stream.fileno()  # type: ignore[attr-defined]
    deadline = time.monotonic() + timeout
    while marker not in "".join(seen):
        assert time.monotonic() < deadline, f"expected {marker!r}, got {''.join(seen)!r}"
        chunk = os.read(fd, 4096).decode()
        assert chunk, f"expected {marker!r} before the end, got {''.join(seen)!r}"
        seen.append(chunk)


def test_ctrl_c_cancels_the_run_keeps_the_prompt_and_ctrl_c_at_the_prompt_leaves(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'chat.db'}"
    command = [sys.executable, "-m", "batonflow", "chat", "tests.server.apps:slow", "--session", "s", "--store", store]
    process = subprocess.Popen(
        command, cwd=ROOT, env=ENV, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdin is not None
    try:
        out: list[str] = []
        err: list[str] = []
        _read_until(process.stdout, "you> ", out)
        process.stdin.write(b"hello\n")
        process.stdin.flush()
        _read_until(process.stderr, "model waiting", err)
        process.send_signal(signal.SIGINT)
        _read_until(process.stdout, "[cancelled: the message stays in the conversation]", out)
        _read_until(process.stdout, "you> ", out[-1:])
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=20) == 130
    finally:
        process.kill()
        process.wait()

    async def messages() -> list[str]:
        async with SqliteSessionStore(tmp_path / "chat.db") as sessions:
            data = await sessions.get("s")
        assert data is not None
        return [m.content for m in data.messages]

    assert asyncio.run(messages()) == ["hello"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_serves_a_factory_of_agents_over_http() -> None:
    port = _free_port()
    command = [
        sys.executable,
        "-m",
        "batonflow",
        "serve",
        "tests.server.apps:agents",
        "--port",
        str(port),
        "--token",
        "t",
    ]
    process = subprocess.Popen(command, cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health")
                break
            except httpx.ConnectError:
                assert process.poll() is None and time.monotonic() < deadline, process.stderr.read().decode()  # type: ignore[union-attr]
                time.sleep(0.05)
        agents = httpx.get(f"http://127.0.0.1:{port}/agents", headers={"Authorization": "Bearer t"}).json()
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=20)
    assert (health.json()["agents"], health.json()["flows"]) == (3, 1)
    assert [a["name"] for a in agents["agents"]] == ["echo", "refunds", "router"]
    assert code == 0


def test_serve_with_a_bad_target_exits_1_saying_what_was_expected() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "batonflow", "serve", "tests.server.apps:nothing"],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert (
        result.stderr
        == "batonflow: target 'tests.server.apps:nothing': expected tests.server.apps to have 'nothing', got no 'nothing'\n"
    )


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no_colon", "target: expected module:attr (for example myapp.agents:root), got 'no_colon'"),
        (
            "no_such_module_x:a",
            "target 'no_such_module_x:a': expected an importable module 'no_such_module_x', got No module named 'no_such_module_x'",
        ),
        (
            "tests.server.apps:_last_user",
            "expected a factory that takes no arguments, got <function _last_user",
        ),
        (
            "tests.server.apps:sys",
            "expected an agent or a graph, a mapping or list of them, or a factory of one, got module",
        ),
    ],
)
def test_a_target_that_names_no_agents_is_refused_saying_why(
    target: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["chat", target]) == 1
    assert message in capsys.readouterr().err


def test_a_store_spec_is_memory_or_sqlite(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chat", "tests.server.apps:echo", "--store", "redis:x"]) == 1
    assert capsys.readouterr().err == (
        "batonflow: --store: expected 'memory', 'sqlite:PATH' or 'postgres:URL', got 'redis:x'\n"
    )


@pytest.fixture
def server_url() -> Iterator[str]:
    from tests.server import apps

    config = uvicorn.Config(
        create_app([apps.refunds()], auth_token="t"), host="127.0.0.1", port=_free_port(), log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    yield f"http://127.0.0.1:{config.port}"
    server.should_exit = True
    thread.join(10)


def test_checkpoints_list_show_and_resume_through_a_running_server(
    server_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    started = httpx.post(
        f"{server_url}/runs",
        json={"agent": "refunds", "input": "x", "checkpoint_id": "c1"},
        headers={"Authorization": "Bearer t"},
    ).json()
    interrupt = started["interrupts"][0]["id"]
    options = ["--url", server_url, "--token", "t"]

    assert main(["checkpoints", "list", *options]) == 0
    listed = capsys.readouterr().out
    assert main(["checkpoints", "show", "c1", *options]) == 0
    shown = capsys.readouterr().out
    assert main(["checkpoints", "resume", "c1", "--answer", f"{interrupt}=yes", *options]) == 0
    resumed = capsys.readouterr().out
    assert main(["checkpoints", "resume", "c1", "--all", "yes", *options]) == 1
    again = capsys.readouterr().err

    assert "c1" in listed and interrupt in listed and '{"approve_refund": 42}' in listed
    assert f'"id": "{interrupt}"' in shown
    assert resumed == "completed: order 42: refunded\n"
    assert again.startswith("batonflow: GET /checkpoints/c1: 404: checkpoint: expected a pending checkpoint, got 'c1'")


HOSTILE_IDS = ["a/b", "x?y", "[/]", "..", "%2e%2e", "a/b/resume"]


def _interrupted(url: str, **where: str) -> dict[str, object]:
    body = {"agent": "refunds", "input": "x", **where}
    answer: dict[str, object] = httpx.post(f"{url}/runs", json=body, headers={"Authorization": "Bearer t"}).json()
    return answer


def test_checkpoints_show_and_resume_send_any_id_as_one_path_segment(
    server_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    options = ["--url", server_url, "--token", "t"]
    for checkpoint_id in HOSTILE_IDS:
        _interrupted(server_url, checkpoint_id=checkpoint_id)
        assert main(["checkpoints", "show", checkpoint_id, *options]) == 0, checkpoint_id
        assert f'"checkpoint_id": {json.dumps(checkpoint_id)}' in capsys.readouterr().out
        assert main(["checkpoints", "resume", checkpoint_id, "--all", "yes", *options]) == 0, checkpoint_id
        assert capsys.readouterr().out == "completed: order 42: refunded\n"


def test_an_id_that_spells_another_endpoint_names_only_a_checkpoint(
    server_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    options = ["--url", server_url, "--token", "t"]
    _interrupted(server_url, session_id="victim")
    run_id = _interrupted(server_url, checkpoint_id="mine")["run_id"]

    assert main(["checkpoints", "show", "../sessions/victim", *options]) == 1
    shown = capsys.readouterr()
    cancel = f"../runs/{run_id}/cancel?"
    assert main(["checkpoints", "resume", cancel, "--agent", "refunds", "--answer", "i=yes", *options]) == 1
    resumed = capsys.readouterr()

    assert shown.out == ""
    assert shown.err.startswith(
        "batonflow: GET /checkpoints/..%2Fsessions%2Fvictim: 404: checkpoint: expected a pending checkpoint, got "
        "'../sessions/victim'"
    )
    assert resumed.out == ""
    assert f"got '{cancel}': the checkpoint store holds no such checkpoint" in resumed.err
    assert main(["checkpoints", "show", "", *options]) == 1
    assert "a checkpoint id must be a non-empty string" in capsys.readouterr().err


def test_checkpoints_reach_the_conversation_of_an_id_with_session(
    server_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    options = ["--url", server_url, "--token", "t"]
    _interrupted(server_url, checkpoint_id="both")
    _interrupted(server_url, session_id="both")
    assert main(["checkpoints", "show", "both", "--session", *options]) == 0
    assert '"session_id": "both"' in capsys.readouterr().out
    assert main(["checkpoints", "resume", "both", "--session", "--all", "no", *options]) == 0
    assert capsys.readouterr().out == "completed: order 42: not refunded\n"
    assert main(["checkpoints", "show", "both", *options]) == 0
    assert '"session_id": null' in capsys.readouterr().out


def test_checkpoints_list_prints_markup_and_control_characters_in_data_as_text(
    server_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _interrupted(server_url, checkpoint_id="[/]")
    _interrupted(server_url, checkpoint_id="[bold]x\x1b[2J")
    assert main(["checkpoints", "list", "--url", server_url, "--token", "t"]) == 0
    listed = capsys.readouterr().out
    assert "│ [/] " in listed
    assert "│ [bold]x\\x1b[2J " in listed and "\x1b" not in listed


def test_chat_prints_a_session_id_with_markup_as_it_is() -> None:
    result = CliRunner().invoke(app, ["chat", "tests.server.apps:echo", "--session", "[/][red]s"], input="hi\n")
    assert result.exit_code == 0, result.output
    assert "session [/][red]s (Ctrl-C" in result.output
    assert "echo› echo: hi" in result.output


def test_checkpoints_against_no_server_says_where_it_looked(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    assert main(["checkpoints", "list", "--url", url]) == 1
    assert capsys.readouterr().err.startswith(f"batonflow: cannot reach {url}: ")


def test_chat_asks_y_or_n_for_each_call_an_approval_holds() -> None:
    result = CliRunner().invoke(app, ["chat", "tests.server.apps:approvals"], input="refund\ny\nn\n")
    assert result.exit_code == 0, result.output
    assert "approve pay_back(order_id=1)? [y/n]" in result.output
    assert "approve pay_back(order_id=2)? [y/n]" in result.output
    assert "support› refunded 1 / " in result.output and "refunded 2" not in result.output


def test_web_serves_and_opens_the_dev_ui_in_the_browser(tmp_path: Path) -> None:
    opened = tmp_path / "opened"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$1" > {opened}\n')
    browser.chmod(0o755)
    port = _free_port()
    command = [sys.executable, "-m", "batonflow", "web", "tests.server.apps:echo", "--port", str(port)]
    process = subprocess.Popen(command, cwd=ROOT, env={**ENV, "BROWSER": f"{browser} %s"}, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not opened.exists() or not opened.read_text():
            assert process.poll() is None and time.monotonic() < deadline, "the browser was not opened"
            time.sleep(0.05)
        page = httpx.get(f"http://127.0.0.1:{port}/ui/")
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=20)
    assert opened.read_text() == f"http://127.0.0.1:{port}/ui/\n"
    assert page.status_code == 200 and "<title>batonflow</title>" in page.text


def test_serve_with_reload_serves_through_uvicorn_s_reloader() -> None:
    port = _free_port()
    command = [sys.executable, "-m", "batonflow", "serve", "tests.server.apps:echo", "--port", str(port), "--reload"]
    process = subprocess.Popen(command, cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health").json()
                break
            except httpx.ConnectError:
                assert process.poll() is None and time.monotonic() < deadline, process.stderr.read().decode()  # type: ignore[union-attr]
                time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=20)
        errors = process.stderr.read().decode()  # type: ignore[union-attr]
    assert health["agents"] == 1
    assert "Started reloader process" in errors

"""``batonflow run module:attr --input TEXT``: one run of an agent, streamed, with an exit code that says how it
ended; the agents live in a module each test writes (scripted models)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from batonflow import SqliteCheckpointStore
from batonflow.cli import main
from batonflow.server import create_app

ROOT = Path(__file__).resolve().parents[2]

AGENTS = r'''
from batonflow import ChatModelAgent, ToolContext, tool
from batonflow.graph import Graph
from batonflow.schema import assistant
from batonflow.testing import FunctionModel, ScriptedModel, tool_calls


def answer():
    return ChatModelAgent(name="answer", description="answers", model=ScriptedModel([assistant("forty-two")]))


def _down(messages, tools):
    raise RuntimeError("the model is down")


def broken():
    return ChatModelAgent(name="broken", description="fails", model=FunctionModel(_down))


@tool
def confirm(order_id: int, ctx: ToolContext) -> str:
    """Refund an order once a person said yes.

    Args:
        order_id: the order number
    """
    return "refunded" if ctx.ask({"approve_refund": order_id}) == "yes" else "not refunded"


def _asks(messages, tools):
    result = next((m for m in reversed(messages) if m.role == "tool"), None)
    return tool_calls(("confirm", {"order_id": 7})) if result is None else assistant(f"order 7: {result.content}")


def asks():
    return ChatModelAgent(name="asks", description="asks first", model=FunctionModel(_asks), tools=[confirm])


both = {"answer": answer(), "asks": asks()}
graph_only = Graph.from_yaml("id: g\nlayout:\n  - {id: start, type: start}\n  - {id: end, type: end}\n")


def needs_an_argument(x):
    return answer()
'''


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The name of a fresh module holding the agents above, importable from ``tmp_path``."""
    name = f"run_agents_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(AGENTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_an_answer_is_printed_and_exits_0(module: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", f"{module}:answer", "--input", "what is it?"]) == 0
    assert capsys.readouterr().out == "answer› forty-two\n"


def test_a_failing_run_prints_the_error_and_exits_1(module: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", f"{module}:broken", "--input", "hi"]) == 1
    assert capsys.readouterr().out == "error: RuntimeError: the model is down\n"


def test_a_mapping_runs_the_agent_named_by_agent(module: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", f"{module}:both", "--agent", "answer", "--input", "hi"]) == 0
    assert capsys.readouterr().out == "answer› forty-two\n"


def test_an_interrupt_in_memory_prints_its_id_and_that_chat_answers_inline(
    module: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", f"{module}:asks", "--input", "refund"]) == 3

    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["  ⚙ asks calls confirm(order_id=7)", '  ? asks waits: {"approve_refund": 7}']
    assert lines[2].startswith("the run waits at checkpoint run-") and lines[2].endswith(" for:")
    interrupt, asked = lines[3].strip().split(": ", 1)
    assert len(interrupt) == 32 and asked == '{"approve_refund": 7}'
    assert lines[4] == (
        "its checkpoint was in memory and ends with this command: run it with --store sqlite:PATH to resume it "
        f"later, or answer inline with batonflow chat {module}:asks"
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def serve_store(tmp_path: Path, module: str) -> Iterator[tuple[str, Path]]:
    """A server of the module's ``asks`` over a SQLite checkpoint store: its URL and the store's file."""
    path = tmp_path / "runs.db"
    agents = __import__(module)
    app = create_app([agents.asks()], checkpoint_store=SqliteCheckpointStore(path))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=_free_port(), log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    yield f"http://127.0.0.1:{server.config.port}", path
    server.should_exit = True
    thread.join(10)


def test_an_interrupt_kept_in_sqlite_is_resumed_by_a_server_on_that_store(
    module: str, serve_store: tuple[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    url, path = serve_store
    assert main(["run", f"{module}:asks", "--input", "refund", "--store", f"sqlite:{path}"]) == 3
    lines = capsys.readouterr().out.splitlines()
    checkpoint = lines[2].removeprefix("the run waits at checkpoint ").removesuffix(" for:")
    interrupt = lines[3].strip().split(": ")[0]
    assert lines[4] == f"resume it on a server over the same store: batonflow serve {module}:asks --store sqlite:{path}"
    assert lines[5] == f"then: batonflow checkpoints resume {checkpoint} --agent asks --answer {interrupt}=VALUE"

    resume = ["checkpoints", "resume", checkpoint, "--agent", "asks", "--answer", f"{interrupt}=yes", "--url", url]
    assert main(resume) == 0
    assert capsys.readouterr().out == "completed: order 7: refunded\n"


def test_all_needs_the_servers_index_so_it_is_refused_with_agent(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["checkpoints", "resume", "c1", "--agent", "asks", "--all", "yes"]) == 1
    assert capsys.readouterr().err == (
        "batonflow: --all: expected a checkpoint the server made (it knows the interrupts), got --agent: answer "
        "each interrupt with --answer ID=VALUE\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{m}:answer"], "Invalid value for --input: expected the text to run {m}:answer on, got none"),
        (["{m}:answer", "--input", "x", "--var", "a=1"], "Invalid value for --var: expected with a FLOW.yml target"),
        (["{m}:answer", "--input", "x", "--steps", "3"], "Invalid value for --steps: expected with a FLOW.yml target"),
        (["flow.yml", "--input", "x"], "Invalid value for --input: expected with a module:attr target, got a flow"),
        (["flow.yml", "--agent", "x"], "Invalid value for --agent: expected with a module:attr target, got a flow"),
        (["{m}:both", "--input", "x"], "--agent: expected one of ['answer', 'asks'] (the target holds several)"),
        (["{m}:both", "--agent", "no", "--input", "x"], "--agent: expected one of ['answer', 'asks'], got 'no'"),
        (["{m}", "--input", "x"], "target: expected module:attr (for example myapp.agents:root), got '{m}'"),
        (["{m}_missing:x", "--input", "x"], "expected an importable module '{m}_missing'"),
        (["{m}:nothing", "--input", "x"], "expected {m} to have 'nothing', got no 'nothing'"),
        (["{m}:needs_an_argument", "--input", "x"], "expected a factory that takes no arguments"),
        (["{m}:graph_only", "--input", "x"], "run: expected a target with an agent, got graphs only"),
        (
            ["{m}:answer", "--input", "x", "--store", "redis:x"],
            "--store: expected 'memory', 'sqlite:PATH' or 'postgres:URL', got 'redis:x'",
        ),
    ],
)
def test_bad_usage_exits_2_saying_what_was_expected(
    module: str, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", *(arg.format(m=module) for arg in args)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "Usage: batonflow run [OPTIONS]" in captured.err
    assert message.format(m=module) in captured.err


def test_the_exit_code_reaches_the_shell(module: str, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{tmp_path}", "NO_COLOR": "1"}
    codes = {}
    for attr in ("answer", "broken", "asks"):
        command = [sys.executable, "-m", "batonflow", "run", f"{module}:{attr}", "--input", "hi"]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
        assert "Traceback" not in done.stderr
        codes[attr] = done.returncode
    assert codes == {"answer": 0, "broken": 1, "asks": 3}

"""``batonflow run module:attr --input TEXT``: one run of an agent, streamed, with an exit code that says how it
ended; the agents live in a module each test writes (scripted models)."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from batonflow import SqliteCheckpointStore
from batonflow.cli import main
from batonflow.server import create_app

ROOT = Path(__file__).resolve().parents[2]

AGENTS = r'''
from batonflow import ChatModelAgent, ToolContext, tool
from batonflow.agents import human_approval
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


@tool
def refund(order_id: int, amount: float) -> str:
    """Refund an order.

    Args:
        order_id: the order number
        amount: how much
    """
    return f"refunded {amount} on order {order_id}"


@tool
def lookup(order_id: int) -> str:
    """Look an order up.

    Args:
        order_id: the order number
    """
    return f"order {order_id}: shipped"


def _refunds(messages, tools):
    results = [m.content for m in messages if m.role == "tool"]
    if not results:
        return tool_calls(("refund", {"order_id": 7, "amount": 30.0}), ("lookup", {"order_id": 7}))
    return assistant("the tools said: " + " | ".join(results))


def approvals(sensitive=("refund",)):
    return ChatModelAgent(
        name="approvals",
        description="refunds after a person approves",
        model=FunctionModel(_refunds),
        tools=[refund, lookup],
        middlewares=[human_approval(sensitive_tools=list(sensitive))],
    )


def approvals_of_both():
    return approvals(("refund", "lookup"))


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


@contextmanager
def _serving(app: Any) -> Iterator[str]:
    """``app`` served on a free port in a thread, while the block runs: its URL."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=_free_port(), log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture
def serve_store(tmp_path: Path, module: str) -> Iterator[tuple[str, Path]]:
    """A server of the module's ``asks`` over a SQLite checkpoint store: its URL and the store's file."""
    path = tmp_path / "runs.db"
    agents = __import__(module)
    with _serving(create_app([agents.asks()], checkpoint_store=SqliteCheckpointStore(path))) as url:
        yield url, path


def _waiting(out: str) -> tuple[str, str, list[str], list[str]]:
    """What a waiting run printed: its checkpoint, its first interrupt's id, and the two resume commands."""
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("the run waits at checkpoint "))
    checkpoint = lines[at].removeprefix("the run waits at checkpoint ").removesuffix(" for:")
    interrupt = lines[at + 1].strip().split(": ")[0]
    hint = next(i for i in range(at, len(lines)) if lines[i].startswith("resume it: batonflow "))
    here = lines[hint].removeprefix("resume it: batonflow ")
    remote = lines[hint + 1].split("): batonflow ", 1)[1]
    return checkpoint, interrupt, shlex.split(here), shlex.split(remote)


def test_an_interrupt_kept_in_sqlite_is_resumed_by_a_server_on_that_store(
    module: str, serve_store: tuple[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    url, path = serve_store
    assert main(["run", f"{module}:asks", "--input", "refund", "--store", f"sqlite:{path}"]) == 3
    out = capsys.readouterr().out
    checkpoint, interrupt, here, remote = _waiting(out)
    assert here == [
        *("checkpoints", "resume", checkpoint, "--target", f"{module}:asks", "--agent", "asks"),
        *("--store", f"sqlite:{path}", "--answer", f"{interrupt}=VALUE"),
    ]
    assert f"or on a server over the same store (batonflow serve {module}:asks --store sqlite:{path}): " in out
    assert remote == ["checkpoints", "resume", checkpoint, "--agent", "asks", "--answer", f"{interrupt}=VALUE"]

    assert main([*remote[:-1], f"{interrupt}=yes", "--url", url]) == 0
    assert capsys.readouterr().out == "completed: order 7: refunded\n"


def test_a_question_is_answered_here_with_the_hints_command(
    module: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = f"sqlite:{tmp_path / 'runs.db'}"
    assert main(["run", f"{module}:asks", "--input", "refund", "--store", store]) == 3
    _, interrupt, here, _ = _waiting(capsys.readouterr().out)
    assert main([*here[:-1], f"{interrupt}=yes"]) == 0
    assert capsys.readouterr().out == "  ← confirm: refunded\nasks› order 7: refunded\n"


def _waiting_approval(
    module: str, attr: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[str, list[str], list[str]]:
    """A run of ``attr`` waiting for an approval in SQLite: its interrupt id and the two resume commands printed."""
    store = f"sqlite:{tmp_path / 'runs.db'}"
    assert main(["run", f"{module}:{attr}", "--input", "refund order 7", "--store", store]) == 3
    out = capsys.readouterr().out
    assert (
        "an approval takes --approve ID, --reject ID, --skip ID or --edit ID=JSON, and --comment TEXT; "
        "ID:CALL_ID decides one of its calls, --comment ID=TEXT comments one decision"
    ) in out
    _, interrupt, here, remote = _waiting(out)
    assert here[-2:] == ["--approve", interrupt] and remote[-2:] == ["--approve", interrupt]
    return interrupt, here, remote


@pytest.fixture
def approval(module: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, list[str], list[str]]:
    """A run of ``approvals`` waiting for a person to approve its refund."""
    return _waiting_approval(module, "approvals", tmp_path, capsys)


def test_following_the_approval_hint_completes_the_run(
    approval: tuple[str, list[str], list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    _, here, _ = approval
    assert main(here) == 0
    assert capsys.readouterr().out.endswith("approvals› the tools said: refunded 30.0 on order 7 | order 7: shipped\n")


def test_following_the_approval_hint_on_a_server_completes_the_run(
    module: str, tmp_path: Path, approval: tuple[str, list[str], list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, remote = approval
    agents = __import__(module)
    app = create_app([agents.approvals()], checkpoint_store=SqliteCheckpointStore(tmp_path / "runs.db"))
    with _serving(app) as url:
        assert main([*remote, "--url", url]) == 0
    assert capsys.readouterr().out == "completed: the tools said: refunded 30.0 on order 7 | order 7: shipped\n"


@pytest.mark.parametrize(
    ("decision", "said"),
    [
        (["--skip", "{i}"], "Operation skipped: please continue with the next step. | order 7: shipped"),
        (["--approve", "{i}", "--comment", "regular"], "refunded 30.0 on order 7 (Note: regular) | order 7: shipped"),
        (["--edit", '{i}={{"amount": 5}}'], "refunded 5.0 on order 7 | order 7: shipped"),
    ],
)
def test_a_decision_given_on_the_command_line_reaches_the_tool_and_the_model(
    approval: tuple[str, list[str], list[str]], decision: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    interrupt, here, _ = approval
    assert main([*here[:-2], *(part.format(i=interrupt) for part in decision)]) == 0
    assert capsys.readouterr().out.endswith(f"approvals› the tools said: {said}\n")


def test_a_rejection_with_a_comment_is_what_the_model_reads(
    module: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    interrupt, here, _ = _waiting_approval(module, "approvals_of_both", tmp_path, capsys)
    assert main([*here[:-2], "--reject", interrupt, "--comment", "ask the customer first"]) == 0
    said = "ask the customer first | ask the customer first"
    assert capsys.readouterr().out.endswith(f"approvals› the tools said: {said}\n")


def test_the_only_sensitive_call_rejected_ends_the_run_with_the_comment_as_solon_does(
    approval: tuple[str, list[str], list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    interrupt, here, _ = approval
    assert main([*here[:-2], "--reject", interrupt, "--comment", "too much"]) == 0
    assert capsys.readouterr().out.endswith("approvals› too much\n")


def test_an_approval_of_two_calls_lists_each_call_by_the_id_that_decides_it(
    module: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = f"sqlite:{tmp_path / 'runs.db'}"
    assert main(["run", f"{module}:approvals_of_both", "--input", "x", "--store", store]) == 3
    _, interrupt, _, _ = _waiting(out := capsys.readouterr().out)
    assert f'    {interrupt}:call_1: refund({{"order_id": 7, "amount": 30.0}})\n' in out
    assert f'    {interrupt}:call_2: lookup({{"order_id": 7}})\n' in out


@pytest.mark.parametrize(
    ("decision", "said"),
    [
        (
            ["--approve", "{i}:call_1", "--reject", "{i}:call_2"],
            "refunded 30.0 on order 7 | Operation rejected: human approval was not granted.",
        ),
        (
            ["--edit", '{i}:call_1={{"amount": 5}}', "--skip", "{i}:call_2", "--comment", "{i}:call_2=not needed"],
            "refunded 5.0 on order 7 | not needed",
        ),
        (
            ["--reject", "{i}:call_1", "--approve", "{i}:call_2", "--comment", "{i}:call_1=too much"],
            "too much | order 7: shipped",
        ),
        (
            ["--skip", "{i}:call_1", "--approve", "{i}:call_2", "--comment", "later", "--comment", "{i}:call_2=ok"],
            "later | order 7: shipped (Note: ok)",
        ),
    ],
)
def test_each_call_of_an_approval_takes_its_own_decision_and_comment(
    module: str, tmp_path: Path, decision: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    interrupt, here, _ = _waiting_approval(module, "approvals_of_both", tmp_path, capsys)
    assert main([*here[:-2], *(part.format(i=interrupt) for part in decision)]) == 0
    assert capsys.readouterr().out.endswith(f"approvals› the tools said: {said}\n")


def test_a_call_left_undecided_keeps_waiting_and_the_next_resume_decides_only_it(
    module: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    interrupt, here, _ = _waiting_approval(module, "approvals_of_both", tmp_path, capsys)
    assert main([*here[:-2], "--edit", f'{interrupt}:call_1={{"amount": 5}}']) == 3
    out = capsys.readouterr().out
    assert "refunded" not in out
    _, again, _, _ = _waiting(out)
    assert main([*here[:-2], "--approve", f"{again}:call_2"]) == 0
    assert capsys.readouterr().out.endswith("approvals› the tools said: refunded 5.0 on order 7 | order 7: shipped\n")


def test_on_a_server_a_decision_for_the_whole_approval_covers_the_calls_not_named(
    module: str, capsys: pytest.CaptureFixture[str]
) -> None:
    agents = __import__(module)
    with _serving(create_app([agents.approvals_of_both()])) as url:
        started = httpx.post(f"{url}/runs", json={"agent": "approvals", "input": "x", "checkpoint_id": "c1"}).json()
        i = started["interrupts"][0]["id"]
        resume = ["checkpoints", "resume", "c1", "--url", url]
        assert main([*resume, "--approve", f"{i}:nope"]) == 1
        assert capsys.readouterr().err == (
            f"batonflow: interrupt {i!r}: expected calls of ['call_1', 'call_2'], got ['nope']\n"
        )
        assert main([*resume, "--skip", i, "--edit", f'{i}:call_1={{"amount": 5}}', "--comment", "no"]) == 0
    assert capsys.readouterr().out.startswith("completed: the tools said: refunded 5.0 on order 7 (Note: no) | no")


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (["--answer", "{i}=maybe"], "HITL resume data: expected a HITLDecision, one of ['approve', 'reject', 'skip']"),
        (["--edit", "{i}=[1]"], "--edit {i}: expected a JSON object of the call's arguments, got '[1]'"),
        (["--comment", "why"], "--comment: expected with --approve, --reject, --skip or --edit, got none of them"),
        (["--approve", "{i}", "--skip", "{i}"], "interrupt '{i}': expected one answer, got two"),
        (["--approve", "{i}:call_1", "--skip", "{i}:call_1"], "interrupt '{i}:call_1': expected one answer, got two"),
        (
            ["--approve", "{i}", "--comment", "a", "--comment", "b"],
            "--comment: expected one comment for every decision, got two ('a' and 'b')",
        ),
        (
            ["--approve", "{i}", "--skip", "{i}:call_1"],
            "interrupt '{i}': expected a decision for the whole approval or for its calls, got both",
        ),
        (["--approve", "{i}:nope"], "expected decisions for the pending call ids ['call_1'], got ['nope']"),
    ],
)
def test_a_bad_answer_exits_1_with_the_reason(
    approval: tuple[str, list[str], list[str]], answer: list[str], reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    interrupt, here, _ = approval
    assert main([*here[:-2], *(part.format(i=interrupt) for part in answer)]) == 1
    printed = capsys.readouterr()
    assert reason.format(i=interrupt) in printed.out + printed.err
    assert main(here) == 0  # the checkpoint waits still


def test_a_bad_answer_on_a_server_exits_1_with_the_servers_reason(
    module: str, tmp_path: Path, approval: tuple[str, list[str], list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    interrupt, _, remote = approval
    agents = __import__(module)
    app = create_app([agents.approvals()], checkpoint_store=SqliteCheckpointStore(tmp_path / "runs.db"))
    with _serving(app) as url:
        assert main([*remote[:-2], "--answer", f"{interrupt}=maybe", "--url", url]) == 1
    err = capsys.readouterr().err
    assert (
        err.startswith("batonflow: checkpoint ") and "expected the resumed run to end, got failed (UserError: " in err
    )
    assert "HITL resume data: expected a HITLDecision, one of ['approve', 'reject', 'skip']" in err


@pytest.mark.parametrize("where", [["--agent", "asks"], ["--target", "m:asks"]])
def test_all_needs_the_servers_index_so_it_is_refused_with_agent_or_target(
    where: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["checkpoints", "resume", "c1", *where, "--all", "yes"]) == 1
    assert capsys.readouterr().err == (
        "batonflow: --all: expected a checkpoint the server made (it knows the interrupts), got --agent or --target: "
        "answer each interrupt by its id\n"
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


@pytest.mark.parametrize(
    ("decision", "said"),
    [
        (["--reject", "{i}", "--comment", "no"], "completed: the tools said: no | no\n"),
        (
            ["--edit", '{i}={{"order_id": 8}}'],
            "completed: the tools said: refunded 30.0 on order 8 | order 8: shipped\n",
        ),
        (["--answer", "{i}=skip"], "completed: the tools said: Operation skipped: please continue with the next step."),
    ],
)
def test_a_decision_on_an_approval_the_server_made_is_sent_for_each_of_its_calls(
    module: str, decision: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    agents = __import__(module)
    with _serving(create_app([agents.approvals_of_both()])) as url:
        started = httpx.post(f"{url}/runs", json={"agent": "approvals", "input": "x", "checkpoint_id": "c1"}).json()
        interrupt = started["interrupts"][0]["id"]
        assert main(["checkpoints", "resume", "c1", *(d.format(i=interrupt) for d in decision), "--url", url]) == 0
    assert capsys.readouterr().out.startswith(said)


def test_a_bad_answer_to_an_approval_the_server_made_exits_1_with_the_servers_reason(
    module: str, capsys: pytest.CaptureFixture[str]
) -> None:
    agents = __import__(module)
    with _serving(create_app([agents.approvals()])) as url:
        started = httpx.post(f"{url}/runs", json={"agent": "approvals", "input": "x", "checkpoint_id": "c1"}).json()
        interrupt = started["interrupts"][0]["id"]
        assert main(["checkpoints", "resume", "c1", "--answer", f"{interrupt}=maybe", "--url", url]) == 1
    err = capsys.readouterr().err
    assert err.startswith("batonflow: POST /checkpoints/c1/resume: 422: targets[")
    assert err.endswith("got the action 'maybe'\n")

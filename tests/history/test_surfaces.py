"""The history over HTTP (GET /runs/{id}/history) and on the command line (batonflow runs history)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from tests.server.conftest import asgi_client, serving

from batonflow.adk import Runner, collect_events
from batonflow.cli import main
from batonflow.schema import user
from batonflow.server import create_app
from batonflow.store import MemoryCheckpointStore, SqliteCheckpointStore

from .agents import refund_agent

ROOT = Path(__file__).resolve().parents[2]


async def test_the_server_shows_a_kept_runs_steps_and_refuses_one_that_kept_none() -> None:
    store = MemoryCheckpointStore()
    agent = refund_agent([])
    await collect_events(Runner(agent, checkpoint_store=store, keep_history=True).run([user("7")], checkpoint_id="r/1"))

    async with asgi_client(create_app([agent], checkpoint_store=store)) as client:
        answer = await client.get("/runs/r/1/history")
        missing = await client.get("/runs/nobody/history")

    assert answer.status_code == 200
    body = answer.json()
    assert (body["run_id"], body["segments"]) == ("r/1", 1)
    assert [(s["index"], s["kind"], s["agent_name"]) for s in body["steps"]] == [
        (0, "model", "support"),
        (1, "tool", "support"),
        (2, "model", "support"),
    ]
    assert body["steps"][1]["arguments"] == '{"order_id": 7}'
    assert body["steps"][1]["session_values"] == {"looked_up": 7}
    assert missing.status_code == 404
    error = missing.json()["error"]
    assert error["code"] == "run_history"
    assert "expected a run kept with Runner(..., keep_history=True)" in error["message"]


async def kept_in_sqlite(path: Path) -> None:
    store = SqliteCheckpointStore(path=str(path))
    try:
        runner = Runner(refund_agent([]), checkpoint_store=store, keep_history=True)
        await collect_events(runner.run([user("7")], checkpoint_id="run-1"))
    finally:
        await store.close()


async def test_the_command_prints_a_kept_runs_steps_from_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await kept_in_sqlite(tmp_path / "runs.db")
    code = await asyncio.to_thread(main, ["runs", "history", "run-1", "--store", f"sqlite:{tmp_path / 'runs.db'}"])
    table = capsys.readouterr().out
    assert code == 0
    assert 'lookup({"order_id": 7}) -> order 7: 30' in table
    assert "Refund done: order 7: 30" in table

    code = await asyncio.to_thread(
        main, ["runs", "history", "run-1", "--json", "--store", f"sqlite:{tmp_path / 'runs.db'}"]
    )
    assert code == 0
    assert [s["kind"] for s in json.loads(capsys.readouterr().out)["steps"]] == ["model", "tool", "model"]

    code = await asyncio.to_thread(main, ["runs", "history", "nobody", "--store", f"sqlite:{tmp_path / 'runs.db'}"])
    assert code != 0
    assert "history of run 'nobody': expected a run kept" in capsys.readouterr().err


async def test_the_command_asks_a_server(capsys: pytest.CaptureFixture[str]) -> None:
    store = MemoryCheckpointStore()
    agent = refund_agent([])
    await collect_events(Runner(agent, checkpoint_store=store, keep_history=True).run([user("7")], checkpoint_id="r-1"))
    async with serving(create_app([agent], checkpoint_store=store)) as url:
        code = await asyncio.to_thread(main, ["runs", "history", "r-1", "--json", "--url", url])
        out = capsys.readouterr().out
        missing = await asyncio.to_thread(main, ["runs", "history", "nobody", "--url", url])
    assert code == 0
    assert [s["summary"] for s in json.loads(out)["steps"]][-1] == "Refund done: order 7: 30"
    assert missing != 0
    assert "404" in capsys.readouterr().err


async def test_a_server_with_keep_history_keeps_the_runs_it_starts() -> None:
    store = MemoryCheckpointStore()
    app = create_app([refund_agent([], approval=True)], checkpoint_store=store, keep_history=True)
    async with asgi_client(app) as client:
        started = (await client.post("/runs", json={"agent": "support", "input": "7", "checkpoint_id": "c-1"})).json()
        interrupt = started["interrupts"][0]["id"]
        await client.post("/checkpoints/c-1/resume", json={"targets": {interrupt: "yes"}})
        by_checkpoint = (await client.get("/runs/c-1/history")).json()
        by_run = (await client.get(f"/runs/{started['run_id']}/history")).json()

    assert [s["kind"] for s in by_checkpoint["steps"]] == [
        "model",
        "tool",
        "model",
        "interrupt",
        "answer",
        "tool",
        "model",
    ]
    assert by_checkpoint["steps"][-1]["summary"] == "Refund done: approved: yes"
    assert by_run == by_checkpoint


async def _kept(store: MemoryCheckpointStore, ledger: list[str], checkpoint_id: str = "r-1") -> None:
    runner = Runner(refund_agent(ledger), checkpoint_store=store, keep_history=True)
    await collect_events(runner.run([user("7")], checkpoint_id=checkpoint_id))


async def test_the_server_shows_the_state_after_a_step_and_refuses_a_step_the_run_has_not() -> None:
    store = MemoryCheckpointStore()
    await _kept(store, [])
    async with asgi_client(create_app([refund_agent([])], checkpoint_store=store)) as client:
        step = await client.get("/runs/r-1/history/1")
        beyond = await client.get("/runs/r-1/history/3")
        unknown = await client.get("/runs/nobody/history/0")

    assert step.status_code == 200
    body = step.json()
    assert (body["run_id"], body["index"], body["kind"]) == ("r-1", 1, "tool")
    assert [m["role"] for m in body["state"]["messages"]] == ["user", "assistant", "tool"]
    assert body["state"]["messages"][-1]["content"] == "order 7: 30"
    assert body["state"]["session_values"] == {"looked_up": 7}
    assert beyond.status_code == 404
    assert beyond.json()["error"]["code"] == "unknown_step"
    assert "expected a step from 0 to 2 of run 'r-1', got 3" in beyond.json()["error"]["message"]
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "run_history"


async def test_a_fork_over_http_runs_from_the_steps_state_edited_and_leaves_the_original() -> None:
    store = MemoryCheckpointStore()
    await _kept(store, [])
    ledger: list[str] = []
    app = create_app([refund_agent(ledger)], checkpoint_store=store, keep_history=True)
    async with asgi_client(app) as client:
        forked = await client.post(
            "/runs/r-1/fork",
            json={"at": 2, "input": "9", "session_values": {"note": "b"}, "checkpoint_id": "r-1b"},
        )
        again = await client.get("/runs/r-1b/history")
        original = (await client.get("/runs/r-1/history")).json()
        onto_itself = await client.post("/runs/r-1/fork", json={"at": 0, "checkpoint_id": "r-1"})
        beyond = await client.post("/runs/r-1/fork", json={"at": 5})
        unknown_agent = await client.post("/runs/r-1/fork", json={"at": 0, "agent": "nobody"})
        negative = await client.post("/runs/r-1/fork", json={"at": -1})

    assert forked.status_code == 200, forked.text
    answer = forked.json()
    assert (answer["status"], answer["checkpoint_id"]) == ("completed", "r-1b")
    # After step 2 the run had answered for order 7; the fork adds "9" to that conversation: the model looks 9 up.
    assert answer["text"] == "Refund done: order 9: 30"
    assert ledger == ["model", "lookup 9", "model"]
    kept = again.json()
    assert kept["steps"][-1]["session_values"] == {"looked_up": 9, "note": "b"}
    assert [s["summary"] for s in original["steps"]][-1] == "Refund done: order 7: 30"
    assert onto_itself.status_code == 409
    assert onto_itself.json()["error"]["code"] == "fork_onto_original"
    assert beyond.status_code == 404
    assert beyond.json()["error"]["code"] == "unknown_step"
    assert unknown_agent.status_code == 404
    assert unknown_agent.json()["error"]["code"] == "unknown_agent"
    assert negative.status_code == 422


async def test_a_replay_over_http_answers_the_runs_events_or_where_the_tree_parts_from_it() -> None:
    store = MemoryCheckpointStore()
    ledger: list[str] = []
    await _kept(store, ledger)
    calls = len(ledger)
    app = create_app(
        {"support": refund_agent(ledger), "renamed": refund_agent(ledger, lookup_name="find_order")},
        checkpoint_store=store,
    )
    async with asgi_client(app) as client:
        replayed = await client.post("/runs/r-1/replay", json={})
        renamed = await client.post("/runs/r-1/replay", json={"agent": "renamed"})
        unknown = await client.post("/runs/nobody/replay", json={})

    assert replayed.status_code == 200, replayed.text
    body = replayed.json()
    assert (body["agent"], body["steps"], body["text"]) == ("support", 3, "Refund done: order 7: 30")
    assert [e["event"] for e in body["events"]] == ["message", "message", "message"]
    assert body["events"][1]["message"]["role"] == "tool"
    assert len(ledger) == calls  # no model or tool was called
    assert renamed.status_code == 409
    error = renamed.json()["error"]
    assert error["code"] == "replay_mismatch"
    assert error["found"] == {"agent_name": "support", "step": 1}
    assert "has no tool 'lookup'" in error["message"]
    assert unknown.status_code == 404


async def test_the_command_replays_and_forks_a_run_from_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    await kept_in_sqlite(tmp_path / "runs.db")
    (tmp_path / "kept_shop_agents.py").write_text(
        "from tests.history.agents import refund_agent\n"
        "support = refund_agent([])\n"
        "renamed = {'support': refund_agent([], lookup_name='find_order')}\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    where = ["--store", f"sqlite:{tmp_path / 'runs.db'}"]

    code = await asyncio.to_thread(main, ["runs", "replay", "run-1", *where, "--target", "kept_shop_agents:support"])
    assert (code, capsys.readouterr().out) == (
        0,
        "replayed run-1 (support): 3 steps, 3 events\nRefund done: order 7: 30\n",
    )

    code = await asyncio.to_thread(main, ["runs", "replay", "run-1", *where, "--target", "kept_shop_agents:renamed"])
    assert code == 1
    assert "agent 'support' has no tool 'lookup'" in capsys.readouterr().err

    fork = ["runs", "fork", "run-1", "--at", "2", "--input", "8", "--value", 'note="x"', "--checkpoint-id", "run-2"]
    code = await asyncio.to_thread(main, [*fork, *where, "--target", "kept_shop_agents:support"])
    assert (code, capsys.readouterr().out) == (
        0,
        "forked run-1 at step 2 as run-2: completed\nRefund done: order 8: 30\n",
    )

    in_place = ["runs", "fork", "run-1", "--at", "1", "--replay", "--checkpoint-id", "run-3", *where]
    code = await asyncio.to_thread(main, [*in_place, "--target", "kept_shop_agents:support"])
    assert (code, capsys.readouterr().out) == (
        0,
        "forked run-1 at step 1 as run-3: completed\nRefund done: order 7: 30\n",
    )
    code = await asyncio.to_thread(main, [*in_place, "--input", "9", "--target", "kept_shop_agents:support"])
    assert code == 1
    assert "--replay: expected --store (a fork over HTTP starts at the root) and no --input" in capsys.readouterr().err

    code = await asyncio.to_thread(main, ["runs", "fork", "run-1", "--at", "0", *where])
    assert code == 1
    assert "expected --target module:attr too" in capsys.readouterr().err
    code = await asyncio.to_thread(main, ["runs", "fork", "run-1", "--at", "0", "--value", "note", *where])
    assert code == 1
    assert "--value: expected KEY=JSON, got 'note'" in capsys.readouterr().err


async def test_the_command_replays_and_forks_through_a_server(capsys: pytest.CaptureFixture[str]) -> None:
    store = MemoryCheckpointStore()
    await _kept(store, [])
    app = create_app([refund_agent([])], checkpoint_store=store)
    async with serving(app) as url:
        replayed = await asyncio.to_thread(main, ["runs", "replay", "r-1", "--json", "--url", url])
        events = json.loads(capsys.readouterr().out)["events"]
        forked = await asyncio.to_thread(main, ["runs", "fork", "r-1", "--at", "2", "--input", "5", "--url", url])
        out = capsys.readouterr().out
        beyond = await asyncio.to_thread(main, ["runs", "fork", "r-1", "--at", "9", "--url", url])
    assert replayed == 0
    assert events[-1]["message"]["content"] == "Refund done: order 7: 30"
    assert forked == 0
    assert out.endswith(": completed\nRefund done: order 5: 30\n")
    assert beyond != 0
    assert "expected a step from 0 to 2 of run 'r-1', got 9" in capsys.readouterr().err


def test_serve_keeps_history_when_asked_and_refuses_it_where_the_workers_run_the_runs(tmp_path: Path) -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    command = [sys.executable, "-m", "batonflow", "serve", "tests.history.agents:support", "--port", str(port)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    server = subprocess.Popen([*command, "--keep-history"], cwd=ROOT, env=env, stderr=subprocess.PIPE)
    try:
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/health")
                break
            except httpx.ConnectError:
                assert server.poll() is None, server.stderr.read().decode()  # type: ignore[union-attr]
                time.sleep(0.05)
        base = f"http://127.0.0.1:{port}"
        httpx.post(f"{base}/runs", json={"agent": "support", "input": "7", "checkpoint_id": "c-1"}, timeout=30)
        kept = httpx.get(f"{base}/runs/c-1/history").json()
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=20)
    assert [s["kind"] for s in kept["steps"]] == ["model", "tool", "model"]

    dbos = ["--backend", "dbos", "--database-url", "postgresql://nowhere/x", "--store", f"sqlite:{tmp_path / 'x.db'}"]
    refused = subprocess.run(
        [*command, *dbos, "--keep-history"], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    assert refused.returncode == 1
    assert "start them with batonflow worker --keep-history" in refused.stderr

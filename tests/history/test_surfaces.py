"""The history over HTTP (GET /runs/{id}/history) and on the command line (batonflow runs history)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from tests.server.conftest import asgi_client, serving

from batonflow.adk import Runner, collect_events
from batonflow.cli import main
from batonflow.schema import user
from batonflow.server import create_app
from batonflow.store import MemoryCheckpointStore, SqliteCheckpointStore

from .agents import refund_agent


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

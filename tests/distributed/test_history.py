"""Run history on the DBOS backend: a worker started with ``--keep-history`` keeps each run's record in the shared
checkpoint store, across its interrupt and the resume (on whichever worker), and any API process shows, replays and
forks it (the fork a new run on the workers), and keeps each turn of a conversation under its run id."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from fastapi import FastAPI

from batonflow.distributed import DBOSBackend, RedisEventLog
from batonflow.server import create_app
from batonflow.store import SqliteCheckpointStore, SqliteSessionStore

from .apps import agents
from .conftest import REDIS_URL, Cluster, Worker, two_apis


def _app(cluster: Cluster) -> FastAPI:
    store, sessions = SqliteCheckpointStore(cluster.store_path), SqliteSessionStore(cluster.store_path)
    backend = DBOSBackend(store, database_url=cluster.database_url, events=RedisEventLog(REDIS_URL), sessions=sessions)
    return create_app(agents(), checkpoint_store=store, session_store=sessions, backend=backend)


@pytest.fixture(scope="module")
def keeping(cluster: Cluster) -> Iterator[Worker]:
    running = cluster.start_worker("--keep-history")
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
async def clients(cluster: Cluster, keeping: Worker) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    async with two_apis(_app(cluster), _app(cluster)) as pair:
        yield pair


async def test_a_worker_keeps_a_runs_record_across_its_resume_and_any_api_forks_it(clients, cluster: Cluster) -> None:
    a, b = clients
    checkpoint_id = f"kept-{uuid.uuid4().hex[:8]}"
    started = await a.post("/runs", json={"agent": "shipper", "input": "ship", "checkpoint_id": checkpoint_id})
    assert started.json()["status"] == "interrupted", started.text
    interrupt = started.json()["interrupts"][0]["id"]
    resumed = await b.post(f"/checkpoints/{checkpoint_id}/resume", json={"targets": {interrupt: "no"}})
    assert resumed.json()["text"] == "order 7: not shipped"

    kept = (await b.get(f"/runs/{checkpoint_id}/history")).json()
    assert kept["segments"] == 2
    assert [s["kind"] for s in kept["steps"]] == ["model", "interrupt", "answer", "tool", "model"]
    assert kept["steps"][-1]["summary"] == "order 7: not shipped"

    replayed = (await a.post(f"/runs/{checkpoint_id}/replay", json={})).json()
    assert replayed["text"] == "order 7: not shipped"
    assert [e["event"] for e in replayed["events"]][:2] == ["message", "interrupt"]

    fork_id = f"{checkpoint_id}-fork"
    forked = await a.post(f"/runs/{checkpoint_id}/fork", json={"at": 4, "input": "again", "checkpoint_id": fork_id})
    assert forked.status_code == 200, forked.text
    # The fork runs on the worker: after the answer the shipper says what its last tool result was.
    assert (forked.json()["status"], forked.json()["text"]) == ("completed", "order 7: not shipped")
    again = (await b.get(f"/runs/{fork_id}/history")).json()
    assert [s["kind"] for s in again["steps"]] == ["model"]


async def test_a_workers_conversation_turns_are_kept_under_their_run_ids(clients) -> None:
    a, b = clients
    session = f"chat-{uuid.uuid4().hex[:8]}"
    one = (await a.post("/runs", json={"agent": "echo", "input": "hi", "session_id": session})).json()
    two = (await b.post("/runs", json={"agent": "echo", "input": "again", "session_id": session})).json()
    assert (one["text"], two["text"]) == ("echo: hi", "echo: again")
    first = (await b.get(f"/runs/{one['run_id']}/history")).json()
    second = (await a.get(f"/runs/{two['run_id']}/history")).json()
    assert [s["summary"] for s in first["steps"]] == ["echo: hi"]
    assert [s["summary"] for s in second["steps"]] == ["echo: again"]

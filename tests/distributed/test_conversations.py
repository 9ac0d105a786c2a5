"""Conversations on the workers: each turn of a session is a segment, named by where the conversation stands and
what the turn brings, run on a worker with the shared session store; turns through two API processes continue one
conversation, a conversation's pending run is resumed through the other API process, and the same turn asked twice
runs once."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI
from tests.server.conftest import parse_sse

from batonflow.distributed import DBOSBackend, InProcessBackend, RedisEventLog, SegmentRequest
from batonflow.errors import UserError
from batonflow.schema import user
from batonflow.server import create_app
from batonflow.store import MemoryCheckpointStore, MemorySessionStore, SqliteCheckpointStore, SqliteSessionStore

from .apps import agents
from .conftest import REDIS_URL, Cluster, Worker, two_apis


def _app(cluster: Cluster) -> FastAPI:
    store, sessions = SqliteCheckpointStore(cluster.store_path), SqliteSessionStore(cluster.store_path)
    backend = DBOSBackend(store, database_url=cluster.database_url, events=RedisEventLog(REDIS_URL), sessions=sessions)
    return create_app(agents(), checkpoint_store=store, session_store=sessions, backend=backend)


@pytest.fixture
async def clients(cluster: Cluster, worker: Worker) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    async with two_apis(_app(cluster), _app(cluster)) as pair:
        yield pair


async def test_turns_through_two_api_processes_continue_one_conversation(clients, cluster: Cluster) -> None:
    a, b = clients
    session_id = f"chat-{uuid.uuid4().hex[:8]}"
    first = await a.post("/runs", json={"agent": "echo", "session_id": session_id, "input": "hello"})
    second = await b.post("/runs", json={"agent": "echo", "session_id": session_id, "input": "again"})
    assert first.status_code == second.status_code == 200, (first.text, second.text)
    assert (first.json()["text"], second.json()["text"]) == ("echo: hello", "echo: again")
    assert first.json()["session_id"] == session_id and first.json()["checkpoint_id"] is None
    assert first.json()["run_id"] != second.json()["run_id"]
    assert first.json()["run_id"].startswith(f"{session_id}@turn-")
    data = await SqliteSessionStore(cluster.store_path).get(session_id)
    assert data is not None
    assert [(m.role, m.content) for m in data.messages] == [
        ("user", "hello"),
        ("assistant", "echo: hello"),
        ("user", "again"),
        ("assistant", "echo: again"),
    ]


async def test_a_conversations_pending_run_is_resumed_through_the_other_api(
    clients, cluster: Cluster, worker: Worker
) -> None:
    a, b = clients
    session_id = f"ship-{uuid.uuid4().hex[:8]}"
    paused = await a.post("/runs", json={"agent": "shipper", "session_id": session_id, "input": "ship 7"})
    assert paused.json()["status"] == "interrupted", paused.text
    interrupt = paused.json()["interrupts"][0]["id"]
    before = len(cluster.effect_lines())
    streamed = await b.post(
        "/runs", json={"agent": "shipper", "session_id": session_id, "targets": {interrupt: "yes"}, "stream": True}
    )
    frames = parse_sse(streamed.text)
    assert [f.event for f in frames][-1] == "end" and frames[-1].data["status"] == "completed"
    assert frames[-1].data["text"] == "order 7: shipped"
    assert cluster.effect_lines()[before:] == [f"{worker.process.pid} shipped 7"]  # on the worker, once
    summary = (await a.get(f"/runs/{frames[-1].data['run_id']}")).json()
    assert (summary["status"], summary["session_id"]) == ("completed", session_id)
    data = await SqliteSessionStore(cluster.store_path).get(session_id, last=1)
    assert data is not None and not data.state.pending and data.messages[-1].content == "order 7: shipped"


async def test_the_same_turn_asked_twice_runs_once(cluster: Cluster, worker: Worker) -> None:
    sessions = SqliteSessionStore(cluster.store_path)
    one, two = (
        DBOSBackend(SqliteCheckpointStore(cluster.store_path), database_url=cluster.database_url, sessions=sessions)
        for _ in range(2)
    )
    session_id = f"twice-{uuid.uuid4().hex[:8]}"
    turn = SegmentRequest(agent="echo", session_id=session_id, messages=(user("hi"),))
    try:
        ids = await asyncio.gather(one.submit(turn), two.submit(turn))
        assert ids[0] == ids[1]
        outcome = await asyncio.wait_for(one.outcome(ids[0]), 20)
        later = await one.submit(turn)  # the conversation moved on: the same words are a new turn
        assert later != ids[0]
        await asyncio.wait_for(one.outcome(later), 20)
    finally:
        await one.close()
        await two.close()
    assert outcome.status == "completed" and outcome.text == "echo: hi"
    data = await sessions.get(session_id)
    assert data is not None and [m.content for m in data.messages] == ["hi", "echo: hi", "hi", "echo: hi"]


async def test_a_turn_in_process_and_what_a_turn_needs() -> None:
    sessions = MemorySessionStore()
    backend = InProcessBackend(agents(), MemoryCheckpointStore(), sessions=sessions)
    sid = await backend.submit(SegmentRequest(agent="echo", session_id="s1", messages=(user("hey"),)))
    assert (await backend.outcome(sid)).text == "echo: hey"
    await backend.close()
    without = InProcessBackend(agents(), MemoryCheckpointStore())
    with pytest.raises(UserError, match="session 's1': a conversation's turn needs the session store, got none"):
        await without.submit(SegmentRequest(agent="echo", session_id="s1", messages=(user("hey"),)))
    with pytest.raises(
        UserError, match=re.escape("expected a checkpoint_id (a run) or a session_id (a conversation's turn), got both")
    ):
        SegmentRequest(agent="echo", checkpoint_id="c", session_id="s")
    with pytest.raises(UserError, match="session id"):
        SegmentRequest(agent="echo", session_id="")
    request = SegmentRequest(agent="echo", session_id="s1", messages=(user("x"),), session_values={"k": 1})
    assert SegmentRequest.from_payload(request.payload()) == request


async def test_session_values_reach_runs_and_turns_on_the_worker(clients) -> None:
    a, _ = clients
    run = await a.post("/runs", json={"agent": "greeter", "input": "hi", "session_values": {"name": "Ada"}})
    turn = await a.post(
        "/runs",
        json={"agent": "greeter", "input": "hi", "session_values": {"name": "Bo"}, "session_id": uuid.uuid4().hex},
    )
    assert run.status_code == turn.status_code == 200, (run.text, turn.text)
    assert (run.json()["text"], turn.json()["text"]) == ("hello Ada", "hello Bo")

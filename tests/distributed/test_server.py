"""Stateless API processes over the DBOS backend: a run started through one app is followed through another (its
events from the run's Redis Stream), a reconnect with ``Last-Event-ID`` replays what was missed, and a resume
through either finishes the run on the worker."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import time
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI
from tests.server.conftest import parse_sse

from batonflow.distributed import DBOSBackend, RedisEventLog
from batonflow.errors import UserError
from batonflow.server import create_app
from batonflow.store import SqliteCheckpointStore

from .apps import agents
from .conftest import REDIS_URL, ROOT, Cluster, Worker, serve_command, two_apis


def _app(cluster: Cluster) -> FastAPI:
    store = SqliteCheckpointStore(cluster.store_path)
    backend = DBOSBackend(store, database_url=cluster.database_url, events=RedisEventLog(REDIS_URL))
    return create_app(agents(), checkpoint_store=store, backend=backend)


@pytest.fixture
async def clients(cluster: Cluster, worker: Worker) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    async with two_apis(_app(cluster), _app(cluster)) as pair:
        yield pair


async def test_a_run_started_on_one_api_is_followed_and_resumed_on_another(clients, cluster: Cluster) -> None:
    a, b = clients
    checkpoint_id = f"api-{uuid.uuid4().hex[:8]}"
    started = await a.post(
        "/runs", json={"agent": "shipper", "input": "ship", "checkpoint_id": checkpoint_id, "detached": True}
    )
    assert started.status_code == 202
    run_id = started.json()["run_id"]
    assert run_id == f"{checkpoint_id}@start"

    followed = parse_sse((await b.get(f"/runs/{run_id}/events")).text)
    assert [f.event for f in followed][-2:] == ["interrupt", "end"]
    assert followed[0].event == "run" and followed[0].data["run_id"] == run_id
    assert followed[1].data["message"]["tool_calls"][0]["name"] == "ship"
    end = followed[-1].data
    assert end["status"] == "interrupted" and end["run_id"] == run_id
    seqs = [f.data["seq"] for f in followed[1:-1]]
    assert seqs == sorted(set(seqs))

    replayed = parse_sse((await a.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": followed[0].id})).text)
    assert [(f.id, f.event, f.data) for f in replayed] == [(f.id, f.event, f.data) for f in followed[1:]]

    interrupt = end["interrupts"][0]["id"]
    resumed = await b.post(
        f"/checkpoints/{checkpoint_id}/resume", json={"agent": "shipper", "targets": {interrupt: "yes"}}
    )
    assert resumed.status_code == 200, resumed.text
    body = resumed.json()
    assert body["status"] == "completed" and body["text"] == "order 7: shipped"
    assert (await a.get(f"/runs/{body['run_id']}")).json()["status"] == "completed"
    assert sum(line.endswith("shipped 7") for line in cluster.effect_lines()) >= 1


async def test_two_concurrent_resumes_through_two_apis_run_one_segment(clients, cluster: Cluster) -> None:
    a, b = clients
    checkpoint_id = f"twice-{uuid.uuid4().hex[:8]}"
    paused = await a.post("/runs", json={"agent": "shipper", "input": "ship", "checkpoint_id": checkpoint_id})
    targets = {"agent": "shipper", "targets": {paused.json()["interrupts"][0]["id"]: "yes"}}
    before = len(cluster.effect_lines())
    answers = await asyncio.gather(
        a.post(f"/checkpoints/{checkpoint_id}/resume", json=targets),
        b.post(f"/checkpoints/{checkpoint_id}/resume", json=targets),
    )
    bodies = [answer.json() for answer in answers if answer.status_code == 200]
    refused = [answer.json()["error"]["code"] for answer in answers if answer.status_code != 200]
    # The second attached to the first (same run, same outcome) or, had the first already finished, was refused.
    assert bodies and all(body == bodies[0] for body in bodies) and bodies[0]["status"] == "completed"
    assert refused in ([], ["unknown_checkpoint"])
    assert len(cluster.effect_lines()) == before + 1  # the tool ran once


async def test_a_streamed_run_answers_with_its_events(clients) -> None:
    a, _ = clients
    answer = await a.post("/runs", json={"agent": "echo", "input": "hello", "stream": True})
    frames = parse_sse(answer.text)
    assert answer.headers["X-Run-Id"].endswith("@start")
    assert frames[0].event == "run" and frames[0].data["run_id"] == answer.headers["X-Run-Id"]
    [said] = [f for f in frames if f.event == "message"]  # after its deltas: the worker streams it too
    assert said.data["message"]["content"] == "echo: hello" and "delta" in [f.event for f in frames]
    assert frames[-1].event == "end" and frames[-1].data["status"] == "completed"


async def test_a_bad_last_event_id_or_a_missing_checkpoint_is_a_4xx_that_says_why(clients) -> None:
    a, _ = clients
    bad = await a.get("/runs/x@start/events", headers={"Last-Event-ID": "7.2"})
    assert bad.status_code == 400
    message = "Last-Event-ID: expected a record id such as '42-0' or '1733059200000-0', got '7.2'"
    assert bad.json()["error"]["message"] == message
    for too_big in ("9223372036854775808-0", "1-99999999999999999999"):  # past the logs' 63-bit record ids
        refused = await a.get("/runs/x@start/events", headers={"Last-Event-ID": too_big})
        assert (refused.status_code, refused.json()["error"]["code"]) == (400, "invalid_event_id"), too_big
    missing = await a.post("/checkpoints/nothing-here/resume", json={"agent": "shipper", "targets": {}})
    assert missing.status_code == 404
    assert "the checkpoint store holds no such checkpoint" in missing.json()["error"]["message"]
    anonymous = await a.post("/checkpoints/nothing-here/resume", json={"targets": {}})
    assert anonymous.status_code == 404 and "name its agent" in anonymous.json()["error"]["message"]


def test_a_backend_without_events_is_refused() -> None:
    with pytest.raises(UserError, match=r"backend: expected a LiveBackend .*, got object"):
        create_app(agents(), backend=object())  # type: ignore[arg-type]


def test_batonflow_serve_with_the_dbos_backend_runs_on_the_worker(cluster: Cluster, worker: Worker) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    command = serve_command(cluster, port, "--redis-url", REDIS_URL)
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{base}/health", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                assert server.poll() is None and time.monotonic() < deadline, "batonflow serve did not come up"
                time.sleep(0.05)
        answer = httpx.post(f"{base}/runs", json={"agent": "echo", "input": "over http"}, timeout=20).json()
    finally:
        server.terminate()
        server.wait(10)
    assert answer["status"] == "completed" and answer["text"] == "echo: over http"
    assert answer["run_id"].endswith("@start")


async def test_get_checkpoints_lists_a_run_paused_on_a_worker_with_its_interrupt_ids(clients, cluster: Cluster) -> None:
    a, b = clients
    checkpoint_id = f"listed-{uuid.uuid4().hex[:8]}"
    paused = (await a.post("/runs", json={"agent": "shipper", "input": "ship", "checkpoint_id": checkpoint_id})).json()
    assert paused["status"] == "interrupted"

    listed = (await b.get("/checkpoints")).json()["checkpoints"]  # the other API: it never ran the run
    mine = [c for c in listed if c["checkpoint_id"] == checkpoint_id]
    assert len(mine) == 1
    entry = mine[0]
    assert (entry["agent"], entry["run_id"], entry["session_id"]) == ("shipper", f"{checkpoint_id}@start", None)
    assert entry["interrupts"] == paused["interrupts"] and entry["created"] > 0
    assert [i["kind"] for i in entry["interrupts"]] == ["question"]  # what it asked, as the run's summary says
    assert (await a.get(f"/checkpoints/{checkpoint_id}")).json() == entry

    # What the listing gives is enough to resume: the interrupt id, and the agent (the resume need not name it).
    resumed = await b.post(
        f"/checkpoints/{checkpoint_id}/resume", json={"targets": {entry["interrupts"][0]["id"]: "yes"}}
    )
    assert resumed.status_code == 200, resumed.text
    assert resumed.json()["status"] == "completed" and resumed.json()["text"] == "order 7: shipped"

    after = (await a.get("/checkpoints")).json()["checkpoints"]
    assert [c for c in after if c["checkpoint_id"] == checkpoint_id] == []  # completed: no longer waiting
    gone = await b.get(f"/checkpoints/{checkpoint_id}")
    assert gone.status_code == 404
    assert gone.json()["error"]["message"] == (
        f"checkpoint: expected a pending checkpoint, got {checkpoint_id!r}: no run waits on it"
    )
    other = await b.post(f"/checkpoints/{checkpoint_id}/resume", json={"targets": {}})  # not the winner's answer
    assert (other.status_code, other.json()["error"]["code"]) == (409, "resume_conflict")
    assert other.json()["error"]["found"]["run_id"] == resumed.json()["run_id"]
    bad = await b.get("/checkpoints/a%00b")
    assert bad.status_code == 422 and "must not contain NUL characters" in bad.json()["error"]["message"]


async def test_a_run_being_resumed_is_not_listed_as_waiting(clients) -> None:
    a, b = clients
    checkpoint_id = f"resuming-{uuid.uuid4().hex[:8]}"
    paused = (await a.post("/runs", json={"agent": "stepper", "input": "go", "checkpoint_id": checkpoint_id})).json()
    assert [c["checkpoint_id"] for c in (await b.get("/checkpoints")).json()["checkpoints"]].count(checkpoint_id) == 1
    resumed = await a.post(
        f"/checkpoints/{checkpoint_id}/resume",
        json={"targets": {paused["interrupts"][0]["id"]: "yes"}, "detached": True},
    )
    run_id = resumed.json()["run_id"]
    assert (await b.get(f"/runs/{run_id}")).json()["status"] == "running"  # six steps of 0.3 s: still going
    assert checkpoint_id not in [c["checkpoint_id"] for c in (await b.get("/checkpoints")).json()["checkpoints"]]
    assert (await b.get(f"/checkpoints/{checkpoint_id}")).status_code == 404
    frames = parse_sse((await b.get(f"/runs/{run_id}/events")).text)  # to its end
    assert frames[-1].event == "end" and frames[-1].data["status"] == "completed"

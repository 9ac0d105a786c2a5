"""The DBOS backend without Redis: a worker started with ``--events-url postgresql://…`` (the DBOS database) writes
its runs' live events to PostgreSQL, API processes over ``PostgresEventLog`` stream them as SSE with record ids a
client replays with ``Last-Event-ID``, a cancel reaches the worker through the same database, and ``batonflow serve
--events-url`` wires it all from the command line."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from fastapi import FastAPI
from tests.server.conftest import parse_sse

from batonflow.distributed import DBOSBackend, PostgresEventLog, SegmentRequest
from batonflow.schema import user
from batonflow.server import create_app
from batonflow.store import SqliteCheckpointStore

from .apps import agents
from .conftest import ROOT, Cluster, Worker, serve_command, two_apis

WAIT = 20.0


@pytest.fixture(scope="module")
def pg_worker(cluster: Cluster) -> Iterator[Worker]:
    running = cluster.start_worker(events_url=cluster.database_url)
    try:
        yield running
    finally:
        running.stop()


def _app(cluster: Cluster) -> FastAPI:
    store = SqliteCheckpointStore(cluster.store_path)
    backend = DBOSBackend(store, database_url=cluster.database_url, events=PostgresEventLog(cluster.database_url))
    return create_app(agents(), checkpoint_store=store, backend=backend)


@pytest.fixture
async def clients(cluster: Cluster, pg_worker: Worker) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    async with two_apis(_app(cluster), _app(cluster)) as pair:
        yield pair


async def test_a_run_is_followed_on_another_api_and_replayed_after_its_last_event_id(clients, cluster) -> None:
    a, b = clients
    checkpoint_id = f"pg-{uuid.uuid4().hex[:8]}"
    started = await a.post(
        "/runs", json={"agent": "shipper", "input": "ship", "checkpoint_id": checkpoint_id, "detached": True}
    )
    assert started.status_code == 202
    run_id = started.json()["run_id"]

    followed = parse_sse((await b.get(f"/runs/{run_id}/events")).text)
    assert [f.event for f in followed][-2:] == ["interrupt", "end"]
    assert followed[0].event == "run" and followed[0].data["run_id"] == run_id
    assert followed[1].data["message"]["tool_calls"][0]["name"] == "ship"
    assert all(re.fullmatch(r"\d+-0", f.id) for f in followed)  # PostgreSQL's record ids, in Redis's shape
    end = followed[-1].data
    assert end["status"] == "interrupted" and end["run_id"] == run_id

    replayed = parse_sse((await a.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": followed[0].id})).text)
    assert [(f.id, f.event, f.data) for f in replayed] == [(f.id, f.event, f.data) for f in followed[1:]]

    resumed = await b.post(
        f"/checkpoints/{checkpoint_id}/resume",
        json={"agent": "shipper", "targets": {end["interrupts"][0]["id"]: "yes"}, "stream": True},
    )
    frames = parse_sse(resumed.text)
    assert frames[-1].event == "end" and frames[-1].data["status"] == "completed"
    assert frames[-1].data["text"] == "order 7: shipped"
    assert min(int(f.id.split("-")[0]) for f in frames) > int(followed[-1].id.split("-")[0])  # ids go on rising
    assert sum(line.endswith("shipped 7") for line in cluster.effect_lines()) >= 1


async def test_a_cancel_reaches_the_worker_through_postgres(cluster: Cluster, pg_worker: Worker) -> None:
    store = SqliteCheckpointStore(cluster.store_path)
    log = PostgresEventLog(cluster.database_url)
    backend = DBOSBackend(store, database_url=cluster.database_url, events=log)
    run = f"pgcancel-{uuid.uuid4().hex[:8]}"
    try:
        sid = await backend.submit(SegmentRequest(agent="waiter", checkpoint_id=run, messages=(user("wait"),)))
        deadline = time.monotonic() + WAIT
        while f"{pg_worker.process.pid} waiting" not in cluster.effect_lines():
            assert time.monotonic() < deadline, "the worker never started the segment"
            await asyncio.sleep(0.02)
        await backend.cancel(sid)
        records = await asyncio.wait_for(_all(backend.events(run)), WAIT)
    finally:
        await backend.close()
    assert records[-1].kind == "end" and records[-1].data["status"] == "cancelled"
    assert f"{pg_worker.process.pid} cancelled" in cluster.effect_lines()  # the model call itself was stopped
    # That the watch is woken by NOTIFY, not its 5 s look, test_event_logs shows at a pace of an hour.


async def _all(records: AsyncIterator[object]) -> list[object]:
    return [record async for record in records]


def test_batonflow_serve_streams_a_run_from_postgres_events(cluster: Cluster, pg_worker: Worker) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    env.pop("BATONFLOW_REDIS_URL", None)
    command = serve_command(cluster, port, "--events-url", cluster.database_url)
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
        answer = httpx.post(f"{base}/runs", json={"agent": "echo", "input": "no redis", "stream": True}, timeout=20)
    finally:
        server.terminate()
        server.wait(10)
    frames = parse_sse(answer.text)
    [said] = [f for f in frames if f.event == "message"]  # after its deltas: the worker streams it too
    assert frames[0].event == "run" and said.data["message"]["content"] == "echo: no redis"
    assert frames[-1].event == "end" and frames[-1].data["status"] == "completed"

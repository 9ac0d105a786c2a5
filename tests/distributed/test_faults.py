"""Faults around the DBOS backend: with Redis down, a run still completes on the worker and its outcome is readable,
and the SSE endpoint ends with that outcome, saying why it has no events; bad ``batonflow serve --backend`` options are refused."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.server.conftest import asgi_client, parse_sse

from batonflow.cli import main
from batonflow.distributed import DBOSBackend, RedisEventLog
from batonflow.server import create_app
from batonflow.store import SqliteCheckpointStore

from .apps import agents
from .conftest import Cluster, Worker

DOWN = "redis://127.0.0.1:1/0"  # nothing listens there


@pytest.fixture(scope="module")
def deaf_worker(cluster: Cluster) -> Iterator[Worker]:
    worker = cluster.start_worker(redis_url=DOWN)
    try:
        yield worker
    finally:
        worker.stop()


async def test_with_redis_down_the_run_completes_and_sse_ends_with_its_outcome_and_why(
    cluster: Cluster, deaf_worker: Worker
) -> None:
    store = SqliteCheckpointStore(cluster.store_path)
    app = create_app(
        agents(),
        checkpoint_store=store,
        backend=DBOSBackend(store, database_url=cluster.database_url, events=RedisEventLog(DOWN)),
    )
    checkpoint_id = f"down-{uuid.uuid4().hex[:8]}"
    async with app.router.lifespan_context(app), asgi_client(app, timeout=20) as client:
        started = await client.post("/runs", json={"agent": "echo", "input": "hi", "checkpoint_id": checkpoint_id})
        streamed = parse_sse((await client.get(f"/runs/{checkpoint_id}@start/events")).text)
    assert started.status_code == 200 and started.json()["status"] == "completed"
    assert started.json()["text"] == "echo: hi"
    assert [(f.event, f.id) for f in streamed] == [("end", "")]  # no record: no id
    end = streamed[0].data
    assert (end["status"], end["text"], end["end_record"]) == ("completed", "echo: hi", "lost")
    assert end["reason"].startswith("the event log cannot be read (ConnectionError: ")
    deaf_worker.wait_for(f"segment {checkpoint_id}@start: its live events are lost, the run goes on")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--backend", "ray"], "--backend: expected 'local' or 'dbos', got 'ray'"),
        (
            ["--backend", "dbos"],
            "--backend dbos: expected --database-url and --events-url (or --redis-url), got none",
        ),
        (
            ["--backend", "dbos", "--database-url", "postgresql://x/y"],
            "--backend dbos: expected --events-url (or --redis-url), got none",
        ),
        (
            ["--backend", "dbos", "--database-url", "postgresql://x/y", "--events-url", "http://x/y"],
            "events URL: expected redis://… or postgresql://…, got one of scheme 'http'",
        ),
        (
            ["--backend", "dbos", "--events-url", "postgresql://x/y", "--redis-url", "redis://x:1/0"],
            "--events-url: expected it or --redis-url, got both (BATONFLOW_REDIS_URL may have set --redis-url)",
        ),
        (
            ["--backend", "dbos", "--reload"],
            "--reload: expected --backend local (a development server), got --backend dbos",
        ),
    ],
)
def test_serve_refuses_a_backend_it_cannot_make(
    options: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.delenv("BATONFLOW_DATABASE_URL", raising=False)
    monkeypatch.delenv("BATONFLOW_REDIS_URL", raising=False)
    monkeypatch.delenv("BATONFLOW_EVENTS_URL", raising=False)
    store = ["--store", f"sqlite:{tmp_path / 'runs.db'}"]  # not memory, which the DBOS backend refuses first
    assert main(["serve", "tests.distributed.apps:agents", *store, *options]) == 1
    assert capsys.readouterr().err.strip() == f"batonflow: {message}"

"""Deadlines on the API side of DBOS, against a PostgreSQL of the test's own (never the shared one): an API started
before any worker answers 503 naming what is missing; a database that does not answer (its processes stopped) or
refuses (shut down) is a 503 ``backend_unavailable`` with ``Retry-After`` within ``backend_timeout``, and a retry
with the same ``Idempotency-Key`` once it is back makes exactly one run."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import psycopg
import pytest
from tests.distributed.apps import agents
from tests.distributed.conftest import REDIS_URL, Cluster
from tests.distributed.throwaway import ThrowawayPostgres
from tests.server.conftest import asgi_client

from batonflow.server import ServerLimits, create_app
from batonflow.store import SqliteCheckpointStore

WAIT = 30.0  # a guard against a hang, not a measure


@pytest.fixture(scope="module")
def postgres() -> Iterator[ThrowawayPostgres]:
    server = ThrowawayPostgres()
    server.start()
    try:
        yield server
    finally:
        server.remove()


@asynccontextmanager
async def api(database_url: str, store: Path) -> AsyncIterator[httpx.AsyncClient]:
    from batonflow.distributed import DBOSBackend, RedisEventLog

    checkpoints = SqliteCheckpointStore(store)
    backend = DBOSBackend(checkpoints, database_url=database_url, events=RedisEventLog(REDIS_URL))
    app = create_app(agents(), checkpoint_store=checkpoints, backend=backend, limits=ServerLimits(backend_timeout=1.0))
    async with app.router.lifespan_context(app), asgi_client(app, timeout=WAIT) as client:
        yield client


def _descendants(root: int) -> list[int]:
    """``root`` and every process under it (``runuser``, the postmaster, the backends serving connections)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rpartition(")")[2].split()[1])
    found = [root]
    for pid in found:
        found += [child for child, parent in parents.items() if parent == pid]
    return found


def _signal_all(postgres: ThrowawayPostgres, sig: signal.Signals) -> None:
    process = postgres._process
    assert process is not None
    for pid in _descendants(process.pid):
        with contextlib.suppress(ProcessLookupError):  # a backend that ended since the listing
            os.kill(pid, sig)


def _segments(database_url: str, prefix: str) -> list[str]:
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT workflow_uuid FROM dbos.workflow_status WHERE workflow_uuid LIKE %s", (f"{prefix}%",)
        ).fetchall()
    return [str(row[0]) for row in rows]


async def test_an_api_before_any_worker_answers_503_naming_the_missing_schema(
    postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    with psycopg.connect(postgres.url, autocommit=True) as admin:
        admin.execute("CREATE DATABASE empty")
    url = postgres.url.rpartition("/")[0] + "/empty"
    async with api(url, tmp_path / "store.db") as client:
        started = await client.post("/runs", json={"agent": "echo", "input": "hi"})
        ready = await client.get("/health/ready")
        live = await client.get("/health")
    assert (started.status_code, started.json()["error"]["code"]) == (503, "backend_unavailable")
    assert started.headers["retry-after"] == "2"
    assert "start one" in started.json()["error"]["message"] and "workflow_status" in started.json()["error"]["message"]
    assert ready.status_code == 503 and ready.json()["status"] == "not_ready"
    checks = ready.json()["checks"]
    assert (checks["database"]["ok"], checks["schema"]["ok"], checks["workers"]["ok"]) == (True, False, False)
    assert live.status_code == 200  # liveness is not readiness


async def test_a_database_that_does_not_answer_is_a_503_and_a_keyed_retry_makes_one_run(
    postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    cluster = Cluster(postgres.url, tmp_path / "store.db", tmp_path / "effects", tmp_path)
    worker = cluster.start_worker()
    key = {"Idempotency-Key": "order-1"}
    body = {"agent": "echo", "input": "once", "detached": True}
    try:
        async with api(postgres.url, cluster.store_path) as client:
            assert (await client.get("/health/ready")).status_code == 200
            _signal_all(postgres, signal.SIGSTOP)
            try:
                stalled = await client.post("/runs", json=body, headers=key)
                status = await client.get("/runs/some@start")
                ready = await client.get("/health/ready")
            finally:
                _signal_all(postgres, signal.SIGCONT)
            retried = await client.post("/runs", json=body, headers=key)
            run_id = retried.json()["run_id"]
            deadline = time.monotonic() + WAIT
            while (await client.get(f"/runs/{run_id}")).json()["status"] == "running":
                assert time.monotonic() < deadline, "the retried run did not end"
                await asyncio.sleep(0.05)
            done = (await client.get(f"/runs/{run_id}")).json()
        for answer in (stalled, status):
            assert (answer.status_code, answer.json()["error"]["code"]) == (503, "backend_unavailable")
            assert answer.headers["retry-after"] == "2" and "no answer within 1 s" in answer.json()["error"]["message"]
        assert ready.status_code == 503
        assert retried.status_code == 202 and (done["status"], done["text"]) == ("completed", "echo: once")
        assert _segments(postgres.url, "idem-") == [run_id]  # the stalled request and its retry: one run
    finally:
        worker.stop()


async def test_a_database_that_refuses_connections_is_a_503_at_once(
    postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    async with api(postgres.url, tmp_path / "store.db") as client:
        postgres.stop()
        try:
            started = await client.post("/runs", json={"agent": "echo", "input": "hi", "detached": True})
            listed = await client.get("/checkpoints")
            ready = await client.get("/health/ready")
        finally:
            postgres.start()
    for answer in (started, listed):
        assert (answer.status_code, answer.json()["error"]["code"]) == (503, "backend_unavailable")
        assert answer.headers["retry-after"] == "2"
    assert ready.status_code == 503 and ready.json()["checks"]["database"]["ok"] is False
    assert "password" not in ready.text

"""The DBOS backend with a real worker process over a PostgreSQL database of this module's own: segments run on
the worker, a segment id runs once however often it is enqueued, nothing DBOS stores is pickled, and a segment of
another application version or for an unknown agent is refused with the reason."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid

import psycopg
import pytest

from batonflow.distributed import APP_VERSION, CodecSerializer, DBOSBackend, DBOSWorker, SegmentRequest
from batonflow.errors import SegmentFailedError, UserError, VersionMismatchError
from batonflow.schema import user
from batonflow.store import SqliteCheckpointStore

from .apps import agents
from .conftest import ROOT, Cluster, Worker

RUN = uuid.uuid4().hex[:8]  # Redis outlives a test run: each run's checkpoint ids are its own
WAIT = 20.0  # seconds, a bound on any one outcome: a segment here takes well under one


def _id(name: str) -> str:
    return f"{name}-{RUN}"


def _backend(cluster: Cluster, **options: str) -> DBOSBackend:
    return DBOSBackend(SqliteCheckpointStore(cluster.store_path), database_url=cluster.database_url, **options)


async def _interrupted(backend: DBOSBackend, checkpoint_id: str) -> str:
    sid = await backend.submit(SegmentRequest(agent="shipper", checkpoint_id=checkpoint_id, messages=(user("ship"),)))
    outcome = await asyncio.wait_for(backend.outcome(sid), WAIT)
    assert outcome.status == "interrupted", outcome
    return outcome.interrupt_ids[0]


async def test_a_run_starts_pauses_and_finishes_on_the_worker(cluster: Cluster, worker: Worker) -> None:
    backend = _backend(cluster)
    try:
        interrupt = await _interrupted(backend, _id("w1"))
        resumed = await backend.submit(
            SegmentRequest(agent="shipper", checkpoint_id=_id("w1"), targets={interrupt: "yes"})
        )
        outcome = await asyncio.wait_for(backend.outcome(resumed), WAIT)
    finally:
        await backend.close()
    assert outcome.status == "completed" and outcome.text == "order 7: shipped"
    assert [line for line in cluster.effect_lines() if line.endswith("shipped 7")] == [
        f"{worker.process.pid} shipped 7"
    ]  # the tool ran once, in the worker, not here
    assert await SqliteCheckpointStore(cluster.store_path).get(_id("w1")) is None


async def test_a_double_start_and_two_concurrent_resumes_each_run_once(cluster: Cluster, worker: Worker) -> None:
    one, two = _backend(cluster), _backend(cluster)  # two API processes' backends
    before = len(cluster.effect_lines())
    try:
        start = SegmentRequest(agent="shipper", checkpoint_id=_id("w2"), messages=(user("ship"),))
        ids = await asyncio.gather(one.submit(start), two.submit(start))
        assert ids == [f"{_id('w2')}@start"] * 2
        first = await asyncio.wait_for(one.outcome(ids[0]), WAIT)
        resume = SegmentRequest(agent="shipper", checkpoint_id=_id("w2"), targets={first.interrupt_ids[0]: "yes"})
        resumed = await asyncio.gather(one.submit(resume), two.submit(resume))
        assert resumed[0] == resumed[1]
        outcomes = await asyncio.gather(*(b.outcome(resumed[0]) for b in (one, two)))
    finally:
        await one.close()
        await two.close()
    assert outcomes[0] == outcomes[1] and outcomes[0].status == "completed"
    assert len(cluster.effect_lines()) == before + 1
    with psycopg.connect(cluster.database_url) as db:
        rows = db.execute(
            "SELECT count(*) FROM dbos.workflow_status WHERE workflow_uuid LIKE %s", (f"{_id('w2')}@%",)
        ).fetchone()
    assert rows == (2,)  # one workflow per segment: the start and the resume


async def test_a_segment_for_an_unknown_agent_fails_saying_which_agents_the_worker_serves(
    cluster: Cluster, worker: Worker
) -> None:
    backend = _backend(cluster)
    try:
        sid = await backend.submit(SegmentRequest(agent="nobody", checkpoint_id=_id("w3"), messages=(user("hi"),)))
        with pytest.raises(SegmentFailedError) as caught:
            await asyncio.wait_for(backend.outcome(sid), WAIT)
    finally:
        await backend.close()
    assert caught.value.kind == "UnknownAgentError" and caught.value.segment_id == f"{_id('w3')}@start"
    assert f"expected an agent among {sorted(agents())}, got 'nobody'" in str(caught.value)


async def test_a_segment_of_another_application_version_is_left_for_its_workers(
    cluster: Cluster, worker: Worker
) -> None:
    backend = _backend(cluster, app_version="batonflow-0.0.1-codec1")
    try:
        sid = await backend.submit(SegmentRequest(agent="echo", checkpoint_id=_id("w4"), messages=(user("hi"),)))
        worker.wait_for(f"segment {sid}: refused", within=10.0)
        assert await backend.status(sid) == "ENQUEUED"  # not claimed: a worker of its version will run it
        await backend.cancel(sid)
    finally:
        await backend.close()
    assert (
        f"enqueued by application version 'batonflow-0.0.1-codec1', this worker runs '{APP_VERSION}'" in worker.text()
    )


async def test_a_worker_refuses_a_segment_of_another_version_that_reaches_it() -> None:
    worker = DBOSWorker(agents(), SqliteCheckpointStore(":memory:"), database_url="postgresql://unused/db")
    payload = SegmentRequest(agent="echo", checkpoint_id="v", messages=(user("hi"),)).payload()
    with pytest.raises(VersionMismatchError, match=r"expected application version '.+' \(this worker's\), got 'old'"):
        await worker.run_request(payload, "old", "v@start")


def test_nothing_dbos_stored_is_pickled(cluster: Cluster, worker: Worker) -> None:
    """Runs after the tests above have filled the tables (inputs, outputs, an error)."""
    with psycopg.connect(cluster.database_url) as db:
        tables = [
            row[0]
            for row in db.execute(
                "SELECT table_name FROM information_schema.columns WHERE table_schema = 'dbos' "
                "AND column_name = 'serialization'"
            )
        ]
        found = {table: db.execute(f"SELECT DISTINCT serialization FROM dbos.{table}").fetchall() for table in tables}
    assert {name for rows in found.values() for (name,) in rows} == {"batonflow_codec"}
    assert "workflow_status" in found and "operation_outputs" in tables


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"concurrency": 0}, r"concurrency: expected an int of 1 or more, got 0"),
        ({"app_version": ""}, r"app_version: expected a non-empty string, got ''"),
        ({"connect_within": -1}, r"connect_within: expected a number of seconds >= 0, got -1"),
    ],
)
def test_a_worker_with_bad_settings_says_what_was_expected(options: dict[str, object], message: str) -> None:
    with pytest.raises(UserError, match=message):
        DBOSWorker(agents(), SqliteCheckpointStore(":memory:"), database_url="postgresql://unused/db", **options)  # type: ignore[arg-type]


def test_the_serializer_round_trips_inputs_values_and_errors() -> None:
    codec = CodecSerializer()
    inputs = {"args": ({"messages": [user("hi")]}, "v"), "kwargs": {}}
    assert codec.deserialize(codec.serialize(inputs)) == inputs
    assert codec.deserialize(codec.serialize([1, "two", None])) == [1, "two", None]
    error = codec.deserialize(codec.serialize(ValueError("bad")))
    assert isinstance(error, SegmentFailedError) and error.kind == "ValueError" and str(error) == "ValueError: bad"


def test_a_worker_that_cannot_reach_postgresql_retries_then_says_where_it_looked() -> None:
    command = [
        sys.executable,
        "-m",
        "batonflow",
        "worker",
        "tests.distributed.apps:agents",
        "--database-url",
        "postgresql://postgres:secret@127.0.0.1:1/nowhere",
        "--store",
        "postgres:postgresql://postgres:secret@127.0.0.1:1/nowhere",
        "--connect-within",
        "1",
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60, env=_env())
    assert done.returncode == 1
    assert done.stderr.count("retrying in") >= 2  # with backoff: 0.25 s, then 0.5 s
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("batonflow: worker ") and "cannot reach the DBOS system database at " in last
    assert "postgresql://postgres:***@127.0.0.1:1/nowhere" in last and "secret" not in done.stderr
    assert last.endswith("took no segment")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}

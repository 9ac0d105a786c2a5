"""Faults beyond SIGKILL, with real worker processes: a worker paused past its lease (SIGSTOP) runs no tool beside
its replacement and publishes no end of its own; a sweeper that dies between claiming a dead worker and handing
its segments on leaves them to the next sweeper; a poison tool fails its run after the recovery limit, listed by
the API and the CLI, and the pool survives; a PostgreSQL outage longer than the lease re-runs nothing elsewhere."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator

import psycopg
import pytest
import redis.asyncio
from tests.server.conftest import asgi_client

from batonflow.cli import main
from batonflow.distributed import DBOSBackend, DBOSWorker, RedisEventLog, SegmentRequest
from batonflow.errors import UserError
from batonflow.schema import user
from batonflow.server import create_app
from batonflow.store import SqliteCheckpointStore

from .apps import STEPS, agents
from .conftest import REDIS_URL, Cluster, Worker
from .faulty import CLAIMED_EXIT
from .throwaway import ThrowawayPostgres

LEASE = "1.5"  # seconds: the workers' heartbeat and checkpoint-lease ttl


async def _until(check: Callable[[], bool], within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.02)


def _backend(cluster: Cluster) -> DBOSBackend:
    store = SqliteCheckpointStore(cluster.store_path)
    return DBOSBackend(store, database_url=cluster.database_url, events=RedisEventLog(REDIS_URL))


def _attempts(lines: list[str], pid: int | None = None) -> list[int]:
    """The step numbers attempted (by ``pid``, or by anyone), in order."""
    mine = [line for line in lines if pid is None or line.startswith(f"{pid} ")]
    return [int(line.rsplit(" ", 1)[1]) for line in mine if " attempt " in line]


async def _ends(log: RedisEventLog, run: str) -> list[dict[str, str]]:
    """The ``end`` records of ``run``'s stream, straight from Redis."""
    client = redis.asyncio.from_url(REDIS_URL)
    try:
        entries = await client.xrange(log.stream_key(run))
    finally:
        await client.aclose()
    records = [{k.decode(): v.decode() for k, v in fields.items()} for _, fields in entries]
    return [record for record in records if record["kind"] == "end"]


async def test_a_worker_paused_past_its_lease_runs_no_tool_beside_its_replacement(cluster: Cluster) -> None:
    workers = [cluster.start_worker("--lease-ttl", LEASE, "--step-mode") for _ in range(2)]
    backend = _backend(cluster)
    checkpoint_id = f"pause-{uuid.uuid4().hex[:8]}"
    before = len(cluster.effect_lines())

    def mine() -> list[str]:
        return cluster.effect_lines()[before:]

    try:
        sid = await backend.submit(SegmentRequest(agent="starter", checkpoint_id=checkpoint_id, messages=(user("go"),)))
        await _until(lambda: any(line.endswith(" attempt 2") for line in mine()), 20, "no step 2")
        victim_pid = int(next(line for line in mine() if line.endswith(" attempt 2")).split()[0])
        victim = next(w for w in workers if w.process.pid == victim_pid)
        survivor = next(w for w in workers if w is not victim)
        os.kill(victim_pid, signal.SIGSTOP)  # a GC pause, a VM migration: its lease and heartbeat lapse
        try:
            await _until(lambda: bool(_attempts(mine(), survivor.process.pid)), 20, "the survivor never took over")
        finally:
            os.kill(victim_pid, signal.SIGCONT)  # it wakes while its replacement runs the segment
        woke = len(mine())
        outcome = await asyncio.wait_for(backend.outcome(sid), 30)
        victim.process.wait(20)  # it finds it was declared dead, and stops
        ends = await _ends(backend.event_log, checkpoint_id)  # type: ignore[arg-type]
    finally:
        for worker in workers:
            worker.stop()
        await backend.close()
    lines = mine()
    assert outcome.status == "completed" and outcome.text == f"{STEPS} steps done", (outcome, lines)
    for n in range(1, STEPS + 1):  # every effect keyed by its idempotency key happened once
        assert sum(line.endswith(f" effect {n}") for line in lines) == 1, (n, lines)
    assert _attempts(lines[woke:], victim_pid) == []  # awake again, the victim ran no tool beside the survivor
    paused_in = max(_attempts(lines, victim_pid))
    runs = Counter(_attempts(lines))
    # Step mode replays what finished: only the call cut off by the pause ran again.
    assert {n for n, times in runs.items() if times > 1} <= {paused_in} and set(runs) == set(range(1, STEPS + 1))
    assert victim.process.returncode == 1 and "declared dead" in victim.text()
    assert [json.loads(end["data"])["status"] for end in ends] == ["completed"]  # no late end from the victim


async def test_a_sweeper_killed_between_its_claim_and_the_hand_off_leaves_the_run_to_the_next(
    cluster: Cluster,
) -> None:
    backend = _backend(cluster)
    checkpoint_id = f"claim-{uuid.uuid4().hex[:8]}"
    before = len(cluster.effect_lines())
    victim = cluster.start_worker("--lease-ttl", LEASE)
    started: list[Worker] = [victim]
    try:
        sid = await backend.submit(SegmentRequest(agent="starter", checkpoint_id=checkpoint_id, messages=(user("go"),)))
        await _until(lambda: bool(_attempts(cluster.effect_lines()[before:])), 20, "the run never started")
        victim.process.send_signal(signal.SIGKILL)
        victim.process.wait(5)
        faulty = cluster.start_worker("--lease-ttl", LEASE, module="tests.distributed.faulty")
        started.append(faulty)
        assert faulty.process.wait(30) == CLAIMED_EXIT  # it claimed the dead worker, then died before the hand-off
        assert "dying before the hand-off" in faulty.text()
        rescuer = cluster.start_worker("--lease-ttl", LEASE)
        started.append(rescuer)
        outcome = await asyncio.wait_for(backend.outcome(sid), 30)
    finally:
        for worker in started:
            worker.stop()
        await backend.close()
    assert outcome.status == "completed" and outcome.text == f"{STEPS} steps done"
    assert f"its segments ['{sid}'] are back on the queue" in rescuer.text()


async def test_a_poison_tool_fails_its_run_after_the_limit_and_the_pool_survives(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    workers = [cluster.start_worker("--lease-ttl", LEASE, "--max-attempts", "2") for _ in range(3)]
    backend = _backend(cluster)
    app = create_app(agents(), checkpoint_store=backend.store, backend=backend)
    checkpoint_id = f"poison-{uuid.uuid4().hex[:8]}"
    try:
        sid = await backend.submit(SegmentRequest(agent="poison", checkpoint_id=checkpoint_id, messages=(user("x"),)))
        outcome = await asyncio.wait_for(backend.outcome(sid), 60)
        alive = [w for w in workers if w.process.poll() is None]
        echo = SegmentRequest(agent="echo", checkpoint_id=f"after-{uuid.uuid4().hex[:8]}", messages=(user("hi"),))
        served = await asyncio.wait_for(backend.outcome(await backend.submit(echo)), 20)
        async with app.router.lifespan_context(app), asgi_client(app, timeout=20) as client:
            listed = (await client.get("/segments/failed")).json()["segments"]
        command = ["segments", "--database-url", cluster.database_url, "--failed"]
        assert await asyncio.to_thread(main, command) == 0  # the command runs its own event loop
        printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    finally:
        for worker in workers:
            worker.stop()
        await backend.close()
    assert outcome.status == "failed"
    assert outcome.error is not None and f"segment {sid}: gave up after 2 attempts (the limit is 2)" in outcome.error
    crashes = [line for line in cluster.effect_lines() if line.endswith(" crash")]
    assert len(crashes) == 2 and len(alive) == 1  # two workers went down, then the limit held: the third lives on
    assert served.status == "completed" and served.text == "echo: hi"
    for shown in (listed, printed):
        assert [(s["segment_id"], s["attempts"]) for s in shown if s["segment_id"] == sid] == [(sid, 3)]
        assert next(s for s in shown if s["segment_id"] == sid)["error"] == outcome.error


def test_segments_without_a_listing_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["segments", "--database-url", "postgresql://x/y"]) == 1
    assert (
        capsys.readouterr().err.strip()
        == "batonflow: segments: expected --failed (the one listing there is), got no listing"
    )


@pytest.fixture
def outage_cluster(cluster: Cluster) -> Iterator[tuple[Cluster, ThrowawayPostgres]]:
    """A cluster whose DBOS database is on a PostgreSQL server of the test's own, which it may stop."""
    server = ThrowawayPostgres()
    server.start()
    own = Cluster(server.url, cluster.tmp / "outage.db", cluster.tmp / "outage-effects", cluster.tmp)
    try:
        yield own, server
    finally:
        server.remove()


async def test_a_database_outage_longer_than_the_lease_runs_nothing_twice(
    outage_cluster: tuple[Cluster, ThrowawayPostgres],
) -> None:
    cluster, server = outage_cluster
    workers = [cluster.start_worker("--lease-ttl", "1", "--connect-within", "60") for _ in range(2)]
    backend = _backend(cluster)
    runs = [f"outage-{n}-{uuid.uuid4().hex[:6]}" for n in range(4)]
    try:
        paused = [
            await backend.submit(SegmentRequest(agent="stepper", checkpoint_id=run, messages=(user("go"),)))
            for run in runs
        ]
        targets = [(await asyncio.wait_for(backend.outcome(sid), 30)).interrupt_ids[0] for sid in paused]
        resumed = [
            await backend.submit(SegmentRequest(agent="stepper", checkpoint_id=run, targets={target: "yes"}))
            for run, target in zip(runs, targets, strict=True)
        ]
        await _until(lambda: len(_attempts(cluster.effect_lines())) >= 4, 20, "the steps never started")
        server.stop()  # the outage: three times the lease
        await asyncio.sleep(3)
        server.start()
        try:  # a guard against a hang, not a measure: a run that never ends fails with what the workers said
            outcomes = [await asyncio.wait_for(backend.outcome(sid), 60) for sid in resumed]
        except TimeoutError:
            said = "\n".join(
                f"worker {n} (exit {w.process.poll()}):\n{w.text()[-4000:]}" for n, w in enumerate(workers)
            )
            pytest.fail(f"a run did not end after the outage; effects {cluster.effect_lines()}\n{said}")
        alive = [w.process.poll() is None for w in workers]
    finally:
        for worker in workers:
            worker.stop()
        await backend.close()
    assert [o.status for o in outcomes] == ["completed"] * len(runs), outcomes
    assert alive == [True, True]
    texts = [worker.text() for worker in workers]
    assert all("its heartbeat had lapsed" in text for text in texts)  # the outage outlasted every worker's lease
    again = sum(text.count("running it again") for text in texts)
    print(f"segments stopped at the fence during the outage and run again on their own worker: {again}")
    for worker in workers:  # no live worker took another for dead
        assert "are back on the queue" not in worker.text()
        assert "declared dead" not in worker.text()
    lines = cluster.effect_lines()
    assert sum(" effect " in line for line in lines) == STEPS * len(runs)  # every keyed effect once


@pytest.mark.parametrize("attempts", [0, -1, 1.5, True])
def test_a_recovery_limit_that_is_not_a_positive_count_is_refused(attempts: object) -> None:
    with pytest.raises(UserError, match="max_attempts"):
        DBOSWorker({}, SqliteCheckpointStore(":memory:"), database_url="postgresql://x/y", max_attempts=attempts)  # type: ignore[arg-type]


def test_a_worker_upgrades_the_previous_releases_heartbeat_table(cluster: Cluster) -> None:
    with psycopg.connect(cluster.database_url, autocommit=True) as db:
        db.execute("DROP TABLE IF EXISTS batonflow_workers")
        db.execute(  # the table as the previous release made it, with a row of one of its workers
            "CREATE TABLE batonflow_workers (executor_id text PRIMARY KEY, app_version text NOT NULL, "
            "expires_at timestamptz NOT NULL)"
        )
        db.execute("INSERT INTO batonflow_workers VALUES ('old-worker', 'v0', now() + interval '1 hour')")
    worker = cluster.start_worker("--lease-ttl", LEASE)
    try:
        with psycopg.connect(cluster.database_url, autocommit=True) as db:
            rows = db.execute("SELECT executor_id, swept_by FROM batonflow_workers ORDER BY executor_id").fetchall()
    finally:
        worker.stop()
    assert ("old-worker", None) in rows and len(rows) == 2  # the old row kept, this worker's beside it

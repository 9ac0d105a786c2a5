"""A distributed fan-out on a pool of two workers: the four branches of a ``ParallelAgent(distribute=True)`` run as
workflows of their own, on both workers, and the run goes on after the join with every branch's history."""

from __future__ import annotations

import asyncio
import uuid

import psycopg
import pytest

from batonflow.distributed import DBOSBackend, SegmentRequest
from batonflow.schema import user
from batonflow.store import SqliteCheckpointStore

from .conftest import Cluster


@pytest.mark.parametrize(
    ("agent", "host"),
    [("survey", "agent:survey;agent:cities;agent:{city}"), ("atlas", "agent:atlas;agent:{city};agent:{city}")],
    ids=["parallel-agent", "graph-nodes"],
)
async def test_a_four_branch_fan_out_lands_on_both_workers(cluster: Cluster, agent: str, host: str) -> None:
    # Two branches at a time each: four branches cannot all land on one worker.
    workers = [cluster.start_worker(concurrency=2), cluster.start_worker(concurrency=2)]
    backend = DBOSBackend(SqliteCheckpointStore(cluster.store_path), database_url=cluster.database_url)
    checkpoint_id = f"{agent}-{uuid.uuid4().hex[:8]}"
    before = len(cluster.effect_lines())
    try:
        sid = await backend.submit(SegmentRequest(agent=agent, checkpoint_id=checkpoint_id, messages=(user("go"),)))
        outcome = await asyncio.wait_for(backend.outcome(sid), 30)
    finally:
        await backend.close()
        for worker in workers:
            worker.stop()
    assert outcome.status == "completed", outcome
    assert outcome.text == "4 cities visited"  # the tally saw all four branches' answers after the join
    visits = [line.split() for line in cluster.effect_lines()[before:] if " visited " in line]
    assert sorted(city for _, _, city in visits) == ["kobe", "lima", "oslo", "pune"]  # each branch ran once
    assert {int(pid) for pid, _, _ in visits} == {w.process.pid for w in workers}
    with psycopg.connect(cluster.database_url) as db:
        rows = db.execute(
            "SELECT workflow_uuid, queue_name, status FROM dbos.workflow_status WHERE workflow_uuid LIKE %s",
            (f"{sid}/%",),
        ).fetchall()
    assert sorted(r[0] for r in rows) == sorted(
        f"{sid}/{host.format(city=city)}#1" for city in ("kobe", "lima", "oslo", "pune")
    )
    assert {(r[1], r[2]) for r in rows} == {("batonflow-branches", "SUCCESS")}


async def test_a_fan_out_survives_the_sigkill_of_the_worker_running_its_segment(cluster: Cluster) -> None:
    workers = [cluster.start_worker("--lease-ttl", "1.5", concurrency=2) for _ in range(2)]
    backend = DBOSBackend(SqliteCheckpointStore(cluster.store_path), database_url=cluster.database_url)
    checkpoint_id = f"survey-{uuid.uuid4().hex[:8]}"
    before = len(cluster.effect_lines())
    try:
        sid = await backend.submit(SegmentRequest(agent="survey", checkpoint_id=checkpoint_id, messages=(user("go"),)))
        deadline = asyncio.get_running_loop().time() + 20
        while len([x for x in cluster.effect_lines()[before:] if " visited " in x]) < 4:
            assert asyncio.get_running_loop().time() < deadline, cluster.effect_lines()
            await asyncio.sleep(0.02)
        with psycopg.connect(cluster.database_url) as db:
            row = db.execute("SELECT executor_id FROM dbos.workflow_status WHERE workflow_uuid = %s", (sid,)).fetchone()
        assert row is not None
        victim = next(w for w in workers if f"-{w.process.pid}-" in str(row[0]))
        survivor = next(w for w in workers if w is not victim)
        victim.process.kill()
        victim.process.wait(5)
        outcome = await asyncio.wait_for(backend.outcome(sid), 30)
    finally:
        await backend.close()
        for worker in workers:
            worker.stop()
    assert outcome.status == "completed" and outcome.text == "4 cities visited", outcome
    visits = [line.split() for line in cluster.effect_lines()[before:] if " visited " in line]
    # The survivor's branches ran once: the segment that ran again attached to them. The victim's ran again there.
    on_survivor = [city for pid, _, city in visits[:4] if int(pid) == survivor.process.pid]
    assert all(sum(1 for _, _, c in visits if c == city) == 1 for city in on_survivor), visits
    assert sorted({city for _, _, city in visits}) == ["kobe", "lima", "oslo", "pune"]


def test_a_worker_with_another_concurrency_says_it_changes_every_workers_limit(cluster: Cluster) -> None:
    first = cluster.start_worker(concurrency=2, branch_concurrency=2)
    try:
        second = cluster.start_worker(concurrency=3, branch_concurrency=2)
        second.stop()
    finally:
        first.stop()
    assert (
        "queue batonflow-segments: every worker of this database now runs up to 3 of its workflows at once, not 2"
        in (second.text())
    )
    assert "queue batonflow-branches" not in second.text()  # unchanged: nothing to say
    with psycopg.connect(cluster.database_url) as db:
        rows = db.execute(
            "SELECT name, worker_concurrency, polling_interval_sec FROM dbos.queues ORDER BY 1"
        ).fetchall()
    # The segments' queue looked at every 20 ms (a run's first event waits for it), the branches' every 100 ms: a
    # branch is a whole agent run, and each look costs a worker as much as one of the segments' queue.
    assert [r for r in rows if r[0].startswith("batonflow-")] == [
        ("batonflow-branches", 2, 0.1),
        ("batonflow-segments", 3, 0.02),
    ]

"""Workers that die or go: a SIGKILLed worker's segment is continued by the other worker from its checkpoint and
journal, with no event lost for a client following through another API process and no side effect twice; a
paused run is resumed by a fresh worker after every worker that ran it has gone."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from tests.server.conftest import asgi_client, parse_sse

from batonflow.distributed import DBOSBackend, RedisEventLog, SegmentRequest
from batonflow.schema import user
from batonflow.server import create_app
from batonflow.store import PostgresCheckpointStore

from .apps import STEPS, agents
from .conftest import REDIS_URL, Cluster

LEASE = "1.5"  # seconds: the workers' heartbeat and checkpoint-lease ttl


@pytest.fixture(scope="module")
def cluster(cluster: Cluster) -> Cluster:
    """Checkpoints in PostgreSQL here, the store processes on several machines share (``--store postgres:URL``)."""
    cluster.postgres_store = True
    return cluster


def _app(cluster: Cluster) -> FastAPI:
    store = PostgresCheckpointStore(cluster.database_url)
    backend = DBOSBackend(store, database_url=cluster.database_url, events=RedisEventLog(REDIS_URL))
    return create_app(agents(), checkpoint_store=store, backend=backend)


async def _until(check, within: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.02)


async def _ended(client: httpx.AsyncClient, run_id: str, within: float = 10.0) -> dict[str, Any]:
    """The run's summary once it says it ended. The worker sends a segment's ``end`` record before DBOS has marked
    the segment done, so a ``GET /runs/{id}`` right after the stream's end may still say ``running``."""
    deadline = time.monotonic() + within
    while True:
        summary: dict[str, Any] = (await client.get(f"/runs/{run_id}")).json()
        if summary["status"] != "running" or time.monotonic() > deadline:
            return summary
        await asyncio.sleep(0.05)


async def test_a_sigkilled_workers_run_is_continued_by_the_other_worker(cluster: Cluster) -> None:
    workers = [cluster.start_worker("--lease-ttl", LEASE), cluster.start_worker("--lease-ttl", LEASE)]
    one, two = _app(cluster), _app(cluster)
    checkpoint_id = f"kill-{uuid.uuid4().hex[:8]}"
    try:
        async with (
            one.router.lifespan_context(one),
            two.router.lifespan_context(two),
            asgi_client(one, timeout=30) as a,
            asgi_client(two, timeout=30) as b,
        ):
            paused = await a.post("/runs", json={"agent": "stepper", "input": "go", "checkpoint_id": checkpoint_id})
            interrupt = paused.json()["interrupts"][0]["id"]
            resumed = await a.post(
                f"/checkpoints/{checkpoint_id}/resume",
                json={"agent": "stepper", "targets": {interrupt: "yes"}, "detached": True},
            )
            run_id = resumed.json()["run_id"]
            following = asyncio.ensure_future(b.get(f"/runs/{run_id}/events"))  # the client, on the other API

            await _until(lambda: any(line.endswith("effect 3") for line in cluster.effect_lines()), 20, "no step 3")
            victim_pid = int(next(line for line in cluster.effect_lines() if line.endswith("effect 3")).split()[0])
            victim = next(w for w in workers if w.process.pid == victim_pid)
            survivor = next(w for w in workers if w is not victim)
            os.kill(victim_pid, signal.SIGKILL)
            killed_at = time.monotonic()
            victim.process.wait(5)
            await _until(
                lambda: any(line.startswith(f"{survivor.process.pid} attempt") for line in cluster.effect_lines()),
                60,  # a guard against a hang; the time recovery takes is printed, not bounded
                "the survivor never continued the run",
            )
            recovery = time.monotonic() - killed_at
            frames = parse_sse((await asyncio.wait_for(following, 30)).text)
            summary = await _ended(a, run_id)
    finally:
        for worker in workers:
            worker.stop()
        for app in (one, two):
            await app.state.batonflow.checkpoints.close()
    print(f"recovery after SIGKILL: {recovery:.2f} s")  # a figure, not a limit: benchmarks measure it
    assert summary["status"] == "completed" and summary["text"] == f"{STEPS} steps done"
    lines = cluster.effect_lines()
    for n in range(1, STEPS + 1):
        assert sum(line.endswith(f" effect {n}") for line in lines) == 1, (n, lines)  # no side effect twice
    # The steps that finished before the kill were replayed from the journal, not run again.
    assert (
        sum(line.endswith(" attempt 1") for line in lines) == 1
        and sum(line.endswith(" attempt 2") for line in lines) == 1
    )
    assert frames[-1].event == "end" and frames[-1].data["status"] == "completed"
    seqs = sorted(
        {f.data["seq"] for f in frames[:-1] if f.event != "run"}
    )  # the client drops the events a retry sends again
    assert seqs == list(range(seqs[0], seqs[-1] + 1))  # none lost


async def test_a_paused_run_is_resumed_by_a_fresh_worker_after_its_workers_exited(cluster: Cluster) -> None:
    first = cluster.start_worker("--lease-ttl", LEASE)
    store = PostgresCheckpointStore(cluster.database_url)
    backend = DBOSBackend(store, database_url=cluster.database_url, events=RedisEventLog(REDIS_URL))
    checkpoint_id = f"fresh-{uuid.uuid4().hex[:8]}"
    try:
        sid = await backend.submit(SegmentRequest(agent="shipper", checkpoint_id=checkpoint_id, messages=(user("s"),)))
        paused = await asyncio.wait_for(backend.outcome(sid), 20)
        assert first.stop() == 0  # every worker that ran it is gone
        fresh = cluster.start_worker("--lease-ttl", LEASE)
        try:
            request = SegmentRequest(
                agent="shipper", checkpoint_id=checkpoint_id, targets={paused.interrupt_ids[0]: "yes"}
            )
            done = await asyncio.wait_for(backend.outcome(await backend.submit(request)), 20)
        finally:
            fresh.stop()
    finally:
        await backend.close()
        await store.close()
    assert paused.status == "interrupted" and done.status == "completed" and done.text == "order 7: shipped"
    assert f"{fresh.process.pid} shipped 7" in cluster.effect_lines()


async def test_a_start_segment_killed_before_its_first_checkpoint_runs_again_on_the_other_worker(
    cluster: Cluster,
) -> None:
    workers = [cluster.start_worker("--lease-ttl", LEASE), cluster.start_worker("--lease-ttl", LEASE)]
    app = _app(cluster)
    checkpoint_id = f"start-{uuid.uuid4().hex[:8]}"
    before = len(cluster.effect_lines())
    try:
        async with app.router.lifespan_context(app), asgi_client(app, timeout=30) as client:
            started = await client.post(
                "/runs", json={"agent": "starter", "input": "go", "checkpoint_id": checkpoint_id, "detached": True}
            )
            run_id = started.json()["run_id"]
            assert run_id == f"{checkpoint_id}@start"
            following = asyncio.ensure_future(client.get(f"/runs/{run_id}/events"))

            def mine() -> list[str]:
                return cluster.effect_lines()[before:]

            await _until(lambda: any(line.endswith("effect 3") for line in mine()), 20, "no step 3")
            victim_pid = int(next(line for line in mine() if line.endswith("effect 3")).split()[0])
            victim = next(w for w in workers if w.process.pid == victim_pid)
            survivor = next(w for w in workers if w is not victim)
            os.kill(victim_pid, signal.SIGKILL)  # no checkpoint yet: the run's first segment is all it has done
            victim.process.wait(5)
            frames = parse_sse((await asyncio.wait_for(following, 30)).text)
            summary = await _ended(client, run_id)
    finally:
        for worker in workers:
            worker.stop()
        await app.state.batonflow.checkpoints.close()
    lines = mine()
    assert summary["status"] == "completed" and summary["text"] == f"{STEPS} steps done", (summary, lines)
    assert frames[-1].event == "end" and frames[-1].data["status"] == "completed"

    def attempts(pid: int) -> list[int]:
        return [int(line.rsplit(" ", 1)[1]) for line in lines if line.startswith(f"{pid} attempt ")]

    # No journal before a run's first checkpoint: the survivor ran the start again from its first step ...
    assert attempts(victim_pid)[:3] == [1, 2, 3] and attempts(survivor.process.pid) == list(range(1, STEPS + 1))
    # ... with the same run id, so the same idempotency keys: the steps keyed by them took effect once.
    for n in range(1, STEPS + 1):
        assert sum(line.endswith(f" effect {n}") for line in lines) == 1, (n, lines)
    seqs = sorted({f.data["seq"] for f in frames[:-1] if f.event != "run"})
    assert seqs == list(range(seqs[0], seqs[-1] + 1))

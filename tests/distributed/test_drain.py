"""SIGTERM drains a worker: it takes no more segments, lets running ones finish within ``--grace``, hands the rest
back so another worker continues them at once (from their journal), and exits 0; a second SIGTERM stops at once.
A drained start does not count toward the recovery limit. ``--store memory`` is refused with the DBOS backend."""

from __future__ import annotations

import asyncio
import signal
import time
import uuid

import pytest

from batonflow.cli import main
from batonflow.distributed import DBOSBackend, DBOSWorker, RedisEventLog, SegmentOutcome, SegmentRequest
from batonflow.errors import UserError
from batonflow.schema import user
from batonflow.store import PostgresCheckpointStore, SqliteCheckpointStore

from .apps import STEPS
from .conftest import REDIS_URL, Cluster, Worker

TTL = "30"  # seconds: long, so a segment that waited for a lease or a heartbeat to lapse misses the deadlines
RUNS = 10


@pytest.fixture(scope="module")
def cluster(cluster: Cluster) -> Cluster:
    cluster.postgres_store = True
    return cluster


def _backend(cluster: Cluster) -> tuple[DBOSBackend, PostgresCheckpointStore]:
    store = PostgresCheckpointStore(cluster.database_url)
    return DBOSBackend(store, database_url=cluster.database_url, events=RedisEventLog(REDIS_URL)), store


async def _paused(backend: DBOSBackend, n: int) -> list[SegmentRequest]:
    """``n`` stepper runs paused on their question, and the resumes that answer it."""
    ids = [f"drain-{uuid.uuid4().hex[:8]}" for _ in range(n)]
    starts = [
        await backend.submit(SegmentRequest(agent="stepper", checkpoint_id=c, messages=(user("go"),))) for c in ids
    ]
    paused = [await asyncio.wait_for(backend.outcome(s), 30) for s in starts]
    assert all(p.status == "interrupted" for p in paused), paused
    return [
        SegmentRequest(agent="stepper", checkpoint_id=c, targets={p.interrupt_ids[0]: "yes"})
        for c, p in zip(ids, paused, strict=True)
    ]


async def _until(check, within: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.02)


async def _outcomes(backend: DBOSBackend, sids: list[str], within: float) -> list[SegmentOutcome]:
    return list(await asyncio.wait_for(asyncio.gather(*(backend.outcome(s) for s in sids)), within))


def _count(lines: list[str], ending: str, pid: int | None = None) -> int:
    return sum(line.endswith(ending) and (pid is None or line.startswith(f"{pid} ")) for line in lines)


async def test_sigterm_hands_the_running_segments_to_the_other_worker_at_once(cluster: Cluster) -> None:
    # --max-attempts 1: a drained start that counted would make the survivor's start the second, over the limit
    workers = [cluster.start_worker("--lease-ttl", TTL, "--grace", "0.5", "--max-attempts", "1") for _ in range(2)]
    backend, store = _backend(cluster)
    before = len(cluster.effect_lines())

    def mine() -> list[str]:
        return cluster.effect_lines()[before:]

    try:
        resumes = await _paused(backend, RUNS)
        sids = [await backend.submit(r) for r in resumes]
        # the victim: a worker that started runs, once each of its runs finished step 1 (its journal holds it)
        await _until(lambda: _count(mine(), " effect 1") >= 2, 20, "no step 1")
        victim = next(w for w in workers if _count(mine(), " attempt 1", w.process.pid) > 0)
        survivor = next(w for w in workers if w is not victim)
        pid = victim.process.pid
        await _until(
            lambda: _count(mine(), " effect 2", pid) >= _count(mine(), " attempt 1", pid), 20, "no step 2 on it"
        )
        started_there = _count(mine(), " attempt 1", pid)
        victim.process.send_signal(signal.SIGTERM)
        assert victim.process.wait(20) == 0
        done = await _outcomes(backend, sids, 20)  # well within the ttl: nobody waited for a lease to lapse
    finally:
        for worker in workers:
            worker.stop()
        await backend.close()
        await store.close()
    lines = mine()
    assert [o.status for o in done] == ["completed"] * RUNS and {o.text for o in done} == {f"{STEPS} steps done"}
    assert _count(lines, " attempt 1") == RUNS  # no run ran again from the start
    for n in range(1, STEPS + 1):
        assert _count(lines, f" effect {n}") == RUNS, (n, lines)  # every keyed effect landed once
    # The victim's runs were halted before their last step: the survivor continued them from their journal.
    assert _count(lines, f" attempt {STEPS}", pid) < started_there
    assert _count(lines, f" attempt {STEPS}", survivor.process.pid) == RUNS - _count(lines, f" attempt {STEPS}", pid)
    assert "handed back" in victim.text()


async def test_runs_within_the_grace_finish_on_the_draining_worker_and_it_takes_no_new_one(cluster: Cluster) -> None:
    draining = cluster.start_worker("--lease-ttl", TTL, "--grace", "20")
    backend, store = _backend(cluster)
    before = len(cluster.effect_lines())
    fresh: Worker | None = None
    try:
        resumes = await _paused(backend, 3)
        sids = [await backend.submit(r) for r in resumes]
        await _until(lambda: _count(cluster.effect_lines()[before:], " effect 1") == 3, 20, "no step 1")
        draining.process.send_signal(signal.SIGTERM)
        draining.wait_for("draining")
        late = await backend.submit(
            SegmentRequest(agent="starter", checkpoint_id=f"late-{uuid.uuid4().hex[:8]}", messages=(user("go"),))
        )
        done = await _outcomes(backend, sids, 20)
        assert draining.process.wait(20) == 0
        lines = cluster.effect_lines()[before:]
        fresh = cluster.start_worker("--lease-ttl", TTL)
        taken = await asyncio.wait_for(backend.outcome(late), 20)
    finally:
        draining.stop()
        if fresh is not None:
            fresh.stop()
        await backend.close()
        await store.close()
    assert [o.status for o in done] == ["completed"] * 3
    pid = draining.process.pid
    for n in range(1, STEPS + 1):
        assert _count(lines, f" attempt {n}", pid) == 3 == _count(lines, f" attempt {n}"), (n, lines)
    assert len(lines) == 6 * STEPS  # 3 attempts and 3 effects a step: the late start did not run on it
    assert taken.status == "completed" and taken.text == f"{STEPS} steps done"


async def test_a_second_sigterm_stops_a_segment_that_reaches_no_safe_point(cluster: Cluster) -> None:
    worker = cluster.start_worker("--lease-ttl", TTL, "--grace", "600")
    backend, store = _backend(cluster)
    before = len(cluster.effect_lines())
    checkpoint_id = f"wait-{uuid.uuid4().hex[:8]}"
    try:
        sid = await backend.submit(SegmentRequest(agent="waiter", checkpoint_id=checkpoint_id, messages=(user("x"),)))
        await _until(lambda: _count(cluster.effect_lines()[before:], " waiting") == 1, 20, "it never waited")
        worker.process.send_signal(signal.SIGTERM)
        worker.wait_for("draining")
        worker.process.send_signal(signal.SIGTERM)
        assert worker.process.wait(20) == 0  # not after the 600 s grace
        await backend.cancel(sid)  # handed back: nobody should wait on it for ever
    finally:
        worker.stop()
        await backend.close()
        await store.close()
    assert _count(cluster.effect_lines()[before:], " cancelled", worker.process.pid) == 1
    assert "1 segments handed back" in worker.text()


@pytest.mark.parametrize(
    "args",
    [
        ["worker", "tests.distributed.apps:agents", "--database-url", "postgresql://nowhere/x", "--store", "memory"],
        ["serve", "tests.distributed.apps:agents", "--backend", "dbos", "--database-url", "postgresql://nowhere/x"],
    ],
    ids=["worker", "serve"],
)
def test_the_memory_store_is_refused_with_the_dbos_backend(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1
    assert "--store memory cannot be used with the DBOS backend" in error
    assert "unresumable" in error and "use --store postgres:URL" in error


def test_the_worker_asks_for_a_store(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["worker", "tests.distributed.apps:agents", "--database-url", "postgresql://nowhere/x"]) == 2
    assert "--store" in capsys.readouterr().err


@pytest.mark.parametrize(("option", "value"), [("grace", -1), ("grace", "20"), ("db_pool", 0), ("db_pool", 2.5)])
def test_a_grace_or_pool_size_out_of_range_is_refused(option: str, value: object) -> None:
    with pytest.raises(UserError, match=option):
        DBOSWorker({}, SqliteCheckpointStore(":memory:"), database_url="postgresql://x/y", **{option: value})  # type: ignore[arg-type]

"""Live events across processes: the worker appends each event of a segment to the run's Redis Stream, this process
reads them (and replays after a stream id), the stream is bounded and expires, and a cancel reaches the worker."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from batonflow.distributed import DBOSBackend, EventRecord, RedisEventLog, SegmentRequest, body_of
from batonflow.errors import UserError
from batonflow.schema import user
from batonflow.store import SqliteCheckpointStore

from .conftest import REDIS_URL, Cluster, Worker

WAIT = 20.0


async def _all(records: object) -> list[EventRecord]:
    return [record async for record in records]  # type: ignore[attr-defined]


def _backend(cluster: Cluster, log: RedisEventLog) -> DBOSBackend:
    return DBOSBackend(SqliteCheckpointStore(cluster.store_path), database_url=cluster.database_url, events=log)


async def test_a_segments_events_reach_another_process_and_replay_after_an_id(cluster: Cluster, worker: Worker) -> None:
    log = RedisEventLog(REDIS_URL)
    backend = _backend(cluster, log)
    run = f"ev-{uuid.uuid4().hex[:8]}"
    try:
        sid = await backend.submit(SegmentRequest(agent="shipper", checkpoint_id=run, messages=(user("ship"),)))
        records = await asyncio.wait_for(_all(backend.events(run)), WAIT)
        replayed = await asyncio.wait_for(_all(backend.events(run, after=records[0].stream_id)), WAIT)
        outcome = await asyncio.wait_for(backend.outcome(sid), WAIT)
    finally:
        await backend.close()
    events, end = records[:-1], records[-1]
    assert [r.kind for r in records] == ["event"] * len(events) + ["end"] and len(events) >= 3
    assert all(r.segment_id == sid for r in records)
    assert events[0].data["event"] == "run"  # the run's frames, as the server sends them
    assert body_of(events[0].data) == {
        "run_id": sid,
        "agent": "shipper",
        "checkpoint_id": run,
        "session_id": None,
        "resumed": False,
    }
    said = events[1:]
    assert [r.seq for r in said] == sorted({r.seq for r in said})  # numbered, each once, in order
    calls = body_of(said[0].data)["message"]
    assert said[0].data["event"] == "message" and calls["tool_calls"][0]["name"] == "ship"
    assert said[-1].data["event"] == "interrupt"
    interrupts = body_of(said[-1].data)["action"]["interrupted"]["interrupts"]
    assert [i["id"] for i in interrupts] == list(outcome.interrupt_ids)
    assert [dict(i) for i in outcome.interrupts] == interrupts
    assert end.data["status"] == "interrupted" == outcome.status
    assert replayed == records[1:]


async def test_a_cancel_reaches_the_worker_running_the_segment(cluster: Cluster, worker: Worker) -> None:
    log = RedisEventLog(REDIS_URL)
    backend = _backend(cluster, log)
    run = f"cancel-{uuid.uuid4().hex[:8]}"
    try:
        sid = await backend.submit(SegmentRequest(agent="waiter", checkpoint_id=run, messages=(user("wait"),)))
        deadline = time.monotonic() + WAIT
        while f"{worker.process.pid} waiting" not in cluster.effect_lines():
            assert time.monotonic() < deadline, "the worker never started the segment"
            await asyncio.sleep(0.02)
        await backend.cancel(sid)
        records = await asyncio.wait_for(_all(backend.events(run)), WAIT)
    finally:
        await backend.close()
    assert records[-1].kind == "end" and records[-1].data["status"] == "cancelled"
    assert f"{worker.process.pid} cancelled" in cluster.effect_lines()  # the model call in the worker was stopped


async def test_a_stream_is_bounded_and_expires() -> None:
    log = RedisEventLog(REDIS_URL, maxlen=5, ttl=30.0)
    run = f"bound-{uuid.uuid4().hex[:8]}"
    try:
        for seq in range(1, 13):
            await log.publish(run, "s@start", seq, "event", {"n": seq})
        await log.publish(run, "s@start", 12, "end", {"status": "completed"})
        redis = log._redis()
        length = await redis.xlen(log.stream_key(run))
        ttl = await redis.pttl(log.stream_key(run))
        kept = await _all(log.read(run))
    finally:
        await log.close()
    assert length == 5 and 0 < ttl <= 30_000
    assert [r.seq for r in kept] == [9, 10, 11, 12, 12] and kept[-1].kind == "end"


async def test_reading_events_without_an_event_log_is_refused(cluster: Cluster) -> None:
    backend = DBOSBackend(SqliteCheckpointStore(cluster.store_path), database_url=cluster.database_url)
    try:
        with pytest.raises(
            UserError, match=r"expected DBOSBackend\(events=RedisEventLog\(…\) or PostgresEventLog\(…\)\), got none"
        ):
            backend.events("run")
    finally:
        await backend.close()


async def test_more_followers_than_connections_wait_for_one_rather_than_fail() -> None:
    log = RedisEventLog(REDIS_URL, max_connections=3, ttl=30.0)
    runs = [f"many-{uuid.uuid4().hex[:8]}" for _ in range(20)]
    try:
        for run in runs:
            await log.publish(run, f"{run}@start", 1, "end", {"status": "completed"})
        read = await asyncio.wait_for(asyncio.gather(*(_all(log.read(run)) for run in runs)), WAIT)
    finally:
        await log.close()
    assert [records[-1].segment_id for records in read] == [f"{run}@start" for run in runs]


async def test_a_segment_whose_end_record_is_out_is_done_before_dbos_says_so(cluster: Cluster, worker: Worker) -> None:
    """A worker sends a segment's ``end`` just before DBOS records the outcome: the status goes by the record, so a
    client that read the end and asks at once is not told the run still runs."""
    log = RedisEventLog(REDIS_URL)
    backend = _backend(cluster, log)
    run = f"ended-{uuid.uuid4().hex[:8]}"
    try:
        sid = await backend.submit(SegmentRequest(agent="waiter", checkpoint_id=run, messages=(user("wait"),)))
        deadline = time.monotonic() + WAIT
        while await backend.status(sid) != "PENDING":
            assert time.monotonic() < deadline, "the worker never started the segment"
            await asyncio.sleep(0.02)
        await log.publish(run, f"{run}@elsewhere", 1, "end", {"status": "completed"})  # another segment's end
        assert await backend.status(sid) == "PENDING"
        await log.publish(run, sid, 1, "end", {"status": "completed"})  # as the worker does, a moment early
        assert await backend.status(sid) == "SUCCESS"
    finally:
        await backend.cancel(sid)
        await backend.close()


def _counting(log: RedisEventLog, method: str) -> list[int]:
    """The calls of ``method`` on the log's client from now on (a call appends 1)."""
    client = log._redis()
    calls: list[int] = []
    original = getattr(client, method)

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return original(*args, **kwargs)

    setattr(client, method, counted)
    return calls


async def test_records_published_at_once_share_a_pipeline_each_answered_its_own_id() -> None:
    """200 segments publishing at the same moment cost a pipeline or two, not a round trip each: every publish is
    answered the id of its own record, each run's stream holds its records in order, and each lapses with the
    log's ttl."""
    log = RedisEventLog(REDIS_URL, ttl=30.0)
    runs = [f"batch-{uuid.uuid4().hex[:8]}" for _ in range(200)]
    try:
        pipelines = _counting(log, "pipeline")
        ids = await asyncio.gather(
            *(log.publish(run, f"{run}@start", seq, "event", {"n": seq}) for seq in (1, 2) for run in runs)
        )
        kept = [await log._redis().xrange(log.stream_key(run)) for run in runs]
        ttls = [await log._redis().pttl(log.stream_key(run)) for run in runs]
    finally:
        await log.close()
    assert 1 <= len(pipelines) <= 3, pipelines
    answered = [[ids[i], ids[200 + i]] for i in range(200)]  # each run's publishes: seq 1, then seq 2
    assert [[e[0].decode() for e in entries] for entries in kept] == answered  # each got its own record's id
    assert all([e[1][b"seq"] for e in entries] == [b"1", b"2"] for entries in kept)
    assert all(0 < ttl <= 30_000 for ttl in ttls)


async def test_a_streams_expiry_is_set_with_its_first_record_and_its_end_not_with_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A stream's expiry goes with its first record and with each ``end``, and again only after a tenth of the ttl:
    the records between cost no expiry each (half the commands of a run's records were expiries)."""
    from redis.asyncio.client import Pipeline

    expiries: list[str] = []
    original = Pipeline.pexpire

    def counted(self: Pipeline, name: str, *args: object, **kwargs: object) -> object:
        expiries.append(name)
        return original(self, name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Pipeline, "pexpire", counted)
    log = RedisEventLog(REDIS_URL, ttl=30.0)
    run = f"expiry-{uuid.uuid4().hex[:8]}"
    try:
        for seq in range(1, 6):
            await log.publish(run, f"{run}@start", seq, "event", {"n": seq})
        await log.publish(run, f"{run}@start", 5, "end", {"status": "completed"})
        length = await log._redis().xlen(log.stream_key(run))
        ttl = await log._redis().pttl(log.stream_key(run))
    finally:
        await log._redis().delete(log.stream_key(run))
        await log.close()
    assert expiries == [log.stream_key(run)] * 2 and length == 6 and 0 < ttl <= 30_000


async def test_a_stream_deleted_under_a_run_is_made_again_with_its_expiry() -> None:
    """A record sent without its stream's expiry goes only to a stream that exists: one whose stream was deleted
    meanwhile goes again, with the expiry, so no stream is ever left without one."""
    log = RedisEventLog(REDIS_URL, ttl=30.0)
    run = f"remade-{uuid.uuid4().hex[:8]}"
    try:
        await log.publish(run, f"{run}@start", 1, "event", {"n": 1})
        await log._redis().delete(log.stream_key(run))
        second = await log.publish(run, f"{run}@start", 2, "event", {"n": 2})
        kept = await log._redis().xrange(log.stream_key(run))
        ttl = await log._redis().pttl(log.stream_key(run))
    finally:
        await log._redis().delete(log.stream_key(run))
        await log.close()
    assert [(e[0].decode(), e[1][b"seq"]) for e in kept] == [(second, b"2")] and 0 < ttl <= 30_000


async def test_a_record_that_fails_in_a_shared_pipeline_fails_only_its_publish() -> None:
    log = RedisEventLog(REDIS_URL, ttl=30.0)
    good, bad = f"good-{uuid.uuid4().hex[:8]}", f"bad-{uuid.uuid4().hex[:8]}"
    try:
        await log._redis().set(log.stream_key(bad), b"not a stream", px=30_000)
        published = await asyncio.gather(
            log.publish(good, f"{good}@start", 1, "event", {"n": 1}),
            log.publish(bad, f"{bad}@start", 1, "event", {"n": 1}),
            return_exceptions=True,
        )
        kept = await log._redis().xlen(log.stream_key(good))
    finally:
        await log.close()
    assert isinstance(published[0], str) and kept == 1
    assert "WRONGTYPE" in str(published[1]), published[1]


async def test_the_cancel_flags_of_many_segments_are_looked_at_together() -> None:
    """Fifty watched segments cost one look at the flags per pace, not fifty: the one whose cancel is requested is
    cancelled, the others run on, and a watch whose task ended lets go."""
    log = RedisEventLog(REDIS_URL, ttl=30.0)
    segments = [f"watch-{uuid.uuid4().hex[:8]}@start" for _ in range(50)]
    tasks = [asyncio.ensure_future(asyncio.sleep(3600)) for _ in segments]
    try:
        looks, single = _counting(log, "mget"), _counting(log, "exists")
        watchers = [
            asyncio.ensure_future(log.watch_cancel(s, t, every=0.1)) for s, t in zip(segments, tasks, strict=True)
        ]
        await asyncio.sleep(0.55)
        await log.request_cancel(segments[0])
        await asyncio.wait_for(watchers[0], WAIT)
        tasks[1].cancel()
        await asyncio.wait_for(watchers[1], WAIT)  # its task ended: the watch lets go
        running = [t.done() for t in tasks[2:]]
        for watcher in watchers[2:]:
            watcher.cancel()
        await asyncio.gather(*watchers[2:], return_exceptions=True)
    finally:
        for task in tasks:
            task.cancel()
        await log.close()
    assert tasks[0].cancelled() and not any(running)
    assert 4 <= len(looks) <= 12 and not single, (len(looks), len(single))


async def test_a_failed_look_at_the_cancel_flags_reaches_every_watcher() -> None:
    log = RedisEventLog("redis://127.0.0.1:1/0", timeout=0.5)
    tasks = [asyncio.ensure_future(asyncio.sleep(3600)) for _ in range(3)]
    try:
        failed = await asyncio.wait_for(
            asyncio.gather(*(log.watch_cancel(f"s{i}@start", t) for i, t in enumerate(tasks)), return_exceptions=True),
            WAIT,
        )
    finally:
        for task in tasks:
            task.cancel()
        await log.close()
    assert [type(error).__name__ for error in failed] == ["ConnectionError"] * 3
    with pytest.raises(UserError, match="every: expected a number of seconds > 0, got 0"):
        await log.watch_cancel("s@start", tasks[0], every=0)


async def test_connections_open_without_looking_up_the_redis_client_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """redis-py 7 and later read their own version from the installed metadata for each connection they open,
    unless told it: a burst of followers opened hundreds, at 3 ms each."""
    import redis.utils

    looked: list[int] = []
    monkeypatch.setattr(redis.utils, "get_lib_version", lambda: looked.append(1) or "0")
    log = RedisEventLog(REDIS_URL, ttl=30.0)
    run = f"version-{uuid.uuid4().hex[:8]}"
    try:
        await asyncio.gather(*(log.publish(run, f"{run}@start", 1, "event", {"n": 1}) for _ in range(5)))
        await asyncio.gather(*(log.last(run) for _ in range(20)))
    finally:
        await log.close()
    assert looked == []

"""A Redis outage mid-stream, with real processes: a ``batonflow worker`` publishes to a throwaway ``redis-server``
this test starts on a port of its own (never the shared one), SSE clients follow runs through an API app on the
DBOS backend, and the Redis is killed while the runs go, then started again empty. Every follower ends: a run that
ended during the outage ends its followers with the outcome DBOS has and ``end_record: lost``; a run that goes on
after it reports what it lost as ``gap`` events, and what it received plus the gaps' counts is every record an
undisturbed run of the same length sends."""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from tests.server.conftest import asgi_client, parse_sse

from batonflow.distributed import DBOSBackend, RedisEventLog
from batonflow.server import create_app
from batonflow.store import SqliteCheckpointStore

from .apps import agents
from .conftest import Cluster, Worker

SHORT, LONG = 5, 16  # steps of 0.3 s: the short runs end during the outage, the long ones after it
HELD = f"{LONG}/{SHORT + 2}"  # a long run holds a step until the test opens the gate, once Redis is back
WAIT = 90.0  # a guard against a hang, not a measure


class ThrowawayRedis:
    """A ``redis-server`` of this test's own on a free port, keeping nothing on disk: killed, it comes back empty."""

    def __init__(self, tmp: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.tmp = tmp
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.process = subprocess.Popen(command, cwd=self.tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port, socket_connect_timeout=1)
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise AssertionError(f"redis-server on port {self.port} did not start") from None
                time.sleep(0.05)
        client.close()

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.process = None


@pytest.fixture
def throwaway_redis(tmp_path: Path) -> Iterator[ThrowawayRedis]:
    server = ThrowawayRedis(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def outage_worker(cluster: Cluster, throwaway_redis: ThrowawayRedis) -> Iterator[Worker]:
    worker = cluster.start_worker(events_url=throwaway_redis.url)
    try:
        yield worker
    finally:
        worker.stop()


async def _start(client: httpx.AsyncClient, steps: int | str) -> str:
    checkpoint_id = f"outage-{uuid.uuid4().hex[:8]}"
    body = {"agent": "ticker", "input": str(steps), "checkpoint_id": checkpoint_id, "detached": True}
    started = await client.post("/runs", json=body)
    assert started.status_code == 202, started.text
    return str(started.json()["run_id"])


async def _follow(client: httpx.AsyncClient, run_id: str) -> list[Any]:
    return parse_sse((await client.get(f"/runs/{run_id}/events")).text)


async def _until(check: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {WAIT} s")
        await asyncio.sleep(0.05)


async def test_a_redis_outage_mid_stream_ends_every_follower_and_reports_the_gaps(
    cluster: Cluster, throwaway_redis: ThrowawayRedis, outage_worker: Worker
) -> None:
    store = SqliteCheckpointStore(cluster.store_path)
    log = RedisEventLog(throwaway_redis.url, timeout=2.0)
    app = create_app(
        agents(), checkpoint_store=store, backend=DBOSBackend(store, database_url=cluster.database_url, events=log)
    )
    probe = redis.asyncio.Redis(port=throwaway_redis.port)
    cluster.tick_gate.unlink(missing_ok=True)
    async with app.router.lifespan_context(app), asgi_client(app, timeout=WAIT) as client:
        control = await _follow(client, await _start(client, LONG))  # undisturbed: what a long run sends
        long = [await _start(client, HELD) for _ in range(3)]
        short = [await _start(client, SHORT) for _ in range(3)]  # started last: streaming when all are
        followers = {rid: asyncio.ensure_future(_follow(client, rid)) for rid in short + long}

        async def all_streaming() -> bool:  # every run has sent its first records, and none has ended
            lengths = [await probe.xlen(log.stream_key(rid.rpartition("@")[0])) for rid in short + long]
            return min(lengths) >= 2

        async def status(rid: str) -> str:
            return str((await client.get(f"/runs/{rid}")).json()["status"])

        async def shorts_over() -> bool:  # DBOS has their outcomes: their end records went nowhere
            return all([await status(rid) == "completed" for rid in short])

        await _until(all_streaming, "every run streaming")
        throwaway_redis.kill()
        await _until(shorts_over, "the short runs over during the outage")
        assert all([await status(rid) == "running" for rid in long])  # the long ones go on, their records lost
        throwaway_redis.start()  # empty: what the outage cost is gone for good
        cluster.tick_gate.touch()  # the long runs may end now, and only now
        streams = dict(zip(followers, await asyncio.wait_for(asyncio.gather(*followers.values()), WAIT), strict=True))
    await probe.aclose()

    whole = len(control)
    assert control[-1].event == "end" and "gap" not in [f.event for f in control]
    for rid in short:
        end = streams[rid][-1]
        assert end.event == "end", (rid, [f.event for f in streams[rid]])
        assert (end.data["status"], end.data["text"], end.data["end_record"]) == (
            "completed",
            f"ticked {SHORT}",
            "lost",
        )
        assert end.id == ""
    for rid in long:
        frames = streams[rid]
        gaps = [f for f in frames if f.event == "gap"]
        log_tail = outage_worker.text()[-4000:]
        why = f"{rid}: {[f.event for f in frames]}, ending {frames[-1].data}; the worker's log:\n{log_tail}"
        assert frames[-1].event == "end" and frames[-1].data["status"] == "completed", why
        assert "end_record" not in frames[-1].data, why  # its end came after the outage, as a record
        assert gaps, [f.event for f in frames]  # what the outage cost is reported, not skipped
        received = len(frames) - len(gaps)
        assert received + sum(g.data["count"] for g in gaps) == whole, (received, [g.data for g in gaps], whole)
        for gap in gaps:
            missing = gap.data["missing"]
            # From 1 when the follower had read nothing yet: the records before the outage went with the Redis.
            assert 1 <= missing["from"] <= missing["to"] < whole and gap.data["run_id"] == rid


async def test_a_paused_redis_fails_a_publish_after_the_timeout_rather_than_hang(
    throwaway_redis: ThrowawayRedis,
) -> None:
    """A Redis stopped with SIGSTOP takes commands and never answers: a publish fails once ``timeout`` has passed
    (the worker logs it and the run goes on, rather than hang on it), and the log works again once Redis goes on."""
    log = RedisEventLog(throwaway_redis.url, timeout=0.5)
    run = f"paused-{uuid.uuid4().hex[:8]}"
    process = throwaway_redis.process
    assert process is not None
    try:
        await log.publish(run, f"{run}@start", 1, "event", {"n": 1})
        process.send_signal(signal.SIGSTOP)
        try:
            with pytest.raises(redis.TimeoutError):
                await asyncio.wait_for(log.publish(run, f"{run}@start", 2, "event", {"n": 2}), WAIT)
        finally:
            process.send_signal(signal.SIGCONT)
        await log.publish(run, f"{run}@start", 3, "end", {"status": "completed"})
        records = [record async for record in log.read(run)]
    finally:
        await log.close()
    # The timed-out command was in Redis's socket: it ran once Redis went on, so record 2 is there, under the number
    # it was given; had it been lost, number 2 would be a hole. Either way the numbers say what the stream holds.
    assert [(r.seq, r.number) for r in records] == [(1, 1), (2, 2), (3, 3)]

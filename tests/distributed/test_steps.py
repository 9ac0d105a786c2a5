"""Step mode: a worker SIGKILLed in the middle of a batch of three parallel tool calls, two of them finished; the
other worker continues the segment. In step mode the two finished calls and the model call that asked for them are
not made again, only the third is; without it the whole batch and that model call run again. And the records:
codec round trips, bad ones refused clearly, none left behind."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
import uuid

import pytest

from batonflow.adk import fenced_by, transfer_action
from batonflow.adk.loop import ToolResult
from batonflow.distributed import DBOSBackend, DBOSWorker, SegmentRequest, SegmentSteps, StepTable
from batonflow.errors import LeaseLostError, StepRecordError, UserError
from batonflow.schema import assistant, tool_message, user
from batonflow.store import MemoryCheckpointStore, PostgresCheckpointStore
from batonflow.testing import tool_calls

from .conftest import Cluster

LEASE = "1.5"  # seconds: the workers' heartbeat and checkpoint-lease ttl


@pytest.fixture(scope="module")
def cluster(cluster: Cluster) -> Cluster:
    cluster.postgres_store = True
    return cluster


async def _until(check, within: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.02)


def _lines(cluster: Cluster, tag: str) -> list[str]:
    """The side-effect lines of the run tagged ``tag``, without the pid: ``model 0``, ``start fast``, …"""
    return [line.split(" ", 2)[2] for line in cluster.effect_lines() if line.split(" ", 2)[1:2] == [tag]]


async def _kill_mid_batch(cluster: Cluster, *mode: str) -> tuple[str, list[str], str]:
    """Run the batcher on two workers, SIGKILL the one running it once two of its three tools finished; the run's
    outcome text, its side-effect lines, and its segment id."""
    workers = [cluster.start_worker("--lease-ttl", LEASE, *mode) for _ in range(2)]
    store = PostgresCheckpointStore(cluster.database_url)
    backend = DBOSBackend(store, database_url=cluster.database_url)
    tag = uuid.uuid4().hex[:8]
    try:
        sid = await backend.submit(SegmentRequest(agent="batcher", checkpoint_id=f"b-{tag}", messages=(user(tag),)))
        await _until(lambda: {"done fast", "done medium"} <= set(_lines(cluster, tag)), 20, "two tools never finished")
        if mode:  # finished is recorded: the record is written just after the tool's last line
            table = StepTable(cluster.database_url)
            try:
                await _until(lambda: sum(k.startswith("tool|") for k in table.load(sid)) == 2, 10, "never recorded")
            finally:
                table.close()
        assert "done slow" not in _lines(cluster, tag)
        victim_pid = int(
            next(line for line in cluster.effect_lines() if line.endswith(f"{tag} done medium")).split()[0]
        )
        os.kill(victim_pid, signal.SIGKILL)
        outcome = await asyncio.wait_for(backend.outcome(sid), 30)
        assert all((", step mode" in w.text()) == bool(mode) for w in workers)  # what the worker says it runs in
    finally:
        for worker in workers:
            worker.stop()
        await backend.close()
        await store.close()
    assert outcome.status == "completed", outcome
    return outcome.text, _lines(cluster, tag), sid


async def test_in_step_mode_only_the_call_in_flight_runs_again(cluster: Cluster) -> None:
    text, lines, sid = await _kill_mid_batch(cluster, "--step-mode")
    assert text == "fast done, medium done, slow done"
    assert lines.count("model 0") == 1  # the reply that asked for the batch was recorded
    assert lines.count("start fast") == 1 and lines.count("done fast") == 1
    assert lines.count("start medium") == 1 and lines.count("done medium") == 1
    assert lines.count("start slow") == 2 and lines.count("done slow") == 1  # cut off once, run again
    assert lines.count("model 3") == 1
    table = StepTable(cluster.database_url)
    try:
        await _until(lambda: table.load(sid) == {}, 5, "the records stayed")  # they went with the segment's end
    finally:
        table.close()


async def test_without_step_mode_the_whole_batch_runs_again(cluster: Cluster) -> None:
    text, lines, _ = await _kill_mid_batch(cluster)
    assert text == "fast done, medium done, slow done"
    assert lines.count("model 0") == 2  # the model was asked again for the batch
    assert lines.count("done fast") == 2 and lines.count("done medium") == 2
    assert lines.count("start slow") == 2 and lines.count("done slow") == 1


# -- the records ---------------------------------------------------------------------------------------------------


async def test_records_round_trip_through_the_codec(cluster: Cluster) -> None:
    table = StepTable(cluster.database_url)
    sid = f"rt-{uuid.uuid4().hex[:8]}@start"
    reply = tool_calls(("ship", {"order_id": 7}))
    result = ToolResult(
        message=tool_message("shipped", tool_call_id="call_1", tool_name="ship"),
        action=transfer_action("billing"),
    )
    try:
        first = SegmentSteps(table, sid)
        await first.record("model|agent:a|0", reply)
        await first.record("tool|agent:a|1.1|call_1", result)
        again = SegmentSteps(table, sid)  # what a re-run reads
        assert await again.recall("model|agent:a|0") == reply
        assert await again.recall("tool|agent:a|1.1|call_1") == result
        assert await again.recall("model|agent:a|1") is None
        assert '"ship"' in table.load(sid)["model|agent:a|0"]  # JSON text, never pickle
        table.forget(sid)
        assert table.load(sid) == {}
    finally:
        table.close()


@pytest.mark.parametrize(
    ("stored", "found"),
    [
        ("not json {", "invalid JSON"),
        ('{"$c": "os.system", "cmd": "rm"}', "os.system"),
        ('{"role": "assistant"}', "it holds a dict"),
    ],
)
async def test_a_record_that_does_not_decode_is_a_clear_error(cluster: Cluster, stored: str, found: str) -> None:
    table = StepTable(cluster.database_url)
    sid = f"bad-{uuid.uuid4().hex[:8]}@start"
    try:
        table.record(sid, "model|agent:a|0", stored)
        recorder = SegmentSteps(table, sid)
        with pytest.raises(StepRecordError) as raised:
            await recorder.recall("model|agent:a|0")
        assert raised.value.key == "model|agent:a|0"
        message = str(raised.value)
        assert f"segment {sid}" in message and "expected the codec's JSON of a Message or a ToolResult" in message
        assert found in message
    finally:
        table.forget(sid)
        table.close()


async def test_recording_is_best_effort(cluster: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    """A value the codec cannot hold, or a table that cannot be reached, costs the record (logged), not the run."""
    caplog.set_level(logging.WARNING, "batonflow.distributed")
    table = StepTable(cluster.database_url)
    sid = f"be-{uuid.uuid4().hex[:8]}@start"
    try:
        recorder = SegmentSteps(table, sid)
        await recorder.record("tool|agent:a|1.1|call_1", object())
        assert table.load(sid) == {} and "is not recorded" in caplog.text
    finally:
        table.close()
    away = StepTable("postgresql://postgres@127.0.0.1:1/nowhere", connect_timeout=1)
    recorder = SegmentSteps(away, sid)
    assert await recorder.recall("model|agent:a|0") is None
    await recorder.record("model|agent:a|0", assistant("hi"))
    assert "cannot be read" in caplog.text


async def test_the_prune_keeps_only_the_records_of_pending_segments(cluster: Cluster) -> None:
    """Records of a segment that is no longer pending (cancelled, or left by a crash after its end) are deleted, by
    a worker as a segment starts (at most once a minute) or by ``prune``; those of a running one are kept."""
    table = StepTable(cluster.database_url)
    left = f"left-{uuid.uuid4().hex[:8]}@start"
    table.record(left, "model|agent:a|0", '"left by a worker that died after the end"')
    worker = cluster.start_worker("--step-mode")
    store = PostgresCheckpointStore(cluster.database_url)
    backend = DBOSBackend(store, database_url=cluster.database_url)
    try:
        running = await backend.submit(
            SegmentRequest(agent="waiter", checkpoint_id=f"w-{uuid.uuid4().hex[:8]}", messages=(user("w"),))
        )
        await _until(lambda: any(line.endswith(" waiting") for line in cluster.effect_lines()), 20, "never waited")
        await _until(lambda: table.load(left) == {}, 10, "the worker's first segment did not prune")
        orphan = f"gone-{uuid.uuid4().hex[:8]}@start"
        table.record(running, "model|agent:waiter|0", '"kept"')
        table.record(orphan, "model|agent:a|0", '"left behind"')
        assert table.prune() >= 1
        assert table.load(orphan) == {} and table.load(running) == {"model|agent:waiter|0": '"kept"'}
        await backend.cancel(running)
        await _until(lambda: table.prune() >= 0 and table.load(running) == {}, 20, "the cancelled one's records stayed")
    finally:
        worker.stop()
        table.close()
        await backend.close()
        await store.close()


def test_step_mode_must_be_a_bool() -> None:
    with pytest.raises(UserError, match=r"step_mode: expected True or False, got 'yes'"):
        DBOSWorker({}, MemoryCheckpointStore(), database_url="postgresql://x/y", step_mode="yes")  # type: ignore[arg-type]
    assert DBOSWorker({}, MemoryCheckpointStore(), database_url="postgresql://x/y").steps.on is False


@pytest.mark.parametrize("schema", ["dbos; DROP TABLE x", "", 7])
def test_the_system_schema_must_be_a_plain_name(schema: object) -> None:
    with pytest.raises(UserError, match=r"StepTable schema: expected DBOS's system schema, a plain SQL name, got "):
        StepTable("postgresql://x/y", schema=schema)  # type: ignore[arg-type]


async def test_a_worker_that_lost_its_segment_records_nothing(cluster: Cluster) -> None:
    table = StepTable(cluster.database_url)
    sid = f"late-{uuid.uuid4().hex[:8]}@start"
    alive = True

    def fence() -> None:
        if not alive:
            raise LeaseLostError("this worker was declared dead", checkpoint_id="", owner="worker-a")

    try:
        with fenced_by(fence):
            recorder = SegmentSteps(table, sid)
            await recorder.record("model|agent:a|0", assistant("first"))
            alive = False  # paused past its lease: another worker runs the segment now
            with pytest.raises(LeaseLostError, match="declared dead"):
                await recorder.record("model|agent:a|1", assistant("late"))
        assert set(table.load(sid)) == {"model|agent:a|0"}  # the late record was refused, not written
    finally:
        table.forget(sid)
        table.close()

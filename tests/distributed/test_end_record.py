"""A segment's ``end`` record is published again while its log is away (``publish_end``): it is what ends the
segment's followers with its outcome, so a Redis that comes back within the retries still gets it; one that does
not is logged and answered False (the followers then make the end up from the backend's outcome)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from batonflow.distributed import RedisEventLog, publish_end

from .test_event_outage import ThrowawayRedis

OUTCOME = {"status": "completed", "text": "done"}


async def test_an_end_record_is_published_once_the_log_is_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = ThrowawayRedis(tmp_path)
    server.start()
    log = RedisEventLog(server.url, timeout=1)
    try:
        await log.publish("run-1", "run-1@start", 1, "event", {"n": 1})
        server.kill()
        with caplog.at_level(logging.WARNING, logger="batonflow.distributed"):
            ending = asyncio.ensure_future(publish_end(log, "run-1", "run-1@start", 1, OUTCOME, waits=(0.2,) * 200))
            while "its end record was not published" not in caplog.text:  # the first try failed
                assert not ending.done(), "publish_end gave up with retries left"
                await asyncio.sleep(0.05)
            server.start()  # empty: the event before the outage is gone with it
            assert await asyncio.wait_for(ending, 60) is True
        records = [record async for record in log.read("run-1")]
    finally:
        await log.close()
        server.kill()
    assert [(r.kind, r.segment_id, r.data) for r in records] == [("end", "run-1@start", OUTCOME)]
    assert records[0].number == 1  # a new attempt's first record: a follower takes it as a restart, not a gap


async def test_an_end_record_that_cannot_be_published_is_logged_and_answered_false(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = ThrowawayRedis(tmp_path)
    log = RedisEventLog(server.url, timeout=1)  # never started: every try is refused
    try:
        with caplog.at_level(logging.WARNING, logger="batonflow.distributed"):
            published = await publish_end(log, "run-2", "run-2@start", 3, OUTCOME, waits=(0.01, 0.01))
    finally:
        await log.close()
    assert published is False
    tries = [r.getMessage() for r in caplog.records if "its end record was not published" in r.getMessage()]
    assert len(tries) == 3 and "again in" not in tries[-1] and all("again in 0.01 s" in t for t in tries[:2])

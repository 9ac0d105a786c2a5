"""A worker's cancel watch outlives an outage of its event log: a cancel requested after Redis came back still
stops the segment (a throwaway ``redis-server`` of the test's own, killed and started again)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from batonflow.distributed import RedisEventLog, watch_cancels

from .test_event_outage import ThrowawayRedis


async def test_a_cancel_requested_after_a_redis_outage_still_stops_the_segment(tmp_path: Path) -> None:
    server = ThrowawayRedis(tmp_path)
    server.start()
    log = RedisEventLog(server.url, timeout=1)
    segment = asyncio.ensure_future(asyncio.sleep(3600))
    watcher = asyncio.ensure_future(watch_cancels(log, "run-1@start", segment, retry=0.1))
    try:
        server.kill()  # the outage: the watch's next look fails
        await asyncio.sleep(0.5)
        assert not watcher.done()  # it did not give up
        server.start()
        deadline = time.monotonic() + 20
        while True:  # the log reconnects on its next command
            try:
                await log.request_cancel("run-1@start")
                break
            except Exception:
                assert time.monotonic() < deadline, "Redis never came back"
                await asyncio.sleep(0.1)
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(segment, 20)
        await asyncio.wait_for(watcher, 5)
    finally:
        segment.cancel()
        watcher.cancel()
        await log.close()
        server.kill()

"""Followers of a log that loses records: a lost record is reported as a ``gap`` event naming the missing numbers
(never skipped silently), a run whose ``end`` record was lost still ends its followers (SSE and JSON) with the
outcome the backend has, a log that cannot be read for a while is waited out, and one that cannot be read when the
run is over ends the follower with that outcome and why. The logs here are ``MemoryEventLog``s that lose what a
test tells them to (as an outage would: the record's number is taken, its write fails)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from batonflow import MemoryCheckpointStore
from batonflow.distributed import EventRecord, InProcessBackend, MemoryEventLog
from batonflow.server import create_app

from . import apps
from .conftest import asgi_client, eventually, parse_sse

Lose = Callable[[str, dict[str, Any]], bool]


class LossyLog(MemoryEventLog):
    """A memory log whose writes of the records ``lose`` picks fail after their number was taken."""

    def __init__(self, lose: Lose) -> None:
        super().__init__()
        self.lose = lose
        self.lost = 0

    def append(self, run: str, segment_id: str, seq: int, kind: Any, data: dict[str, Any]) -> EventRecord:
        if self.lose(kind, data):
            self.lost += 1
            attempt, number = self.numbering.next(segment_id, kind)
            return EventRecord("0-0", seq, kind, segment_id, data, number, attempt)
        return super().append(run, segment_id, seq, kind, data)


class DownLog(MemoryEventLog):
    """A memory log whose reads fail while ``down`` (an event log in an outage); writes go on."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False
        self.failed = 0

    async def batches(self, run: str, after: str = "0-0") -> AsyncIterator[list[EventRecord]]:
        if self.down:
            self.failed += 1
            raise ConnectionError("Error 111 connecting to 127.0.0.1:6390. Connection refused.")
        async for batch in super().batches(run, after):
            yield batch


def _app(log: MemoryEventLog, *agents: Any) -> Any:
    store = MemoryCheckpointStore()
    agents = agents or (apps.echo(),)
    named = {agent.name: agent for agent in agents}
    return create_app(named, checkpoint_store=store, backend=InProcessBackend(named, store, events=log))


async def test_a_lost_record_is_reported_as_a_gap_event_with_the_missing_numbers() -> None:
    whole = parse_sse((await _stream(MemoryEventLog())).text)
    log = LossyLog(lambda kind, data: kind == "event" and data["event"] == "message")
    streamed = parse_sse((await _stream(log)).text)
    lost = [i for i, frame in enumerate(whole) if frame.event == "message"]
    assert log.lost == len(lost) == 1
    assert [f.event for f in streamed] == [("gap" if i in lost else f.event) for i, f in enumerate(whole)]
    gap = next(f for f in streamed if f.event == "gap")
    assert gap.id == ""  # never a record of the log: a reconnecting client resumes after the one before it
    assert gap.data["missing"] == {"from": lost[0] + 1, "to": lost[0] + 1} and gap.data["count"] == 1
    assert gap.data["run_id"] == streamed[0].data["run_id"]
    assert gap.data["after_seq"] == whole[lost[0] - 1].data.get("seq", 0)
    assert streamed[-1].event == "end" and streamed[-1].data["status"] == "completed"
    assert "end_record" not in streamed[-1].data


async def test_records_lost_in_a_row_make_one_gap_and_the_rest_arrives() -> None:
    log = LossyLog(lambda kind, data: kind == "event" and data["event"] != "run")
    streamed = parse_sse((await _stream(log)).text)
    assert [f.event for f in streamed] == ["run", "gap", "end"]
    assert streamed[1].data["missing"] == {"from": 2, "to": 1 + log.lost} and streamed[1].data["count"] == log.lost


async def test_a_run_whose_end_record_was_lost_ends_its_followers_with_the_outcome() -> None:
    log = LossyLog(lambda kind, data: kind == "end")
    app = _app(log)
    async with app.router.lifespan_context(app), asgi_client(app, timeout=30) as client:
        answered = await client.post("/runs", json={"agent": "echo", "input": "hi", "checkpoint_id": "lost-end"})
        streamed = parse_sse((await client.get("/runs/lost-end@start/events")).text)
        state = (await client.get("/runs/lost-end@start")).json()
    assert log.lost == 1
    assert answered.status_code == 200 and answered.json()["status"] == "completed"
    assert answered.json()["text"] == "echo: hi"
    end = streamed[-1]
    assert (end.event, end.id) == ("end", "")
    assert (end.data["status"], end.data["text"], end.data["end_record"]) == ("completed", "echo: hi", "lost")
    assert end.data["reason"] == "the event log has no end record"
    assert [f.event for f in streamed if f.event == "end"] == ["end"] and state["status"] == "completed"


async def test_a_log_that_cannot_be_read_for_a_while_is_waited_out() -> None:
    model = apps.Blocking()
    log = DownLog()
    app = _app(log, apps.blocking(model))
    async with app.router.lifespan_context(app), asgi_client(app, timeout=30) as client:
        started = await client.post("/runs", json={"agent": "slow", "input": "x", "detached": True})
        run_id = started.json()["run_id"]
        log.down = True

        async def follow() -> Any:
            return await client.get(f"/runs/{run_id}/events")

        following = asyncio.ensure_future(follow())
        await eventually(lambda: log.failed >= 2, within=20)  # the follower fails, waits, tries again
        log.down = False
        model.release.set()
        streamed = parse_sse((await asyncio.wait_for(following, 30)).text)
    events = [f.event for f in streamed]
    assert events[0] == "run" and "gap" not in events
    assert streamed[-1].event == "end" and streamed[-1].data["status"] == "completed"
    assert "end_record" not in streamed[-1].data and streamed[-1].id


async def test_a_log_that_cannot_be_read_once_the_run_is_over_ends_the_follower_with_why() -> None:
    log = DownLog()
    app = _app(log)
    async with app.router.lifespan_context(app), asgi_client(app, timeout=30) as client:
        await client.post("/runs", json={"agent": "echo", "input": "hi", "checkpoint_id": "down"})
        log.down = True
        streamed = parse_sse((await client.get("/runs/down@start/events")).text)
    assert [f.event for f in streamed] == ["end"]
    end = streamed[0].data
    assert (end["status"], end["text"], end["end_record"]) == ("completed", "echo: hi", "lost")
    assert end["reason"] == (
        "the event log cannot be read (ConnectionError: Error 111 connecting to 127.0.0.1:6390. Connection refused.)"
    )


async def _stream(log: MemoryEventLog) -> Any:
    app = _app(log)
    async with app.router.lifespan_context(app), asgi_client(app, timeout=30) as client:
        return await client.post("/runs", json={"agent": "echo", "input": "a b c", "stream": True})

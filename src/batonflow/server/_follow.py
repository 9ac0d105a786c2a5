"""Following a run: the records of its segment read from its run's log, each sent with its record's id (what a
client's ``Last-Event-ID`` gives back, to resume after it), and who follows each run this process started. A run
that is not detached goes on while somebody follows it, and is cancelled once its last follower has been gone
``reconnect_grace`` seconds: time for that client to reconnect.
"""

import asyncio
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..distributed import EventRecord, LiveBackend, SegmentOutcome
from ._errors import ApiError, shown
from ._wire import json_text, summary

__all__ = ["Followers", "Run", "parse_event_id", "record_key", "segment_batches", "segment_records", "sent"]

_RECORD_ID_LIMIT = 2**63 - 1  # each part of a record id: PostgreSQL's bigint (Redis allows 2**64 - 1)


@dataclass(slots=True)
class Run:
    """A run this API process started: the segment, its run's key in the log, who follows it."""

    segment_id: str
    run: str
    agent: str
    key: tuple[str, str]
    detached: bool
    followers: int = 0
    timer: asyncio.TimerHandle | None = None
    watcher: "asyncio.Task[None] | None" = field(default=None, repr=False)


class Followers:
    """Who follows the runs this process started (``active``, by segment id), and the cancel of a run nobody
    follows: at once (``grace`` 0), or once ``grace`` seconds have passed without a follower coming back."""

    def __init__(self, backend: LiveBackend, active: Mapping[str, Run], grace: float) -> None:
        self.backend = backend
        self.active = active
        self.grace = grace
        self.tasks: set[asyncio.Task[Any]] = set()

    def attach(self, run: Run | None) -> None:
        """One more follower of ``run`` (None: a run another process started, which nobody here cancels)."""
        if run is None:
            return
        run.followers += 1
        if run.timer is not None:
            run.timer.cancel()
            run.timer = None

    def detach(self, run: Run | None) -> None:
        """The last follower of a run that is not detached went away: cancel it, after the grace."""
        if run is None:
            return
        run.followers -= 1
        if run.followers or run.detached or run.segment_id not in self.active:
            return
        if self.grace <= 0:
            self.cancel_later(run.segment_id)
        else:
            run.timer = asyncio.get_running_loop().call_later(self.grace, self._alone, run)

    def _alone(self, run: Run) -> None:
        run.timer = None
        if not run.followers and run.segment_id in self.active:
            self.cancel_later(run.segment_id)

    def cancel_later(self, sid: str) -> None:
        """Cancel the run without waiting for it (the follower that lets it go is done); the task is kept till it ends."""
        task = asyncio.ensure_future(self.backend.cancel(sid))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)


async def segment_records(
    backend: LiveBackend, run_key: str, sid: str, after: str
) -> AsyncGenerator[EventRecord, None]:
    """The records of segment ``sid`` in its run's log after ``after``, up to its ``end`` (a run's log holds all
    its segments, a conversation's all its turns: the others' are skipped)."""
    while True:
        async for record in backend.events(run_key, after):
            after = record.stream_id
            if record.segment_id != sid:
                continue
            yield record
            if record.kind == "end":
                return


async def segment_batches(
    backend: LiveBackend, run_key: str, sid: str, after: str
) -> AsyncGenerator[list[EventRecord], None]:
    """``segment_records``, in the batches the log gives them in."""
    while True:
        async for batch in backend.batches(run_key, after):
            after = batch[-1].stream_id
            mine = [record for record in batch if record.segment_id == sid]
            if mine:
                yield mine
                if mine[-1].kind == "end":
                    return


def sent(record: EventRecord, sid: str, agent: str) -> bytes:
    """The SSE event of a record: its id, its frame's name, its JSON text (one line: JSON escapes line breaks)."""
    if record.kind == "end":
        event, data = "end", json_text(summary(sid, SegmentOutcome.from_payload(record.data), agent))
    else:
        event, data = record.data["event"], record.data["data"]
    return f"id: {record.stream_id}\r\nevent: {event}\r\ndata: {data}\r\n\r\n".encode()


def parse_event_id(text: str) -> str:
    """A ``Last-Event-ID``: an event log's record id (``"42-0"``, a Redis stream id such as
    ``"1733059200000-0"``); anything else is a 400 that says what an id looks like. The ``"7.2"`` ids of earlier
    releases named frames of runs that lived in one process's memory, gone with it: no client can hold one of a run
    that still exists, so they are refused like any other."""
    stripped = text.strip()
    number, sep, rest = stripped.partition("-")
    if not (
        sep
        and number.isdigit()
        and rest.isdigit()
        and len(number) <= 19
        and len(rest) <= 19
        and int(number) <= _RECORD_ID_LIMIT
        and int(rest) <= _RECORD_ID_LIMIT
    ):
        raise ApiError(
            400,
            "invalid_event_id",
            f"Last-Event-ID: expected a record id such as '42-0' or '1733059200000-0', got {shown(text)}",
            expected="<digits>-<digits>, each at most 2**63 - 1: the id of an SSE event this server sent",
            found=shown(text),
        )
    return stripped


def record_key(record_id: str) -> tuple[int, int]:
    number, _, rest = record_id.partition("-")
    return int(number), int(rest or 0)

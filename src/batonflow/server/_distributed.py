"""Runs on a pool of workers (``create_app(backend=...)``): this process runs no agent code. A run's segment is
enqueued on the backend, and its events come back from the run's live stream, which every API process can read:
a client may follow a run from any of them.

A distributed run's id is its segment id (``<checkpoint id>@<generation>``), so any API process knows where its
events are. Each SSE frame's id is the record's stream id, so ``Last-Event-ID`` replays, from whichever process the
client reconnects to, what it missed; each frame carries the event's ``seq`` too, for the client to drop the
events a crashed segment's retry sends again.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

from sse_starlette import EventSourceResponse, ServerSentEvent

from ..distributed import EventRecord, LiveBackend, PausedRun, SegmentOutcome, SegmentRequest
from ..errors import CheckpointNotFoundError, SegmentFailedError
from ..schema import Message
from ._errors import ApiError, shown
from ._wire import JSONAnswer, json_text, message_json

__all__ = ["Distributed", "is_segment_id"]

_STREAM_ID = re.compile(r"\d{1,19}-\d{1,19}")
_ID_LIMIT = 2**63 - 1  # each part of a record id: PostgreSQL's bigint (Redis allows 2**64 - 1)


def _record_id(text: str) -> bool:
    """Whether ``text`` is a record id either event log can read after."""
    return _STREAM_ID.fullmatch(text) is not None and all(int(part) <= _ID_LIMIT for part in text.split("-"))


def is_segment_id(run_id: str) -> bool:
    return "@" in run_id


class Distributed:
    """The server's side of a ``LiveBackend``: start and resume runs on it, answer with their events or outcome."""

    def __init__(self, backend: LiveBackend, heartbeat: float) -> None:
        self.backend = backend
        self.heartbeat = heartbeat

    async def start(self, request: SegmentRequest) -> str:
        try:
            return await self.backend.submit(request)
        except CheckpointNotFoundError as error:
            raise ApiError(
                404,
                "unknown_checkpoint",
                f"checkpoint: expected a pending checkpoint, got {shown(request.checkpoint_id)}: {error}",
                expected="an id of a pending checkpoint",
                found=request.checkpoint_id,
            ) from None

    async def answer(self, sid: str, *, stream: bool, detached: bool) -> Any:
        if stream:
            return self.sse(sid, None)
        if detached:
            headers = {"Location": f"/runs/{sid}", "X-Run-Id": sid}
            return JSONAnswer({"run_id": sid, "status": "running"}, status_code=202, headers=headers)
        return _summary(sid, await self._outcome(sid))

    async def summary(self, sid: str) -> dict[str, Any]:
        """The run's state: its outcome once it has ended, else the engine's word for where it is."""
        status = await self.backend.status(sid)
        if status in ("SUCCESS", "ERROR"):
            return _summary(sid, await self._outcome(sid))
        return {"run_id": sid, "status": "cancelled" if status == "CANCELLED" else "running"}

    async def paused(self, checkpoint_id: str | None = None) -> list[dict[str, Any]]:
        """The runs paused on the workers (all, or those of ``checkpoint_id``), as ``GET /checkpoints`` lists a
        checkpoint: its run id is the segment that paused it, its interrupts carry their ids (what a resume
        answers; what each asked is in the run's events)."""
        return [_paused(run) for run in await self.backend.paused(checkpoint_id)]

    async def cancel(self, sid: str) -> dict[str, Any]:
        await self.backend.cancel(sid)
        return {"run_id": sid, "status": "cancelled"}

    async def _outcome(self, sid: str) -> SegmentOutcome:
        try:
            return await self.backend.outcome(sid)
        except SegmentFailedError as error:
            return SegmentOutcome(segment_id=sid, status="failed", error=str(error))

    def sse(self, sid: str, last_event_id: str | None) -> EventSourceResponse:
        """The segment's frames, after ``last_event_id`` (a stream id) when given."""
        after = "0-0"
        if last_event_id is not None:
            if not _record_id(last_event_id.strip()):
                raise ApiError(
                    400,
                    "invalid_event_id",
                    f"Last-Event-ID: expected a record id such as '1733059200000-0' or '42-0', got {shown(last_event_id)}",
                    expected="<digits>-<digits>, each at most 2**63 - 1: a Redis stream id or a PostgreSQL record id",
                    found=shown(last_event_id),
                )
            after = last_event_id.strip()
        run = sid.rpartition("@")[0]  # the run's checkpoint id, or a conversation's session id

        async def frames() -> AsyncIterator[bytes]:
            try:
                async for record in _segment_records(self.backend, run, sid, after):
                    yield _sent(record).encode()
            except Exception as error:  # the event log is down: say so, and where the outcome can still be read
                message = (
                    f"events: the run's live events cannot be read ({type(error).__name__}: {error}); the run goes "
                    f"on: GET /runs/{sid} gives its outcome"
                )
                body = {"error": {"type": "EventsUnavailable", "message": message}}
                yield ServerSentEvent(data=json.dumps(body), event="error").encode()

        return EventSourceResponse(
            frames(), ping=self.heartbeat, headers={"X-Run-Id": sid, "Cache-Control": "no-store"}
        )


async def _segment_records(
    backend: LiveBackend, checkpoint_id: str, sid: str, after: str
) -> AsyncIterator[EventRecord]:
    """The records of segment ``sid`` in its run's stream after ``after``, up to its end (a run's stream holds all
    its segments: the others' are skipped)."""
    while True:
        async for record in backend.events(checkpoint_id, after):
            after = record.stream_id
            if record.segment_id != sid:
                continue
            yield record
            if record.kind == "end":
                return


def _sent(record: EventRecord) -> ServerSentEvent:
    data = record.data
    if record.kind == "end":
        event, body = "end", {"run_id": record.segment_id, **data}
    else:
        message = data.get("message")
        event = "error" if data.get("error") else "interrupt" if data.get("interrupts") else "message"
        body = {
            "seq": record.seq,
            "agent": data.get("agent"),
            "message": message_json(message) if isinstance(message, Message) else None,
            "interrupts": data.get("interrupts", []),
            "error": data.get("error"),
        }
    return ServerSentEvent(data=json_text(body), event=event, id=record.stream_id)


def _paused(run: PausedRun) -> dict[str, Any]:
    return {
        "checkpoint_id": run.checkpoint_id,
        "agent": run.agent,
        "session_id": None,
        "run_id": run.segment_id,
        "created": run.paused_at,
        "interrupts": [{"id": i} for i in run.interrupt_ids],
    }


def _summary(sid: str, outcome: SegmentOutcome) -> dict[str, Any]:
    key, _, generation = sid.rpartition("@")
    turn = generation.startswith("turn-")  # a conversation's: its key is the session id
    return {
        "run_id": sid,
        "checkpoint_id": None if turn else key,
        "session_id": key if turn else None,
        "status": outcome.status,
        "text": outcome.text,
        "interrupts": list(outcome.interrupt_ids),
        "error": outcome.error,
    }

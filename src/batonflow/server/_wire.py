"""JSON on the wire: text that UTF-8 can carry, and the answers made of it: a run's state (``summary``) and a paused
run's (``paused_json``), the same on every backend. What the API sends for each event is a frame, made where the
run runs (``batonflow.distributed``); the functions the server shows values with are re-exported here."""

from __future__ import annotations

import json
from typing import Any

from fastapi.responses import JSONResponse

from ..distributed import PausedRun, SegmentOutcome, error_json, json_text, jsonable, message_json

__all__ = [
    "JSONAnswer",
    "error_json",
    "json_text",
    "jsonable",
    "message_json",
    "paused_json",
    "summary",
]


class JSONAnswer(JSONResponse):
    """The API's JSON answers: FastAPI's, but a body with a lone surrogate is escaped (``json_text``), not a 500."""

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            return json.dumps(content, allow_nan=False, separators=(",", ":")).encode("ascii")


def summary(sid: str, outcome: SegmentOutcome | None, agent: str = "") -> dict[str, Any]:
    """A run's state, the same on every backend: how it ended (``outcome``; None while it goes), its answer, its
    interrupts, its error, its tokens."""
    key, _, generation = sid.rpartition("@")
    turn = generation.startswith("turn-")  # a conversation's: its key is the session id
    usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    if outcome is None:
        return {
            "run_id": sid,
            "agent": agent,
            "status": "running",
            "text": "",
            "checkpoint_id": None if turn else key,
            "session_id": key if turn else None,
            "interrupts": [],
            "error": None,
            "usage": usage,
        }
    error = None
    if outcome.error is not None:
        kind, sep, message = outcome.error.partition(": ")
        error = (
            {"type": kind, "message": message}
            if sep and kind.isidentifier()
            else {"type": "Error", "message": outcome.error}
        )
    return {
        "run_id": sid,
        "agent": outcome.agent or agent,
        "status": outcome.status,
        "text": outcome.text,
        "checkpoint_id": None if turn else key,
        "session_id": key if turn else None,
        "interrupts": [dict(i) for i in outcome.interrupts],
        "error": error,
        "usage": {**usage, **outcome.usage},
    }


def paused_json(run: PausedRun) -> dict[str, Any]:
    return {
        "checkpoint_id": run.checkpoint_id,
        "agent": run.agent,
        "session_id": run.session_id,
        "run_id": run.segment_id,
        "created": run.paused_at,
        "interrupts": [dict(i) for i in run.interrupts] or [{"id": i} for i in run.interrupt_ids],
    }

"""The recovery limit: how often each segment was started on a worker, counted by batonflow, so that a segment whose
every attempt takes its worker down (a poison tool: ``os._exit``, a segfault, the OOM killer) stops being handed on.

DBOS counts recovery attempts too, but ``DBOS.resume_workflow`` — the sweep's hand-off — resets its count, so a
poison segment would go round the pool for ever. The count here is a row per segment of ``batonflow_segment_runs``
(in the DBOS database) that only a worker starting the segment writes: one more each time, whoever handed it on::

    batonflow_segment_runs(segment_id, attempts, executor_id, updated_at, failed_at, error)

A segment started more than ``max_attempts`` times ends ``failed`` without running, its error naming the segment
and the attempts; the row stays, with ``failed_at``, and is what ``failed`` lists (``batonflow segments --failed``).
A segment that ends — any outcome — deletes its row: the count is of attempts that never ended. A start that a
worker's drain stopped and handed back (SIGTERM) is taken back off the count (``uncount``).

Counting is best effort, like step records: a count that cannot be written (the database away) is logged and the
segment runs, uncounted.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

__all__ = ["FailedSegment", "SegmentAttempts"]

_log = logging.getLogger("batonflow.distributed")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS batonflow_segment_runs (
    segment_id text PRIMARY KEY,
    attempts integer NOT NULL,
    executor_id text NOT NULL,
    updated_at timestamptz NOT NULL,
    failed_at timestamptz,
    error text
)
"""
_COUNT = """
INSERT INTO batonflow_segment_runs (segment_id, attempts, executor_id, updated_at) VALUES (%s, 1, %s, now())
ON CONFLICT (segment_id) DO UPDATE
SET attempts = batonflow_segment_runs.attempts + 1, executor_id = excluded.executor_id, updated_at = now()
RETURNING attempts
"""
_GIVE_UP = "UPDATE batonflow_segment_runs SET failed_at = now(), error = %s WHERE segment_id = %s"
_UNCOUNT = "UPDATE batonflow_segment_runs SET attempts = attempts - 1 WHERE segment_id = %s AND failed_at IS NULL"
_FORGET = "DELETE FROM batonflow_segment_runs WHERE segment_id = %s AND failed_at IS NULL"
_FAILED = """
SELECT segment_id, attempts, executor_id, failed_at, error FROM batonflow_segment_runs
WHERE failed_at IS NOT NULL ORDER BY failed_at DESC LIMIT %s
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class FailedSegment:
    """A segment given up after ``attempts`` starts, the last on ``executor_id``, at ``failed_at``, with ``error``."""

    segment_id: str
    attempts: int
    executor_id: str
    failed_at: datetime
    error: str

    def payload(self) -> dict[str, Any]:
        return {
            "segment_id": self.segment_id,
            "attempts": self.attempts,
            "executor_id": self.executor_id,
            "failed_at": self.failed_at.isoformat(),
            "error": self.error,
        }


class SegmentAttempts:
    """The ``batonflow_segment_runs`` table of the DBOS database at ``database_url``, over one connection of its
    own (opened on first use, again after it broke)."""

    def __init__(self, database_url: str, *, connect_timeout: float = 5.0) -> None:
        self.database_url = database_url
        self.connect_timeout = connect_timeout
        self._conn: psycopg.Connection[tuple[Any, ...]] | None = None
        self._lock = threading.Lock()

    def _db(self) -> psycopg.Connection[tuple[Any, ...]]:
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = psycopg.connect(
                self.database_url, autocommit=True, connect_timeout=max(1, round(self.connect_timeout))
            )
            self._conn.execute(_SCHEMA)
        return self._conn

    def count(self, segment_id: str, executor_id: str) -> int | None:
        """One more start of ``segment_id`` (on ``executor_id``): the starts so far, this one included; None when
        it could not be counted (logged)."""
        try:
            with self._lock:
                row = self._db().execute(_COUNT, (segment_id, executor_id)).fetchone()
        except psycopg.Error as error:
            _log.warning("segment %s: its start is not counted (the recovery limit misses it): %s", segment_id, error)
            return None
        return int(row[0]) if row is not None else None

    def give_up(self, segment_id: str, error: str) -> None:
        """Mark ``segment_id`` failed for good, with ``error`` (what ``failed`` lists)."""
        try:
            with self._lock:
                self._db().execute(_GIVE_UP, (error, segment_id))
        except psycopg.Error as failure:
            _log.warning("segment %s: could not be listed as failed: %s", segment_id, failure)

    def uncount(self, segment_id: str) -> None:
        """Take back the last start of ``segment_id``: it did not end with its worker gone, a drain stopped it."""
        try:
            with self._lock:
                self._db().execute(_UNCOUNT, (segment_id,))
        except psycopg.Error as error:
            _log.warning("segment %s: its drained start stays counted: %s", segment_id, error)

    def forget(self, segment_id: str) -> None:
        """The segment ended: its count goes (a failed one stays listed)."""
        try:
            with self._lock:
                self._db().execute(_FORGET, (segment_id,))
        except psycopg.Error as error:
            _log.warning("segment %s: its start count stays behind: %s", segment_id, error)

    def failed(self, limit: int = 100) -> list[FailedSegment]:
        """The segments given up, newest first, at most ``limit``."""
        with self._lock:
            rows = self._db().execute(_FAILED, (limit,)).fetchall()
        return [
            FailedSegment(segment_id=str(s), attempts=int(a), executor_id=str(e), failed_at=f, error=str(r))
            for s, a, e, f, r in rows
        ]

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

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

The starts and ends of a worker's segments are written in groups (``started``, ``ended``): those that come while
one statement is under way go together in the next, one round trip for all of them. A worker that took 200
segments at once counted them one after the other on its one connection before, the last one waiting a second to
start.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

import psycopg

__all__ = ["FailedSegment", "SegmentAttempts"]

_log = logging.getLogger("batonflow.distributed")

R = TypeVar("R")

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
INSERT INTO batonflow_segment_runs (segment_id, attempts, executor_id, updated_at)
SELECT segment_id, 1, %s, now() FROM unnest(%s::text[]) AS segment_id
ON CONFLICT (segment_id) DO UPDATE
SET attempts = batonflow_segment_runs.attempts + 1, executor_id = excluded.executor_id, updated_at = now()
RETURNING segment_id, attempts
"""
_SCHEMA_LOCK = zlib.crc32(b"batonflow_segment_runs")
_GIVE_UP = "UPDATE batonflow_segment_runs SET failed_at = now(), error = %s WHERE segment_id = %s"
_UNCOUNT = "UPDATE batonflow_segment_runs SET attempts = attempts - 1 WHERE segment_id = %s AND failed_at IS NULL"
_FORGET = "DELETE FROM batonflow_segment_runs WHERE segment_id = ANY(%s::text[]) AND failed_at IS NULL"
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


class _Group(Generic[R]):
    """Calls of ``run`` (given every segment id waiting, in a thread: a result per id) made while one is under way,
    made next as one call; each caller awaits its own segment's result."""

    def __init__(self, run: Callable[[list[str]], dict[str, R]]) -> None:
        self._run = run
        self._waiting: dict[str, list[asyncio.Future[R]]] = {}
        self._task: asyncio.Task[None] | None = None

    async def __call__(self, segment_id: str) -> R:
        done: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(segment_id, []).append(done)
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._send())
        return await done

    async def _send(self) -> None:
        while self._waiting:
            waiting, self._waiting = self._waiting, {}
            failure: Exception | None = None
            try:
                results = await asyncio.to_thread(self._run, list(waiting))
            except asyncio.CancelledError:
                for futures in waiting.values():
                    for done in futures:
                        done.cancel()
                raise
            except Exception as error:  # not a database error (those are results): every caller gets it
                results, failure = {}, error
            for segment_id, futures in waiting.items():
                for done in (d for d in futures if not d.done()):
                    if failure is None:
                        done.set_result(results[segment_id])
                    else:
                        done.set_exception(failure)


class SegmentAttempts:
    """The ``batonflow_segment_runs`` table of the DBOS database at ``database_url``, over one connection of its
    own (opened on first use, again after it broke). ``started`` and ``ended`` are ``count_all`` and ``forget_all``
    for the segments of one event loop, one at a time, written in groups."""

    def __init__(self, database_url: str, *, connect_timeout: float = 5.0) -> None:
        self.database_url = database_url
        self.connect_timeout = connect_timeout
        self._conn: psycopg.Connection[tuple[Any, ...]] | None = None
        self._lock = threading.Lock()
        self._starts: _Group[int | None] | None = None
        self._ends: _Group[None] | None = None

    async def started(self, segment_id: str, executor_id: str) -> int | None:
        """One more start of ``segment_id``, counted with the other starts of the moment (all of one executor,
        ``executor_id``): its starts so far, None when it could not be counted (logged)."""
        if self._starts is None:
            self._starts = _Group(lambda ids: self.count_all(ids, executor_id))
        return await self._starts(segment_id)

    async def ended(self, segment_id: str) -> None:
        """The segment ended: its count goes, with the other ends of the moment."""
        if self._ends is None:
            self._ends = _Group(self.forget_all)
        await self._ends(segment_id)

    def _db(self) -> psycopg.Connection[tuple[Any, ...]]:
        if self._conn is None or self._conn.closed or self._conn.broken:
            conn = psycopg.connect(
                self.database_url, autocommit=True, connect_timeout=max(1, round(self.connect_timeout))
            )
            with conn.transaction():  # under a lock: workers starting together collide on CREATE … IF NOT EXISTS
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                conn.execute(_SCHEMA)
            self._conn = conn
        return self._conn

    def count_all(self, segment_ids: list[str], executor_id: str) -> dict[str, int | None]:
        """One more start of each of ``segment_ids`` (distinct; on ``executor_id``), in one statement: the starts
        so far of each, this one included; None for those that could not be counted (logged)."""
        try:
            with self._lock:
                rows = self._db().execute(_COUNT, (executor_id, segment_ids)).fetchall()
        except psycopg.Error as error:
            for segment_id in segment_ids:
                _log.warning(
                    "segment %s: its start is not counted (the recovery limit misses it): %s", segment_id, error
                )
            return dict.fromkeys(segment_ids)
        counts: dict[str, int | None] = dict.fromkeys(segment_ids)
        counts.update((str(segment_id), int(attempts)) for segment_id, attempts in rows)
        return counts

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

    def forget_all(self, segment_ids: list[str]) -> dict[str, None]:
        """The segments ended: their counts go (a failed one stays listed), in one statement."""
        try:
            with self._lock:
                self._db().execute(_FORGET, (segment_ids,))
        except psycopg.Error as error:
            for segment_id in segment_ids:
                _log.warning("segment %s: its start count stays behind: %s", segment_id, error)
        return dict.fromkeys(segment_ids)

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

"""Step mode's records: each finished model reply and tool result of a segment, kept in the DBOS system database so
that a segment re-run after its worker died replays them and runs again only the call that was in flight.

Why not DBOS's own steps (``DBOS.step``, ``DBOS.run_step_async``): DBOS matches a re-executed workflow's steps to
the recorded ones by the order they start in (their ``function_id``, a counter of the workflow's context). A
re-run segment does not repeat that order: the Runner replays from its journal the tool batches that finished
without calling those tools, and parallel tool calls start and finish in any order. Matched by order, a call could
be handed another call's output. So the records here are keyed by the call's identity in the run (the keys of
``batonflow.adk.loop.model_key`` and ``tool_key``), in a table of their own::

    batonflow_steps(segment_id, key, output)   -- output: the codec's JSON of a Message or a ToolResult

A segment's records are read once, at its first call, written as each call finishes, and deleted when the segment
ends (completed, interrupted, failed); at most once a minute, as a segment starts, a worker also deletes those of
segments that are no longer pending (cancelled ones, or a crash between the end and the delete), so the table holds
only segments under way.

A record is written only while the worker may still write for its segment (the fence ``fenced_by`` installed, its
heartbeat): a worker paused past its ttl, whose segment another worker now runs, finds its late record refused
(``LeaseLostError``), never mixed into the other's.

Recording is best effort: a record that cannot be written (the database away, a value the codec cannot hold) is
logged and the run goes on, its call then runs again if the segment is re-run, as without step mode. A record
that is there but cannot be used is an error (``StepRecordError``), never taken as "not recorded".
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from ..adk import installed_fence
from ..adk.loop import ToolResult, recording_steps
from ..codec import decode_json, encode_json
from ..errors import CodecError, StepRecordError, UserError
from ..schema import Message

__all__ = ["SegmentSteps", "StepMode", "StepTable"]

PRUNE_EVERY = 60.0  # seconds between a worker's deletes of the records of segments no longer pending

_log = logging.getLogger("batonflow.distributed")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS batonflow_steps (
    segment_id text NOT NULL,
    key text NOT NULL,
    output text NOT NULL,
    PRIMARY KEY (segment_id, key)
)
"""
_LOAD = "SELECT key, output FROM batonflow_steps WHERE segment_id = %s"
_RECORD = """
INSERT INTO batonflow_steps (segment_id, key, output) VALUES (%s, %s, %s)
ON CONFLICT (segment_id, key) DO UPDATE SET output = excluded.output
"""
_FORGET = "DELETE FROM batonflow_steps WHERE segment_id = %s"
_PRUNE = """
DELETE FROM batonflow_steps s WHERE NOT EXISTS (
    SELECT 1 FROM {schema}.workflow_status w
    WHERE w.workflow_uuid = s.segment_id AND w.status IN ('PENDING', 'ENQUEUED')
)
"""


class StepTable:
    """The ``batonflow_steps`` table of the DBOS system database at ``database_url``, over one connection of its
    own (opened on first use, again after it broke), shared by the worker's segments."""

    def __init__(self, database_url: str, *, schema: str = "dbos", connect_timeout: float = 5.0) -> None:
        if not isinstance(schema, str) or not _IDENTIFIER.fullmatch(schema):
            raise UserError(f"StepTable schema: expected DBOS's system schema, a plain SQL name, got {schema!r}")
        self.database_url = database_url
        self.schema = schema
        self.connect_timeout = connect_timeout
        self._conn: psycopg.Connection[tuple[Any, ...]] | None = None
        self._lock = threading.Lock()

    def _db(self) -> psycopg.Connection[tuple[Any, ...]]:
        with self._lock:
            if self._conn is None or self._conn.closed or self._conn.broken:
                self._conn = psycopg.connect(
                    self.database_url, autocommit=True, connect_timeout=max(1, round(self.connect_timeout))
                )
                self._conn.execute(_SCHEMA)
            return self._conn

    def load(self, segment_id: str) -> dict[str, str]:
        """The records of ``segment_id``, by key (the codec's JSON, not decoded yet)."""
        return {str(key): str(output) for key, output in self._db().execute(_LOAD, (segment_id,))}

    def record(self, segment_id: str, key: str, output: str) -> None:
        self._db().execute(_RECORD, (segment_id, key, output))

    def forget(self, segment_id: str) -> None:
        """Delete the records of ``segment_id`` (it ended)."""
        self._db().execute(_FORGET, (segment_id,))

    def prune(self) -> int:
        """Delete the records of every segment that is not pending or enqueued (DBOS's workflow status); how many."""
        return self._db().execute(_PRUNE.format(schema=self.schema)).rowcount

    async def forget_async(self, segment_id: str) -> None:
        """``forget``, best effort: records left behind are pruned later."""
        try:
            await asyncio.to_thread(self.forget, segment_id)
        except psycopg.Error as error:
            _log.warning("segment %s: its step records are left for the next prune: %s", segment_id, error)

    async def prune_async(self) -> None:
        """``prune``, best effort: what is left is pruned next time."""
        try:
            await asyncio.to_thread(self.prune)
        except psycopg.Error as error:
            _log.warning("the step records of ended segments are left for the next prune: %s", error)

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


class SegmentSteps:
    """The ``StepRecorder`` of one run of one segment (the step log of its run, after its journal if it resumes): recalls what earlier runs of it recorded (read at its first
    call), and records each new result. A table that cannot be read is logged and holds nothing for it: the calls
    run again, as without step mode."""

    __slots__ = ("_loading", "_records", "_table", "segment_id")

    def __init__(self, table: StepTable, segment_id: str) -> None:
        self._table = table
        self.segment_id = segment_id
        self._records: dict[str, str] = {}
        self._loading: asyncio.Future[None] | None = None

    def __repr__(self) -> str:
        return f"SegmentSteps({self.segment_id!r})"

    async def _loaded(self) -> dict[str, str]:
        if self._loading is None:
            self._loading = asyncio.ensure_future(self._load())
        await asyncio.shield(self._loading)
        return self._records

    async def _load(self) -> None:
        try:
            self._records.update(await asyncio.to_thread(self._table.load, self.segment_id))
        except psycopg.Error as error:
            _log.warning("segment %s: its step records cannot be read, its calls run again: %s", self.segment_id, error)

    async def recall(self, key: str) -> Any:
        text = (await self._loaded()).get(key)
        if text is None:
            return None
        try:
            value = decode_json(text, what=f"step record {key!r}")
        except CodecError as error:
            raise self._unusable(key, text, str(error)) from error
        if not isinstance(value, Message | ToolResult):
            raise self._unusable(key, text, f"it holds a {type(value).__name__}")
        return value

    def _unusable(self, key: str, text: str, why: str) -> StepRecordError:
        return StepRecordError(
            f"segment {self.segment_id}: step record {key!r} cannot be used: expected the codec's JSON of a "
            f"Message or a ToolResult, got {text[:80]!r}: {why}",
            key=key,
        )

    async def record(self, key: str, value: Any) -> None:
        try:
            text = encode_json(value, what=f"step record {key!r}")
        except CodecError as error:
            _log.warning(
                "segment %s: step %s is not recorded (it runs again on a re-run): %s", self.segment_id, key, error
            )
            return
        fence = installed_fence()
        if fence is not None:
            fence()  # a late write of a worker that lost its segment is refused, not recorded
        (await self._loaded())[key] = text
        try:
            await asyncio.to_thread(self._table.record, self.segment_id, key, text)
        except psycopg.Error as error:
            _log.warning(
                "segment %s: step %s is not recorded (it runs again on a re-run): %s", self.segment_id, key, error
            )


class StepMode:
    """A DBOS worker's step mode (``DBOSWorker(step_mode=True)``, ``batonflow worker --step-mode``), off by default:
    each segment runs under a ``SegmentSteps`` recorder over the ``StepTable`` of ``database_url``."""

    def __init__(self, database_url: str, on: bool) -> None:
        if not isinstance(on, bool):
            raise UserError(f"step_mode: expected True or False, got {on!r}")
        self.on = on
        self.table = StepTable(database_url) if on else None
        self._prune_at = 0.0  # the first segment prunes
        self._later: set[asyncio.Future[None]] = set()

    @contextmanager
    def recording(self, segment_id: str) -> Iterator[None]:
        """One run of ``segment_id``, its calls recorded (in step mode); its records go when it ends. Entered again
        for each try of the segment: its model replies are counted from there."""
        table = self.table
        if table is None:
            yield
            return
        if time.monotonic() >= self._prune_at:
            self._prune_at = time.monotonic() + PRUNE_EVERY
            self._start(table.prune_async())
        with recording_steps(SegmentSteps(table, segment_id)):
            yield
        self._start(table.forget_async(segment_id))  # it ended (an exception, a try or a crash, keeps them)

    def _start(self, work: Coroutine[Any, Any, None]) -> None:
        """Deletes run beside the segments, kept here until they are done."""
        task = asyncio.ensure_future(work)
        self._later.add(task)
        task.add_done_callback(self._later.discard)

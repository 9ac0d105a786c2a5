"""The API side of the DBOS backend (``DBOSBackend``): it enqueues segments on PostgreSQL for the workers
(``DBOSWorker``, in ``_dbos``) and reads their outcomes, their live events from the workers' event log; it runs no
agent code. The queue, the workflow name and the application version are here, the one place both sides read them.
Needs the ``dbos`` extra.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import psycopg
from dbos import DBOSClient, EnqueueOptions, WorkflowHandleAsync
from dbos import error as dbos_errors
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from .. import __version__
from ..codec import CODEC_VERSION
from ..errors import BackendUnavailableError, CheckpointNotFoundError, SegmentError, SegmentFailedError, UserError
from ..store import CheckpointStore, SessionStore
from ._attempts import FailedSegment, SegmentAttempts
from ._backend import PausedRun
from ._checks import count
from ._events import EventLog, EventRecord
from ._segment import (
    SegmentClaim,
    SegmentOutcome,
    SegmentRequest,
    claimed,
    rejoined,
    request_digest,
    request_id,
    segment_id,
)
from ._serializer import CodecSerializer

__all__ = ["APP_VERSION", "QUEUE", "RESULT_POLL", "WORKFLOW", "DBOSBackend", "check_version"]

APP_VERSION = f"batonflow-{__version__}-codec{CODEC_VERSION}"
"""The application version segments are enqueued and run under; a deploy that changes it drains the old one."""

QUEUE = "batonflow-segments"
WORKFLOW = "batonflow.segment"
RESULT_POLL = 0.05
ENDING_POLL = 1.0  # seconds between looks at DBOS's status while a segment's end is awaited on its event log
PAUSED_SCAN = 1000  # the ended segments ``DBOSBackend.paused`` looks through, newest first
CLAIM_SCAN = 20  # the newest segments of an id ``DBOSBackend.claim`` looks through (a conversation may share it)


class DBOSBackend:
    """The API side: enqueues segments for the workers of ``database_url`` (the DBOS system database) and reads
    their outcomes; runs no agent code. ``checkpoint_store`` is the workers' store (a resume's generation is read
    from it), ``sessions`` their session store (where a conversation's turn stands is read from it). With
    ``events`` (the workers' event log), ``events`` reads a run's live stream and ``cancel`` reaches the worker
    running the segment. ``db_pool`` caps the DBOS client's connection pool (DBOS's default, 5, when None)."""

    def __init__(
        self,
        checkpoint_store: CheckpointStore,
        *,
        database_url: str,
        app_version: str = APP_VERSION,
        events: EventLog | None = None,
        sessions: SessionStore | None = None,
        db_pool: int | None = None,
    ) -> None:
        check_version(app_version)
        pool = None if db_pool is None else count("db_pool", db_pool)
        self.store = checkpoint_store
        self.sessions = sessions
        self.event_log = events
        self.app_version = app_version
        # No retries of a connection that fails: a request answers 503 (and its client retries) rather than hang.
        self._client = DBOSClient(
            system_database_url=database_url,
            serializer=CodecSerializer(),
            retry_connection_errors=False,
            system_database_pool_size=pool,
        )
        self._database_url = database_url

    async def submit(self, request: SegmentRequest) -> str:
        """Enqueue the segment; a second request of it attaches when it asks the same (a retry), and is refused
        with ``SegmentClaimedError`` when it asks something else (the request DBOS keeps is the first one)."""
        try:
            sid = await request_id(request, self.store, self.sessions)
        except CheckpointNotFoundError as error:
            claim = None if request.session_id is not None else await self.claim(request.checkpoint_id)
            return rejoined(claim, request, error)
        options = EnqueueOptions(
            workflow_name=WORKFLOW,
            queue_name=QUEUE,
            workflow_id=sid,
            app_version=self.app_version,
            workflow_id_reuse_policy="reject",  # one round trip; a conflict alone reads the segment back
        )
        with self._reaching():
            try:
                await self._client.enqueue_async(options, request.payload(), self.app_version)
                return sid
            except dbos_errors.DBOSWorkflowIDInUseError:
                found = await self._client.list_workflows_async(workflow_ids=[sid])
        claim = _claim(found[0]) if found else None
        if claim is not None and claim.request_digest != request_digest(request):
            raise claimed(claim, request)
        return sid

    async def claim(self, checkpoint_id: str) -> SegmentClaim | None:
        """The latest segment enqueued under the checkpoint ``checkpoint_id`` (not a conversation's turn)."""
        with self._reaching():
            found = await self._client.list_workflows_async(
                name=WORKFLOW, workflow_id_prefix=f"{checkpoint_id}@", sort_desc=True, limit=CLAIM_SCAN
            )
        runs = [
            w
            for w in found
            if w.workflow_id.rpartition("@")[0] == checkpoint_id
            and not w.workflow_id.rpartition("@")[2].startswith("turn-")
        ]
        if not runs:
            return None
        pause = next((w for w in runs[1:] if isinstance(w.output, dict) and w.output["status"] == "interrupted"), None)
        output: Any = None if pause is None else pause.output
        answered = () if output is None else tuple(output.get("interrupts") or ())
        return replace(_claim(runs[0]), answered=answered)

    async def readiness(self) -> dict[str, dict[str, Any]]:
        """What ``GET /health/ready`` reports: the database reachable, the DBOS schema there (a worker creates it),
        and workers seen (heartbeats renewed within their ttl)."""
        return await asyncio.to_thread(_readiness, self._database_url)

    @contextmanager
    def _reaching(self) -> Iterator[None]:
        """Database errors as ``BackendUnavailableError``, saying where (no password) and what is missing."""
        try:
            yield
        except (DBAPIError, psycopg.Error, OSError) as error:
            where = make_url(self._database_url).render_as_string(hide_password=True)
            orig = getattr(error, "orig", None) or error
            reason = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
            if "does not exist" in reason:
                reason += "; the DBOS schema is made by the first worker that starts (batonflow worker): start one"
            raise BackendUnavailableError(f"DBOS database at {where}: {reason}") from None

    async def outcome(self, segment_id: str) -> SegmentOutcome:
        """How the segment ended, once it has: awaited on the run's event log first (its ``end`` record, which a
        process's followers share one read for), then read from DBOS, which has it a moment later; a waiter per
        run costs no polling of the database while the run goes."""
        ending = asyncio.ensure_future(self._ending(segment_id))
        try:  # DBOS asked now and then all the same: a segment cancelled before it ran writes no end
            while not (await asyncio.wait([ending], timeout=ENDING_POLL))[0]:
                if await self._status_or_none(segment_id) not in ("ENQUEUED", "PENDING", None):
                    break
        finally:
            ending.cancel()
        try:
            payload = await self._result(segment_id)
        except SegmentFailedError as error:
            error.segment_id = segment_id
            raise
        return SegmentOutcome.from_payload(payload)

    async def _status_or_none(self, segment_id: str) -> str | None:
        """``status``, None while the database is away."""
        try:
            return await self.status(segment_id)
        except BackendUnavailableError:
            return None

    async def _result(self, segment_id: str) -> Any:
        """The segment's result, once DBOS has it; a database away meanwhile is waited out (this wait has no
        deadline: its caller bounds it)."""
        while True:
            try:
                with self._reaching():
                    handle: WorkflowHandleAsync[Any] = await self._client.retrieve_workflow_async(segment_id)
                    return await handle.get_result(polling_interval_sec=RESULT_POLL)
            except BackendUnavailableError:
                await asyncio.sleep(ENDING_POLL)

    async def status(self, segment_id: str) -> str:
        """DBOS's status of the segment's workflow (``ENQUEUED``, ``PENDING``, ``SUCCESS``, ``ERROR``, …). A worker
        sends a segment's ``end`` record just before DBOS records the outcome: a segment whose ``end`` is its run's
        latest record is ``SUCCESS`` already (``outcome`` waits the moment it takes DBOS)."""
        try:
            with self._reaching():
                handle: WorkflowHandleAsync[dict[str, Any]] = await self._client.retrieve_workflow_async(segment_id)
                status = str((await handle.get_status()).status)
        except Exception as error:
            if type(error).__name__ != "DBOSNonExistentWorkflowError":
                raise
            raise SegmentError(
                f"segment: expected the id of a segment enqueued on this database, got {segment_id!r}",
                segment_id=segment_id,
            ) from None
        if status == "PENDING" and await self._ended(segment_id):
            return "SUCCESS"
        return status

    async def _ending(self, segment_id: str) -> None:
        """Until the segment's ``end`` is in its run's log (at once without a log, or when it cannot be read)."""
        if self.event_log is None:
            return
        run, after = segment_id.rpartition("@")[0], "0-0"
        try:
            while True:
                async for record in self.event_log.read(run, after):
                    after = record.stream_id
                    if record.kind == "end" and record.segment_id == segment_id:
                        return
        except Exception:
            return  # DBOS's word stands

    async def _ended(self, segment_id: str) -> bool:
        """Whether the run's latest live record is the end of ``segment_id`` (False without a log, or when it
        cannot be read: then DBOS's word stands)."""
        if self.event_log is None:
            return False
        try:
            last = await self.event_log.last(segment_id.rpartition("@")[0])
        except Exception:
            return False
        return last is not None and last.kind == "end" and last.segment_id == segment_id

    async def paused(self, checkpoint_id: str | None = None, *, scan: int = PAUSED_SCAN) -> list[PausedRun]:
        """The runs paused on the workers, newest first: each checkpoint whose latest ended segment was interrupted,
        that the store still holds, and whose current generation no segment resumes yet; then (all of them asked
        for, and with ``sessions``) each conversation whose latest turn ended interrupted, still pending. Looked for among the
        newest ``scan`` ended segments (of ``checkpoint_id`` only, when given); an older paused run is not listed
        but resumes as any other."""
        with self._reaching():
            return await self._paused(checkpoint_id, scan)

    async def _paused(self, checkpoint_id: str | None, scan: int) -> list[PausedRun]:
        ended = await self._client.list_workflows_async(
            name=WORKFLOW,
            status="SUCCESS",
            workflow_id_prefix=None if checkpoint_id is None else f"{checkpoint_id}@",
            sort_desc=True,
            limit=scan,
            load_input=False,
        )
        latest: dict[str, Any] = {}
        for workflow in ended:  # newest first: the first of a checkpoint is its latest
            latest.setdefault(workflow.workflow_id.rpartition("@")[0], workflow)
        waiting: dict[str, tuple[str, Any]] = {}  # the segment that would resume it -> (checkpoint id, its pause)
        turns: list[tuple[str, Any]] = []  # conversations waiting: (session id, the turn that paused it)
        for cid, workflow in latest.items():
            output = workflow.output
            if checkpoint_id not in (None, cid) or not isinstance(output, dict) or output["status"] != "interrupted":
                continue
            if workflow.workflow_id.rpartition("@")[2].startswith("turn-"):
                if checkpoint_id is None and await self._conversation_waits(cid, workflow.workflow_id):
                    turns.append((cid, workflow))
                continue
            data = await self.store.get(cid)
            if data is not None:
                waiting[segment_id(cid, data)] = (cid, workflow)
        if waiting:
            resumed = await self._client.list_workflows_async(
                workflow_ids=list(waiting), load_input=False, load_output=False
            )
            for workflow in resumed:
                waiting.pop(workflow.workflow_id, None)
        found: list[tuple[str, Any, str | None]] = [(cid, workflow, None) for cid, workflow in waiting.values()]
        found += [(cid, workflow, cid) for cid, workflow in turns]
        if not found:
            return []
        inputs = await self._client.list_workflows_async(
            workflow_ids=[w.workflow_id for _, w, _ in found], load_output=False
        )
        agents = {w.workflow_id: w.input["args"][0]["agent"] for w in inputs if w.input is not None}
        return [
            PausedRun(
                checkpoint_id=cid,
                agent=agents.get(workflow.workflow_id, ""),
                segment_id=workflow.workflow_id,
                interrupt_ids=tuple(workflow.output["interrupt_ids"]),
                paused_at=(workflow.updated_at or 0) / 1000,
                session_id=session,
                interrupts=tuple(
                    workflow.output.get("interrupts") or ({"id": i} for i in workflow.output["interrupt_ids"])
                ),
            )
            for cid, workflow, session in found
        ]

    async def _conversation_waits(self, session_id: str, turn: str) -> bool:
        """Whether the conversation still waits on ``turn``: pending in the session store, and no later turn."""
        if self.sessions is None:
            return False
        data = await self.sessions.get(session_id, last=1)
        if data is None or not data.state.pending:
            return False
        newest = await self._client.list_workflows_async(
            workflow_id_prefix=f"{session_id}@", sort_desc=True, limit=1, load_input=False, load_output=False
        )
        return bool(newest) and newest[0].workflow_id == turn

    def events(self, checkpoint_id: str, after: str = "0-0") -> AsyncIterator[EventRecord]:
        """The live records of the run under ``checkpoint_id`` after stream id ``after``, up to its next ``end``."""
        if self.event_log is None:
            raise UserError("events: expected DBOSBackend(events=RedisEventLog(…) or PostgresEventLog(…)), got none")
        return self.event_log.read(checkpoint_id, after)

    async def batches(self, checkpoint_id: str, after: str = "0-0") -> AsyncIterator[list[EventRecord]]:
        """``events``, a record a batch: a Redis or PostgreSQL follower is woken by each."""
        async for record in self.events(checkpoint_id, after):
            yield [record]

    async def last(self, checkpoint_id: str) -> EventRecord | None:
        """The run's latest live record (None without an event log)."""
        return None if self.event_log is None else await self.event_log.last(checkpoint_id)

    async def cancel(self, segment_id: str) -> None:
        """Stop the segment: a running one through the event log's cancel key (its worker polls it), a waiting one
        through DBOS."""
        if self.event_log is not None:
            await self.event_log.request_cancel(segment_id)
        with self._reaching():
            await self._client.cancel_workflow_async(segment_id)

    async def failed_segments(self, limit: int = 100) -> list[FailedSegment]:
        """The segments the workers gave up after their recovery limit, newest first (``GET /segments/failed``)."""
        attempts = SegmentAttempts(self._database_url)
        try:
            return await asyncio.to_thread(attempts.failed, limit)
        finally:
            attempts.close()

    async def close(self) -> None:
        self._client.destroy()
        if self.event_log is not None:
            await self.event_log.close()


def _claim(workflow: Any) -> SegmentClaim:
    """What DBOS keeps of a segment's first request, as a claim: the request it was enqueued with, and its state."""
    request = SegmentRequest.from_payload(workflow.input["args"][0])
    status = str(workflow.status)
    output = workflow.output
    if status == "SUCCESS" and isinstance(output, dict):
        status = str(output["status"])
    else:
        status = {"ERROR": "failed", "CANCELLED": "cancelled"}.get(status, "running")
    return SegmentClaim(
        segment_id=workflow.workflow_id,
        request_digest=request_digest(request),
        accepted_at=(workflow.created_at or 0) / 1000,
        status=status,
        agent=request.agent,
    )


_READY = """
SELECT to_regclass('dbos.workflow_status') IS NOT NULL,
       (SELECT count(*) FROM pg_tables WHERE tablename = 'batonflow_workers')
"""
_WORKERS = "SELECT count(*) FROM batonflow_workers WHERE expires_at > now()"


def _readiness(database_url: str) -> dict[str, dict[str, Any]]:
    where = make_url(database_url).render_as_string(hide_password=True)
    checks: dict[str, dict[str, Any]] = {}
    try:
        with psycopg.connect(_libpq(database_url), connect_timeout=2, autocommit=True) as conn:
            checks["database"] = {"ok": True, "detail": f"{where} answers"}
            row = conn.execute(_READY).fetchone()
            schema, table = bool(row and row[0]), bool(row and row[1])
            checks["schema"] = {
                "ok": schema,
                "detail": "dbos.workflow_status present" if schema else "no dbos.workflow_status: start a worker",
            }
            seen = int(conn.execute(_WORKERS).fetchone()[0]) if table else 0  # type: ignore[index]
            checks["workers"] = {"ok": seen > 0, "detail": f"{seen} worker(s) with a live heartbeat"}
    except psycopg.Error as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        checks["database"] = {"ok": False, "detail": f"{where}: {reason}"}
        checks.setdefault("schema", {"ok": False, "detail": "not checked: the database does not answer"})
        checks.setdefault("workers", {"ok": False, "detail": "not checked: the database does not answer"})
    return checks


def _libpq(url: str) -> str:
    """``url`` without a SQLAlchemy driver (``postgresql+psycopg://``): as libpq takes it."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme.partition('+')[0]}{sep}{rest}"


def check_version(version: str) -> None:
    if not isinstance(version, str) or not version:
        raise UserError(f"app_version: expected a non-empty string, got {version!r}")

"""Run segments on DBOS Transact: API processes enqueue them on PostgreSQL (``DBOSBackend``, in
``_dbosbackend``), worker processes run them (``DBOSWorker``, ``batonflow worker``, here, with the workflows DBOS
registers on import). Needs the ``dbos`` extra.

- **One workflow per segment**, its id the segment id: DBOS keeps one row per workflow id, so a second enqueue of
  the same segment attaches to the first (its outcome is the first's), and the segment never runs twice.
- **batonflow's codec** writes everything DBOS stores (``CodecSerializer``), not DBOS's default pickle.
- **A pinned application version** (``APP_VERSION``: batonflow's release and codec version). Segments are
  enqueued with it and DBOS hands a segment only to a worker of its version; a worker that sees segments of
  another version waiting says so in its log (and, should one reach it, refuses it with ``VersionMismatchError``).
- **Branches on the pool**: a ``ParallelAgent(distribute=True)`` in a segment enqueues each branch as a workflow of
  its own on a second queue (so that segments waiting for their branches never hold the slots the branches need),
  named by the segment and the branch's address, so a segment re-run after a crash attaches to its branches
  instead of running them again.
- **A paused run holds no process**: an interrupt ends the workflow with the checkpoint saved; its resume is a new
  segment, of the checkpoint's new generation.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from dbos import DBOS, DBOSClient
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from ..adk import Agent, Branch, BranchResult, dispatching, fenced_by, run_branch
from ..errors import (
    BackendUnavailableError,
    LeaseLostError,
    ResumeConflictError,
    UnknownAgentError,
    UserError,
    VersionMismatchError,
)
from ..store import CheckpointStore, HistoryRetention, SessionStore
from ._attempts import SegmentAttempts
from ._branches import BRANCH_QUEUE, BRANCH_WORKFLOW, PoolBranches
from ._checks import count, seconds, seconds_from_zero
from ._dbosbackend import APP_VERSION, QUEUE, RESULT_POLL, WORKFLOW, DBOSBackend, check_version
from ._drain import Drain
from ._events import EventLog, Kind, publish_end, watch_cancels
from ._frames import Frame
from ._segment import EventSink, SegmentOutcome, SegmentRequest, run_segment
from ._serializer import CodecSerializer
from ._steps import StepMode
from ._sweeper import Renewal, Sweeper

__all__ = ["APP_VERSION", "CodecSerializer", "DBOSBackend", "DBOSWorker"]

POLL = 0.02  # seconds between a worker's looks at the queue: on average half of it before a segment starts. An idle
# worker polling every 0.1 s used 9 % of a core, every 0.01 s 30 % (2-core machine, DBOS 3.4): 0.02 is the middle.
BRANCH_POLL = 0.1  # the branches' queue: a branch is a whole agent run, 40 ms more before it starts is little beside
# it, and each look costs as much as one of the segments' queue (two queues at 0.02 s: 21 to 30 % of a core, idle).

_log = logging.getLogger("batonflow.distributed")


class DBOSWorker:
    """A worker process: runs up to ``concurrency`` segments at once from the queue of ``database_url``, with the
    agents it serves and their checkpoint store. DBOS is one per process, so is a worker.

    ``lease_ttl`` bounds how long a dead worker's segments wait: its heartbeat, and its Runner's lease on each
    checkpoint, lapse after it; then a live worker's sweep puts the segments back on the queue. The heartbeat is
    also this worker's fence: its segments run a tool batch, or publish an event, only while it was renewed within
    the ttl (``Sweeper``). A segment started more than ``max_attempts`` times (its workers died each time: a
    poison tool) ends failed without running (``SegmentAttempts``). With ``step_mode`` (``StepMode``), a segment
    re-run after a crash runs again only the calls that were in flight. ``stop`` drains it (``Drain``): no more
    segments, ``grace`` seconds for the running ones, then the rest stop at a safe point and go back to the queue
    for another worker; a second ``stop`` stops at once. ``db_pool`` caps DBOS's own connection pool (DBOS's
    default, 20, when None): the largest share of a worker's connections (docs/distributed.md, *Connections*).
    ``keep_history`` is the Runner's: each run's record kept in ``checkpoint_store`` (docs/history.md)."""

    after_sweep_claim: ClassVar[Callable[[str], None] | None] = None
    """A seam for fault tests: called with a dead worker's executor id between the sweep's claim of it and the
    hand-off of its segments (a test process sets it to kill itself there)."""

    def __init__(
        self,
        agents: Mapping[str, Agent],
        checkpoint_store: CheckpointStore,
        *,
        database_url: str,
        concurrency: int = 100,
        branch_concurrency: int | None = None,
        app_version: str = APP_VERSION,
        executor_id: str | None = None,
        connect_within: float = 30.0,
        events: EventLog | None = None,
        lease_ttl: float = 10.0,
        session_store: SessionStore | None = None,
        step_mode: bool = False,
        max_attempts: int = 3,
        grace: float = 20.0,
        db_pool: int | None = None,
        keep_history: bool | HistoryRetention = False,
    ) -> None:
        self.concurrency = count("concurrency", concurrency)
        self.max_attempts = count("max_attempts", max_attempts)
        self.branch_concurrency = (
            concurrency if branch_concurrency is None else count("branch_concurrency", branch_concurrency)
        )
        self.connect_within = seconds_from_zero("connect_within", connect_within)
        self.lease_ttl = seconds("lease_ttl", lease_ttl)
        grace = seconds_from_zero("grace", grace)
        check_version(app_version)
        self.agents = dict(agents)
        self.store = checkpoint_store
        self.sessions = session_store
        self.events = events
        self.database_url = database_url
        self.db_pool = None if db_pool is None else count("db_pool", db_pool)
        self.app_version = app_version
        self.executor_id = executor_id or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._stop = threading.Event()
        self._warned: set[str] = set()
        self._unpublished: set[str] = set()
        self._client: DBOSClient | None = None
        self.steps = StepMode(database_url, step_mode)
        self.attempts = SegmentAttempts(database_url)
        self.sweeper: Sweeper | None = None
        self.drain = Drain(self.executor_id, float(grace))
        self.keep_history = keep_history

    def launch(self) -> None:
        """Start taking segments (DBOS's threads and loop run them); returns at once."""
        global _worker
        if _worker is not None:
            raise UserError("DBOSWorker: expected one worker per process (DBOS is one per process), got a second")
        _worker = self
        try:
            self._connect()
            self.sweeper = Sweeper(
                self.database_url,
                self.executor_id,
                self.app_version,
                ttl=self.lease_ttl,
                queues=(QUEUE, BRANCH_QUEUE),
                after_claim=type(self).after_sweep_claim,
            )
            self.sweeper.beat()  # alive before the first segment is taken: its fence passes
        except BaseException:
            _worker = None
            raise
        self._register(QUEUE, self.concurrency, POLL)
        self._register(BRANCH_QUEUE, self.branch_concurrency, BRANCH_POLL)

    def _register(self, queue: str, limit: int, poll: float) -> None:
        """Set the queue's per-worker limit and how often it is looked at. DBOS keeps them in the database, where
        every worker reads them again at each poll: the last worker launched sets the limit for all, so say so when
        that changes what the others run."""
        before = DBOS.retrieve_queue(queue)
        was = before.worker_concurrency if before is not None else None
        if before is not None and was != limit:
            _log.warning(
                "queue %s: every worker of this database now runs up to %d of its workflows at once, not %s (DBOS "
                "keeps the limit in the database: start all workers with the same --concurrency)",
                queue,
                limit,
                was,
            )
        DBOS.register_queue(queue, worker_concurrency=limit, polling_interval_sec=poll, on_conflict="always_update")

    def _connect(self) -> None:
        """Launch DBOS, retrying with backoff while the database cannot be reached (nothing is claimed until it is);
        ``BackendUnavailableError`` once ``connect_within`` seconds have passed."""
        started, delay = time.monotonic(), 0.25
        while True:
            DBOS(
                config={
                    "name": "batonflow",
                    "system_database_url": self.database_url,
                    "application_version": self.app_version,
                    "executor_id": self.executor_id,
                    "serializer": CodecSerializer(),
                    "notification_listener_polling_interval_sec": RESULT_POLL,
                    **({} if self.db_pool is None else {"sys_db_pool_size": self.db_pool}),
                }
            )
            try:
                DBOS.launch()
                return
            except OperationalError as error:
                DBOS.destroy(destroy_registry=False)
                where = make_url(self.database_url).render_as_string(hide_password=True)
                reason = str(error.orig).splitlines()[0] if error.orig is not None else str(error)
                waited = time.monotonic() - started
                if waited + delay > self.connect_within:
                    raise BackendUnavailableError(
                        f"worker {self.executor_id}: cannot reach the DBOS system database at {where} ({reason}); "
                        f"tried for {waited:.1f} s, took no segment"
                    ) from None
                _log.warning("cannot reach %s (%s): retrying in %g s", where, reason, delay)
                time.sleep(delay)
                delay = min(delay * 2, 5.0)

    def run(self) -> None:
        """Launch, then work until ``stop`` (SIGTERM, Ctrl-C), saying which waiting segments it refuses, and drain.
        A worker found swept (declared dead while it was paused or cut off) stops, raising ``LeaseLostError``: its
        segments run elsewhere, and a fresh worker (a new executor id) is what may take segments again."""
        self.launch()
        sweeper = self.sweeper
        assert sweeper is not None
        _log.info("worker %s: taking segments", self.executor_id)
        drained = False
        try:
            while not self._stop.wait(min(1.0, self.lease_ttl / 4)):
                self._tend(sweeper)
                if sweeper.swept:
                    break
            if not sweeper.swept:
                self.drain.run(lambda: self._beat(sweeper), every=min(1.0, self.lease_ttl / 4))
                drained = True
        finally:
            self.shutdown()
            if drained:
                self.drain.hand_back(self.database_url, (QUEUE, BRANCH_QUEUE), sweeper.retire)
            sweeper.close()
            self.attempts.close()
        if sweeper.swept:
            sweeper.check()  # raises: this worker was declared dead

    def _tend(self, sweeper: Sweeper) -> None:
        """One turn of the worker's housekeeping: heartbeat, sweep, refusals. A database that does not answer
        is logged and tried again next turn (DBOS's own threads retry too)."""
        try:
            if self._beat(sweeper) in ("renewed", "lapsed"):  # not after a failure: the database may hang
                sweeper.sweep()
                self.refuse_foreign()
        except Exception:
            _log.warning("worker %s: housekeeping failed; trying again", self.executor_id, exc_info=True)

    def _beat(self, sweeper: Sweeper) -> Renewal | None:
        """Renew the heartbeat, saying what a renewal that was not plain found; None when it failed (logged)."""
        try:
            renewal = sweeper.beat()
        except Exception:
            _log.warning("worker %s: heartbeat failed; trying again", self.executor_id, exc_info=True)
            return None
        if renewal == "swept":
            _log.error(
                "worker %s: declared dead (its heartbeat lapsed and another worker handed its segments on): "
                "stopping; start a fresh worker",
                self.executor_id,
            )
        elif renewal == "lapsed":
            _log.warning(
                "worker %s: its heartbeat had lapsed (the database was away, or the process paused) and nobody "
                "swept it: taken back; it sweeps again after %g s",
                self.executor_id,
                self.lease_ttl,
            )
        return renewal

    def fence(self) -> None:
        """Raises ``LeaseLostError`` unless this worker may go on with its segments (``Sweeper.check``)."""
        if self.sweeper is not None:
            self.sweeper.check()
        self.drain.check()

    def stop(self) -> None:
        """Drain (SIGTERM): the first call starts it, a second one stops at once."""
        self.drain.request()
        self._stop.set()

    def shutdown(self) -> None:
        global _worker
        client, self._client = self._client, None
        if client is not None:
            client.destroy()
        DBOS.destroy(destroy_registry=False)
        _worker = None

    def client(self) -> DBOSClient:
        """The worker's client of its own queue: how a segment enqueues its branches (made on first use)."""
        if self._client is None:
            self._client = DBOSClient(system_database_url=self.database_url, serializer=CodecSerializer())
        return self._client

    def refuse_foreign(self) -> list[tuple[str, str]]:
        """The segments waiting on the queue under another application version (never dequeued here), each logged
        once with the reason: a worker of that version must run them, or the run be started again."""
        waiting = [
            w
            for queue in (QUEUE, BRANCH_QUEUE)
            for w in DBOS.list_workflows(status="ENQUEUED", queue_name=queue, load_input=False, load_output=False)
        ]
        foreign = [(w.workflow_id, w.app_version or "") for w in waiting if w.app_version != self.app_version]
        for workflow_id, version in foreign:
            if workflow_id not in self._warned:
                self._warned.add(workflow_id)
                _log.warning(
                    "segment %s: refused: it was enqueued by application version %r, this worker runs %r; start a "
                    "worker of that version to run it",
                    workflow_id,
                    version,
                    self.app_version,
                )
        return foreign

    def check_version(self, version: str, sid: str) -> None:
        if version != self.app_version:
            raise VersionMismatchError(
                f"segment {sid}: refused: expected application version {self.app_version!r} (this worker's), got "
                f"{version!r} (the one that enqueued it)",
                segment_id=sid,
                expected=self.app_version,
                found=version,
            )

    async def run_request(self, payload: Any, version: str, sid: str) -> dict[str, Any]:
        self.check_version(version, sid)
        request = SegmentRequest.from_payload(payload)
        if self.drain.refuses():  # dequeued as the drain began: not started here, handed back with the others
            return await self._park(sid, None)
        attempt = await self.attempts.started(sid, self.executor_id)
        log = self.events
        if log is None:
            task = asyncio.ensure_future(self._counted(request, sid, None, attempt))
            outcome = await self._tracked(sid, task)
            if self.drain.stopped(outcome.status, outcome.error):
                return await self._park(sid, attempt)
            return outcome.payload()
        run, last = request.run_key, 0

        async def publish(frame: Frame) -> None:
            nonlocal last
            self.fence()  # a worker that cannot prove it still owns the segment publishes nothing more
            last = frame.seq
            await self._publish(log, run, sid, frame.seq, "event", frame.record())

        task = asyncio.ensure_future(self._counted(request, sid, publish, attempt))
        watcher = asyncio.ensure_future(watch_cancels(log, sid, task))
        try:
            outcome = await self._tracked(sid, task)
        finally:
            watcher.cancel()
        if self.drain.stopped(outcome.status, outcome.error):
            return await self._park(sid, attempt)
        if self.sweeper is None or not self.sweeper.swept:  # a swept worker's segment ends elsewhere
            await publish_end(log, run, sid, last, outcome.payload())
        return outcome.payload()

    async def _tracked(self, sid: str, task: asyncio.Future[SegmentOutcome]) -> SegmentOutcome:
        """The outcome of the segment ``task``, known to the drain while it runs; ``cancelled`` when it was asked
        to stop (through the event log, or by an urgent drain)."""
        self.drain.track(sid, task)
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # this worker is stopping, not the segment asked to
            return SegmentOutcome(segment_id=sid, status="cancelled")
        finally:
            self.drain.untrack(sid)

    async def _park(self, sid: str, attempt: int | None) -> dict[str, Any]:
        """Hold a segment the drain stopped until DBOS lets go of it: its workflow stays pending, to be handed
        back, and this start leaves the recovery count."""
        if attempt is not None:
            await asyncio.to_thread(self.attempts.uncount, sid)
        self.drain.park(sid)
        _log.info("segment %s: stopped by the drain, to be handed back", sid)
        await asyncio.Event().wait()  # cancelled when DBOS is destroyed
        raise AssertionError("unreachable: a parked segment waits until its worker stops")

    async def _counted(
        self, request: SegmentRequest, sid: str, sink: EventSink | None, attempt: int | None
    ) -> SegmentOutcome:
        """The segment, unless this start is one more than ``max_attempts``: then it fails without running, its
        error naming the segment and the attempts, and is listed as failed. Its count goes when it ends."""
        if attempt is not None and attempt > self.max_attempts:
            error = (
                f"RecoveryLimitError: segment {sid}: gave up after {attempt - 1} attempts (the limit is "
                f"{self.max_attempts}): each ended with its worker gone before the segment did (a tool that kills "
                "its process?); the run's checkpoint, if it has one, is kept"
            )
            _log.error("%s", error)
            await asyncio.to_thread(self.attempts.give_up, sid, error)
            if sink is not None:
                body = {"type": "RecoveryLimitError", "message": error.split(": ", 1)[1]}
                await sink(Frame("error", {"seq": 1, "error": body}))
            return SegmentOutcome(segment_id=sid, status="failed", error=error, agent=request.agent)
        outcome = await self._run_segment(request, sid, sink)
        if self.drain.stopped(outcome.status, outcome.error):
            return outcome  # parked: its count is taken back there
        if self.sweeper is None or not self.sweeper.swept:  # a swept worker's segment runs on, counted, elsewhere
            await self.attempts.ended(sid)
        return outcome

    async def _publish(self, log: EventLog, run: str, sid: str, seq: int, kind: Kind, data: dict[str, Any]) -> None:
        """Append to the run's live stream, best effort: the run's record is its checkpoint and outcome, so a
        log that is down costs live events (logged once per segment), never the run."""
        try:
            await log.publish(run, sid, seq, kind, data)
        except Exception as error:
            if sid not in self._unpublished:
                self._unpublished.add(sid)
                _log.warning("segment %s: its live events are lost, the run goes on: %s", sid, error)

    async def _run_segment(self, request: SegmentRequest, sid: str, sink: EventSink | None) -> SegmentOutcome:
        """The segment, under this worker's fence. One stopped by the fence (the heartbeat could not be renewed
        in time: the database away, the process paused) runs again here once the heartbeat is renewed, if no
        sweeper took this worker's segments meanwhile: nobody else runs it, and it resumes from what it saved."""
        while True:
            outcome = await self._try_segment(request, sid, sink)
            lost = (outcome.error or "").startswith("LeaseLostError")
            if not lost or self.drain.halted or not await self._still_ours():
                return outcome
            _log.warning("segment %s: stopped while this worker could not prove it was alive; running it again", sid)

    async def _still_ours(self) -> bool:
        """Wait until this worker's heartbeat is renewed (True) or it was swept (False)."""
        sweeper = self.sweeper
        if sweeper is None:
            return False
        while not sweeper.fresh():
            if sweeper.swept:
                return False
            await asyncio.sleep(min(0.1, self.lease_ttl / 10))
        return True

    async def _try_segment(self, request: SegmentRequest, sid: str, sink: EventSink | None) -> SegmentOutcome:
        """The segment, tried again while its checkpoint's lease is held by a runner that died (its lease lapses
        within ``lease_ttl``), for twice that at most."""
        deadline = time.monotonic() + 2 * self.lease_ttl
        delay = 0.05
        branches = PoolBranches(self, sid, request.agent)
        while True:
            try:
                # branches to the pool, calls recorded, tool batches fenced by this worker's heartbeat
                with dispatching(branches), self.steps.recording(sid), fenced_by(self.fence):
                    return await run_segment(
                        self.agents,
                        self.store,
                        request,
                        sid=sid,
                        sink=sink,
                        resume_lease=self.lease_ttl,
                        sessions=self.sessions,
                        keep_history=self.keep_history,
                    )
            except LeaseLostError as lost:  # a publish refused by the fence
                return SegmentOutcome(segment_id=sid, status="failed", error=f"LeaseLostError: {lost}")
            except ResumeConflictError as conflict:
                if time.monotonic() + delay > deadline:
                    return SegmentOutcome(segment_id=sid, status="failed", error=f"ResumeConflictError: {conflict}")
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.5)

    async def run_branch(self, branch: Branch, agent: str, version: str, bid: str) -> BranchResult:
        """A branch a segment enqueued: run with the segment's agent ``agent``, cancelled through the event log
        like a segment."""
        self.check_version(version, bid)
        root = self.agents.get(agent)
        if root is None:
            raise UnknownAgentError(
                f"branch {bid}: expected an agent among {sorted(self.agents)}, got {agent!r}", segment_id=bid
            )
        # The task starts with a copy of this context: a distributed parallel agent inside goes to the pool too.
        with dispatching(PoolBranches(self, bid, agent)):
            task = asyncio.ensure_future(run_branch(root, branch))
        watcher = asyncio.ensure_future(watch_cancels(self.events, bid, task)) if self.events is not None else None
        try:
            return await task
        finally:
            if watcher is not None:
                watcher.cancel()


_worker: DBOSWorker | None = None


@DBOS.workflow(name=WORKFLOW, max_recovery_attempts=None)
async def _segment(payload: dict[str, Any], version: str) -> dict[str, Any]:
    """One segment, on the worker that dequeued it."""
    worker = _worker
    sid = DBOS.workflow_id or ""
    if worker is None:
        raise UserError(f"segment {sid}: expected a DBOSWorker in this process, got none")
    return await worker.run_request(payload, version, sid)


@DBOS.workflow(name=BRANCH_WORKFLOW, max_recovery_attempts=None)
async def _branch(branch: Branch, agent: str, version: str) -> BranchResult:
    """One branch of a distributed parallel agent, on the worker that dequeued it."""
    worker = _worker
    bid = DBOS.workflow_id or ""
    if worker is None:
        raise UserError(f"branch {bid}: expected a DBOSWorker in this process, got none")
    return await worker.run_branch(branch, agent, version, bid)

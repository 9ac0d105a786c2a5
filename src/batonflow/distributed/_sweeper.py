"""Noticing a dead worker and handing its segments to the live ones, without taking a live one for dead.

Open-source DBOS recovers a pending workflow only when a process with the same executor id starts again; noticing
that an executor is gone for good is left to its proprietary control plane. So each worker keeps a heartbeat row
(``batonflow_workers``, in the DBOS database), its lease on all the segments it runs, renewed well within ``ttl``.

**Liveness is a renewed lease, not a reachable database.** A worker's segments may go on only while its heartbeat
was renewed less than 0.9 of the ttl ago (``check``, which every lease check of its runs consults: before each tool
batch, each write, each published event). A renewal is made under the row's lock and tells three cases apart:

- *renewed*: the row was live; the worker goes on.
- *lapsed, not swept*: the row ran out (the database was away, or the worker paused) but no sweeper claimed it. The
  worker takes it back; nobody else ran its segments (a sweeper's claim and this renewal are ordered by the row
  lock, so a claim either came first and is seen, or finds the row live). Segments that stopped at a fence while
  the heartbeat was stale run again here (``DBOSWorker``), from their checkpoint and journal.
- *swept*: a sweeper claimed the row (or deleted it after the hand-off). The worker's segments run elsewhere now:
  every fence of its runs fails for good, and the worker stops (``swept``); a supervisor starts a fresh one, under
  a new executor id.

**A global outage is not the death of every worker.** When PostgreSQL was unreachable for longer than the ttl,
every row has lapsed when it comes back. A worker sweeps only once its own heartbeat has been renewed without a
failure for a whole ttl (``steady``): a worker that saw the outage (a failed renewal, or its own row lapsed) waits
a ttl after it reconnects, long enough for every live worker to renew its row (they renew every quarter ttl); then
only the workers that really stopped are lapsed. The cost: after an outage, a worker that died during it is noticed
one ttl later.

**Claim and hand-off.** A sweep claims one lapsed row (``swept_by``, ``swept_at``, committed), puts that worker's
pending segments back on the queue (``DBOS.resume_workflow``), then deletes the row. The steps are not one
transaction (DBOS's calls commit on their own connections), so the hand-off is made safe to repeat: a sweeper that
dies between its claim and the delete leaves the claim, which lapses after a ttl, and the next sweeper claims the
row again and hands off what is still pending on the dead worker (a segment already handed off is ``ENQUEUED`` or
pending on another worker, and is left alone). ``after_claim``, when given, is called between the claim and the
hand-off: the seam a fault test uses to kill a sweeper there.

A segment re-run this way resumes from its checkpoint and journal (the Runner's guarantees): the steps that
finished are replayed, not run again; the one in flight runs again. A run's first segment cut off before its first
checkpoint has neither: it starts again, its finished tools run again, with the same idempotency keys (its run id
is in the segment's request).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Literal

import psycopg
from dbos import DBOS

from ..errors import LeaseLostError

__all__ = ["Renewal", "Sweeper"]

_log = logging.getLogger("batonflow.distributed")

Renewal = Literal["renewed", "lapsed", "swept"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS batonflow_workers (
    executor_id text PRIMARY KEY,
    app_version text NOT NULL,
    expires_at timestamptz NOT NULL
);
DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'batonflow_workers'::regclass
                   AND attname = 'swept_by' AND NOT attisdropped) THEN
        ALTER TABLE batonflow_workers ADD COLUMN swept_by text, ADD COLUMN swept_at timestamptz;
    END IF;
END $$;
"""  # the columns the previous release's table lacks, added only then (ALTER TABLE locks it even when idle)
_REGISTER = """
INSERT INTO batonflow_workers (executor_id, app_version, expires_at, swept_by, swept_at)
VALUES (%s, %s, now() + make_interval(secs => %s), NULL, NULL)
ON CONFLICT (executor_id) DO UPDATE
SET expires_at = excluded.expires_at, app_version = excluded.app_version, swept_by = NULL, swept_at = NULL
"""
_LOCK_OWN = "SELECT expires_at > now(), swept_by FROM batonflow_workers WHERE executor_id = %s FOR UPDATE"
_RENEW = "UPDATE batonflow_workers SET expires_at = now() + make_interval(secs => %s) WHERE executor_id = %s"
_CLAIM = """
UPDATE batonflow_workers SET swept_by = %(me)s, swept_at = now()
WHERE executor_id = (
    SELECT executor_id FROM batonflow_workers
    WHERE executor_id <> %(me)s AND expires_at < now()
      AND (swept_by IS NULL OR swept_at < now() - make_interval(secs => %(ttl)s))
    ORDER BY expires_at LIMIT 1 FOR UPDATE SKIP LOCKED
)
RETURNING executor_id
"""
_FORGET = "DELETE FROM batonflow_workers WHERE executor_id = %s AND swept_by = %s"
_RETIRE = "DELETE FROM batonflow_workers WHERE executor_id = %s AND swept_by IS NULL"


class Sweeper:
    """One worker's heartbeat, fence and sweep, over its own connection to the DBOS database at ``database_url``."""

    def __init__(
        self,
        database_url: str,
        executor_id: str,
        app_version: str,
        *,
        ttl: float,
        queues: tuple[str, ...],
        after_claim: Callable[[str], None] | None = None,
    ) -> None:
        self.database_url = database_url
        self.executor_id = executor_id
        self.app_version = app_version
        self.ttl = ttl
        self.queues = queues
        self.after_claim = after_claim
        self.swept = False
        self.renewed_at = -float("inf")  # monotonic time a renewal that succeeded was sent
        self._steady_since: float | None = None  # since when every renewal succeeded (None: one failed since)
        self._registered = False
        self._conn: psycopg.Connection[tuple[object, ...]] | None = None
        self._lock = threading.Lock()

    def _db(self) -> psycopg.Connection[tuple[object, ...]]:
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = psycopg.connect(self.database_url, autocommit=True, connect_timeout=max(1, round(self.ttl)))
            self._conn.execute(_SCHEMA)
        return self._conn

    # -- the heartbeat ---------------------------------------------------------------------------------------------

    def beat(self) -> Renewal:
        """Renew this worker's row (register it the first time): ``renewed``, ``lapsed`` (it ran out, nobody swept
        it: taken back, and no sweeping for a ttl) or ``swept`` (its segments were handed off: it must stop). A
        database that does not answer raises, and ends the steady run that sweeping needs."""
        sent = time.monotonic()
        try:
            with self._lock:
                renewal = self._renew()
        except Exception:
            self._steady_since = None
            raise
        if renewal == "swept":
            self.swept = True
            return renewal
        self.renewed_at = sent
        if renewal == "lapsed" or self._steady_since is None:
            self._steady_since = sent  # a fresh start: every other live worker gets a ttl to renew its row
        return renewal

    def _renew(self) -> Renewal:
        conn = self._db()
        if not self._registered:
            conn.execute(_REGISTER, (self.executor_id, self.app_version, self.ttl))
            self._registered = True
            return "renewed"
        with conn.transaction():
            row = conn.execute(_LOCK_OWN, (self.executor_id,)).fetchone()
            if row is None or row[1] is not None:
                return "swept"  # deleted after a hand-off, or claimed by a sweeper
            conn.execute(_RENEW, (self.ttl, self.executor_id))
            return "renewed" if row[0] else "lapsed"

    def check(self) -> None:
        """Raises ``LeaseLostError`` unless this worker may go on running its segments: its heartbeat renewed less
        than 0.9 of the ttl ago, and never swept."""
        if self.swept:
            raise LeaseLostError(
                f"worker {self.executor_id} was declared dead (its heartbeat lapsed and a sweeper handed its "
                "segments to other workers): it runs no more tools and writes nothing more",
                checkpoint_id="",
                owner=self.executor_id,
            )
        stale = time.monotonic() - self.renewed_at
        if stale >= self.ttl * 0.9:
            raise LeaseLostError(
                f"worker {self.executor_id} could not renew its heartbeat for {stale:.1f} s (its ttl is "
                f"{self.ttl:g} s): it runs no more tools and writes nothing more until it has",
                checkpoint_id="",
                owner=self.executor_id,
            )

    def fresh(self) -> bool:
        """Whether ``check`` passes now."""
        return not self.swept and time.monotonic() - self.renewed_at < self.ttl * 0.9

    def steady(self) -> bool:
        """Whether this worker may sweep: its heartbeat renewed without a failure for a whole ttl."""
        return self._steady_since is not None and time.monotonic() - self._steady_since >= self.ttl

    # -- the sweep -------------------------------------------------------------------------------------------------

    def sweep(self) -> list[str]:
        """The segments of dead workers set back on the queue (their ids); nothing until ``steady``."""
        moved: list[str] = []
        while self.steady():
            with self._lock:
                row = self._db().execute(_CLAIM, {"me": self.executor_id, "ttl": self.ttl}).fetchone()
            if row is None:
                break
            executor = str(row[0])
            if self.after_claim is not None:
                self.after_claim(executor)
            moved += self._hand_off(executor)
            with self._lock:
                self._db().execute(_FORGET, (executor, self.executor_id))
        return moved

    def _hand_off(self, executor: str) -> list[str]:
        """Put ``executor``'s pending segments back on their queues: only those still pending on it, so that a
        hand-off made again (its sweeper died before the end) leaves alone what was handed off already."""
        pending = [
            workflow
            for queue in self.queues
            for workflow in DBOS.list_workflows(
                status="PENDING", executor_id=executor, queue_name=queue, load_input=False, load_output=False
            )
        ]
        for workflow in pending:
            DBOS.resume_workflow(workflow.workflow_id, queue_name=workflow.queue_name)
        if pending:
            _log.warning(
                "worker %s stopped renewing its heartbeat: its segments %s are back on the queue",
                executor,
                [w.workflow_id for w in pending],
            )
        return [w.workflow_id for w in pending]

    def retire(self) -> None:
        """Drop this worker's row, its segments handed back (a drained worker): nobody sweeps it after it."""
        with self._lock:
            self._db().execute(_RETIRE, (self.executor_id,))

    def close(self) -> None:
        """Close the connection. The row stays and lapses: a worker stopped with segments still pending (its
        DBOS let go of them) is swept like a dead one."""
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

"""Noticing a dead worker and handing its segments to the live ones, on DBOS's public API only.

Open-source DBOS recovers a pending workflow only when a process with the same executor id starts again; noticing
that an executor is gone for good is left to its proprietary control plane. So each worker keeps a heartbeat row
(``batonflow_workers``, in the DBOS database) that it renews well within ``ttl``; every worker sweeps: it deletes
the rows that have lapsed — the delete is the claim, so one sweeper takes each dead worker — and sets that worker's
pending segments back on the queue (``DBOS.resume_workflow``), where any worker dequeues them.

A segment re-run this way resumes from its checkpoint and journal (the Runner's guarantees): the steps that
finished are replayed, not run again; the one in flight runs again. A run's first segment cut off before its first
checkpoint has neither: it starts again, its finished tools run again, with the same idempotency keys (its run id
is in the segment's request). A worker wrongly thought dead (a long pause) finds its lease on the checkpoint taken
and stops before its next tool batch.
"""

from __future__ import annotations

import logging

import psycopg
from dbos import DBOS

__all__ = ["Sweeper"]

_log = logging.getLogger("batonflow.distributed")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS batonflow_workers (
    executor_id text PRIMARY KEY,
    app_version text NOT NULL,
    expires_at timestamptz NOT NULL
)
"""
_BEAT = """
INSERT INTO batonflow_workers (executor_id, app_version, expires_at)
VALUES (%s, %s, now() + make_interval(secs => %s))
ON CONFLICT (executor_id) DO UPDATE SET expires_at = excluded.expires_at, app_version = excluded.app_version
"""
_CLAIM_DEAD = "DELETE FROM batonflow_workers WHERE expires_at < now() AND executor_id <> %s RETURNING executor_id"


class Sweeper:
    """One worker's heartbeat and sweep, over its own connection to the DBOS database at ``database_url``."""

    def __init__(
        self, database_url: str, executor_id: str, app_version: str, *, ttl: float, queues: tuple[str, ...]
    ) -> None:
        self.database_url = database_url
        self.executor_id = executor_id
        self.app_version = app_version
        self.ttl = ttl
        self.queues = queues
        self._conn: psycopg.Connection[tuple[object, ...]] | None = None

    def _db(self) -> psycopg.Connection[tuple[object, ...]]:
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self.database_url, autocommit=True, connect_timeout=max(1, int(self.ttl)))
            self._conn.execute(_SCHEMA)
        return self._conn

    def beat(self) -> None:
        """Renew this worker's row: it is alive for ``ttl`` seconds more."""
        self._db().execute(_BEAT, (self.executor_id, self.app_version, self.ttl))

    def sweep(self) -> list[str]:
        """The segments of dead workers set back on the queue (their ids)."""
        dead = [str(row[0]) for row in self._db().execute(_CLAIM_DEAD, (self.executor_id,))]
        moved: list[str] = []
        for executor in dead:
            pending = [
                workflow
                for queue in self.queues
                for workflow in DBOS.list_workflows(
                    status="PENDING", executor_id=executor, queue_name=queue, load_input=False, load_output=False
                )
            ]
            for workflow in pending:
                DBOS.resume_workflow(workflow.workflow_id, queue_name=workflow.queue_name)
                moved.append(workflow.workflow_id)
            if pending:
                _log.warning(
                    "worker %s stopped renewing its heartbeat: its segments %s are back on the queue",
                    executor,
                    [w.workflow_id for w in pending],
                )
        return moved

    def close(self) -> None:
        """Close the connection. The row stays and lapses: a worker stopped with segments still pending (its
        DBOS let go of them) is swept like a dead one."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

"""A worker's graceful stop: on SIGTERM it takes no more segments, lets the running ones finish within a grace
period, stops those still running at a safe point and hands them back to the queue, so that another worker
continues them at once instead of after the lease ttl.

The stages, in the worker's main thread (``DBOSWorker.run``), while its heartbeat goes on being renewed:

1. **No more segments.** DBOS stops dequeuing for this process (``stop_taking``); a segment dequeued just before
   is not started (``Drain.refuses``), and is handed back with the others.
2. **The grace.** The running segments have ``grace`` seconds to end as usual.
3. **The halt.** The fence of every segment still running then fails (``Drain.check``, a ``LeaseLostError``): at
   its next tool batch or published event the segment stops, the Runner keeps its checkpoint and journal and
   releases its lease. A segment parks there: its workflow neither ends nor publishes an end record, and its start
   is taken off the recovery count (``SegmentAttempts.uncount``: a drain is not a crash). Segments that reach no
   safe point within ``STOP_WAIT`` seconds (a tool that does not return) are cancelled, as a second SIGTERM does at
   once.
4. **The hand-back.** Once DBOS has let go of its workflows, the worker's pending segments go back on their queues
   (what a sweep does for a dead worker), and its heartbeat row goes: another worker continues each segment from
   its checkpoint and journal, its finished tools not run again.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import dbos._dbos as dbos_core
from dbos import DBOSClient

from ..errors import LeaseLostError
from ._serializer import CodecSerializer

__all__ = ["STOP_WAIT", "Drain", "stop_taking"]

_log = logging.getLogger("batonflow.distributed")

STOP_WAIT = 5.0  # seconds the halted segments have to reach a safe point before they are cancelled


class Drain:
    """The graceful stop of one worker: asked for once (``request``), made urgent by a second request. Segments
    register while they run (``track``) and park once the halt stopped them (``park``); the counts are read from
    the worker's main thread, the segments run on DBOS's event loop."""

    def __init__(self, executor_id: str, grace: float) -> None:
        self.executor_id = executor_id
        self.grace = grace
        self.requested = threading.Event()
        self.urgent = threading.Event()
        self.halted = False
        self._lock = threading.Lock()
        self._running: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Future[Any]]] = {}
        self._parked: set[str] = set()

    def request(self) -> None:
        """The first call starts the drain, a second one makes it stop at once."""
        if self.requested.is_set():
            self.urgent.set()
        self.requested.set()

    def refuses(self) -> bool:
        """Whether a segment starting now must not run (the drain has begun)."""
        return self.requested.is_set()

    def check(self) -> None:
        """The fence's part: raises ``LeaseLostError`` once the halt has begun."""
        if self.halted:
            raise LeaseLostError(
                f"worker {self.executor_id} is draining: the segment stops here and goes back to the queue for "
                "another worker, which continues it from its checkpoint",
                checkpoint_id="",
                owner=self.executor_id,
            )

    def track(self, sid: str, task: asyncio.Future[Any]) -> None:
        with self._lock:
            self._running[sid] = (asyncio.get_running_loop(), task)

    def untrack(self, sid: str) -> None:
        with self._lock:
            self._running.pop(sid, None)

    def park(self, sid: str) -> None:
        with self._lock:
            self._running.pop(sid, None)
            self._parked.add(sid)

    @property
    def running(self) -> int:
        with self._lock:
            return len(self._running)

    @property
    def parked(self) -> list[str]:
        with self._lock:
            return sorted(self._parked)

    def halt(self, *, cancel: bool) -> None:
        """Stop the running segments at their next safe point; with ``cancel``, at once (their tasks cancelled)."""
        self.halted = True
        if not cancel:
            return
        with self._lock:
            running = list(self._running.values())
        for loop, task in running:
            loop.call_soon_threadsafe(task.cancel)

    def run(self, beat: Callable[[], object], *, every: float) -> None:
        """Stages 1 to 3, calling ``beat`` (the heartbeat's renewal) every ``every`` seconds throughout."""
        stop_taking()
        _log.info(
            "worker %s: draining: no more segments, %d running get %g s to finish",
            self.executor_id,
            self.running,
            self.grace,
        )
        self._wait(beat, every, self.grace)
        urgent = self.urgent.is_set()
        if self.running:
            _log.warning(
                "worker %s: %d segments still running: stopping them %s",
                self.executor_id,
                self.running,
                "at once" if urgent else "at their next safe point",
            )
        self.halt(cancel=urgent)
        if not self._wait(beat, every, STOP_WAIT):
            self.halt(cancel=True)  # no safe point reached (a tool that does not return): cut them short
            self._wait(beat, every, STOP_WAIT)

    def _wait(self, beat: Callable[[], object], every: float, within: float) -> bool:
        """Renew the heartbeat until no segment runs (True), ``within`` seconds passed or, before the halt, the
        drain turned urgent (False)."""
        deadline = time.monotonic() + within
        due = 0.0
        while self.running:
            if time.monotonic() >= deadline or (self.urgent.is_set() and not self.halted):
                return False
            if time.monotonic() >= due:
                beat()
                due = time.monotonic() + every
            time.sleep(0.02)
        return True

    def hand_back(self, database_url: str, queues: tuple[str, ...], retire: Callable[[], None]) -> None:
        """Stage 4, once DBOS let go: this worker's pending segments back on ``queues``, then ``retire`` (its
        heartbeat row dropped). On a failure the segments move when the heartbeat lapses, as a dead worker's."""
        client = DBOSClient(system_database_url=database_url, serializer=CodecSerializer())
        try:
            pending = client.list_workflows(
                status="PENDING",
                executor_id=self.executor_id,
                queue_name=list(queues),
                load_input=False,
                load_output=False,
            )
            for workflow in pending:
                client.resume_workflow(workflow.workflow_id, queue_name=workflow.queue_name)
            retire()
        except Exception:
            _log.warning(
                "worker %s: could not hand its segments back: they move when its heartbeat lapses",
                self.executor_id,
                exc_info=True,
            )
            return
        finally:
            client.destroy()
        moved = [w.workflow_id for w in pending]
        _log.info("worker %s: drained: %d segments handed back %s", self.executor_id, len(moved), moved)

    def stopped(self, status: str, error: str | None) -> bool:
        """Whether a segment that ended with ``status`` and ``error`` was stopped by the halt (and must park)."""
        if not self.halted:
            return False
        return status == "cancelled" or (status == "failed" and (error or "").startswith("LeaseLostError"))


def stop_taking() -> None:
    """Make this process's DBOS dequeue no more workflows, leaving the running ones alone. DBOS has no public call
    for it once launched; its queue threads (DBOS 3.x) watch the stop events it keeps for its background threads,
    the ones ``DBOS.destroy`` sets first. Should a release keep them elsewhere, nothing is set here, and the
    segments dequeued meanwhile are refused by ``Drain.refuses`` and handed back all the same."""
    instance = getattr(dbos_core, "_dbos_global_instance", None)
    for event in getattr(instance, "background_thread_stop_events", ()):
        if isinstance(event, threading.Event):
            event.set()

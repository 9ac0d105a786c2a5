"""``batonflow worker``: a worker process of the DBOS backend, running the segments API processes enqueue (the
``dbos`` extra). SIGTERM or Ctrl-C drains it (``DBOSWorker.stop``): it takes no more segments, gives the running
ones ``--grace`` seconds, hands the rest back to the queue and exits 0; a second signal stops it at once."""

from __future__ import annotations

import asyncio
import json
import logging
import signal
from types import FrameType

from ..distributed import DBOSBackend, DBOSWorker, event_log_at
from ..store import MemoryCheckpointStore
from ._target import chosen_events_url, load_target, open_stores, refuse_memory_store

__all__ = ["failed_segments", "work"]


def work(
    target: str,
    *,
    database_url: str,
    store: str,
    concurrency: int,
    branch_concurrency: int | None = None,
    app_version: str | None,
    connect_within: float,
    redis_url: str | None = None,
    lease_ttl: float = 10.0,
    events_url: str | None = None,
    step_mode: bool = False,
    max_attempts: int = 3,
    grace: float = 20.0,
    db_pool: int | None = None,
    keep_history: bool = False,
) -> None:
    """Run a worker for the agents of ``target`` until it is told to stop."""
    refuse_memory_store(store, "worker")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    where = chosen_events_url(events_url, redis_url)
    checkpoints, sessions = open_stores(store)
    agents, _ = load_target(target)
    extra = {} if app_version is None else {"app_version": app_version}
    worker = DBOSWorker(
        agents,
        checkpoints,
        database_url=database_url,
        concurrency=concurrency,
        branch_concurrency=branch_concurrency,
        connect_within=connect_within,
        lease_ttl=lease_ttl,
        session_store=sessions,
        step_mode=step_mode,
        max_attempts=max_attempts,
        grace=grace,
        db_pool=db_pool,
        keep_history=keep_history,
        events=None if where is None else event_log_at(where),
        **extra,
    )

    def stop(signum: int, frame: FrameType | None) -> None:
        worker.stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    logging.getLogger("batonflow.distributed").info(
        "worker %s: %d agents, concurrency %d, application version %s%s",
        worker.executor_id,
        len(agents),
        concurrency,
        worker.app_version,
        ", step mode" if step_mode else "",
    )
    worker.run()


def failed_segments(database_url: str, limit: int) -> list[str]:
    """The segments the workers of ``database_url`` gave up after their recovery limit, as JSON lines."""

    async def read() -> list[str]:
        backend = DBOSBackend(MemoryCheckpointStore(), database_url=database_url)
        try:
            return [json.dumps(segment.payload()) for segment in await backend.failed_segments(limit)]
        finally:
            await backend.close()

    return asyncio.run(read())

"""The recovery limit's counts (``batonflow_segment_runs``) written in groups: the starts (and ends) of a worker's
segments that come at the same moment share one statement, each still told its own count; a database that does
not answer leaves them uncounted, and the segments run."""

from __future__ import annotations

import asyncio
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

from batonflow.distributed import SegmentAttempts

from .conftest import Cluster


def _statements(attempts: SegmentAttempts) -> list[int]:
    """The statements ``attempts`` sends from now on (one entry each)."""
    sent: list[int] = []
    connection = attempts._db()
    execute = connection.execute

    def counted(*args: object, **kwargs: object) -> object:
        sent.append(1)
        return execute(*args, **kwargs)  # type: ignore[arg-type]

    connection.execute = counted  # type: ignore[method-assign]
    return sent


async def test_starts_and_ends_of_the_moment_share_a_statement(cluster: Cluster) -> None:
    attempts = SegmentAttempts(cluster.database_url)
    segments = [f"group-{uuid.uuid4().hex[:8]}@start" for _ in range(100)]
    try:
        sent = _statements(attempts)
        first = await asyncio.gather(*(attempts.started(s, "worker-a") for s in segments))
        firsts = len(sent)
        again = await asyncio.gather(*(attempts.started(s, "worker-b") for s in segments[:50]))
        await asyncio.gather(*(attempts.ended(s) for s in segments))
        with psycopg.connect(cluster.database_url) as db:
            left = db.execute(
                "SELECT count(*) FROM batonflow_segment_runs WHERE segment_id = ANY(%s)", (segments,)
            ).fetchone()
    finally:
        attempts.close()
    assert first == [1] * 100 and again == [2] * 50
    assert 1 <= firsts <= 2 and len(sent) <= 6, (firsts, len(sent))
    assert left == (0,)


async def test_starts_that_cannot_be_counted_are_each_uncounted_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    attempts = SegmentAttempts("postgresql://postgres@127.0.0.1:1/nowhere", connect_timeout=1)
    try:
        counted = await asyncio.gather(attempts.started("a@start", "w"), attempts.started("b@start", "w"))
        await attempts.ended("a@start")
    finally:
        attempts.close()
    assert counted == [None, None]
    logged = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("segment a@start: its start is not counted") for m in logged), logged
    assert any(m.startswith("segment b@start: its start is not counted") for m in logged), logged
    assert any(m.startswith("segment a@start: its start count stays behind") for m in logged), logged


def test_workers_starting_together_each_count_their_first_segment(cluster: Cluster) -> None:
    """Each worker makes the table on its first count; made at the same moment by several, without a lock one of
    them failed (``pg_type_typname_nsp_index``) and its first segments went uncounted."""
    schema = f"attempts_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(cluster.database_url, autocommit=True) as db:
        db.execute(f"CREATE SCHEMA {schema}")
    url = f"{cluster.database_url}?options=-csearch_path%3D{schema}"
    pool = [SegmentAttempts(url) for _ in range(8)]
    start = threading.Barrier(len(pool))

    def first(attempts: SegmentAttempts, n: int) -> int | None:
        start.wait()
        return attempts.count_all([f"first-{n}@start"], f"worker-{n}")[f"first-{n}@start"]

    try:
        with ThreadPoolExecutor(len(pool)) as threads:
            counted = list(threads.map(first, pool, range(len(pool))))
    finally:
        for attempts in pool:
            attempts.close()
        with psycopg.connect(cluster.database_url, autocommit=True) as db:
            db.execute(f"DROP SCHEMA {schema} CASCADE")
    assert counted == [1] * len(pool)

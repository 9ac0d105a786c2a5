"""DBOS's own durable streams and cancellation beside batonflow's PostgreSQL event log and cancel flag, measured on
one database: ``python -m benchmarks.dbos_streams [--events 200] [--readers 50] [--json]``.

Makes a PostgreSQL database of its own (dropped at the end) and, in this process, launches DBOS on it. Measures
for each: the p50 time of one write (``DBOS.write_stream_async`` inside a workflow; ``PostgresEventLog.publish``),
the p50 time from a write's start to a waiting reader having it (``DBOSClient.read_stream_async``, which polls,
at its default interval and every ``FAST_POLL`` seconds; ``PostgresEventLog.read``, woken by NOTIFY), the database connections in use while ``--readers`` readers wait on as many streams,
and how long a running workflow that makes no DBOS call takes to stop after ``DBOS.cancel_workflow_async``
against after ``PostgresEventLog.request_cancel`` (a segment's agent code makes no DBOS calls). The figures are
what ``docs/differences.md`` quotes for keeping the home-made log. Needs PostgreSQL on loopback
(``BATONFLOW_BENCH_POSTGRES``) and the ``dbos`` extra.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import uuid
from typing import Any

from .scale import ADMIN

FAST_POLL = 0.01  # seconds between a DBOS client's looks at a stream (DBOSClient reads poll; the default is 1 s)
STOP_WAIT = 5.0  # seconds a cancelled workflow is given to stop before it counts as not stopped


def _ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 2)


async def _connections(database: str) -> int:
    import psycopg

    async with await psycopg.AsyncConnection.connect(ADMIN, autocommit=True) as conn:
        found = await conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (database,))
        row = await found.fetchone()
    return int(row[0]) if row else 0


async def dbos_side(url: str, database: str, events: int, readers: int) -> dict[str, Any]:
    """DBOS streams and cancellation: a workflow writes ``events`` values, timed, while a client reads them."""
    from dbos import DBOS, DBOSClient, SetWorkflowID

    writes: list[float] = []

    @DBOS.workflow(name="bench.writer")
    async def writer(n: int, pause: float) -> None:
        for i in range(n):
            started = time.time()
            await DBOS.write_stream_async("events", {"i": i, "at": started})
            writes.append(time.time() - started)
            await asyncio.sleep(pause)
        await DBOS.close_stream_async("events")

    @DBOS.workflow(name="bench.sleeper")
    async def sleeper(seconds: float) -> str:
        await asyncio.sleep(seconds)  # agent code: no DBOS call until it ends
        return "ran to its end"

    DBOS(
        config={"name": "bench-streams", "system_database_url": url, "notification_listener_polling_interval_sec": 0.05}
    )
    DBOS.launch()
    client = DBOSClient(system_database_url=url)
    try:
        wakes: dict[float | None, list[float]] = {}
        for poll in (None, FAST_POLL):  # the client's default, then as fast as it is sensible to poll
            wid = f"w-{uuid.uuid4().hex[:8]}"
            with SetWorkflowID(wid):
                handle = await DBOS.start_workflow_async(writer, events, 0.005)
            values = client.read_stream_async(wid, "events", polling_interval_sec=poll)
            wakes[poll] = [time.time() - value["at"] async for value in values]
            await handle.get_result()
        waiting = []
        for r in range(readers):  # readers on streams not written yet: what holding them costs
            rid = f"idle-{r}-{uuid.uuid4().hex[:6]}"
            with SetWorkflowID(rid):
                await DBOS.start_workflow_async(writer, 1, 3.0)
            values = client.read_stream_async(rid, "events", polling_interval_sec=FAST_POLL)
            waiting.append(asyncio.ensure_future(_drain(values)))
        await asyncio.sleep(1.0)
        held = await _connections(database)
        await asyncio.gather(*waiting)
        stopped = await _dbos_cancel(sleeper)
    finally:
        client.destroy()
        DBOS.destroy()
    return {
        "write_p50_ms": _ms(writes),
        "wake_p50_ms": _ms(wakes[FAST_POLL]),
        "wake_default_poll_p50_ms": _ms(wakes[None]),
        "connections": held,
        "cancel_stop_s": stopped,
    }


async def _drain(values: Any) -> None:
    async for _ in values:
        pass


async def _dbos_cancel(sleeper: Any) -> float | None:
    """Seconds from ``cancel_workflow_async`` to the workflow's task ending; None: still running after STOP_WAIT."""
    from dbos import DBOS

    handle = await DBOS.start_workflow_async(sleeper, STOP_WAIT * 2)
    await asyncio.sleep(0.3)
    started = time.monotonic()
    await DBOS.cancel_workflow_async(handle.workflow_id)
    result = asyncio.ensure_future(handle.get_result())
    done, _ = await asyncio.wait([result], timeout=STOP_WAIT)
    if not done:
        result.cancel()
        return None
    with_outcome = time.monotonic() - started
    status = await handle.get_status()
    return round(with_outcome, 3) if status.status == "CANCELLED" else None


async def log_side(url: str, database: str, events: int, readers: int) -> dict[str, Any]:
    """batonflow's PostgresEventLog: the same writes, a follower, waiting readers, a cancel flag watched."""
    from batonflow.distributed import PostgresEventLog

    log, reader_log = PostgresEventLog(url), PostgresEventLog(url)
    writes: list[float] = []
    run = f"r-{uuid.uuid4().hex[:8]}"
    try:
        await log.publish(run, f"{run}@start", 0, "event", {"i": -1, "at": time.time()})  # tables made

        async def write() -> None:
            for i in range(events):
                started = time.time()
                await log.publish(run, f"{run}@start", i, "event", {"i": i, "at": started})
                writes.append(time.time() - started)
                await asyncio.sleep(0.005)
            await log.publish(run, f"{run}@start", events, "end", {"at": time.time()})

        follower = asyncio.ensure_future(_wakes(reader_log, run))
        await asyncio.sleep(0.2)
        await write()
        wakes = await follower
        idle = [asyncio.ensure_future(_drain(reader_log.read(f"idle-{r}-{run}"))) for r in range(readers)]
        await asyncio.sleep(1.0)
        held = await _connections(database)
        for r in range(readers):
            await log.publish(f"idle-{r}-{run}", "s", 1, "end", {})
        await asyncio.gather(*idle)
        stopped = await _flag_cancel(log)
    finally:
        await log.close()
        await reader_log.close()
    return {"write_p50_ms": _ms(writes), "wake_p50_ms": _ms(wakes), "connections": held, "cancel_stop_s": stopped}


async def _wakes(log: Any, run: str) -> list[float]:
    return [time.time() - r.data["at"] async for r in log.read(run, "0-0") if r.kind == "event" and r.data["i"] >= 0]


async def _flag_cancel(log: Any) -> float | None:
    """Seconds from ``request_cancel`` to a watched task ending (``watch_cancel``, as a worker watches a segment)."""
    task = asyncio.ensure_future(asyncio.sleep(STOP_WAIT * 2))
    segment = f"s-{uuid.uuid4().hex[:8]}"
    watcher = asyncio.ensure_future(log.watch_cancel(segment, task))
    await asyncio.sleep(0.3)
    started = time.monotonic()
    await log.request_cancel(segment)
    done, _ = await asyncio.wait([task], timeout=STOP_WAIT)
    watcher.cancel()
    return round(time.monotonic() - started, 3) if done and task.cancelled() else None


def measure(events: int, readers: int) -> dict[str, Any]:
    import psycopg

    results: dict[str, Any] = {"events": events, "readers": readers}
    for side, run in (("dbos_streams", dbos_side), ("postgres_event_log", log_side)):
        name = f"bf_streams_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(ADMIN, autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        try:
            results[side] = asyncio.run(run(f"{ADMIN.rpartition('/')[0]}/{name}", name, events, readers))
        finally:
            with psycopg.connect(ADMIN, autocommit=True) as admin:
                admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    return results


def render(result: dict[str, Any]) -> list[str]:
    rows = [
        ("DBOS streams, cancel_workflow", result["dbos_streams"]),
        ("PostgresEventLog", result["postgres_event_log"]),
    ]
    lines = [
        f"{result['events']} events written one at a time, one reader; {result['readers']} readers waiting:",
        "",
        "| | write p50 (ms) | write to reader p50 (ms) | connections, readers waiting | cancel to stopped (s) |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, row in rows:
        stop = f"not within {STOP_WAIT:g}" if row["cancel_stop_s"] is None else row["cancel_stop_s"]
        lines.append(f"| {label} | {row['write_p50_ms']} | {row['wake_p50_ms']} | {row['connections']} | {stop} |")
    slow = result["dbos_streams"]["wake_default_poll_p50_ms"]
    return [
        *lines,
        "",
        f"DBOS's readers poll every {FAST_POLL:g} s here; at the client's default interval a write reached the reader "
        f"after {slow} ms (p50).",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.dbos_streams", description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--readers", type=int, default=50)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.events < 1 or args.readers < 1:
        parser.error(f"expected --events and --readers of 1 or more, got {args.events}, {args.readers}")
    result = measure(args.events, args.readers)
    print(json.dumps(result) if args.json else "\n".join(render(result)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The event logs, held to one contract: ``RedisEventLog`` (a Redis Stream per run), ``PostgresEventLog`` (tables
in the module's own database, woken by LISTEN/NOTIFY) and, where a log of one process can be held to it,
``MemoryEventLog`` (the in-process backend's). Records come back in order with ids a server takes
as ``Last-Event-ID``, a read stops at ``end``, a waiting reader wakes when another connection publishes, length and
age are bounded, cancel flags travel, payloads are the codec's. Then what only the PostgreSQL log has to get right:
its SQL, its connections, a listening connection that breaks, writers racing on one run."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import psycopg
import pytest

from batonflow.distributed import (
    EventLog,
    EventRecord,
    EventsGoneError,
    MemoryEventLog,
    PostgresEventLog,
    RedisEventLog,
    event_log_at,
)
from batonflow.errors import CodecError, UserError
from batonflow.schema import Message, user

from .conftest import REDIS_URL, Cluster

WAIT = 10.0
STREAM_ID = r"\d{1,20}-\d{1,20}"  # what the server takes as Last-Event-ID

MakeLog = Callable[..., Any]


@contextlib.asynccontextmanager
async def _logs(kind: str, cluster: Cluster) -> AsyncIterator[MakeLog]:
    """Event logs of ``kind`` (closed after the test); PostgreSQL's in the module's database."""
    made: list[Any] = []

    def make(**options: Any) -> Any:
        if kind == "memory":
            log: Any = MemoryEventLog(**options)
        elif kind == "redis":
            log = RedisEventLog(REDIS_URL, **{"ttl": 60.0, **options})
        else:
            log = PostgresEventLog(cluster.database_url, **options)
        made.append(log)
        return log

    yield make
    for log in made:
        await log.close()


@pytest.fixture(params=["memory", "redis", "postgres"])
async def make_log(request: pytest.FixtureRequest, cluster: Cluster) -> AsyncIterator[MakeLog]:
    """Event logs of every kind."""
    async with _logs(request.param, cluster) as make:
        yield make


@pytest.fixture(params=["redis", "postgres"])
async def shared_log(request: pytest.FixtureRequest, cluster: Cluster) -> AsyncIterator[MakeLog]:
    """Event logs shared between processes, for what only they have (connections, a ttl, the codec): a
    MemoryEventLog lives in one process, and keep_runs bounds it."""
    async with _logs(request.param, cluster) as make:
        yield make


def _run() -> str:
    return f"log-{uuid.uuid4().hex[:10]}"


async def _all(records: AsyncIterator[EventRecord]) -> list[EventRecord]:
    return [record async for record in records]


async def _read(log: EventLog, run: str, after: str = "0-0") -> list[EventRecord]:
    return await asyncio.wait_for(_all(log.read(run, after)), WAIT)


def _number(record_id: str) -> tuple[int, int]:
    first, _, second = record_id.partition("-")
    return int(first), int(second)


async def test_records_come_back_in_order_and_after_an_id(make_log: MakeLog) -> None:
    log = make_log()
    assert isinstance(log, EventLog)
    run = _run()
    ids = [await log.publish(run, f"{run}@start", seq, "event", {"n": seq}) for seq in (1, 2, 3)]
    ids.append(await log.publish(run, f"{run}@start", 3, "end", {"status": "completed"}))
    records = await _read(log, run)
    assert [(r.stream_id, r.seq, r.kind, r.segment_id) for r in records] == [
        (ids[0], 1, "event", f"{run}@start"),
        (ids[1], 2, "event", f"{run}@start"),
        (ids[2], 3, "event", f"{run}@start"),
        (ids[3], 3, "end", f"{run}@start"),
    ]
    assert [r.data for r in records] == [{"n": 1}, {"n": 2}, {"n": 3}, {"status": "completed"}]
    assert all(re.fullmatch(STREAM_ID, i) for i in ids)
    assert [_number(i) for i in ids] == sorted({_number(i) for i in ids})  # increasing, each once
    assert await _read(log, run, after=ids[1]) == records[2:]


async def test_an_end_stops_a_read_and_the_next_read_gives_the_next_segment(make_log: MakeLog) -> None:
    log = make_log()
    run = _run()
    await log.publish(run, f"{run}@start", 1, "event", {"n": 1})
    first_end = await log.publish(run, f"{run}@start", 1, "end", {"status": "interrupted"})
    await log.publish(run, f"{run}@g2", 2, "event", {"n": 2})
    await log.publish(run, f"{run}@g2", 2, "end", {"status": "completed"})
    first = await _read(log, run)
    second = await _read(log, run, after=first_end)
    assert [(r.segment_id, r.kind) for r in first] == [(f"{run}@start", "event"), (f"{run}@start", "end")]
    assert [(r.segment_id, r.kind) for r in second] == [(f"{run}@g2", "event"), (f"{run}@g2", "end")]


async def test_last_gives_a_runs_latest_record(make_log: MakeLog) -> None:
    log = make_log()
    run = _run()
    assert await log.last(run) is None
    await log.publish(run, f"{run}@start", 1, "event", {"n": 1})
    end = await log.publish(run, f"{run}@start", 1, "end", {"status": "completed"})
    last = await log.last(run)
    assert last is not None and (last.stream_id, last.kind, last.segment_id) == (end, "end", f"{run}@start")
    assert last.data == {"status": "completed"}


async def test_a_waiting_reader_is_woken_by_a_publish_from_another_connection(shared_log: MakeLog) -> None:
    reader, writer = shared_log(), shared_log()
    run = _run()
    got: list[EventRecord] = []

    async def follow() -> None:
        async for record in reader.read(run, block=3600.0):  # a wake-up by time alone would take an hour
            got.append(record)

    following = asyncio.ensure_future(follow())
    await writer.publish(run, f"{run}@start", 1, "event", {"n": 1})  # the run exists; the reader catches up
    deadline = time.monotonic() + WAIT
    while not got:
        assert time.monotonic() < deadline, "the reader never read the first record"
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.2)  # the reader is waiting now
    await writer.publish(run, f"{run}@start", 2, "end", {"status": "completed"})
    await asyncio.wait_for(following, WAIT)  # within WAIT, not the hour: woken by the publish
    assert [r.seq for r in got] == [1, 2]


async def test_a_run_keeps_its_last_maxlen_records(make_log: MakeLog) -> None:
    log = make_log(maxlen=5)
    run = _run()
    for seq in range(1, 13):
        await log.publish(run, f"{run}@start", seq, "event", {"n": seq})
    await log.publish(run, f"{run}@start", 12, "end", {"status": "completed"})
    if isinstance(log, MemoryEventLog):  # it knows what it dropped, and says so rather than start later
        with pytest.raises(EventsGoneError, match=r"the log keeps a run's last 5 records"):
            await _read(log, run)
        kept = await _read(log, run, after=f"{_number(log.records(run)[0].stream_id)[0] - 1}-0")
    else:
        kept = await _read(log, run)
    assert [r.seq for r in kept] == [9, 10, 11, 12, 12] and kept[-1].kind == "end"
    assert [r.number for r in kept] == [9, 10, 11, 12, 13]  # numbers 1 to 8 were trimmed: a follower sees the hole


async def test_each_attempt_of_a_segment_numbers_its_records_from_1(make_log: MakeLog) -> None:
    log = make_log()
    run = _run()
    await log.publish(run, f"{run}@start", 1, "event", {"n": 1})
    await log.publish(run, f"{run}@g2", 1, "event", {"n": 1})  # each segment counts its own
    await log.publish(run, f"{run}@start", 2, "event", {"n": 2})
    end = await log.publish(run, f"{run}@start", 2, "end", {"status": "completed"})
    await log.publish(run, f"{run}@start", 1, "event", {"n": 1})  # run again after its end: a new attempt
    await log.publish(run, f"{run}@start", 1, "end", {"status": "completed"})
    first, again = await _read(log, run), await _read(log, run, after=end)
    assert [(r.segment_id.rpartition("@")[2], r.number) for r in first] == [
        ("start", 1),
        ("g2", 1),
        ("start", 2),
        ("start", 3),
    ]
    assert [r.number for r in again] == [1, 2]
    assert all(re.fullmatch(r"[0-9a-f]{8}", r.attempt) for r in first + again)
    mine = [r.attempt for r in first if r.segment_id == f"{run}@start"]
    assert len(set(mine)) == 1 and again[0].attempt not in mine


async def test_a_segment_published_from_another_process_is_another_attempt(shared_log: MakeLog) -> None:
    one, other = shared_log(), shared_log()
    run = _run()
    await one.publish(run, f"{run}@start", 1, "event", {"n": 1})
    await one.publish(run, f"{run}@start", 2, "event", {"n": 2})
    await other.publish(run, f"{run}@start", 1, "event", {"n": 1})  # the segment re-run on another worker
    await other.publish(run, f"{run}@start", 1, "end", {"status": "completed"})
    records = await _read(one, run)
    assert [r.number for r in records] == [1, 2, 1, 2]
    assert records[0].attempt == records[1].attempt != records[2].attempt == records[3].attempt


async def test_a_run_lapses_ttl_seconds_after_its_last_write(shared_log: MakeLog) -> None:
    log = shared_log(ttl=0.5)
    run = _run()
    await log.publish(run, f"{run}@start", 1, "event", {"n": 1})
    await asyncio.sleep(0.3)
    await log.publish(run, f"{run}@start", 2, "event", {"n": 2})  # a write renews the run
    await asyncio.sleep(0.3)
    await log.publish(run, f"{run}@start", 2, "end", {"status": "interrupted"})
    assert [r.seq for r in await _read(log, run)] == [1, 2, 2]
    await asyncio.sleep(0.8)  # past the ttl: the run's records are gone, whether or not rows are left to sweep
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(anext(log.read(run)), 0.5)
    await log.publish(run, f"{run}@g2", 3, "end", {"status": "completed"})
    assert [(r.segment_id, r.seq) for r in await _read(log, run)] == [(f"{run}@g2", 3)]


async def test_a_cancel_flag_is_seen_and_wakes_its_watcher(shared_log: MakeLog) -> None:
    log, other = shared_log(ttl=0.5), shared_log(ttl=0.5)  # the flag lapses with the ttl of the log that set it
    segment = f"{_run()}@start"
    assert await log.cancel_requested(segment) is False
    sleeper = asyncio.ensure_future(asyncio.sleep(3600))
    # Redis looks at the log's default pace (0.2 s); PostgreSQL is woken by the request's notification, its looks
    # (every 5 s) only make up for a lost one: at a pace of an hour, a wake within WAIT is the notification's.
    pace = {"every": 3600.0} if isinstance(log, PostgresEventLog) else {}
    watcher = asyncio.ensure_future(log.watch_cancel(segment, sleeper, **pace))
    await asyncio.sleep(0.3)
    await other.request_cancel(segment)
    await asyncio.wait_for(watcher, WAIT)
    assert sleeper.cancelled()
    assert await log.cancel_requested(segment) is True
    assert await log.cancel_requested(f"{segment}-other") is False
    await asyncio.sleep(0.7)
    assert await log.cancel_requested(segment) is False  # the flag lapsed with the ttl


async def test_payloads_are_the_codecs_and_nothing_else(shared_log: MakeLog) -> None:
    log = shared_log()
    run = _run()
    message = user("naïve \x00 ✓")
    await log.publish(run, f"{run}@start", 1, "event", {"message": message, "when": (1, 2)})
    with pytest.raises(CodecError, match=r"cannot encode event: unsupported type 'object' at \$\.x"):
        await log.publish(run, f"{run}@start", 2, "event", {"x": object()})
    await log.publish(run, f"{run}@start", 2, "end", {"status": "completed"})
    records = await _read(log, run)
    assert [r.seq for r in records] == [1, 2]  # the refused record was never written
    got = records[0].data["message"]
    assert isinstance(got, Message) and got == message and records[0].data["when"] == (1, 2)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"maxlen": 0}, r"maxlen: expected an int of 1 or more, got 0"),
        ({"maxlen": 2.5}, r"maxlen: expected an int of 1 or more, got 2.5"),
    ],
)
async def test_a_log_with_bad_bounds_says_what_was_expected(
    make_log: MakeLog, options: dict[str, object], message: str
) -> None:
    with pytest.raises(UserError, match=message):
        make_log(**options)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"ttl": 0}, r"ttl: expected a number of seconds > 0, got 0"),
        ({"ttl": True}, r"ttl: expected a number of seconds > 0, got True"),
        ({"max_connections": 0}, r"max_connections: expected an int of 1 or more, got 0"),
    ],
)
async def test_a_shared_log_with_bad_bounds_says_what_was_expected(
    shared_log: MakeLog, options: dict[str, object], message: str
) -> None:
    with pytest.raises(UserError, match=message):
        shared_log(**options)


@pytest.mark.parametrize("timeout", [0, -1, True, "5"])
def test_a_redis_log_with_a_bad_timeout_says_what_was_expected(timeout: object) -> None:
    with pytest.raises(UserError, match=rf"timeout: expected a number of seconds > 0, got {timeout!r}"):
        RedisEventLog(REDIS_URL, timeout=timeout)  # type: ignore[arg-type]


# What only PostgresEventLog has.


def _pg(cluster: Cluster, **options: Any) -> PostgresEventLog:
    return PostgresEventLog(cluster.database_url, **options)


def _rows(cluster: Cluster, query: str, *args: object) -> list[tuple[Any, ...]]:
    with psycopg.connect(cluster.database_url, autocommit=True) as conn:
        return conn.execute(query, args).fetchall()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"prefix": "Bad-Name"}, r"prefix: expected lower-case letters, digits and '_' .*, got 'Bad-Name'"),
        ({"prefix": "x" * 41}, r"prefix: expected lower-case letters, digits and '_' \(a table name's start, 40"),
        ({"connect_timeout": -1}, r"connect_timeout: expected a number of seconds > 0, got -1"),
        ({"expire_every": 0}, r"expire_every: expected a number of seconds > 0, got 0"),
    ],
)
def test_a_postgres_log_with_bad_options_says_what_was_expected(options: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError, match=message):
        PostgresEventLog("postgresql://127.0.0.1/x", **options)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("redis://127.0.0.1:6379/0", r"url: expected a PostgreSQL URL \(postgresql://…\), got one of scheme 'redis'"),
        ("127.0.0.1/x", r"url: expected a PostgreSQL URL \(postgresql://…\), got one of scheme '127.0.0.1/x'"),
        (None, r"url: expected a PostgreSQL URL \(postgresql://…\), got NoneType"),
    ],
)
def test_a_postgres_log_takes_only_a_postgres_url(url: object, message: str) -> None:
    with pytest.raises(UserError, match=message):
        PostgresEventLog(url)  # type: ignore[arg-type]


def test_a_sqlalchemy_url_loses_its_driver() -> None:
    assert PostgresEventLog("postgresql+psycopg://u@h:5/db").url == "postgresql://u@h:5/db"
    assert PostgresEventLog("postgres://u@h/db").url == "postgres://u@h/db"


async def test_a_bad_record_id_or_kind_is_refused(cluster: Cluster) -> None:
    log = _pg(cluster)
    try:
        for after in ("7.2", "12", "-1-0", f"{2**63}-0"):
            with pytest.raises(UserError, match=r"after: expected a record id such as '42-0' \(digits, '-', digit"):
                await anext(log.read("run", after))
        with pytest.raises(UserError, match=r"kind: expected 'event' or 'end', got 'middle'"):
            await log.publish("run", "run@start", 1, "middle", {})  # type: ignore[arg-type]
    finally:
        await log.close()


async def test_records_are_rows_of_json_text_bounded_and_swept(cluster: Cluster) -> None:
    log = _pg(cluster, maxlen=3, ttl=0.4)
    run = _run()
    try:
        for seq in range(1, 6):
            await log.publish(run, f"{run}@start", seq, "event", {"n": seq, "message": user("hi")})
        rows = _rows(cluster, "SELECT seq, kind, data FROM batonflow_events WHERE run = %s ORDER BY id", run)
        length = _rows(cluster, "SELECT length FROM batonflow_event_runs WHERE run = %s", run)
        await log.request_cancel(f"{run}@start")
        await asyncio.sleep(0.6)
        swept = await log.expire()
        left = _rows(cluster, "SELECT count(*) FROM batonflow_events WHERE run = %s", run)
        flags = _rows(cluster, "SELECT count(*) FROM batonflow_event_cancels WHERE segment = %s", f"{run}@start")
    finally:
        await log.close()
    assert [(seq, kind) for seq, kind, _ in rows] == [(3, "event"), (4, "event"), (5, "event")]
    assert json.loads(rows[0][2])["n"] == 3  # plain JSON text, the codec's
    assert length == [(3,)]
    assert swept >= 1 and left == [(0,)] and flags == [(0,)]


async def test_a_publish_sweeps_lapsed_runs_now_and_then(cluster: Cluster) -> None:
    stale, log = _pg(cluster, ttl=0.2), _pg(cluster, ttl=60.0, expire_every=0.3)
    gone, kept = _run(), _run()
    try:
        await stale.publish(gone, f"{gone}@start", 1, "event", {})
        await log.publish(kept, f"{kept}@start", 1, "event", {})  # within expire_every: no sweep
        await asyncio.sleep(0.4)
        before = _rows(cluster, "SELECT count(*) FROM batonflow_event_runs WHERE run = %s", gone)
        await log.publish(kept, f"{kept}@start", 2, "event", {})  # past it: this publish sweeps
        after = _rows(cluster, "SELECT count(*) FROM batonflow_event_runs WHERE run = %s", gone)
    finally:
        await stale.close()
        await log.close()
    assert before == [(1,)] and after == [(0,)]


def _connections(cluster: Cluster, name: str) -> int:
    found = _rows(cluster, "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", name)
    return int(found[0][0])


async def test_many_followers_share_one_listening_connection(cluster: Cluster) -> None:
    name = f"bf-{uuid.uuid4().hex[:8]}"
    url = f"{cluster.database_url}?application_name={name}"
    log, writer = PostgresEventLog(url, max_connections=2), _pg(cluster)
    runs = [_run() for _ in range(30)]
    try:
        followers = [asyncio.ensure_future(_all(log.read(run, block=30.0))) for run in runs]
        await asyncio.sleep(0.5)  # all of them are waiting now
        waiting = _connections(cluster, name)
        for run in runs:
            await writer.publish(run, f"{run}@start", 1, "end", {"status": "completed"})
        read = await asyncio.wait_for(asyncio.gather(*followers), WAIT)
        used = _connections(cluster, name)
    finally:
        await log.close()
        await writer.close()
    assert [[r.segment_id for r in records] for records in read] == [[f"{run}@start"] for run in runs]
    assert waiting <= 3 and used <= 3  # one listening, and at most max_connections for statements


async def test_a_reader_survives_its_listening_connection_breaking(cluster: Cluster) -> None:
    name = f"bf-{uuid.uuid4().hex[:8]}"
    log, writer = PostgresEventLog(f"{cluster.database_url}?application_name={name}"), _pg(cluster)
    run = _run()
    try:
        following = asyncio.ensure_future(_all(log.read(run, block=3600.0)))  # by time alone: an hour
        await asyncio.sleep(0.3)
        killed = _rows(
            cluster,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s AND query LIKE 'LISTEN%%'",
            name,
        )
        await asyncio.sleep(0.3)  # the reader noticed, and listens again
        await writer.publish(run, f"{run}@start", 1, "end", {"status": "completed"})
        records = await asyncio.wait_for(following, WAIT)  # within WAIT, not the hour: woken by the publish
    finally:
        await log.close()
        await writer.close()
    assert killed == [(True,)]
    assert [r.kind for r in records] == ["end"]


async def test_a_lost_notification_costs_block_seconds_not_the_record(cluster: Cluster) -> None:
    log = _pg(cluster)
    run = _run()
    try:
        await log.publish(run, f"{run}@start", 1, "event", {})
        following = asyncio.ensure_future(_all(log.read(run, block=0.3)))
        await asyncio.sleep(0.2)
        data = '{"status":"completed"}'
        _rows(  # a record written with no NOTIFY, as if the notification were lost
            cluster,
            "INSERT INTO batonflow_events (run, seq, kind, segment, data) VALUES (%s, 1, 'end', %s, %s) RETURNING id",
            run,
            f"{run}@start",
            data,
        )
        records = await asyncio.wait_for(following, WAIT)
    finally:
        await log.close()
    assert [r.kind for r in records] == ["event", "end"]


async def test_a_lost_cancel_notification_costs_every_seconds_not_the_cancel(cluster: Cluster) -> None:
    log = _pg(cluster)
    segment = f"{_run()}@start"
    sleeper = asyncio.ensure_future(asyncio.sleep(3600))
    try:
        watcher = asyncio.ensure_future(log.watch_cancel(segment, sleeper, every=0.2))
        await asyncio.sleep(0.1)
        _rows(
            cluster,
            "INSERT INTO batonflow_event_cancels (segment, expires_at) VALUES (%s, now() + interval '1 minute') "
            "RETURNING segment",
            segment,
        )
        await asyncio.wait_for(watcher, WAIT)
    finally:
        await log.close()
    assert sleeper.cancelled()


async def test_a_run_too_long_for_a_notification_still_wakes_its_follower(cluster: Cluster) -> None:
    reader, writer = _pg(cluster), _pg(cluster)
    run = "r" * 8000  # NOTIFY takes less than 8000 bytes: this one wakes every follower
    try:
        await writer.publish(run, "long@start", 1, "event", {})
        following = asyncio.ensure_future(_all(reader.read(run, block=3600.0)))  # by time alone: an hour
        await asyncio.sleep(0.3)
        await writer.publish(run, "long@start", 1, "end", {"status": "completed"})
        records = await asyncio.wait_for(following, WAIT)  # within WAIT, not the hour: woken by the publish
    finally:
        await reader.close()
        await writer.close()
    assert [r.kind for r in records] == ["event", "end"]


async def test_closing_the_log_fails_its_waiting_followers(cluster: Cluster) -> None:
    log = _pg(cluster)
    run = _run()
    following = asyncio.ensure_future(_all(log.read(run, block=30.0)))
    await asyncio.sleep(0.3)
    await log.close()
    with pytest.raises(UserError, match=r"event log: expected an open PostgresEventLog, got one that was closed"):
        await asyncio.wait_for(following, WAIT)


async def test_writers_racing_on_one_run_lose_no_record_to_a_follower(cluster: Cluster) -> None:
    one, two, reader = _pg(cluster), _pg(cluster), _pg(cluster)
    run = _run()

    async def write(log: PostgresEventLog, first: int) -> None:
        for seq in range(first, first + 100, 2):
            await log.publish(run, f"{run}@start", seq, "event", {"n": seq})

    async def follow() -> list[int]:
        seen: list[int] = []
        async for record in reader.read(run, block=30.0):
            if record.kind == "end":
                return seen
            seen.append(record.seq)
        return seen

    try:
        await one.publish(run, f"{run}@start", 0, "event", {"n": 0})
        following = asyncio.ensure_future(follow())
        await asyncio.gather(write(one, 1), write(two, 2))
        await one.publish(run, f"{run}@start", 101, "end", {"status": "completed"})
        seen = await asyncio.wait_for(following, WAIT)
    finally:
        for log in (one, two, reader):
            await log.close()
    assert sorted(seen) == list(range(101))  # every record, each once, though two writers raced


async def test_new_logs_join_while_another_publishes(cluster: Cluster) -> None:
    """A process that starts (its log looks for its tables) while others publish neither blocks them nor deadlocks
    with them: tables that are there are not made again."""
    writer = _pg(cluster)
    run = _run()
    joiners = [_pg(cluster) for _ in range(8)]

    async def publish_many() -> None:
        for seq in range(150):
            await writer.publish(run, f"{run}@start", seq, "event", {"n": seq})

    try:
        await writer.publish(run, f"{run}@start", 0, "event", {})
        await asyncio.wait_for(
            asyncio.gather(
                publish_many(),
                *(log.publish(f"{run}-{n}", f"{run}-{n}@start", 1, "event", {}) for n, log in enumerate(joiners)),
            ),
            WAIT,
        )
    finally:
        for log in (writer, *joiners):
            await log.close()


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("redis://127.0.0.1:6379/0", RedisEventLog),
        ("rediss://example.org:6380/0", RedisEventLog),
        ("postgresql://postgres@127.0.0.1/x", PostgresEventLog),
        ("postgres://postgres@127.0.0.1/x", PostgresEventLog),
        ("postgresql+psycopg://postgres@127.0.0.1/x", PostgresEventLog),
    ],
)
def test_an_events_url_names_its_log_by_scheme(url: str, kind: type) -> None:
    assert type(event_log_at(url)) is kind


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://user:secret@host/x", r"events URL: expected redis://… or postgresql://…, got one of scheme 'http'$"),
        ("127.0.0.1:6379", r"events URL: expected redis://… or postgresql://…, got no scheme$"),
        (7, r"events URL: expected a string, got int"),
    ],
)
def test_an_events_url_of_no_known_scheme_is_refused_without_its_password(url: object, message: str) -> None:
    with pytest.raises(UserError, match=message):
        event_log_at(url)  # type: ignore[arg-type]


async def test_many_redis_followers_share_one_blocking_read() -> None:
    """Fifty clients following fifty runs hold no connection while they wait: one read serves them all, so a log of
    two connections still answers a command at once, and each follower gets its run's records, those published
    after it began waiting included."""
    name = f"bf-{uuid.uuid4().hex[:8]}"
    log, writer = RedisEventLog(f"{REDIS_URL}?client_name={name}", max_connections=2), RedisEventLog(REDIS_URL)
    runs = [_run() for _ in range(50)]
    try:
        for run in runs[:25]:  # some have a record already, read at once; the rest wait for their first
            await writer.publish(run, f"{run}@start", 1, "event", {"n": 1})
        followers = [asyncio.ensure_future(_all(log.read(run, block=30.0))) for run in runs]
        await asyncio.sleep(0.5)  # all of them wait now
        answered = await asyncio.wait_for(log.last(runs[0]), 2.0)  # a waiting follower would hold a connection
        held = [c for c in await writer._redis().client_list() if c.get("name") == name]
        for run in runs:
            await writer.publish(run, f"{run}@start", 2, "end", {"status": "completed"})
        read = await asyncio.wait_for(asyncio.gather(*followers), WAIT)
    finally:
        await log.close()
        await writer.close()
    assert answered is not None and answered.seq == 1
    assert [[r.seq for r in records] for records in read] == [[1, 2]] * 25 + [[2]] * 25
    assert len(held) <= 3, held  # the two of the pool, and the shared read's


async def test_a_redis_follower_that_is_never_woken_looks_for_itself() -> None:
    log = RedisEventLog(REDIS_URL)
    run = _run()
    try:
        following = asyncio.ensure_future(_all(log.read(run, block=0.3)))
        await asyncio.sleep(0.2)
        followers = log._shared()
        await followers.close()  # the shared read is gone: only the follower's own look can find the record
        await log.publish(run, f"{run}@start", 1, "end", {"status": "completed"})
        records = await asyncio.wait_for(following, WAIT)
    finally:
        await log.close()
    assert [r.kind for r in records] == ["end"]
    with pytest.raises(UserError, match="block: expected a number of seconds > 0, got 0"):
        await anext(log.read(run, block=0))


async def test_a_redis_follower_joining_a_read_under_way_wakes_it() -> None:
    """The shared read waits up to 100 ms on the streams it has; a follower of another run that joins meanwhile adds
    an entry to the log's wake stream (one kept, lapsing within a minute), which the read includes, so the read
    starts again at once with the new run's stream."""
    log, writer = RedisEventLog(REDIS_URL), RedisEventLog(REDIS_URL)
    first, second = _run(), _run()
    try:
        waiting = asyncio.ensure_future(_all(log.read(first, block=30.0)))
        await asyncio.sleep(0.3)  # the shared read is under way, on the first run's stream only
        wake = log._shared().wake_key
        assert await writer._redis().xlen(wake) == 0
        joining = asyncio.ensure_future(_all(log.read(second, block=30.0)))
        deadline = time.monotonic() + WAIT
        while await writer._redis().xlen(wake) == 0:
            assert time.monotonic() < deadline, "the join did not wake the read"
            await asyncio.sleep(0.01)
        lapses = await writer._redis().pttl(wake)
        for run in (first, second):
            await writer.publish(run, f"{run}@start", 1, "end", {"status": "completed"})
        read = await asyncio.wait_for(asyncio.gather(waiting, joining), WAIT)
        kept = await writer._redis().xlen(wake)
    finally:
        await log.close()
        await writer.close()
    assert [[r.kind for r in records] for records in read] == [["end"], ["end"]]
    assert 0 < lapses <= 60_000 and kept == 1

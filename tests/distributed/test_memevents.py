"""The in-process event log: a follower waiting on a run is woken by its next record, one that falls behind the
run's bound reads on with the numbers showing the hole (one asking for a dropped record is told so), the runs kept are bounded, and cancel flags travel."""

from __future__ import annotations

import asyncio

import pytest

from batonflow.distributed import EventLog, EventRecord, EventsGoneError, MemoryEventLog, Numbering
from batonflow.errors import UserError

WAIT = 5.0  # a guard against a hang, not a measure


async def test_a_memory_log_is_an_event_log_and_wakes_its_waiting_follower() -> None:
    log = MemoryEventLog()
    assert isinstance(log, EventLog)
    got: list[EventRecord] = []

    async def follow() -> None:
        async for record in log.read("r"):
            got.append(record)

    following = asyncio.ensure_future(follow())
    await asyncio.sleep(0)  # the follower waits on a run not written yet
    first = await log.publish("r", "r@start", 1, "event", {"n": 1})
    await log.publish("r", "r@start", 1, "end", {"status": "completed"})
    await asyncio.wait_for(following, WAIT)
    assert [(r.stream_id, r.kind) for r in got] == [(first, "event"), ("2-0", "end")]


async def test_a_follower_that_falls_behind_the_bound_reads_on_and_the_numbers_show_the_hole() -> None:
    log = MemoryEventLog(maxlen=2)
    await log.publish("r", "r@start", 1, "event", {"n": 1})
    reader = log.read("r")
    first = await anext(reader)
    assert (first.seq, first.number) == (1, 1)
    for seq in (2, 3, 4):  # the run writes on while this follower reads nothing
        await log.publish("r", "r@start", seq, "event", {"n": seq})
    later = [await anext(reader), await anext(reader)]
    assert [(r.seq, r.number) for r in later] == [(3, 3), (4, 4)]  # number 2 was dropped: a hole, not silence
    assert {r.attempt for r in [first, *later]} == {first.attempt} and first.attempt
    with pytest.raises(EventsGoneError, match=r"expected a record id from 2-0 on .* the oldest kept is '3-0'"):
        await anext(log.read("r", "1-0"))  # asking for what was dropped is still refused
    await log.publish("r", "r@start", 4, "end", {"status": "completed"})
    assert [(r.seq, r.kind, r.number) async for r in log.read("r", "3-0")] == [(4, "event", 4), (4, "end", 5)]


async def test_a_memory_log_says_without_waiting_what_a_read_would_refuse() -> None:
    log = MemoryEventLog(maxlen=2)
    for seq in (1, 2, 3):
        await log.publish("r", "r@start", seq, "event", {"n": seq})
    gone = log.gone("r", "0-0")
    with pytest.raises(EventsGoneError) as refused:
        await anext(log.read("r", "0-0"))
    assert gone is not None and (str(gone), gone.oldest) == (str(refused.value), "2-0")
    assert (log.gone("r", "1-0"), log.gone("r", "3-0"), log.gone("unwritten")) == (None, None, None)


async def test_each_attempt_of_a_segment_numbers_its_records_from_1() -> None:
    log = MemoryEventLog()
    for kind in ("event", "event", "end", "event"):  # a segment's end, then the same segment run again
        await log.publish("r", "r@start", 1, kind, {})  # type: ignore[arg-type]
    await log.publish("r", "r@other", 1, "event", {})
    records = log.records("r")
    assert [(r.segment_id, r.number) for r in records] == [
        ("r@start", 1),
        ("r@start", 2),
        ("r@start", 3),
        ("r@start", 1),
        ("r@other", 1),
    ]
    assert records[0].attempt == records[2].attempt != records[3].attempt


async def test_a_follower_reads_on_while_the_run_writes_between_two_of_its_records() -> None:
    log = MemoryEventLog()
    for seq in (1, 2):
        await log.publish("r", "r@start", seq, "event", {"n": seq})
    got = []
    async for record in log.read("r"):
        got.append(record.seq)
        if record.seq == 1:  # another task writes while this follower is away
            await log.publish("r", "r@start", 3, "end", {"status": "completed"})
    assert got == [1, 2, 3]


async def test_the_runs_kept_are_bounded_the_least_recently_written_dropped_first() -> None:
    log = MemoryEventLog(keep_runs=2)
    for run in ("a", "b", "a", "c"):
        await log.publish(run, f"{run}@start", 1, "event", {})
    assert (await log.last("b"), [r.stream_id for r in log.records("a")]) == (None, ["1-0", "3-0"])
    assert (await log.last("c")) is not None


async def test_a_cancel_request_cancels_the_watched_task() -> None:
    log = MemoryEventLog()
    sleeper = asyncio.ensure_future(asyncio.sleep(3600))
    watcher = asyncio.ensure_future(log.watch_cancel("r@start", sleeper, every=0.01))
    assert not await log.cancel_requested("r@start")
    await log.request_cancel("r@start")
    await asyncio.wait_for(watcher, WAIT)
    assert sleeper.cancelled() and await log.cancel_requested("r@start")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"maxlen": 0}, r"maxlen: expected an int of 1 or more, got 0"),
        ({"keep_runs": True}, r"keep_runs: expected an int of 1 or more, got True"),
    ],
)
def test_a_memory_log_with_bad_bounds_says_what_was_expected(options: dict[str, object], message: str) -> None:
    with pytest.raises(UserError, match=message):
        MemoryEventLog(**options)  # type: ignore[arg-type]


async def test_a_bad_record_id_is_refused_and_nothing_is_read() -> None:
    log = MemoryEventLog()
    await log.publish("r", "r@start", 1, "end", {})
    with pytest.raises(UserError, match=r"record id: expected <digits>-<digits> such as '42-0', got '7.2'"):
        await anext(log.read("r", "7.2"))


def test_numbering_remembers_a_bounded_number_of_segments_and_forgets_one_at_its_end() -> None:
    numbering = Numbering(keep=2)
    first = numbering.next("a", "event")
    numbering.next("b", "event")
    assert numbering.next("a", "event") == (first[0], 2)  # a is the most recently published now
    numbering.next("c", "event")  # b, the least recently published, is forgotten
    b = numbering.next("b", "event")
    assert b[1] == 1  # a new attempt: a follower takes it as a restart, not a gap
    numbering = Numbering()
    x = numbering.next("x", "event")
    assert numbering.next("x", "end") == (x[0], 2)
    again = numbering.next("x", "event")
    assert again[1] == 1 and again[0] != x[0]  # forgotten at its end
    with pytest.raises(UserError, match="keep"):
        Numbering(keep=0)

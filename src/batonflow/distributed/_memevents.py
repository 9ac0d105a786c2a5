"""Runs' live records in this process's memory: the event log of ``InProcessBackend``, the server's default.

It is what ``RedisEventLog`` and ``PostgresEventLog`` are across processes, for one process: record ids are
``<n>-0``, ``n`` counting the records of the whole log, so an id names one record and orders it in its run; each
run keeps its last ``maxlen`` records (a reader that asks for records already dropped gets ``EventsGoneError``; one
that falls behind them while it reads goes on from the oldest kept, and the hole in the records' numbers tells its
server to report the gap); the last ``keep_runs`` runs are kept, the least recently
written dropped first. A follower is woken by each record of its run, and reads every record there is at once.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from typing import Any

from ..errors import RunError, UserError
from ._checks import count
from ._events import EventRecord, Kind, Numbering

__all__ = ["EventsGoneError", "MemoryEventLog"]


class EventsGoneError(RunError):
    """The records after the id a follower asked for are no longer in the log: it keeps a run's last ``maxlen``."""

    def __init__(self, message: str, *, oldest: str) -> None:
        super().__init__(message)
        self.oldest = oldest


class _Run:
    __slots__ = ("dropped", "numbers", "records", "wake")

    def __init__(self, maxlen: int) -> None:
        self.records: deque[EventRecord] = deque(maxlen=maxlen)
        self.numbers: deque[int] = deque(maxlen=maxlen)  # each record's id's number, read without parsing the id
        self.dropped = 0  # the number of the last record the bound dropped (0: none)
        # Set by the next record, made by a follower that is about to wait: a run that nobody waits on (most of
        # its records, since a follower reads what is there at once) makes no event a record.
        self.wake: asyncio.Event | None = None

    def waiter(self) -> asyncio.Event:
        if self.wake is None:
            self.wake = asyncio.Event()
        return self.wake

    def woken(self) -> None:
        wake, self.wake = self.wake, None
        if wake is not None:
            wake.set()


class MemoryEventLog:
    """An ``EventLog`` in memory: each run's last ``maxlen`` records, of the last ``keep_runs`` runs written."""

    def __init__(self, *, maxlen: int = 2_048, keep_runs: int = 1_024) -> None:
        self.maxlen = count("maxlen", maxlen)
        self.keep_runs = count("keep_runs", keep_runs)
        self._runs: OrderedDict[str, _Run] = OrderedDict()
        self._count = 0
        self._cancels: set[str] = set()
        self.numbering = Numbering()

    async def publish(self, run: str, segment_id: str, seq: int, kind: Kind, data: dict[str, Any]) -> str:
        """Append a record to ``run``'s records; its id."""
        return self.append(run, segment_id, seq, kind, data).stream_id

    def append(self, run: str, segment_id: str, seq: int, kind: Kind, data: dict[str, Any]) -> EventRecord:
        """``publish``, for a caller in this process that need not wait: nothing here does."""
        self._count += 1
        attempt, number = self.numbering.next(segment_id, kind)
        record = EventRecord(f"{self._count}-0", seq, kind, segment_id, data, number, attempt)
        held = self._runs.get(run)
        if held is None:
            held = self._runs[run] = _Run(self.maxlen)
            while len(self._runs) > self.keep_runs:
                self._runs.popitem(last=False)[1].woken()  # its followers look again, and find it gone
        else:
            self._runs.move_to_end(run)
        records, numbers = held.records, held.numbers
        if len(records) == records.maxlen:
            held.dropped = numbers[0]
        records.append(record)
        numbers.append(self._count)
        if held.wake is not None:
            held.woken()
        return record

    async def read(self, run: str, after: str = "0-0") -> AsyncIterator[EventRecord]:
        """``run``'s records after record id ``after``, then the new ones as they come, up to and with the next
        ``end`` record; ``EventsGoneError`` when records after ``after`` were dropped."""
        async for batch in self.batches(run, after):
            for record in batch:
                yield record

    async def batches(self, run: str, after: str = "0-0") -> AsyncIterator[list[EventRecord]]:
        """``read``'s records, in batches: all those there are each time the follower looks (one write for a burst
        of deltas, rather than a write each). Records after ``after`` already dropped: ``EventsGoneError``; dropped
        while the follower was away with a batch: it goes on from the oldest kept."""
        position = _number(after)
        first = True
        while True:
            held = self._runs.get(run)
            if held is None:
                held = self._runs[run] = _Run(self.maxlen)  # a run not written yet: its first record wakes this
            if held.dropped > position:
                if first:
                    raise self._gone(run, held, position)
                position = held.dropped  # the numbers of what follows show the hole
            first = False
            records, numbers = held.records, held.numbers
            # The records are in id order: skip the ones seen, from the end (a follower is usually near it).
            start = len(numbers)
            while start and numbers[start - 1] > position:
                start -= 1
            # A copy: the run may write (and the bound drop) while the follower is away with the batch.
            batch = list(itertools.islice(records, start, None))
            for i, record in enumerate(batch):
                if record.kind == "end":
                    yield batch[: i + 1]
                    return
            if batch:
                position = numbers[-1]  # the batch is the records to the end
                yield batch
                continue  # look again (the run may have written meanwhile) before waiting
            await held.waiter().wait()

    def latest(self, run: str) -> EventRecord | None:
        """``last``, for a caller in this process that need not wait."""
        held = self._runs.get(run)
        return held.records[-1] if held is not None and held.records else None

    def records(self, run: str) -> list[EventRecord]:
        """``run``'s records kept now, oldest first."""
        held = self._runs.get(run)
        return [] if held is None else list(held.records)

    def gone(self, run: str, after: str = "0-0") -> EventsGoneError | None:
        """The refusal a read of ``run``'s records after ``after`` would start with now (records after it were
        dropped), None when it would read them: known without waiting, so that a server can refuse before it
        answers."""
        position = _number(after)
        held = self._runs.get(run)
        if held is None or held.dropped <= position:
            return None
        return self._gone(run, held, position)

    def _gone(self, run: str, held: _Run, position: int) -> EventsGoneError:
        oldest = held.records[0].stream_id if held.records else f"{held.dropped + 1}-0"
        found = "none (the records from the start)" if position == 0 else repr(f"{position}-0")
        return EventsGoneError(
            f"events of {run!r}: expected a record id from {held.dropped}-0 on (the log keeps a run's last "
            f"{self.maxlen} records; the oldest kept is {oldest!r}), got {found}",
            oldest=oldest,
        )

    async def last(self, run: str) -> EventRecord | None:
        return self.latest(run)

    async def request_cancel(self, segment_id: str) -> None:
        self._cancels.add(segment_id)

    async def cancel_requested(self, segment_id: str) -> bool:
        return segment_id in self._cancels

    async def watch_cancel(self, segment_id: str, task: asyncio.Task[Any], *, every: float = 0.05) -> None:
        """Cancel ``task`` once a cancel of ``segment_id`` is requested (runs until cancelled itself)."""
        while not task.done():
            if segment_id in self._cancels:
                task.cancel()
                return
            await asyncio.sleep(every)

    async def close(self) -> None:
        self._runs.clear()
        self._cancels.clear()


def _number(record_id: str) -> int:
    number, sep, rest = record_id.partition("-")
    if not (number.isdigit() and sep and rest.isdigit()):
        raise UserError(f"record id: expected <digits>-<digits> such as '42-0', got {record_id!r:.60}")
    return int(number)

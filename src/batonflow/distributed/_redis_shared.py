"""The round trips a ``RedisEventLog`` shares among the segments of its process: the records published at the same
moment go in one pipeline (``PublishBatch``), one ``MGET`` looks at every watched segment's cancel flag
(``CancelWatch``), and the client's name is made once for all its connections (``driver_options``)."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from typing import Any

__all__ = ["CancelWatch", "PublishBatch", "driver_options"]


def driver_options() -> dict[str, Any]:
    """The pool option naming this client to Redis, made once: redis-py 7 and later otherwise look its version up
    in the installed packages' metadata for each connection they open (3 ms each; a burst of followers opens
    hundreds). An older redis-py looks it up once, at import, and is given nothing."""
    global _DRIVER
    if _DRIVER is None:
        try:
            import redis
            from redis.driver_info import DriverInfo
        except ImportError:
            _DRIVER = {}
        else:
            _DRIVER = {"driver_info": DriverInfo(name="redis-py", lib_version=redis.__version__)}
    return _DRIVER


_DRIVER: dict[str, Any] | None = None


class PublishBatch:
    """The records one log publishes, sent to Redis in pipelines: each publish joins the pipeline that goes next
    (those made while one is under way form the next one, up to ``MAX`` records), and is answered its own record
    id, or its own error. Not a transaction: a record's append does not wait on another's, and one that fails fails
    only its publish; a pipeline that gets no answer fails all of its publishes (each retried, or not, by its
    caller), as one record did before.

    Each record is added bounded to ``maxlen``, and its stream is set to lapse ``ttl_ms`` after: with the stream's
    first record, its ``end`` records, and once this log's last expiry of it is ``REFRESH`` of the ttl old; a
    stream lapses between 0.9 and 1 ttl after its last record. A record sent without an expiry is appended only to
    a stream that exists (``NOMKSTREAM``), so no stream is ever made without one: a record whose stream went
    meanwhile (deleted, or lapsed under another process's shorter ttl) goes again in the next pipeline, with its
    stream's expiry. Half the commands of a pipeline were expiries before, one per record (a run of 3 tool steps
    publishes 9 records)."""

    MAX = 500
    REFRESH = 0.1
    KNOWN = 10_000  # the streams whose expiry is remembered, the least recently set forgotten first

    def __init__(self, redis: Any, maxlen: int, ttl_ms: int) -> None:
        self._redis = redis
        self._maxlen = maxlen
        self._ttl_ms = ttl_ms
        self._queued: list[tuple[str, dict[str, str], asyncio.Future[str]]] = []
        self._task: asyncio.Task[None] | None = None
        self._expiries: OrderedDict[str, float] = OrderedDict()  # stream -> monotonic time its expiry was sent

    async def add(self, key: str, fields: dict[str, str]) -> str:
        """Append ``fields`` to the stream ``key`` with the next pipeline; its record id."""
        done: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._queued.append((key, fields, done))
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._send())
        return await done

    async def _send(self) -> None:
        while self._queued:
            batch, self._queued = self._queued[: self.MAX], self._queued[self.MAX :]
            try:
                answers = await self._pipeline(batch)
            except Exception as error:  # no answer (a timeout, a connection lost): every publish of it fails
                answers = [error] * len(batch)
            except BaseException as error:  # cancelled (the log closes): its publishes with it
                for _, _, done in [*batch, *self._queued]:
                    done.cancel()
                self._queued = []
                raise error
            again = [record for record, answer in zip(batch, answers, strict=True) if answer is None]
            self._queued[:0] = again  # their streams went: made again next, with their expiry, before later records
            for (_, _, done), answer in zip(batch, answers, strict=True):
                if done.done() or answer is None:
                    continue  # its caller stopped waiting (the record may still have gone out), or it goes again
                if isinstance(answer, BaseException):
                    done.set_exception(answer)
                else:
                    done.set_result(answer.decode() if isinstance(answer, bytes) else str(answer))

    async def _pipeline(self, batch: list[tuple[str, dict[str, str], asyncio.Future[str]]]) -> list[Any]:
        """One pipeline of ``batch``'s appends, then the expiry of each stream that needs one: the appends' answers
        (None for an append whose stream is gone)."""
        sent = time.monotonic()
        expiring = self._expiring(batch, sent)
        async with self._redis.pipeline(transaction=False) as pipe:
            for key, fields, _ in batch:
                pipe.xadd(key, fields, maxlen=self._maxlen, approximate=False, nomkstream=key not in expiring)
            for key in expiring:
                pipe.pexpire(key, self._ttl_ms)
            answers = await pipe.execute(raise_on_error=False)
        for key, answer in zip(expiring, answers[len(batch) :], strict=True):
            if answer is True or answer == 1:
                self._expiries[key] = sent
                self._expiries.move_to_end(key)
        while len(self._expiries) > self.KNOWN:
            self._expiries.popitem(last=False)
        appended = list(answers[: len(batch)])
        for (key, _, _), answer in zip(batch, appended, strict=True):
            if answer is None:
                self._expiries.pop(key, None)  # gone: its next record makes it again, with an expiry
        return appended

    def _expiring(self, batch: list[tuple[str, dict[str, str], asyncio.Future[str]]], now: float) -> list[str]:
        """The streams of ``batch`` whose expiry this pipeline sets, in the order of their first records."""
        stale = now - self._ttl_ms / 1000 * self.REFRESH
        return [key for key, ends in _ends(batch).items() if ends or self._expiries.get(key, -float("inf")) <= stale]

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


def _ends(batch: list[tuple[str, dict[str, str], asyncio.Future[str]]]) -> dict[str, bool]:
    """The streams of ``batch``, in the order of their first records: whether each has an ``end`` record there."""
    ends: dict[str, bool] = {}
    for key, fields, _ in batch:
        ends[key] = ends.get(key, False) or fields.get("kind") == "end"
    return ends


class CancelWatch:
    """The cancel flags of every segment one log watches, looked at with one ``MGET`` at the pace of the most
    eager watcher: a watcher whose flag is set has its task cancelled, one whose task is done is let go, and a look
    that fails is raised to every watcher (``watch_cancels`` starts each again). The look runs while anyone
    watches."""

    def __init__(self, redis: Any) -> None:
        self._redis = redis
        self._watchers: dict[asyncio.Future[None], tuple[str, asyncio.Task[Any], float]] = {}
        self._task: asyncio.Task[None] | None = None

    async def until_cancelled(self, key: str, task: asyncio.Task[Any], every: float) -> None:
        ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._watchers[ended] = (key, task, every)
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._look())
        try:
            await ended
        finally:
            self._watchers.pop(ended, None)

    async def _look(self) -> None:
        while self._watchers:
            watching = list(self._watchers.items())
            try:
                flags = await self._redis.mget([key for _, (key, _, _) in watching])
            except Exception as error:
                for ended, _ in watching:
                    if not ended.done():
                        ended.set_exception(error)
                return
            for (ended, (_, task, _)), flag in zip(watching, flags, strict=True):
                if ended.done():
                    continue
                if flag is not None and not task.done():
                    task.cancel()
                if flag is not None or task.done():
                    ended.set_result(None)
            if self._watchers:
                await asyncio.sleep(min(every for _, _, every in self._watchers.values()))

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        for ended in self._watchers:
            ended.cancel()

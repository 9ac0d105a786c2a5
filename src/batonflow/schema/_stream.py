"""Streams: async iterators with an owner's contract.

A ``Stream`` is read once, by one reader, and closed by that reader (``aclose``; idempotent). Errors raised by
the producer reach the reader in-stream, at the position where they happened. ``copy(n)`` hands the chunks to n
readers who each see every chunk, at their own pace; the original is spent. A stream that is dropped without
being closed closes its source when it is garbage-collected, so an abandoned producer learns that nobody listens.

Chunks pass through with one method call per stage: every agent event and every token goes through here.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, Generic, Protocol, TypeVar, cast

from ..errors import StreamClosedError

__all__ = ["Stream", "StreamWriter", "Tap"]

T = TypeVar("T")
U = TypeVar("U")
T_co = TypeVar("T_co", covariant=True)


class _Source(Protocol[T_co]):
    def __anext__(self) -> Awaitable[T_co]: ...


_END: Any = object()
_Closer = Callable[[], Awaitable[None]] | None


class Stream(Generic[T]):
    """A single-reader async stream of chunks. Build one with the class methods; read with ``async for``."""

    __slots__ = ("__weakref__", "_anext", "_closer", "_state")

    def __init__(self, source: _Source[T], closer: _Closer = None) -> None:
        self._anext: Callable[[], Awaitable[T]] = source.__anext__
        self._closer = closer if closer is not None else getattr(source, "aclose", None)
        # None while readable; otherwise the reason it cannot be read any more.
        self._state: str | None = None

    # -- construction ------------------------------------------------------------------------------------------

    @classmethod
    def from_list(cls, items: Iterable[T]) -> Stream[T]:
        return cls(_ListSource(list(items)))

    @classmethod
    def from_async_iter(cls, source: AsyncIterator[T]) -> Stream[T]:
        """Wrap an async iterator (an async generator, say); closing the stream closes it."""
        return cls(source)

    @staticmethod
    def pipe() -> tuple[Stream[Any], StreamWriter[Any]]:
        """A stream fed by a writer that never blocks: ``writer.send(chunk)`` is False once the reader is gone."""
        channel: _Channel[Any] = _Channel()
        return Stream(channel, channel.close_reader), StreamWriter(channel)

    @staticmethod
    def merge(streams: Iterable[Stream[T]]) -> Stream[T]:
        """One stream of the chunks of all ``streams``, in arrival order. The sources are taken over."""
        merger = _Merge([s._take("merge", "merged") for s in streams])
        return Stream(merger, merger.aclose)

    # -- reading -----------------------------------------------------------------------------------------------

    def __aiter__(self) -> Stream[T]:
        return self

    def __anext__(self) -> Awaitable[T]:  # not async: one coroutine per chunk instead of two
        if self._state is not None:
            raise StreamClosedError(f"cannot read a stream that was {self._state}")
        return self._anext()

    async def collect(self) -> list[T]:
        """Read every chunk and close the stream."""
        try:
            return [chunk async for chunk in self]
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        """Close the stream and its source. Safe to call more than once."""
        if self._state is None:
            self._state = "closed"
        closer, self._closer = self._closer, None
        if closer is not None:
            await closer()

    close = aclose

    @property
    def closed(self) -> bool:
        return self._state is not None

    # -- transforming ------------------------------------------------------------------------------------------

    def copy(self, n: int) -> list[Stream[T]]:
        """n independent readers of this stream's chunks; this stream is spent. ``n < 2`` gives ``[self]``."""
        if n < 2:
            return [self]
        shared: Tap[T] = Tap(*self._take("copy", "copied"), sides=n)
        return [Stream(_TapReader(shared, 0), shared.reader_closed) for _ in range(n)]

    def tap(self) -> tuple[Stream[T], Tap[T]]:
        """A reader of every chunk, and a ``Tap`` whose ``chunks()`` gives them all at once.

        What ``copy(2)`` gives when the second reader only wants the whole (an agent joining the message it is
        streaming to its caller), at about half the cost per chunk. The source stays open until the tap has
        every chunk, even if the reader closes early.
        """
        tap: Tap[T] = Tap(*self._take("tap", "tapped"), sides=2)
        return _TapStream(tap), tap

    def keep(self) -> tuple[Stream[T], Tap[T]]:
        """A reader of every chunk, and a ``Tap`` that keeps them: once the reader has read to the end, ``kept()``
        gives them all, so that what was streamed can be joined after it was read. The source closes with the
        reader."""
        tap: Tap[T] = Tap(*self._take("keep", "kept"), sides=1)
        return _TapStream(tap), tap

    def convert(self, fn: Callable[[T], U | None]) -> Stream[U]:
        """A stream of ``fn(chunk)`` for each chunk; chunks for which ``fn`` returns None are skipped."""
        anext, closer = self._take("convert", "converted")
        return Stream(_Convert(anext, fn), closer)

    def _take(self, verb: str, done: str) -> tuple[Callable[[], Awaitable[T]], _Closer]:
        """Hand this stream's source over to a new owner; this stream becomes unreadable."""
        if self._state is not None:
            raise StreamClosedError(f"cannot {verb} a stream that was {self._state}")
        self._state = done
        closer, self._closer = self._closer, None
        return self._anext, closer

    def __del__(self) -> None:
        _abandon(self._closer)


def _abandon(closer: _Closer) -> None:
    """Tell a source that its reader is gone without awaiting anything (we may be in a finaliser).

    Our own sources stop at once; async generators are finalised by the event loop's asyncgen hooks.
    """
    abandon = getattr(getattr(closer, "__self__", None), "abandon", None)
    if abandon is not None:
        abandon()


class StreamWriter(Generic[T]):
    """The producing end of ``Stream.pipe()``. Not thread-safe: from a thread use ``loop.call_soon_threadsafe``."""

    __slots__ = ("_channel",)

    def __init__(self, channel: _Channel[T]) -> None:
        self._channel = channel

    def send(self, chunk: T) -> bool:
        """Queue a chunk; False (and nothing queued) if the reader has closed."""
        return self._channel.put(chunk)

    def send_error(self, error: BaseException) -> bool:
        """Deliver ``error`` to the reader after the chunks already sent; the stream ends there."""
        ok = self._channel.put(_Failure(error))
        self._channel.close_writer()
        return ok

    def close(self) -> None:
        self._channel.close_writer()

    @property
    def closed(self) -> bool:
        """True once the reader closed or abandoned the stream."""
        return self._channel.reader_gone


class _Failure:
    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


class _ListSource(Generic[T]):
    __slots__ = ("_items", "_pos")

    def __init__(self, items: list[T]) -> None:
        self._items = items
        self._pos = 0

    async def __anext__(self) -> T:
        pos = self._pos
        if pos >= len(self._items):
            raise StopAsyncIteration
        self._pos = pos + 1
        return self._items[pos]


class _Channel(Generic[T]):
    """Unbounded single-consumer queue; the producer never blocks."""

    __slots__ = ("_items", "_waiter", "reader_gone", "writer_done")

    def __init__(self) -> None:
        self._items: deque[Any] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self.writer_done = False
        self.reader_gone = False

    def put(self, item: Any) -> bool:
        if self.reader_gone or self.writer_done:
            return False
        self._items.append(item)
        self._wake()
        return True

    def close_writer(self) -> None:
        self.writer_done = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def __anext__(self) -> T:
        items = self._items
        while not items:
            if self.writer_done:
                raise StopAsyncIteration
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        item = items.popleft()
        if type(item) is _Failure:
            self.writer_done = True
            items.clear()
            raise item.error
        return cast(T, item)

    def abandon(self) -> None:
        self.reader_gone = True
        self._items.clear()

    async def close_reader(self) -> None:
        self.abandon()


class _Convert(Generic[T, U]):
    __slots__ = ("_anext", "_fn")

    def __init__(self, anext: Callable[[], Awaitable[T]], fn: Callable[[T], U | None]) -> None:
        self._anext = anext
        self._fn = fn

    async def __anext__(self) -> U:
        while True:
            out = self._fn(await self._anext())
            if out is not None:
                return out


class Tap(Generic[T]):
    """Chunks shared by several sides (the readers of ``copy(n)``; the reader and the whole of ``tap()``; the one
    reader of ``keep()``), kept in order and pulled from the source by whichever side is ahead. The source closes
    when every side is done."""

    __slots__ = ("_closer", "_sides", "anext", "busy", "chunks_", "end", "waiters")

    def __init__(self, anext: Callable[[], Awaitable[T]], closer: _Closer, *, sides: int) -> None:
        self.anext = anext
        self._closer = closer
        self._sides = sides
        self.chunks_: list[T] = []
        self.end: Any = None  # _END or a _Failure once the source is done
        self.busy = False
        self.waiters: list[asyncio.Future[None]] = []

    async def chunks(self) -> list[T]:
        """Every chunk, reading what the other side has not pulled yet. A failure of the source is raised here,
        after the chunks before it reached the reader."""
        try:
            async for _ in Stream(_TapReader(self, len(self.chunks_))):
                pass
        finally:
            await self.reader_closed()
        return self.chunks_

    def kept(self) -> list[T] | None:
        """Every chunk, if the source has ended (its failure is raised, as the reader saw it); None while it has not.
        Reads nothing: what the sides pulled is all there is."""
        end = self.end
        if end is None:
            return None
        if end is not _END:
            raise end.error
        return self.chunks_

    async def reader_closed(self) -> None:
        self._sides -= 1
        if self._sides == 0 and self._closer is not None:
            closer, self._closer = self._closer, None
            await closer()

    def abandon(self) -> None:
        self._sides -= 1
        if self._sides == 0:
            _abandon(self._closer)

    def wake(self) -> None:
        """Let the sides waiting for the chunk being pulled look again."""
        waiters, self.waiters = self.waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)


class _TapStream(Stream[T]):
    """The reader's side of ``tap()``: a stream that is its own reader, so that a chunk costs one coroutine.

    Usually the reader is ahead and pulls each chunk from the source itself; the tap's ``chunks()`` then finds
    them all in the buffer."""

    __slots__ = ("_pos", "_tap")

    def __init__(self, tap: Tap[T]) -> None:
        self._tap = tap
        self._pos = 0
        # Not read (``__anext__`` and ``_take`` are this class's own), and never a method of self: that would be a
        # cycle, and the chunks would wait for the garbage collector.
        self._anext = _taken_over
        self._closer = tap.reader_closed
        self._state = None

    def _take(self, verb: str, done: str) -> tuple[Callable[[], Awaitable[T]], _Closer]:
        """A new owner (convert, merge) reads on from where this reader stands."""
        _, closer = super()._take(verb, done)
        return _TapReader(self._tap, self._pos).__anext__, closer

    async def __anext__(self) -> T:
        if self._state is not None:
            raise StreamClosedError(f"cannot read a stream that was {self._state}")
        tap, pos = self._tap, self._pos
        chunks = tap.chunks_
        if pos == len(chunks) and tap.end is None and not tap.busy:
            tap.busy = True  # the usual case: pull the next chunk for both sides
            try:
                chunk = await tap.anext()
            except StopAsyncIteration:
                tap.end = _END
                raise
            except Exception as error:
                tap.end = _Failure(error)
                raise
            finally:
                tap.busy = False
                if tap.waiters:
                    tap.wake()
            chunks.append(chunk)
            self._pos = pos + 1
            return chunk
        return await self._read()

    async def _read(self) -> T:
        pos = self._pos
        chunk: T = await _TapReader(self._tap, pos).__anext__()
        self._pos = pos + 1
        return chunk


async def _taken_over() -> Any:
    raise StreamClosedError("cannot read a stream that was taken over")


class _TapReader:
    __slots__ = ("_pos", "_tap")

    def __init__(self, tap: Tap[Any], pos: int) -> None:
        self._tap = tap
        self._pos = pos

    async def __anext__(self) -> Any:
        tap, pos = self._tap, self._pos
        chunks = tap.chunks_
        while pos >= len(chunks):
            # At the end of what was pulled: pull the next chunk for both sides, or wait for the other side.
            if tap.end is not None:
                if tap.end is _END:
                    raise StopAsyncIteration
                raise tap.end.error
            if tap.busy:
                waiter = asyncio.get_running_loop().create_future()
                tap.waiters.append(waiter)
                await waiter
                continue
            tap.busy = True
            try:
                chunks.append(await tap.anext())
            except StopAsyncIteration:
                tap.end = _END
            except Exception as error:
                tap.end = _Failure(error)
            finally:
                tap.busy = False
                if tap.waiters:
                    tap.wake()
        self._pos = pos + 1
        return chunks[pos]


class _Merge:
    """Arrival-order merge: one pump task per source, owned by the merged stream and cancelled with it."""

    __slots__ = ("_channel", "_pending", "_sources", "_tasks")

    def __init__(self, sources: list[tuple[Callable[[], Awaitable[Any]], _Closer]]) -> None:
        self._sources = sources
        self._channel: _Channel[Any] = _Channel()
        self._tasks: list[asyncio.Task[None]] = []
        self._pending = len(sources)

    async def _pump(self, anext: Callable[[], Awaitable[Any]]) -> None:
        try:
            while True:
                try:
                    chunk = await anext()
                except StopAsyncIteration:
                    break
                if not self._channel.put(chunk):
                    return
        except Exception as error:
            self._channel.put(_Failure(error))
            return
        self._pending -= 1
        if self._pending == 0:
            self._channel.close_writer()

    async def __anext__(self) -> Any:
        if not self._tasks and self._sources:
            if self._pending == 0:
                raise StopAsyncIteration
            self._tasks = [asyncio.ensure_future(self._pump(anext)) for anext, _ in self._sources]
        elif not self._sources:
            raise StopAsyncIteration
        return await self._channel.__anext__()

    async def aclose(self) -> None:
        self._channel.abandon()
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        sources, self._sources = self._sources, []
        for _, closer in sources:
            if closer is not None:
                await closer()

    def abandon(self) -> None:
        self._channel.abandon()
        for task in self._tasks:
            task.cancel()
        for _, closer in self._sources:
            _abandon(closer)

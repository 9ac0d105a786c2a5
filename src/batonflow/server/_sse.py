"""A run's events as an SSE response, for the least a stream can cost: the frames are sent from the request's own
task, a comment heartbeat goes out on a timer, and once the frames wait (none are at hand), one task waits for the
client to hang up.

``sse_starlette``'s response, which the server used before, runs four tasks per stream in an anyio task group (the
frames, the heartbeat, the disconnect, the server's exit) and cancels three of them when it ends; with a thousand
streams at once those tasks, their cancel scopes and the tracebacks of their cancellations were a good part of what
the server did per run, and most of the objects the garbage collector walked. What it did is kept: the headers
(``Cache-Control: no-store``, ``X-Accel-Buffering: no`` for proxies), a heartbeat every ``ping`` seconds, the
frames stopped (and their generator closed) when the client goes away, and the open streams ended when uvicorn is
told to stop (one watcher per process polls for it while any stream is open, as ``sse_starlette`` does; uvicorn
waits for open responses before it shuts down).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Mapping
from datetime import UTC, datetime
from typing import Any

from sse_starlette.sse import AppStatus
from starlette.background import BackgroundTask
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

__all__ = ["EventStream"]

_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-store"),
    (b"connection", b"keep-alive"),
    (b"x-accel-buffering", b"no"),
]
_EXIT_POLL = 0.5  # seconds between looks at whether the server was told to stop


class EventStream(Response):
    """``frames`` (SSE events, as bytes) as a ``text/event-stream`` response, with a comment every ``ping`` seconds
    (0: none) and ``headers`` besides the stream's own."""

    def __init__(
        self, frames: AsyncGenerator[bytes, None], *, ping: float, headers: Mapping[str, str] | None = None
    ) -> None:
        self.frames = frames
        self.ping = ping
        self.status_code = 200
        self.background: BackgroundTask | None = None
        extra = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
        given = {name for name, _ in extra}  # they replace the stream's own of the same name
        self.raw_headers = [*(h for h in _HEADERS if h[0] not in given), *extra]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            await _Streaming(self, send).run(receive)
        finally:
            await self.frames.aclose()
        if self.background is not None:
            await self.background()


class _Streaming:
    """One response going out: its frames, its heartbeat timer, the wait for the client to hang up."""

    __slots__ = ("done", "heartbeat", "listener", "receive", "response", "send", "stopped", "task")

    def __init__(self, response: EventStream, send: Send) -> None:
        self.response = response
        self.send = send
        task = asyncio.current_task()
        assert task is not None  # an ASGI app runs in a task
        self.task = task
        self.stopped: str | None = None  # why this stream cancelled its own task: "gone" or "exit"
        self.done = False
        self.heartbeat: asyncio.TimerHandle | None = None
        self.listener: asyncio.Future[None] | None = None
        self.receive: Receive | None = None

    async def run(self, receive: Receive) -> None:
        self.receive = receive
        _EXITS.add(self)
        self._schedule_ping()
        frames = self.response.frames
        try:
            while True:
                try:
                    chunk = await _Awaited(anext(frames), self._listening)
                except StopAsyncIteration:
                    break
                await self.send({"type": "http.response.body", "body": chunk, "more_body": True})
            self._finish()
            await self.send({"type": "http.response.body", "body": b"", "more_body": False})
        except asyncio.CancelledError:
            if self.stopped is None or self.task.uncancel() > 0:
                raise  # not this stream's own doing: the request was cancelled
            if self.stopped == "exit":  # end the response cleanly, so that the client sees the stream end
                with contextlib.suppress(OSError):
                    await self.send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            self._finish()
            _EXITS.discard(self)
            if self.listener is not None:
                _let_go(self.listener)

    def _listening(self) -> None:
        """The frames are about to wait: from now on the client's hanging up is listened for (a stream whose
        frames are all at hand, as a run's in memory often are, ends without a task for it)."""
        if self.listener is None and self.receive is not None:
            self.listener = asyncio.ensure_future(self._listen(self.receive))

    def _finish(self) -> None:
        self.done = True
        if self.heartbeat is not None:
            self.heartbeat.cancel()
            self.heartbeat = None

    def stop(self, why: str) -> None:
        """End the stream from outside its task (the client went away, the server stops)."""
        if not self.done and self.stopped is None:
            self.stopped = why
            self.task.cancel()

    async def _listen(self, receive: Receive) -> None:
        # The server answers a receive with http.disconnect once the client has gone, or the response is complete.
        while not self.done:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.stop("gone")
                return

    def _schedule_ping(self) -> None:
        if self.response.ping > 0 and not self.done:
            self.heartbeat = asyncio.get_running_loop().call_later(self.response.ping, self._ping)

    def _ping(self) -> None:
        self.heartbeat = None
        comment = f": ping - {datetime.now(UTC)}\r\n\r\n".encode()
        _spawn(self._send_ping(comment))
        self._schedule_ping()

    async def _send_ping(self, comment: bytes) -> None:
        if not self.done:
            with contextlib.suppress(OSError, RuntimeError):  # the response ended meanwhile
                await self.send({"type": "http.response.body", "body": comment, "more_body": True})


class _Awaited:
    """``awaitable`` awaited as ``await`` would, with ``waits`` called the first time it waits (gives the loop a
    future or a turn) rather than returning at once."""

    __slots__ = ("awaitable", "waits")

    def __init__(self, awaitable: Awaitable[bytes], waits: Callable[[], None]) -> None:
        self.awaitable = awaitable
        self.waits: Callable[[], None] | None = waits

    def __await__(self) -> Generator[Any, Any, bytes]:
        inner = self.awaitable.__await__()
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                yielded = inner.send(value) if error is None else inner.throw(error)
            except StopIteration as stop:
                result: bytes = stop.value
                return result
            if self.waits is not None:
                waits, self.waits = self.waits, None
                waits()
            try:
                value, error = (yield yielded), None
            except GeneratorExit:
                inner.close()
                raise
            except BaseException as thrown:  # a cancellation, as the task's own await would have it
                value, error = None, thrown


def _let_go(listener: asyncio.Future[None]) -> None:
    """The disconnect listener, once the response is over: it ends by itself at the server's next message (a
    complete response makes the server answer http.disconnect, in the loop's next turn); cancelled then if it has
    not. The response's task does not wait for it: that would be one more turn of the request's whole stack of
    coroutines per stream."""
    listener.add_done_callback(_retrieved)
    if not listener.done():
        listener.get_loop().call_soon(_cancel_pending, listener)


def _cancel_pending(listener: asyncio.Future[None]) -> None:
    if not listener.done():
        listener.cancel()


def _retrieved(listener: asyncio.Future[None]) -> None:
    """Its exception taken, so that the loop does not log it as never retrieved (the stream is over)."""
    if not listener.cancelled():
        listener.exception()


_TASKS: set[asyncio.Task[Any]] = set()


def _spawn(coro: Any) -> None:
    task = asyncio.ensure_future(coro)
    _TASKS.add(task)
    task.add_done_callback(_TASKS.discard)


class _Exits(set["_Streaming"]):
    """The open streams of this process, and the one watcher that ends them when uvicorn is told to stop."""

    watcher: asyncio.Task[None] | None = None

    def add(self, stream: _Streaming) -> None:
        super().add(stream)
        watcher = self.watcher
        if watcher is None or watcher.done() or watcher.get_loop() is not asyncio.get_running_loop():
            self.watcher = asyncio.ensure_future(self._watch())

    async def _watch(self) -> None:
        loop = asyncio.get_running_loop()
        while any(stream.task.get_loop() is loop for stream in self):
            if _should_exit():
                for stream in [s for s in self if s.task.get_loop() is loop]:
                    stream.stop("exit")
                return
            await asyncio.sleep(_EXIT_POLL)


_EXITS = _Exits()


def _should_exit() -> bool:
    """Whether uvicorn was told to stop: ``sse_starlette`` patches uvicorn's exit handler to set its flag, and a
    server stopped by ``should_exit`` alone is found through its signal handler, as ``sse_starlette`` finds it."""
    if AppStatus.should_exit:
        return True
    handler = signal.getsignal(signal.SIGTERM)
    server = getattr(handler, "__self__", None)
    return bool(getattr(server, "should_exit", False))

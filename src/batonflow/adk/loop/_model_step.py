"""The model step: the one place in batonflow that calls a ``ChatModel``.

Every agent that asks a model — ``ChatModelAgent`` and ``ReActAgent`` through the loop engine, ``SimpleAgent``,
plan-execute's planner and replanner — asks through a ``ModelStep``, so every attempt is traced (``ReasonStart`` /
``ReasonEnd``) and counted in the run's metrics in the same way, retried ones included.

A step holds what does not change from call to call (the model, its settings, the tool choice, the retry rule);
each call gets the messages and tools of the moment and the run context. ``generate`` returns the whole message.
``stream`` returns a ``StreamedReply``: the event that carries the caller's copy of the chunks, and ``message()``
that reads the agent's copy to the end and joins it. Streams are retried only while nothing has reached the
caller, since what a reader saw cannot be taken back.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from ...errors import ModelHTTPError, StreamClosedError
from ...models import ChatModel, ModelSettings, ToolChoice, is_retryable_error
from ...schema import Address, Message, MessageStream, Stream, Tap, concat_messages
from ...tools import ToolInfo
from .._context import RunContext
from .._events import AgentEvent, event_from_message
from ._steps import StepLog

if TYPE_CHECKING:
    from ...trace import OpenReason

__all__ = ["ModelRetry", "ModelRetryConfig", "ModelStep", "StreamedReply", "is_empty_answer"]

Sleep = Callable[[float], Awaitable[object]]
_Reason: TypeAlias = "OpenReason | None"


@dataclass(slots=True, kw_only=True)
class ModelRetryConfig:
    """Retries of failed model calls (connection errors, timeouts, 429, 5xx) with exponential backoff: Eino's
    ``base_delay·2^(n-1)`` capped at ``max_delay``, plus up to half as much again at random.

    ``max_retries`` has Eino's meaning: the retries after the first call, so ``max_retries=3`` makes up to 4 calls
    and 0 makes one. Solon counts calls instead: its ``retryConfig(3)`` makes up to 3, which is
    ``ModelRetryConfig(max_retries=2)`` (``ReActAgent``'s default); ``SimpleAgent(max_retries=...)`` and the
    compression strategies' ``max_retries`` keep Solon's count of calls.
    """

    max_retries: int = 3
    base_delay: float = 0.1
    max_delay: float = 10.0

    def rule(self, label: str, sleep: Sleep = asyncio.sleep) -> ModelRetry:
        def backoff(attempt: int) -> float:
            delay = min(self.base_delay * 2.0 ** (attempt - 1), self.max_delay)
            return delay + delay * 0.5 * random.random()

        return ModelRetry(
            attempts=self.max_retries + 1, backoff=backoff, label=label, sleep=sleep, max_delay=self.max_delay
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRetry:
    """When a step calls the model again: up to ``attempts`` calls in all, ``backoff(n)`` seconds after failed
    attempt ``n``, for errors ``is_retryable`` accepts and, with ``retry_empty``, for empty answers (no text, no
    tool calls). ``label`` names the caller in the note added to an error given up on. A provider that says how
    long to wait (``ModelHTTPError.retry_after``) is waited for that long instead of the backoff, up to
    ``max_delay``: a longer wait is not retried, since trying earlier than asked only earns another refusal."""

    attempts: int
    backoff: Callable[[int], float]
    label: str
    retry_empty: bool = False
    is_retryable: Callable[[BaseException], bool] = is_retryable_error
    sleep: Sleep = asyncio.sleep
    max_delay: float = 60.0

    def again(self, error: Exception, attempt: int) -> bool:
        """Whether failed attempt ``attempt`` is made again; if not, the error says how many were made."""
        if attempt < self.attempts and self.is_retryable(error):
            asked = _retry_after(error)
            if asked is None or asked <= self.max_delay:
                return True
            error.add_note(
                f"{self.label}: not retried: the provider asked to wait {asked:g} s, more than {self.max_delay:g} s"
            )
            return False
        if attempt > 1:
            error.add_note(f"{self.label}: gave up after {attempt} attempts")
        return False

    def wait(self, attempt: int, error: Exception | None) -> float:
        """The seconds to wait after failed attempt ``attempt``: the provider's ``retry-after``, else the backoff."""
        asked = _retry_after(error) if error is not None else None
        return self.backoff(attempt) if asked is None else asked


def _retry_after(error: Exception) -> float | None:
    return error.retry_after if isinstance(error, ModelHTTPError) else None


class ModelStep:
    """How one agent calls its model; see the module doc."""

    __slots__ = ("model", "model_name", "retry", "settings", "tool_choice")

    def __init__(
        self,
        model: ChatModel,
        *,
        settings: ModelSettings | None = None,
        tool_choice: ToolChoice | None = None,
        retry: ModelRetry | None = None,
    ) -> None:
        self.model = model
        self.model_name = model.model_name
        self.settings = settings
        self.tool_choice = tool_choice
        self.retry = retry

    def __repr__(self) -> str:
        return f"ModelStep({self.model!r})"

    async def generate(self, messages: Sequence[Message], tools: Sequence[ToolInfo] | None, ctx: RunContext) -> Message:
        """The model's answer; with ``retry_empty`` the last empty answer when every attempt gave one.

        Under the run's step log (``ctx.steps``: a resume's journal, a worker's records), an answer it holds comes
        from it instead, and a new one is recorded in it."""
        log = ctx.steps
        if log is None:
            return await self._generate(messages, tools, ctx)
        address = ctx.address
        key = log.model_key(address)
        message = await log.recall(key, Message)
        if message is None:
            message = await self._generate(messages, tools, ctx)
            await log.record(key, message)
        log.replied(address)
        return message

    async def _generate(
        self, messages: Sequence[Message], tools: Sequence[ToolInfo] | None, ctx: RunContext
    ) -> Message:
        choice = self.tool_choice if tools else None
        attempt = 1
        while True:
            failed: Exception | None = None
            trace = ctx.trace
            reason = await trace.reason_start(self.model_name, messages, tools or ()) if trace is not None else None
            try:
                message = await self.model.generate(messages, tools=tools, tool_choice=choice, settings=self.settings)
            except Exception as error:
                if reason is not None:
                    await reason.end(error=error)
                if self.retry is None or not self.retry.again(error, attempt):
                    raise
                failed = error
            else:
                if reason is not None:
                    await reason.end(message)
                retry = self.retry
                if retry is None or not retry.retry_empty or attempt >= retry.attempts or not is_empty_answer(message):
                    return message
            assert self.retry is not None
            await self.retry.sleep(self.retry.wait(attempt, failed))
            attempt += 1

    async def stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolInfo] | None,
        ctx: RunContext,
        *,
        hold_back: bool = False,
        on_end: Callable[[Message], None] | None = None,
        show: Callable[[Message], Message | None] | None = None,
    ) -> StreamedReply | None:
        """The model's answer as a stream; see ``StreamedReply``.

        With ``hold_back`` the chunks that show nothing (a role, response meta) are read before the reply is made,
        so that an answer that ends empty is retried (``retry_empty``) without the caller having seen any of it;
        None when every attempt was empty. ``on_end`` gets the whole message as soon as the model's stream ends,
        whichever reader pulled its last chunk. ``show`` converts the chunks the caller sees (not the agent's copy).
        Under the run's step log, an answer it holds comes from it, as one chunk, and a new one is recorded in it
        once joined.
        """
        log = ctx.steps
        if log is None:
            return await self._stream(messages, tools, ctx, hold_back, on_end, show)
        address = ctx.address
        key = log.model_key(address)
        recorded = await log.recall(key, Message)
        if recorded is not None:
            log.replied(address)
            caller, whole = Stream.from_async_iter(_resumed([recorded], Stream.from_list([]), on_end)).tap()
            return StreamedReply(caller, whole, show=show)
        reply = await self._stream(messages, tools, ctx, hold_back, on_end, show)
        if reply is not None:
            reply._record = _recorder(log, address, key)
        return reply

    async def _stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolInfo] | None,
        ctx: RunContext,
        hold_back: bool,
        on_end: Callable[[Message], None] | None,
        show: Callable[[Message], Message | None] | None,
    ) -> StreamedReply | None:
        if hold_back:
            held = await self._held(messages, tools, ctx)
            if held is None:
                return None
            caller, whole = Stream.from_async_iter(_resumed(*held, on_end)).tap()
            return StreamedReply(caller, whole, close=held[1].aclose, show=show)
        if self.retry is None and on_end is None:
            # Chunks go straight from the model to the readers; a traced call ends when the agent has joined them.
            reason = await self._reason(messages, tools, ctx)
            caller, whole = self._open(messages, tools).tap()
            return StreamedReply(caller, whole, reason, show=show)
        source = self._attempts(messages, tools, ctx, await self._reason(messages, tools, ctx))
        if on_end is not None:
            source = _resumed([], Stream.from_async_iter(source), on_end)
        caller, whole = Stream.from_async_iter(source).tap()
        return StreamedReply(caller, whole, show=show)

    def _open(self, messages: Sequence[Message], tools: Sequence[ToolInfo] | None) -> MessageStream:
        choice = self.tool_choice if tools else None
        return self.model.stream(messages, tools=tools, tool_choice=choice, settings=self.settings)

    async def _reason(self, messages: Sequence[Message], tools: Sequence[ToolInfo] | None, ctx: RunContext) -> _Reason:
        trace = ctx.trace
        return await trace.reason_start(self.model_name, messages, tools or ()) if trace is not None else None

    async def _attempts(
        self, messages: Sequence[Message], tools: Sequence[ToolInfo] | None, ctx: RunContext, reason: _Reason
    ) -> AsyncIterator[Message]:
        """The chunks of the first attempt that delivers any, each attempt traced."""
        attempt = 1
        while True:
            delivered = False
            try:
                async for chunk in _traced(self._open(messages, tools), reason):
                    delivered = True
                    yield chunk
                return
            except Exception as error:
                if delivered or self.retry is None or not self.retry.again(error, attempt):
                    raise
                failed = error
            await self.retry.sleep(self.retry.wait(attempt, failed))
            attempt += 1
            reason = await self._reason(messages, tools, ctx)

    async def _held(
        self, messages: Sequence[Message], tools: Sequence[ToolInfo] | None, ctx: RunContext
    ) -> tuple[list[Message], MessageStream] | None:
        """An attempt's chunks read up to the first visible one, and the rest; None when every attempt was empty."""
        attempt = 1
        while True:
            stream = Stream.from_async_iter(
                _traced(self._open(messages, tools), await self._reason(messages, tools, ctx))
            )
            held: list[Message] = []
            keep = False
            failed: Exception | None = None
            try:
                async for chunk in stream:
                    held.append(chunk)
                    if _shows_something(chunk):
                        keep = True
                        return held, stream
            except Exception as error:
                if self.retry is None or not self.retry.again(error, attempt):
                    raise
                failed = error
            finally:
                if not keep:
                    await stream.aclose()
            retry = self.retry
            if retry is None or not retry.retry_empty or attempt >= retry.attempts:
                return None
            await retry.sleep(retry.wait(attempt, failed))
            attempt += 1


class StreamedReply:
    """A streamed model answer: ``event`` carries the caller's copy of the chunks (``caller``, the reader of the tap
    ``whole``, converted by ``show`` if given); ``message()`` reads the agent's copy to its end and joins it, which
    also completes the event's message for the run's history."""

    __slots__ = ("_close", "_joined", "_reason", "_record", "_whole", "event")

    def __init__(
        self,
        caller: MessageStream,
        whole: Tap[Message],
        reason: _Reason = None,
        close: Callable[[], Awaitable[None]] | None = None,
        *,
        show: Callable[[Message], Message | None] | None = None,
    ) -> None:
        # The chunks the caller reads are kept for its get_message(): the tap keeps them already, unless they are
        # converted (a conversion is rare, and costs a stage of its own).
        kept = whole
        if show is not None:
            caller, kept = caller.convert(show).keep()
        self.event: AgentEvent = event_from_message(stream=caller)
        self._whole = whole
        self._reason = reason
        self._close = close
        # The run's step log takes the whole message.
        self._record: Callable[[Message], Awaitable[None]] | None = None
        self._joined: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        variant = self.event.output.message_output  # type: ignore[union-attr]
        variant._joined = self._joined  # type: ignore[union-attr]
        variant._kept = kept  # type: ignore[union-attr]

    async def message(self) -> Message:
        try:
            message = concat_messages(await self._whole.chunks())
        except BaseException as error:
            self._joined.set_exception(error)
            self._joined.exception()  # retrieved here; history readers re-raise it
            if self._reason is not None and isinstance(error, Exception):
                await self._reason.end(error=error)
            raise
        self._joined.set_result(message)
        if self._record is not None:
            await self._record(message)
        if self._reason is not None:
            await self._reason.end(message)
        return message

    async def abandon(self) -> None:
        """The agent stops before joining the answer (its reader went away): nobody will join it. A read-ahead
        reply closes the model's stream at once; otherwise it closes when the caller's side is done too."""
        if not self._joined.done():
            self._joined.cancel()
            if self._close is not None:
                await self._close()
            else:
                await self._whole.reader_closed()


def _recorder(log: StepLog, address: Address, key: str) -> Callable[[Message], Awaitable[None]]:
    """What keeps a streamed answer in the run's step log, once joined."""

    async def record(message: Message) -> None:
        await log.record(key, message)
        log.replied(address)

    return record


async def _traced(stream: MessageStream, reason: _Reason) -> AsyncIterator[Message]:
    """``stream``'s chunks; at its end the model call's ``ReasonEnd`` with the whole message (or the error)."""
    if reason is None:
        try:
            async for chunk in stream:
                yield chunk
        finally:
            await stream.aclose()
        return
    chunks: list[Message] = []
    error: BaseException | None = StreamClosedError("the reader stopped before the model's answer ended")
    try:
        async for chunk in stream:
            chunks.append(chunk)
            yield chunk
        error = None
    except Exception as failure:
        error = failure
        raise
    finally:
        await stream.aclose()
        await reason.end(concat_messages(chunks) if error is None else None, error=error)


async def _resumed(
    held: list[Message], rest: MessageStream, on_end: Callable[[Message], None] | None
) -> AsyncIterator[Message]:
    """The chunks read ahead, then the rest of the stream; ``on_end`` gets the whole message at its end."""
    chunks = list(held)
    try:
        for chunk in held:
            yield chunk
        async for chunk in rest:
            chunks.append(chunk)
            yield chunk
    finally:
        await rest.aclose()
    if on_end is not None:
        on_end(concat_messages(chunks))


def is_empty_answer(message: Message) -> bool:
    """No text, no parts, no tool calls: nothing the caller could use (reasoning alone does not count)."""
    return not (message.tool_calls or message.parts or message.text.strip())


def _shows_something(chunk: Message) -> bool:
    return bool(chunk.tool_calls or chunk.parts or chunk.content.strip() or chunk.reasoning_content.strip())

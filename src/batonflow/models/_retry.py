"""Retrying a chat model with exponential backoff and jitter.

The backoff is the default of Eino's ``ModelRetryConfig``: ``base_delay·2^(attempt-1)``, capped at ``max_delay``,
plus up to ``jitter``·delay of random extra. Only transient failures are retried. A stream is retried only
while nothing has reached its reader: once a chunk was delivered, replaying the answer would duplicate it
(Solon's rule: never retry once stream output has been emitted). A provider that says how long to wait
(``ModelHTTPError.retry_after``, from its ``retry-after``) is waited for that long instead, up to ``max_delay``:
a longer wait is not retried, since trying earlier than asked only earns another refusal.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from ..errors import ModelConnectionError, ModelHTTPError, ModelTimeoutError, UserError
from ..schema import Message, MessageStream, Stream, ToolInfo
from ._base import ChatModel, ModelSettings, ToolChoice, check_tool_choice

__all__ = ["RetryingModel", "is_retryable_error", "with_retry"]

_RETRYABLE_STATUS = frozenset((408, 409, 429))


def is_retryable_error(error: BaseException) -> bool:
    """True for transient failures: connection errors, timeouts, HTTP 408, 409, 429 and 5xx."""
    if isinstance(error, ModelConnectionError | ModelTimeoutError):
        return True
    if isinstance(error, ModelHTTPError):
        return error.status_code in _RETRYABLE_STATUS or error.status_code >= 500
    return False


class RetryingModel:
    """``model``, with failed calls retried up to ``max_retries`` times (so at most ``max_retries + 1`` calls)."""

    def __init__(
        self,
        model: ChatModel,
        *,
        max_retries: int = 3,
        base_delay: float = 0.1,
        max_delay: float = 10.0,
        jitter: float = 0.5,
        is_retryable: Callable[[BaseException], bool] | None = None,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        if max_retries < 0:
            raise UserError(f"max_retries: expected 0 or more, got {max_retries}")
        self.model = model
        self.model_name = model.model_name
        self.max_retries = max_retries
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.jitter = jitter
        self.is_retryable = is_retryable or is_retryable_error
        self._sleep = sleep

    def __repr__(self) -> str:
        return f"RetryingModel({self.model!r}, max_retries={self.max_retries})"

    def backoff(self, attempt: int) -> float:
        """The delay before retrying after failed attempt number ``attempt`` (1-based)."""
        delay = min(self.base_delay * 2.0 ** (attempt - 1), self.max_delay)
        return delay + delay * self.jitter * random.random()

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> Message:
        attempt = 1
        while True:
            try:
                return await self.model.generate(messages, tools=tools, tool_choice=tool_choice, settings=settings)
            except Exception as error:
                if not self._should_retry(error, attempt):
                    raise
                delay = self._delay(error, attempt)
            await self._sleep(delay)
            attempt += 1

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> MessageStream:
        check_tool_choice(tools, tool_choice)
        return Stream.from_async_iter(self._chunks(messages, tools, tool_choice, settings))

    async def _chunks(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolInfo] | None,
        tool_choice: ToolChoice | None,
        settings: ModelSettings | None,
    ) -> AsyncIterator[Message]:
        attempt = 1
        while True:
            delivered = False
            inner = self.model.stream(messages, tools=tools, tool_choice=tool_choice, settings=settings)
            try:
                async for chunk in inner:
                    delivered = True
                    yield chunk
                return
            except Exception as error:
                if delivered or not self._should_retry(error, attempt):
                    raise
                delay = self._delay(error, attempt)
            finally:
                await inner.aclose()
            await self._sleep(delay)
            attempt += 1

    def _should_retry(self, error: Exception, attempt: int) -> bool:
        if attempt > self.max_retries or not self.is_retryable(error):
            if attempt > 1:
                error.add_note(f"{self.model_name!r}: gave up after {attempt} attempts")
            return False
        wait = _retry_after(error)
        if wait is not None and wait > self.max_delay:
            error.add_note(
                f"{self.model_name!r}: not retried: the provider asked to wait {wait:g} s, more than max_delay "
                f"({self.max_delay:g} s)"
            )
            return False
        return True

    def _delay(self, error: Exception, attempt: int) -> float:
        """The provider's ``retry-after`` when it gave one, else the backoff."""
        wait = _retry_after(error)
        return self.backoff(attempt) if wait is None else wait


def _retry_after(error: Exception) -> float | None:
    return error.retry_after if isinstance(error, ModelHTTPError) else None


def with_retry(
    model: ChatModel,
    *,
    max_retries: int = 3,
    base_delay: float = 0.1,
    max_delay: float = 10.0,
    jitter: float = 0.5,
    is_retryable: Callable[[BaseException], bool] | None = None,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> RetryingModel:
    """``model`` wrapped in a ``RetryingModel``."""
    return RetryingModel(
        model,
        max_retries=max_retries,
        base_delay=base_delay,
        max_delay=max_delay,
        jitter=jitter,
        is_retryable=is_retryable,
        sleep=sleep,
    )

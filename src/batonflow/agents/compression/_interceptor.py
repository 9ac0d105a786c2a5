"""The interceptor: brings the transcript back under its limits before every model call."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace

from ...adk import AgentMiddleware, ChatModelAgentState, RunContext
from ...errors import UserError
from ...schema import Message
from ...trace import ContextSize
from ._strategies import CompressionStrategy, check_count, check_strategy, is_prompt_too_long, tools_of
from ._summary import is_summary, summary_message
from ._tokens import cut_middle, estimate_tokens

__all__ = ["ContextCompressionInterceptor", "context_compression"]

_log = logging.getLogger("batonflow.agents")


def context_compression(
    *,
    max_messages: int = 15,
    max_context_ratio: float = 0.75,
    context_length: int = 128_000,
    strategy: CompressionStrategy | None = None,
    count_tokens: Callable[[Message], int] | None = None,
    max_retries: int = 3,
) -> AgentMiddleware:
    """A middleware that keeps the transcript under ``max_messages`` messages and ``context_length ×
    max_context_ratio`` tokens; see ``ContextCompressionInterceptor`` (Solon's name) for what it does."""
    return ContextCompressionInterceptor(
        max_messages=max_messages,
        max_context_ratio=max_context_ratio,
        context_length=context_length,
        strategy=strategy,
        count_tokens=count_tokens,
        max_retries=max_retries,
    )


class ContextCompressionInterceptor(AgentMiddleware):
    """Keeps a ChatModelAgent's transcript under ``max_messages`` messages and ``context_length ×
    max_context_ratio`` tokens (the threshold), as Solon's ContextCompressionInterceptor does.

    Before every model call:

    * MicroCompact: a message longer than ``max(2000, threshold // 2)`` tokens keeps its head and tail with a marker
      between them.
    * When the transcript has more than ``max_messages`` messages or more than ``threshold`` tokens, it is
      compressed. The task — the leading system message(s) and the messages before the first assistant message —
      is never touched. Of the rest, the most recent messages stay: half of what ``max_messages`` leaves after the
      task and the summary, and no more than fit in half of the token budget (the threshold less the task and a
      10% reserve for the summary), but never fewer than 3 or more than 20 — so that the next call does not
      compress again. A tool result is never kept without the assistant message that called it. What is older
      is replaced by one summary message from ``strategy`` (a user message headed ``[Summary of the earlier
      conversation, compressed to save context]``), or just dropped when there is no strategy.
    * After a compression, tool results without their call and empty assistant messages are removed.
    * A ``ContextSize`` trace event gives the message count and estimated tokens the model call gets, how many
      messages were removed and whether a summary replaced them (removed=0 when nothing was compressed).

    ``count_tokens`` measures a message (``estimate_tokens`` by default); ``max_retries`` is how many calls a
    strategy's model gets in all when it fails transiently (Solon's count: at least one, and no retry for 0 or 1).
    ``max_messages`` below 10 is raised to 10, as in the original.

    If the strategy fails (its model is down, say), nothing is lost: the transcript stays as it is and compression
    is tried again before the next model call — unless it no longer fits in ``context_length`` at all; then the old
    messages are dropped without a summary, since the model call would fail anyway. A ``UserError`` (a developer
    mistake) is not caught.
    """

    __slots__ = ("context_length", "count_tokens", "max_context_ratio", "max_messages", "max_retries", "strategy")

    def __init__(
        self,
        *,
        max_messages: int = 15,
        max_context_ratio: float = 0.75,
        context_length: int = 128_000,
        strategy: CompressionStrategy | None = None,
        count_tokens: Callable[[Message], int] | None = None,
        max_retries: int = 3,
    ) -> None:
        name = "ContextCompressionInterceptor"
        if type(max_messages) is not int:
            raise UserError(f"{name} max_messages: expected an int number of messages, got {max_messages!r}")
        if (
            isinstance(max_context_ratio, bool)
            or not isinstance(max_context_ratio, int | float)
            or not 0 < max_context_ratio <= 1
        ):
            raise UserError(f"{name} max_context_ratio: expected a number in (0, 1], got {max_context_ratio!r}")
        check_count(context_length, f"{name} context_length (tokens)", 1)
        if strategy is not None:
            check_strategy(strategy, f"{name} strategy")
        if count_tokens is not None and not callable(count_tokens):
            raise UserError(
                f"{name} count_tokens: expected a function of a Message, got {type(count_tokens).__qualname__}"
            )
        check_count(max_retries, f"{name} max_retries", 0)
        # The original's floor: Solon raises a maxMessages below 10 to 10 (its default is 15).
        self.max_messages = max(10, max_messages)
        self.max_context_ratio = float(max_context_ratio)
        self.context_length = context_length
        self.strategy = strategy
        self.count_tokens: Callable[[Message], int] = count_tokens if count_tokens is not None else estimate_tokens
        self.max_retries = max_retries
        super().__init__(
            before_chat_model=self._before_chat_model,
            on_model_error=self._on_model_error,
            additional_tools=tools_of(strategy) if strategy is not None else (),
        )

    def __repr__(self) -> str:
        return (
            f"ContextCompressionInterceptor(max_messages={self.max_messages}, "
            f"max_context_ratio={self.max_context_ratio}, context_length={self.context_length}, "
            f"strategy={self.strategy!r})"
        )

    @property
    def threshold(self) -> int:
        """The token count above which the transcript is compressed."""
        return int(self.context_length * self.max_context_ratio)

    @property
    def per_message_cap(self) -> int:
        """The most tokens one message may take (MicroCompact)."""
        return max(2000, self.threshold // 2)

    async def _before_chat_model(self, state: ChatModelAgentState, ctx: RunContext) -> None:
        messages = state.messages
        task = _task_end(messages)
        current: list[Message] = []
        tokens: list[int] = []
        changed = False
        for i, message in enumerate(messages):
            counted = self.count_tokens(message)
            if i >= task and not is_summary(message):
                capped, counted = self._micro_compact(message, counted)
                changed = changed or capped is not message
                message = capped
            current.append(message)
            tokens.append(counted)
        before, summarized = len(messages), False
        if len(current) > self.max_messages or sum(tokens) > self.threshold:
            compressed, tokens, summarized = await self._compress(current, tokens, task, ctx)
            if compressed is not current:
                current, changed = compressed, True
        if changed:
            messages[:] = current  # in place: the agent's loop state holds this very list
        await _report_size(ctx, before, current, tokens, summarized)

    async def _on_model_error(
        self, state: ChatModelAgentState, error: Exception, attempt: int, ctx: RunContext
    ) -> bool:
        """Solon's reason retry: a prompt the model found too long is compressed whatever the thresholds say, and
        the call made again — up to ``max_retries`` times a turn, and only while compressing removes something."""
        if attempt > self.max_retries or not is_prompt_too_long(error):
            return False
        messages = state.messages
        tokens = [self.count_tokens(m) for m in messages]
        compressed, counted, summarized = await self._compress(list(messages), tokens, _task_end(messages), ctx)
        if len(compressed) >= len(messages) and not summarized:
            return False
        before = len(messages)
        messages[:] = compressed
        await _report_size(ctx, before, compressed, counted, summarized)
        return True

    def _micro_compact(self, message: Message, tokens: int) -> tuple[Message, int]:
        cap = self.per_message_cap
        text = message.content
        if tokens <= cap or not text:
            return message, tokens
        keep = len(text) * cap // tokens
        for _ in range(32):  # shrinks by at least 5% a step; a count function that hardly moves gives up at 0
            capped = replace(message, content=cut_middle(text, keep))
            used = self.count_tokens(capped)
            if used <= cap or keep == 0:
                return capped, used
            keep = min(keep * cap // used, keep - max(1, keep // 20))
        capped = replace(message, content=cut_middle(text, 0))
        return capped, self.count_tokens(capped)

    def _kept_count(self, body_tokens: Sequence[int], task_messages: int, task_tokens: int) -> int:
        """How many of the most recent messages stay (Solon's dynamic minReservedMessages, clamped to [3, 20])."""
        by_count = (self.max_messages - task_messages - 1) // 2
        budget = (self.threshold - self.threshold // 10 - task_tokens) // 2
        fit = used = 0
        for counted in reversed(body_tokens):
            if used + counted > budget:
                break
            used += counted
            fit += 1
        return max(3, min(20, by_count, fit))

    async def _compress(
        self, messages: list[Message], tokens: list[int], task: int, ctx: RunContext
    ) -> tuple[list[Message], list[int], bool]:
        body = messages[task:]
        cut = len(body) - self._kept_count(tokens[task:], task, sum(tokens[:task]))
        # Never split a call from its results: a kept tool result brings its assistant message along.
        while 0 < cut < len(body) and body[cut].role == "tool":
            cut -= 1
        if cut <= 0:
            return messages, tokens, False
        summary: str | None = None
        if self.strategy is not None:
            try:
                summary = await self.strategy.compress(body[:cut], ctx, max_retries=self.max_retries)
            except UserError:
                raise
            except Exception as error:
                if sum(tokens) <= self.context_length:
                    _log.warning(
                        "context compression: %r failed, the transcript stays as it is: %s", self.strategy, error
                    )
                    return messages, tokens, False
                _log.warning(
                    "context compression: %r failed and the transcript exceeds %d tokens; "
                    "dropping the oldest messages without a summary: %s",
                    self.strategy,
                    self.context_length,
                    error,
                )
        text = summary.strip() if summary else ""
        result = messages[:task]
        if text:
            result.append(summary_message(text))
        result.extend(body[cut:])
        result = _without_orphans(result)
        known = {id(m): t for m, t in zip(messages, tokens, strict=True)}
        return result, [known[id(m)] if id(m) in known else self.count_tokens(m) for m in result], bool(text)


async def _report_size(
    ctx: RunContext, before: int, messages: Sequence[Message], tokens: Sequence[int], summarized: bool
) -> None:
    """The ``ContextSize`` event of a context that had ``before`` messages and now has ``messages``."""
    if ctx.trace is not None:
        removed = before - len(messages) + int(summarized)  # the summary is not a removal
        await ctx.trace.event(
            ContextSize, message_count=len(messages), tokens=sum(tokens), removed=removed, summarized=summarized
        )


def _task_end(messages: Sequence[Message]) -> int:
    """Where the task ends: the first assistant message (or summary). Solon tags these messages `_first`."""
    for i, message in enumerate(messages):
        if message.role == "assistant" or is_summary(message):
            return i
    return len(messages)


def _without_orphans(messages: Sequence[Message]) -> list[Message]:
    """``messages`` less tool results that do not follow their call and assistant messages with nothing in them."""
    kept: list[Message] = []
    open_calls: set[str] = set()
    for message in messages:
        if message.role == "tool":
            if message.tool_call_id in open_calls:
                open_calls.discard(message.tool_call_id)
                kept.append(message)
            continue
        if message.role == "assistant" and not message.tool_calls and not message.text.strip() and not message.parts:
            continue
        open_calls = {call.id for call in message.tool_calls} if message.role == "assistant" else set()
        kept.append(message)
    return kept

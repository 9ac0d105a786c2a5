"""Compression strategies: what replaces the messages a compression removes (summaries written by a model, a list
of key facts, a rolling summary), and the composite that runs several of them."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ...adk import RunContext
from ...adk.loop import ModelRetryConfig, ModelStep
from ...errors import ModelError, ModelHTTPError, UserError
from ...models import ChatModel
from ...schema import Message, system, user
from ...tools import Tool, format_address
from ._summary import is_summary, render, summary_text
from ._tokens import cut_middle, truncate_tokens

__all__ = [
    "CompositeStrategy",
    "CompressionStrategy",
    "HierarchicalSummaryStrategy",
    "KeyInfoExtractionStrategy",
    "LLMSummaryStrategy",
    "check_count",
    "check_strategy",
    "is_prompt_too_long",
    "tools_of",
]

_log = logging.getLogger("batonflow.agents")


@runtime_checkable
class CompressionStrategy(Protocol):
    """Turns the messages a compression removes into the text the model reads instead, or None for nothing.

    ``messages`` are the expired messages, oldest first; the previous summary, if any, comes first among them
    (``[Summary of the earlier conversation, …]``). Per-run state belongs in ``ctx``'s session values. A model
    call should be made up to ``max_retries`` times in all (at least once) on transient errors, as Solon counts
    them. A strategy may also have a ``tools``
    attribute: the interceptor gives those tools to the agent (an archive's search, say).
    """

    async def compress(self, messages: Sequence[Message], ctx: RunContext, *, max_retries: int) -> str | None: ...


_PROMPT_TOO_LONG = (
    "context length",
    "context_length",
    "context window",
    "context size",
    "maximum context",
    "too long",
    "too many tokens",
)


def is_prompt_too_long(error: BaseException) -> bool:
    if not isinstance(error, ModelError):
        return False
    # 429 "too many tokens per minute" is a rate limit, not a long prompt.
    if isinstance(error, ModelHTTPError) and error.status_code not in (400, 413, 422):
        return False
    text = f"{error} {getattr(error, 'body', '')}".lower()
    return any(phrase in text for phrase in _PROMPT_TOO_LONG)


_MIN_HALVED = 200  # characters: a prompt shorter than this is not halved further
_MAX_SHRINKS = 3  # Solon's count of prompt-too-long retries: the fourth such error fails the compression


def _halved(lines: list[str]) -> list[str] | None:
    """The later half of ``lines`` (or half of a single one), or None when there is nothing left to drop."""
    if len(lines) > 1:
        return lines[len(lines) // 2 :]
    if lines and len(lines[0]) > _MIN_HALVED:
        return [cut_middle(lines[0], len(lines[0]) // 2)]
    return None


async def _ask(
    model: ChatModel,
    instruction: str,
    preamble: str,
    lines: Sequence[str],
    max_retries: int,
    ctx: RunContext,
    *,
    halve: bool = True,
) -> str:
    """The model's answer to ``instruction`` on ``preamble`` plus ``lines``, asked through a model step (traced and
    counted in the run like the agent's own calls); transient errors are retried, and on a prompt-too-long error
    (with ``halve``) the older half of ``lines`` is dropped and the call made again, up to three times. An empty answer is an error:
    a summary of nothing would lose the messages it replaces."""
    # Solon's count: max_retries calls in all, and at least one.
    retry = ModelRetryConfig(max_retries=max(1, max_retries) - 1)
    step = ModelStep(model, retry=retry.rule(repr(model.model_name)))
    remaining = list(lines)
    shrunk = 0
    while True:
        prompt = preamble + "\n\n".join(remaining)
        try:
            answer = await step.generate([system(instruction), user(prompt)], None, ctx)
        except Exception as error:
            too_long = halve and shrunk < _MAX_SHRINKS and is_prompt_too_long(error)
            shorter = _halved(remaining) if too_long else None
            if shorter is None:
                raise
            remaining, shrunk = shorter, shrunk + 1
            continue
        text = answer.text.strip()
        if not text:
            raise ModelError(
                f"{model.model_name!r} answered a compression request with nothing", model=model.model_name
            )
        return text


def _check_model(model: object, owner: str) -> ChatModel:
    if not isinstance(model, ChatModel):
        raise UserError(f"{owner} model: expected a ChatModel, got {type(model).__qualname__}")
    return model


def check_count(value: object, what: str, minimum: int) -> int:
    if type(value) is not int or value < minimum:
        raise UserError(f"{what}: expected an int >= {minimum}, got {value!r}")
    return value


_SUMMARY_PROMPT = (
    "You compress the earlier part of an AI agent's working conversation so that the agent can carry on with its "
    "task. Write a progress summary of at most {max_chars} characters: what has been done, what was found (names, "
    "numbers and identifiers exactly as they appear), and what is still open. If a summary so far is given, fold it "
    "in. Reply with the summary only."
)


class LLMSummaryStrategy:
    """A progress summary of at most ``max_chars`` characters (about 300, as in the original) written by ``model``.

    A previous summary is folded in. On a prompt-too-long error the older half of the messages is dropped and the
    summary asked for again (the previous summary always stays in the prompt).
    """

    def __init__(self, model: ChatModel, *, max_chars: int = 300) -> None:
        self.model = _check_model(model, "LLMSummaryStrategy")
        self.max_chars = check_count(max_chars, "LLMSummaryStrategy max_chars", 1)

    def __repr__(self) -> str:
        return f"LLMSummaryStrategy({self.model!r}, max_chars={self.max_chars})"

    async def compress(self, messages: Sequence[Message], ctx: RunContext, *, max_retries: int) -> str | None:
        earlier = [summary_text(m) for m in messages if is_summary(m)]
        lines = [render(m) for m in messages if not is_summary(m)]
        preamble = "Summary so far:\n" + "\n".join(earlier) + "\n\n" if earlier else ""
        instruction = _SUMMARY_PROMPT.format(max_chars=self.max_chars)
        return await _ask(self.model, instruction, preamble + "Messages:\n", lines, max_retries, ctx)


_KEY_INFO_PROMPT = (
    "You extract what an AI agent must remember from the earlier part of its working conversation. List the facts "
    "learned, the parameters and identifiers used (with their exact values), and the conclusions and decisions "
    "reached, as a Markdown bullet list with one short item per line. Leave out greetings, reasoning steps and "
    "anything later messages superseded. Reply with the list only."
)
_KEY_INFO_HEADER = "Key facts, parameters and conclusions:"


class KeyInfoExtractionStrategy:
    """The facts, parameters and conclusions of the expired messages as a bullet list, extracted by ``model``."""

    def __init__(self, model: ChatModel) -> None:
        self.model = _check_model(model, "KeyInfoExtractionStrategy")

    def __repr__(self) -> str:
        return f"KeyInfoExtractionStrategy({self.model!r})"

    async def compress(self, messages: Sequence[Message], ctx: RunContext, *, max_retries: int) -> str | None:
        lines = [render(m) for m in messages]
        listed = await _ask(self.model, _KEY_INFO_PROMPT, "Messages:\n", lines, max_retries, ctx)
        return f"{_KEY_INFO_HEADER}\n{listed}"


_ROLLING_PROMPT = (
    "You keep the running summary of an AI agent's working conversation. Merge the current summary and the new "
    "messages into one updated summary of at most {max_tokens} tokens (about {max_chars} characters): the goal, "
    "what has been done, results with their exact values, and what is still open. Drop what the new messages "
    "supersede. Reply with the updated summary only."
)


def _scoped_key(name: str, ctx: RunContext) -> str:
    # Per agent: two agents of one run (or parallel branches) must not share a summary or an archive.
    return f"_compression.{name}@{format_address(ctx.address)}"


class HierarchicalSummaryStrategy:
    """A rolling summary: each compression folds the newly expired messages into the previous summary.

    The summary is kept in the run's session values (so it survives a checkpoint and a resume) under a key of the
    agent's address, and cut to ``max_summary_tokens`` estimated tokens when the model writes more. When the model
    finds the prompt too long, the messages are split where no call is parted from its results, near the middle,
    as Solon does: the older half is folded in first, then the newer half into that, so nothing is left out (a half
    still too long fails the compression, which then loses nothing either).
    """

    def __init__(self, model: ChatModel, *, max_summary_tokens: int = 500) -> None:
        self.model = _check_model(model, "HierarchicalSummaryStrategy")
        self.max_summary_tokens = check_count(max_summary_tokens, "HierarchicalSummaryStrategy max_summary_tokens", 1)

    def __repr__(self) -> str:
        return f"HierarchicalSummaryStrategy({self.model!r}, max_summary_tokens={self.max_summary_tokens})"

    async def compress(self, messages: Sequence[Message], ctx: RunContext, *, max_retries: int) -> str | None:
        key = _scoped_key("rolling_summary", ctx)
        stored = ctx.get_session_value(key)
        previous = stored if isinstance(stored, str) else None
        # The summary message in the transcript is the rolling summary itself: do not feed it in twice.
        fresh = [m for m in messages if previous is None or not is_summary(m)]
        if not fresh:
            return previous
        try:
            text = await self._merged(previous, fresh, max_retries, ctx)
        except Exception as error:
            split = _middle_boundary(fresh) if is_prompt_too_long(error) else None
            if split is None:
                raise
            older = await self._merged(previous, fresh[:split], max_retries, ctx)
            text = await self._merged(older, fresh[split:], max_retries, ctx)
        if not text:
            return previous
        ctx.add_session_value(key, text)
        return text

    async def _merged(
        self, previous: str | None, messages: Sequence[Message], max_retries: int, ctx: RunContext
    ) -> str:
        """``messages`` folded into ``previous``, cut to the summary's size."""
        preamble = f"Current summary:\n{previous or '(none yet)'}\n\nNew messages:\n"
        instruction = _ROLLING_PROMPT.format(max_tokens=self.max_summary_tokens, max_chars=4 * self.max_summary_tokens)
        lines = [render(m) for m in messages]
        text = await _ask(self.model, instruction, preamble, lines, max_retries, ctx, halve=False)
        return truncate_tokens(text, self.max_summary_tokens)


def _middle_boundary(messages: Sequence[Message]) -> int | None:
    """The split nearest the middle of ``messages`` that parts no call from its results; None when there is none."""
    boundaries: list[int] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if message.role == "assistant" and message.tool_calls:
            while index < len(messages) and messages[index].role == "tool":
                index += 1
        if index < len(messages):
            boundaries.append(index)
    if not boundaries:
        return None
    middle = len(messages) / 2
    return min(boundaries, key=lambda b: abs(b - middle))


def check_strategy(strategy: object, what: str) -> CompressionStrategy:
    if not isinstance(strategy, CompressionStrategy):
        raise UserError(
            f"{what}: expected a CompressionStrategy (an object with async compress()), "
            f"got {type(strategy).__qualname__}"
        )
    return strategy


def tools_of(strategy: CompressionStrategy) -> tuple[Tool, ...]:
    tools = tuple(getattr(strategy, "tools", ()))
    for item in tools:
        if not isinstance(item, Tool):
            raise UserError(f"{type(strategy).__qualname__}.tools: expected tools, got {type(item).__qualname__}")
    return tools


class CompositeStrategy:
    """Runs every strategy, one after the other, and joins what they write with a Markdown rule (``---``).

    A strategy that fails is left out and logged; only when all fail does the composite fail (with the first error).
    The composite has the tools of all its strategies.
    """

    def __init__(self, *strategies: CompressionStrategy) -> None:
        if not strategies:
            raise UserError("CompositeStrategy: expected at least one strategy, got none")
        self.strategies = tuple(check_strategy(s, f"CompositeStrategy strategy {i}") for i, s in enumerate(strategies))
        self.tools = tuple(t for s in self.strategies for t in tools_of(s))

    def __repr__(self) -> str:
        return f"CompositeStrategy({', '.join(map(repr, self.strategies))})"

    async def compress(self, messages: Sequence[Message], ctx: RunContext, *, max_retries: int) -> str | None:
        parts: list[str] = []
        errors: list[Exception] = []
        for strategy in self.strategies:
            try:
                text = await strategy.compress(messages, ctx, max_retries=max_retries)
            except UserError:
                raise
            except Exception as error:
                _log.warning("context compression: %r failed, its part is left out: %s", strategy, error)
                errors.append(error)
                continue
            if text and text.strip():
                parts.append(text.strip())
        if errors and not parts:
            raise errors[0]
        return "\n\n---\n\n".join(parts) or None

"""The interceptor: brings the transcript back under its limits before every model call."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ...adk import AgentMiddleware, ChatModelAgentState, RunContext
from ...errors import UserError
from ...schema import Message, TextPart
from ...trace import ContextSize
from ._strategies import CompressionStrategy, check_count, check_strategy, is_prompt_too_long, tools_of
from ._summary import is_summary, summary_message
from ._tokens import cut_middle, estimate_tokens
from ._window import atomic_range, first_end, group_start, is_thought, mark_first, valid_groups

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
    message_trigger_factor: float = 1.0,
    trim_to_max_messages: bool = True,
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
        message_trigger_factor=message_trigger_factor,
        trim_to_max_messages=trim_to_max_messages,
    )


class ContextCompressionInterceptor(AgentMiddleware):
    """Keeps a ChatModelAgent's transcript under ``max_messages`` messages and ``context_length ×
    max_context_ratio`` tokens (the threshold), as Solon's ContextCompressionInterceptor does.

    The messages a run starts from — the system prompt, the history it was fed and the current prompt — are its
    first chain: tagged when the run starts, never compressed, cut or shortened, and not counted against
    ``max_messages``. Before every model call:

    * MicroCompact: a later message longer than ``max(2000, threshold // 2)`` tokens keeps its head and tail, with
      Solon's trim marker (in the active language) between them; an assistant message that calls tools, and a
      message with media, are never cut.
    * When more than ``max_messages`` messages follow the first chain, or the transcript has more than
      ``threshold`` tokens, it is compressed. Of the messages after the first chain, the latest ``max_messages``
      stay, and no more than fit in the token budget (the threshold less the first chain and a summary reserve of
      10%, at least 200 tokens) — but at least the recent messages that fit in a quarter of that budget, 3 to 20 of
      them. The cut moves back so that no tool result loses its call, and to the assistant's thought just before it,
      if there is one. What is older is replaced by one summary message from ``strategy`` (a user message headed
      ``[Summary of the earlier conversation, compressed to save context]``), or dropped when there is no strategy
      (earlier summaries are kept then).
    * The result is made valid for strict providers: an assistant message whose tool calls do not each have one
      result goes with its results, results without their call go, and so do empty assistant messages. If it is
      still over the budget, whole groups go, oldest first — plain messages, then older summaries — but never the
      reserved recent messages or the kept thought. Then, as Solon's convergeToBudget, messages go the same way
      until no more than ``max_messages`` follow the first chain (a summary and the kept thought count): this
      time only the kept thought is spared, so 20 steps over ``max_messages=10`` become 10, the thought among
      them. ``trim_to_max_messages=False`` skips that step: the cut is where it was made, so the latest
      ``max_messages``, moved back to whole call groups and to the thought before them, stay (11 of the 20).
    * A ``ContextSize`` trace event gives the message count and estimated tokens the model call gets, how many
      messages were removed and whether a summary replaced them (removed=0 when nothing was compressed).

    When the model refuses a prompt as too long, it is compressed whatever the thresholds say and the call is made
    again (Solon's reason retry), the kept part shrinking with each failure of the turn: to 0.8, 0.6, 0.4, then 0.25
    of the messages after the first chain and of the budget.

    Once over ``max_messages``, every turn adds messages and compresses again (with a strategy, a summary each
    turn). ``message_trigger_factor`` (Solon's ``messageTriggerFactor``, 1.0 by default) starts compressing only
    above ``max_messages × factor`` messages, still keeping ``max_messages``: 1.5 with 15 compresses at 23, down to
    15, so that several turns pass between two compressions.

    ``count_tokens`` measures a message (``estimate_tokens`` by default); ``max_retries`` is how many calls a
    strategy's model gets in all when it fails transiently (Solon's count: at least one, and no retry for 0 or 1),
    and how many prompt-too-long failures of a turn are compressed and retried. ``max_messages`` below 10 is raised
    to 10, as in the original.

    If the strategy fails (its model is down, say), nothing is lost: the transcript stays as it is and compression
    is tried again before the next model call — unless it no longer fits in ``context_length`` at all; then the old
    messages are dropped without a summary, since the model call would fail anyway. A ``UserError`` (a developer
    mistake) is not caught.
    """

    __slots__ = (
        "context_length",
        "count_tokens",
        "max_context_ratio",
        "max_messages",
        "max_retries",
        "message_trigger_factor",
        "strategy",
        "trim_to_max_messages",
    )

    def __init__(
        self,
        *,
        max_messages: int = 15,
        max_context_ratio: float = 0.75,
        context_length: int = 128_000,
        strategy: CompressionStrategy | None = None,
        count_tokens: Callable[[Message], int] | None = None,
        max_retries: int = 3,
        message_trigger_factor: float = 1.0,
        trim_to_max_messages: bool = True,
    ) -> None:
        name = "ContextCompressionInterceptor"
        if not isinstance(trim_to_max_messages, bool):
            raise UserError(f"{name} trim_to_max_messages: expected a bool, got {trim_to_max_messages!r}")
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
        if isinstance(message_trigger_factor, bool) or not isinstance(message_trigger_factor, int | float):
            raise UserError(f"{name} message_trigger_factor: expected a number >= 1.0, got {message_trigger_factor!r}")
        if not 1.0 <= message_trigger_factor < math.inf:
            raise UserError(f"{name} message_trigger_factor: expected a number >= 1.0, got {message_trigger_factor!r}")
        # The original's floor: Solon raises a maxMessages below 10 to 10 (its default is 15).
        self.max_messages = max(10, max_messages)
        self.max_context_ratio = float(max_context_ratio)
        self.context_length = context_length
        self.strategy = strategy
        self.count_tokens: Callable[[Message], int] = count_tokens if count_tokens is not None else estimate_tokens
        self.max_retries = max_retries
        self.message_trigger_factor = float(message_trigger_factor)
        self.trim_to_max_messages = trim_to_max_messages
        super().__init__(
            before_agent=self._first_chain,
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
    def _message_trigger(self) -> int:
        """How many messages after the first chain start a compression (Solon's hysteresis)."""
        return math.ceil(self.max_messages * self.message_trigger_factor)

    @property
    def per_message_cap(self) -> int:
        """The most tokens one message may take (MicroCompact)."""
        return max(2000, self.threshold // 2)

    def _first_chain(self, state: ChatModelAgentState, ctx: RunContext) -> None:
        # Solon tags the history and the prompt a run starts from: they are never compressed or cut.
        state.messages[:] = mark_first(state.messages)

    async def _before_chat_model(self, state: ChatModelAgentState, ctx: RunContext) -> None:
        await self._fit(state, ctx, 0)

    async def _on_model_error(
        self, state: ChatModelAgentState, error: Exception, attempt: int, ctx: RunContext
    ) -> bool:
        """Solon's reason retry: a prompt the model found too long is compressed whatever the thresholds say, the
        kept part shrinking with each failure of the turn (to 0.8, 0.6, 0.4, then 0.25 of it), and the call made
        again — up to ``max_retries`` times a turn, and only while compressing removes something."""
        if attempt > self.max_retries or not is_prompt_too_long(error):
            return False
        return await self._fit(state, ctx, attempt)

    async def _fit(self, state: ChatModelAgentState, ctx: RunContext, level: int) -> bool:
        """Bring the transcript under the limits (``level`` > 0: after that many prompt-too-long failures);
        whether it changed."""
        messages = state.messages
        first = first_end(messages)
        current, tokens = self._micro_compacted(messages, first)
        changed = _differs(current, messages)
        before, summarized = len(messages), False
        if level or len(current) - first > self._message_trigger or sum(tokens) > self.threshold:
            compressed = await self._compress(current, tokens, first, ctx, level)
            if compressed is not None and (compressed[2] or _differs(compressed[0], current)):
                current, tokens, summarized = compressed
                changed = True
        if changed:
            messages[:] = current  # in place: the agent's loop state holds this very list
        await _report_size(ctx, before, current, tokens, summarized)
        return changed

    def _micro_compacted(self, messages: list[Message], first: int) -> tuple[list[Message], list[int]]:
        """MicroCompact: each message of the variable part capped, but never one that calls tools or holds media."""
        current: list[Message] = []
        tokens: list[int] = []
        for i, message in enumerate(messages):
            counted = self.count_tokens(message)
            if i >= first and not is_summary(message) and not message.tool_calls and not _has_media(message):
                message, counted = self._capped(message, counted)
            current.append(message)
            tokens.append(counted)
        return current, tokens

    def _capped(self, message: Message, tokens: int) -> tuple[Message, int]:
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

    async def _compress(
        self, messages: list[Message], tokens: list[int], first: int, ctx: RunContext, level: int
    ) -> tuple[list[Message], list[int], bool] | None:
        """The compressed transcript, its token counts and whether a summary is in it; None to leave it as it is.

        The cut is Solon's: the first chain stays; of the rest, the latest ``max_messages`` messages (after a
        prompt-too-long failure, a share of them) and what fits in the token budget less a summary reserve, but
        at least the recent messages that fit in a quarter of it (3 to 20) unless forced; moved back so that no
        result loses its call, and to the thought just before, if there is one."""
        fixed = sum(tokens[:first])
        budget = self.threshold
        if fixed >= budget:
            _log.warning(
                "context compression: the first chain alone (%d tokens) exceeds %d; keeping it only", fixed, budget
            )
            return messages[:first], tokens[:first], False
        ratio = _FORCE_RATIOS[min(level, len(_FORCE_RATIOS)) - 1] if level else 1.0
        if level:
            budget = min(budget, max(min(1000, budget), int(budget * ratio)))
        available = budget - fixed
        if available <= 0:
            return messages[:first], tokens[:first], False
        window = available - min(available, max(200, available // 10))  # less the summary's reserve
        cut, spared, thought = self._cut(tokens, messages, first, window, ratio if level else None)
        head: list[Message] = []
        summarized = False
        if cut > first:
            expired = messages[first:cut]
            keep, summary = await self._summary(expired, tokens, ctx)
            if keep:
                return None
            if summary:
                head, summarized = [summary_message(summary)], True
            else:
                head = [m for m in expired if is_summary(m)]  # what was summarised before is not lost
        variable = len(messages) - first
        limit = self._message_budget(variable, ratio if level else None) if self.trim_to_max_messages else None
        rebuilt = self._rebuilt(messages, tokens, first, head, cut, budget, _Spared(spared, thought, limit))
        return (*rebuilt, summarized)

    def _message_budget(self, variable: int, ratio: float | None) -> int:
        """How many messages may follow the first chain after a compression: ``max_messages``, or after a
        prompt-too-long failure the share of them that ``ratio`` keeps."""
        return self.max_messages if ratio is None else max(1, math.ceil(variable * ratio))

    def _cut(
        self, tokens: list[int], messages: list[Message], first: int, window: int, ratio: float | None
    ) -> tuple[int, set[int], int | None]:
        """Where the kept part starts, the messages (by id) that meeting the token budget may not drop (the thought
        kept with the cut and, unless forced, the reserved recent messages), and the kept thought's id."""
        n = len(messages)
        by_count = max(first, n - self._message_budget(n - first, ratio))
        by_tokens, running = first, 0
        for i in range(n - 1, first - 1, -1):
            running += tokens[i]
            if running > window:
                by_tokens = i + 1
                break
        reserved = max(first, n - (0 if ratio is not None else _min_reserved(tokens, first, window)))
        cut = group_start(messages, max(by_count, min(by_tokens, reserved)), first)
        spared = {id(m) for m in messages[group_start(messages, reserved, first) :]}
        thought: int | None = None
        if ratio is None and cut > first and is_thought(messages[cut - 1]):
            cut -= 1
            thought = id(messages[cut])
            spared.add(thought)
        if sum(tokens[cut:]) > window and by_tokens <= reserved:
            # Over the budget, and not because the reserve kept more: back to the cut the budget makes.
            cut = group_start(messages, max(first, by_tokens), first)
        return cut, spared, thought

    async def _summary(self, expired: list[Message], tokens: list[int], ctx: RunContext) -> tuple[bool, str | None]:
        """Whether to keep the transcript as it is — the strategy failed and the transcript still fits the model:
        nothing is lost, and the next model call tries again — and the strategy's summary of ``expired``."""
        if self.strategy is None:
            return False, None
        try:
            summary = await self.strategy.compress(expired, ctx, max_retries=self.max_retries)
        except UserError:
            raise
        except Exception as error:
            if sum(tokens) <= self.context_length:
                _log.warning("context compression: %r failed, the transcript stays as it is: %s", self.strategy, error)
                return True, None
            _log.warning(
                "context compression: %r failed and the transcript exceeds %d tokens; "
                "dropping the oldest messages without a summary: %s",
                self.strategy,
                self.context_length,
                error,
            )
            return False, None
        return False, summary.strip() if summary else None

    def _rebuilt(
        self,
        messages: list[Message],
        tokens: list[int],
        first: int,
        head: list[Message],
        cut: int,
        budget: int,
        spared: _Spared,
    ) -> tuple[list[Message], list[int]]:
        """The first chain, ``head``, then the kept part, made valid for strict providers and brought under
        ``budget`` tokens and ``spared.limit`` messages after the first chain by dropping whole groups: plain
        history first, then older summaries, the latest summary last. Meeting the token budget never drops what
        ``spared.tokens`` names; meeting the message count (Solon's convergeToBudget) spares the kept thought only."""
        known = {id(m): t for m, t in zip(messages, tokens, strict=True)}
        result = messages[:first] + valid_groups([*head, *messages[cut:]])
        counted = [known[id(m)] if id(m) in known else self.count_tokens(m) for m in result]
        while True:
            if sum(counted) > budget:
                index = _removable(result, first, spared.tokens)
            elif spared.limit is not None and len(result) - first > spared.limit:
                index = _removable(result, first, spared.count)
            else:
                break
            if index is None:
                _log.warning(
                    "context compression: nothing more may go; kept %d messages and %d tokens (budget: %s messages, "
                    "%d tokens)",
                    len(result) - first,
                    sum(counted),
                    spared.limit,
                    budget,
                )
                break
            start, end = atomic_range(result, index, first)
            result = result[:first] + valid_groups(result[first:start] + result[end:])
            counted = [known[id(m)] if id(m) in known else self.count_tokens(m) for m in result]
        return result, counted


@dataclass(slots=True, frozen=True)
class _Spared:
    """What bringing a compressed transcript under its limits may not drop: for the token budget, the messages
    ``tokens`` names; for the message count ``limit`` (None: no limit), the kept ``thought`` only."""

    tokens: set[int]
    thought: int | None
    limit: int | None

    @property
    def count(self) -> set[int]:
        return set() if self.thought is None else {self.thought}


# Solon's shrinking of the kept part after the 1st, 2nd, 3rd and further prompt-too-long failures of a turn.
_FORCE_RATIOS = (0.8, 0.6, 0.4, 0.25)


def _min_reserved(tokens: Sequence[int], first: int, window: int) -> int:
    """Solon's dynamic minReservedMessages: the recent messages that fit in a quarter of the window (at least
    one), clamped to [3, 20]."""
    budget = window // 4
    count = running = 0
    for i in range(len(tokens) - 1, first - 1, -1):
        running += tokens[i]
        if count and running > budget:
            break
        count += 1
    return min(20, max(3, count))


def _removable(messages: Sequence[Message], first: int, spared: set[int]) -> int | None:
    """The next message to drop to meet the budget: the oldest plain one, else an older summary, else the latest."""
    open_ = [i for i in range(first, len(messages)) if id(messages[i]) not in spared]
    plain = [i for i in open_ if not is_summary(messages[i])]
    summaries = [i for i in open_ if is_summary(messages[i])]
    if plain:
        return plain[0]
    return summaries[0] if summaries else None


def _differs(new: Sequence[Message], old: Sequence[Message]) -> bool:
    return len(new) != len(old) or any(a is not b for a, b in zip(new, old, strict=True))


def _has_media(message: Message) -> bool:
    return any(not isinstance(p, TextPart) for p in message.parts)


async def _report_size(
    ctx: RunContext, before: int, messages: Sequence[Message], tokens: Sequence[int], summarized: bool
) -> None:
    """The ``ContextSize`` event of a context that had ``before`` messages and now has ``messages``."""
    if ctx.trace is not None:
        removed = before - len(messages) + int(summarized)  # the summary is not a removal
        await ctx.trace.event(
            ContextSize, message_count=len(messages), tokens=sum(tokens), removed=removed, summarized=summarized
        )

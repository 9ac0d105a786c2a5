"""Solon-AI's context compression as a ``ChatModelAgent`` middleware (reference §B.2, ContextCompressionInterceptor).

Before each model call the transcript is brought back under two limits — a message count and a share of the model's
context length — so that a long ReAct loop keeps going instead of failing on a prompt that grew too long:

1. every message after the task is capped at ``max(2000, threshold // 2)`` tokens, its head and tail kept
   (MicroCompact);
2. with more than ``max_messages`` messages or more than ``threshold`` tokens, the oldest messages after the task
   are replaced by one summary message that a ``CompressionStrategy`` writes (or just dropped, without one); recent
   messages stay, and a tool call always stays together with its results;
3. tool results whose call is gone, and empty assistant messages, are removed, so that strict providers accept
   the transcript.

A ``ContextSize`` trace event gives the size of every model call's context. The interceptor keeps no state of its
own: what a strategy carries from one compression to the next (a rolling summary, the key of an archive) lives in
the run's session values, which a checkpoint saves, so one interceptor serves any number of agents and runs.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
import math
import re
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Protocol, TypeAlias, runtime_checkable

from ..adk import AgentMiddleware, ChatModelAgentState, RunContext
from ..errors import ModelError, ModelHTTPError, UserError
from ..models import ChatModel, RetryingModel
from ..schema import Message, TextPart, system, user
from ..tools import Tool, ToolContext, format_address, tool
from ..trace import ContextSize

__all__ = [
    "CompositeStrategy",
    "CompressionStrategy",
    "ContextCompressionInterceptor",
    "Embedder",
    "HierarchicalSummaryStrategy",
    "InMemoryVectorStore",
    "KeyInfoExtractionStrategy",
    "LLMSummaryStrategy",
    "VectorStore",
    "VectorStoreArchiveStrategy",
    "estimate_tokens",
]

_log = logging.getLogger("batonflow.agents")

# -- token estimate ------------------------------------------------------------------------------------------------

_MESSAGE_OVERHEAD = 4  # role and separators, as chat templates frame each message
_MEDIA_PART_TOKENS = 85  # an image at low detail on OpenAI; a guess for other media


def estimate_tokens(message: Message) -> int:
    """A cheap, offline estimate of the tokens ``message`` takes in a prompt (the interceptor's default).

    About four ASCII characters make a token; any other character counts as one (CJK text runs close to a token a
    character). Tool calls count their names and arguments, each image or audio part 85 tokens, and every message
    4 tokens for its framing. It errs on the high side for non-English text, which is the safe side here.
    """
    tokens = _MESSAGE_OVERHEAD + _MEDIA_PART_TOKENS * sum(1 for p in message.parts if not isinstance(p, TextPart))
    tokens += _text_tokens(message.text)
    for call in message.tool_calls:
        tokens += _text_tokens(call.function.name) + _text_tokens(call.function.arguments)
    return tokens


def _text_tokens(text: str) -> int:
    ascii_chars = len(text.encode("ascii", "ignore"))
    return math.ceil(ascii_chars / 4) + len(text) - ascii_chars


def _cut_middle(text: str, keep: int) -> str:
    """``text`` with all but ``keep`` characters of its middle replaced by a marker saying how many went."""
    keep = max(0, keep)
    head = (keep + 1) // 2
    tail = keep - head
    omitted = len(text) - keep
    return f"{text[:head]}\n[... {omitted} characters omitted to save context ...]\n{text[len(text) - tail :]}"


def _truncate_tokens(text: str, limit: int) -> str:
    """The start of ``text`` that fits in ``limit`` estimated tokens."""
    tokens = _text_tokens(text)
    if tokens <= limit:
        return text
    keep = len(text) * limit // tokens
    while keep > 0 and _text_tokens(text[:keep]) > limit:
        keep -= max(1, keep // 20)
    return text[:keep].rstrip()


# -- the summary message -----------------------------------------------------------------------------------------

# Solon tags its summary message `_compressed`; here the tag lives in `extra`, which checkpoints keep and providers
# never see, so that a later compression recognises the summary and folds it into the next one.
_SUMMARY_TAG = "compressed"
_SUMMARY_HEADER = "[Summary of the earlier conversation, compressed to save context]"


def _summary_message(text: str) -> Message:
    # A user message: strict chat templates accept a system message only at the start.
    return Message(role="user", content=f"{_SUMMARY_HEADER}\n{text}", extra={_SUMMARY_TAG: True})


def _is_summary(message: Message) -> bool:
    return message.extra.get(_SUMMARY_TAG) is True


def _summary_text(message: Message) -> str:
    return message.content.removeprefix(_SUMMARY_HEADER).strip()


def _render(message: Message) -> str:
    """One message as a strategy's model reads it."""
    if _is_summary(message):
        return f"summary of earlier messages: {_summary_text(message)}"
    label: str = message.role
    if message.role == "tool":
        label = f"tool result ({message.tool_name})" if message.tool_name else "tool result"
    lines = [f"{label}: {message.text}".rstrip()]
    lines.extend(f"  calls {call.function.name}({call.function.arguments})" for call in message.tool_calls)
    return "\n".join(lines)


# -- strategies ----------------------------------------------------------------------------------------------------


@runtime_checkable
class CompressionStrategy(Protocol):
    """Turns the messages a compression removes into the text the model reads instead, or None for nothing.

    ``messages`` are the expired messages, oldest first; the previous summary, if any, comes first among them
    (``[Summary of the earlier conversation, …]``). Per-run state belongs in ``ctx``'s session values. Model
    calls should be retried ``max_retries`` times on transient errors. A strategy may also have a ``tools``
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


def _is_prompt_too_long(error: BaseException) -> bool:
    if not isinstance(error, ModelError):
        return False
    # 429 "too many tokens per minute" is a rate limit, not a long prompt.
    if isinstance(error, ModelHTTPError) and error.status_code not in (400, 413, 422):
        return False
    text = f"{error} {getattr(error, 'body', '')}".lower()
    return any(phrase in text for phrase in _PROMPT_TOO_LONG)


_MIN_HALVED = 200  # characters: a prompt shorter than this is not halved further


def _halved(lines: list[str]) -> list[str] | None:
    """The later half of ``lines`` (or half of a single one), or None when there is nothing left to drop."""
    if len(lines) > 1:
        return lines[len(lines) // 2 :]
    if lines and len(lines[0]) > _MIN_HALVED:
        return [_cut_middle(lines[0], len(lines[0]) // 2)]
    return None


async def _ask(model: ChatModel, instruction: str, preamble: str, lines: Sequence[str], max_retries: int) -> str:
    """The model's answer to ``instruction`` on ``preamble`` plus ``lines``; transient errors are retried, and on a
    prompt-too-long error the older half of ``lines`` is dropped and the call made again. An empty answer is an
    error: a summary of nothing would lose the messages it replaces."""
    retrying = RetryingModel(model, max_retries=max_retries)
    remaining = list(lines)
    while True:
        prompt = preamble + "\n\n".join(remaining)
        try:
            answer = await retrying.generate([system(instruction), user(prompt)])
        except Exception as error:
            shorter = _halved(remaining) if _is_prompt_too_long(error) else None
            if shorter is None:
                raise
            remaining = shorter
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


def _check_count(value: object, what: str, minimum: int) -> int:
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
        self.max_chars = _check_count(max_chars, "LLMSummaryStrategy max_chars", 1)

    def __repr__(self) -> str:
        return f"LLMSummaryStrategy({self.model!r}, max_chars={self.max_chars})"

    async def compress(self, messages: Sequence[Message], ctx: RunContext, *, max_retries: int) -> str | None:
        earlier = [_summary_text(m) for m in messages if _is_summary(m)]
        lines = [_render(m) for m in messages if not _is_summary(m)]
        preamble = "Summary so far:\n" + "\n".join(earlier) + "\n\n" if earlier else ""
        instruction = _SUMMARY_PROMPT.format(max_chars=self.max_chars)
        return await _ask(self.model, instruction, preamble + "Messages:\n", lines, max_retries)


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
        lines = [_render(m) for m in messages]
        listed = await _ask(self.model, _KEY_INFO_PROMPT, "Messages:\n", lines, max_retries)
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
    agent's address, and cut to ``max_summary_tokens`` estimated tokens when the model writes more.
    """

    def __init__(self, model: ChatModel, *, max_summary_tokens: int = 500) -> None:
        self.model = _check_model(model, "HierarchicalSummaryStrategy")
        self.max_summary_tokens = _check_count(max_summary_tokens, "HierarchicalSummaryStrategy max_summary_tokens", 1)

    def __repr__(self) -> str:
        return f"HierarchicalSummaryStrategy({self.model!r}, max_summary_tokens={self.max_summary_tokens})"

    async def compress(self, messages: Sequence[Message], ctx: RunContext, *, max_retries: int) -> str | None:
        key = _scoped_key("rolling_summary", ctx)
        stored = ctx.get_session_value(key)
        previous = stored if isinstance(stored, str) else None
        # The summary message in the transcript is the rolling summary itself: do not feed it in twice.
        fresh = [m for m in messages if previous is None or not _is_summary(m)]
        if not fresh:
            return previous
        preamble = f"Current summary:\n{previous or '(none yet)'}\n\nNew messages:\n"
        instruction = _ROLLING_PROMPT.format(max_tokens=self.max_summary_tokens, max_chars=4 * self.max_summary_tokens)
        text = await _ask(self.model, instruction, preamble, [_render(m) for m in fresh], max_retries)
        text = _truncate_tokens(text, self.max_summary_tokens)
        if not text:
            return previous
        ctx.add_session_value(key, text)
        return text


# -- archiving into a vector store ---------------------------------------------------------------------------------


@runtime_checkable
class VectorStore(Protocol):
    """Texts kept under a namespace, found again by similarity to a query."""

    async def add(self, namespace: str, texts: Sequence[str]) -> None: ...

    async def search(self, namespace: str, query: str, limit: int) -> list[str]:
        """At most ``limit`` texts of ``namespace``, the most similar to ``query`` first."""
        ...


Embedder: TypeAlias = Callable[[str], Sequence[float] | Awaitable[Sequence[float]]]
"""A text's embedding vector; sync or async."""

_WORD = re.compile(r"\w+")
_DIMENSIONS = 512
# Words that occur in nearly every message would make everything look alike.
# fmt: off
_STOP_WORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "did", "do", "does", "for", "from", "had", "has",
    "have", "how", "i", "if", "in", "is", "it", "its", "me", "my", "no", "not", "of", "on", "or", "our", "so",
    "that", "the", "their", "them", "then", "there", "these", "they", "this", "to", "was", "we", "were", "what",
    "when", "where", "which", "who", "why", "will", "with", "you", "your"
})
# fmt: on


def _hashed_bag_of_words(text: str) -> list[float]:
    """An offline embedding: the words of ``text`` (less common English function words; character pairs for CJK
    words, which have no spaces between them) hashed into 512 slots, counted sublinearly. Texts are similar when
    they share words — enough to find a fact again by its terms."""
    counts: dict[int, int] = {}
    for word in _WORD.findall(text.lower()):
        if word in _STOP_WORDS:
            continue
        features = [word] if word.isascii() or len(word) < 2 else [word[i : i + 2] for i in range(len(word) - 1)]
        for feature in features:
            # blake2b, not hash(): the slots must not change from one process to the next.
            slot = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=4).digest(), "big") % _DIMENSIONS
            counts[slot] = counts.get(slot, 0) + 1
    vector = [0.0] * _DIMENSIONS
    for slot, count in counts.items():
        vector[slot] = 1.0 + math.log(count)
    return vector


def _unit(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else [0.0] * len(vector)


class InMemoryVectorStore:
    """A ``VectorStore`` in this process's memory, searched by cosine similarity.

    ``embed`` turns a text into a vector (sync or async); the default is an offline hashed bag of words, which finds
    texts sharing the query's words. Use a real embedding model for meaning. Nothing survives the process.
    """

    def __init__(self, embed: Embedder | None = None) -> None:
        if embed is not None and not callable(embed):
            raise UserError(f"InMemoryVectorStore embed: expected a function of a text, got {type(embed).__qualname__}")
        self._embed: Embedder = embed if embed is not None else _hashed_bag_of_words
        self._entries: dict[str, list[tuple[str, list[float]]]] = {}

    async def _vector(self, text: str) -> list[float]:
        result = self._embed(text)
        if inspect.isawaitable(result):
            result = await result
        return _unit([float(x) for x in result])

    async def add(self, namespace: str, texts: Sequence[str]) -> None:
        entries = self._entries.setdefault(namespace, [])
        for text in texts:
            vector = await self._vector(text)
            if entries and len(vector) != len(entries[0][1]):
                raise UserError(
                    f"InMemoryVectorStore: expected embeddings of {len(entries[0][1])} dimensions, got {len(vector)}"
                )
            entries.append((text, vector))

    async def search(self, namespace: str, query: str, limit: int) -> list[str]:
        entries = self._entries.get(namespace)
        if not entries or limit < 1:
            return []
        probe = await self._vector(query)
        if len(probe) != len(entries[0][1]):
            raise UserError(
                f"InMemoryVectorStore: expected embeddings of {len(entries[0][1])} dimensions, got {len(probe)}"
            )
        scored = [(sum(a * b for a, b in zip(probe, vector, strict=True)), i) for i, (_, vector) in enumerate(entries)]
        best = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))[:limit]
        return [entries[i][0] for _, i in best]


_ARCHIVE_RUN_KEY = "_compression.archive_run"
_ARCHIVED_NOTE = (
    "Earlier messages of this conversation were archived. To look up a detail from them, "
    "call recall_history with a query."
)
_MAX_RECALL = 10


def _run_namespace(ctx: RunContext) -> str:
    """The archive of this run and agent: a run id kept in the session values (so a resume finds the same archive)
    plus the agent's address."""
    run_id = ctx.get_session_value(_ARCHIVE_RUN_KEY)
    if not isinstance(run_id, str):
        run_id = uuid.uuid4().hex
        ctx.add_session_value(_ARCHIVE_RUN_KEY, run_id)
    return f"{run_id}/{format_address(ctx.address)}"


class VectorStoreArchiveStrategy:
    """Archives the expired messages in ``store`` and gives the agent the tool ``recall_history(query, limit=3)``
    to search them; the summary only tells the model that the archive exists.

    Each run (and each agent in it) archives under its own namespace — by default a run id kept in the session
    values, so a resumed run finds its archive again when ``store`` is still the same. ``namespace`` picks another
    key from the run context (a conversation id from the session values, say).
    """

    def __init__(self, store: VectorStore, *, namespace: Callable[[RunContext], str] | None = None) -> None:
        if not isinstance(store, VectorStore):
            raise UserError(
                f"VectorStoreArchiveStrategy store: expected a VectorStore (async add and search), "
                f"got {type(store).__qualname__}"
            )
        self.store = store
        self.namespace = namespace if namespace is not None else _run_namespace
        self.tools: tuple[Tool, ...] = (self._recall_tool(),)

    def __repr__(self) -> str:
        return f"VectorStoreArchiveStrategy({self.store!r})"

    async def compress(self, messages: Sequence[Message], ctx: RunContext, *, max_retries: int) -> str | None:
        texts = [_render(m) for m in messages if not _is_summary(m) and (m.text or m.tool_calls)]
        if texts:
            await self.store.add(self.namespace(ctx), texts)
        elif not any(_is_summary(m) for m in messages):
            return None  # nothing was ever archived
        return _ARCHIVED_NOTE

    def _recall_tool(self) -> Tool:
        store, namespace = self.store, self.namespace

        @tool(name="recall_history", threaded=False)
        async def recall_history(ctx: ToolContext, query: str, limit: int = 3) -> str:
            """Search the archived earlier part of this conversation for details that were compressed away.

            Args:
                query: What to look for: words the wanted messages contain.
                limit: The most messages to return (1 to 10).
            """
            run = ctx.run
            if not isinstance(run, RunContext):
                return "recall_history works only inside an agent run: no archive to search."
            found = await store.search(namespace(run), query, max(1, min(limit, _MAX_RECALL)))
            if not found:
                return f"No archived messages match {query!r}."
            return "\n\n".join(f"[{i}] {text}" for i, text in enumerate(found, 1))

        return recall_history


# -- composite -----------------------------------------------------------------------------------------------------


def _check_strategy(strategy: object, what: str) -> CompressionStrategy:
    if not isinstance(strategy, CompressionStrategy):
        raise UserError(
            f"{what}: expected a CompressionStrategy (an object with async compress()), "
            f"got {type(strategy).__qualname__}"
        )
    return strategy


def _tools_of(strategy: CompressionStrategy) -> tuple[Tool, ...]:
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
        self.strategies = tuple(_check_strategy(s, f"CompositeStrategy strategy {i}") for i, s in enumerate(strategies))
        self.tools = tuple(t for s in self.strategies for t in _tools_of(s))

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


# -- the interceptor -----------------------------------------------------------------------------------------------


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

    ``count_tokens`` measures a message (``estimate_tokens`` by default); ``max_retries`` is how often a strategy's
    model call is retried on a transient error. ``max_messages`` below 10 is raised to 10, as in the original.

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
        _check_count(context_length, f"{name} context_length (tokens)", 1)
        if strategy is not None:
            _check_strategy(strategy, f"{name} strategy")
        if count_tokens is not None and not callable(count_tokens):
            raise UserError(
                f"{name} count_tokens: expected a function of a Message, got {type(count_tokens).__qualname__}"
            )
        _check_count(max_retries, f"{name} max_retries", 0)
        # The original's floor (reference §B.2: "maxMessages=15 (min 10)").
        self.max_messages = max(10, max_messages)
        self.max_context_ratio = float(max_context_ratio)
        self.context_length = context_length
        self.strategy = strategy
        self.count_tokens: Callable[[Message], int] = count_tokens if count_tokens is not None else estimate_tokens
        self.max_retries = max_retries
        super().__init__(
            before_chat_model=self._before_chat_model,
            on_model_error=self._on_model_error,
            additional_tools=_tools_of(strategy) if strategy is not None else (),
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
            if i >= task and not _is_summary(message):
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
        if attempt > self.max_retries or not _is_prompt_too_long(error):
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
            capped = replace(message, content=_cut_middle(text, keep))
            used = self.count_tokens(capped)
            if used <= cap or keep == 0:
                return capped, used
            keep = min(keep * cap // used, keep - max(1, keep // 20))
        capped = replace(message, content=_cut_middle(text, 0))
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
            result.append(_summary_message(text))
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
        if message.role == "assistant" or _is_summary(message):
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

"""Archiving into a vector store: the expired messages are kept where the agent can search them again."""

from __future__ import annotations

import hashlib
import inspect
import math
import re
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeAlias, runtime_checkable

from ...adk import RunContext
from ...errors import UserError
from ...schema import Message
from ...tools import Tool, ToolContext, format_address, tool
from ._summary import is_summary, render

__all__ = ["Embedder", "InMemoryVectorStore", "VectorStore", "VectorStoreArchiveStrategy"]


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
        texts = [render(m) for m in messages if not is_summary(m) and (m.text or m.tool_calls)]
        if texts:
            await self.store.add(self.namespace(ctx), texts)
        elif not any(is_summary(m) for m in messages):
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

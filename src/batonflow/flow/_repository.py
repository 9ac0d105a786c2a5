"""Repositories of embedded documents, and the ``InMemoryRepository`` and ``RedisRepository`` components.

A search embeds the query, scores every document by cosine similarity, keeps those scoring at least
``similarity_threshold`` (0.4) and returns the best ``limit`` (4), as solon-ai does. ``RedisRepository`` keeps each
document in a Redis hash (content, metadata as JSON, the vector as float32 bytes) and scores in this process: the
Redis servers it is meant for (7.0 without the RediSearch module) have no vector search.
"""

from __future__ import annotations

import json
import math
from array import array
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..schema import Message, user
from ._documents import Document

if TYPE_CHECKING:
    import redis.asyncio

    from ..models import EmbeddingModel

__all__ = [
    "DEFAULT_LIMIT",
    "DEFAULT_SIMILARITY_THRESHOLD",
    "InMemoryRepository",
    "RedisRepository",
    "Repository",
    "augment",
    "cosine_similarity",
]

DEFAULT_LIMIT = 4
DEFAULT_SIMILARITY_THRESHOLD = 0.4


@runtime_checkable
class Repository(Protocol):
    """Stores documents with their vectors and finds the ones nearest a query."""

    async def save(self, documents: Sequence[Document]) -> None: ...

    async def search(
        self, query: str, *, limit: int = DEFAULT_LIMIT, similarity_threshold: float = DEFAULT_SIMILARITY_THRESHOLD
    ) -> list[Document]: ...


def cosine_similarity(a: Sequence[float], b: Sequence[float]) -> float:
    """Between -1 and 1; 0 when either vector is all zeros. Vectors of different lengths are a ``ValueError``."""
    if len(a) != len(b):
        raise ValueError(f"vectors of different lengths: {len(a)} and {len(b)}")
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return 0.0 if norms == 0 else dot / norms


def augment(query: str, documents: Sequence[Document]) -> Message:
    """solon-ai's augmented user message: the query, the time, and the documents found."""
    references = "[" + ", ".join(str(document) for document in documents) + "]"
    return user(f"{query}\n\n Now: {datetime.now().isoformat()}\n\n References: {references}")


def _best(documents: list[Document], vector: list[float], limit: int, threshold: float) -> list[Document]:
    scored = [
        Document(doc.content, dict(doc.metadata), doc.id, cosine_similarity(vector, doc.embedding or []))
        for doc in documents
    ]
    kept = [doc for doc in scored if doc.score >= threshold]
    kept.sort(key=lambda doc: doc.score, reverse=True)
    return kept[:limit]


async def _embedded(model: EmbeddingModel, documents: Sequence[Document]) -> list[Document]:
    vectors = await model.embed([document.content for document in documents])
    if len(vectors) != len(documents):
        raise ValueError(f"the embedding model gave {len(vectors)} vectors for {len(documents)} documents")
    for document, vector in zip(documents, vectors, strict=True):
        document.with_new_id().embedding = list(vector)
    return list(documents)


class InMemoryRepository:
    """Documents in a dict of this process."""

    def __init__(self, embedding_model: EmbeddingModel) -> None:
        self.embedding_model = embedding_model
        self._documents: dict[str, Document] = {}

    async def save(self, documents: Sequence[Document]) -> None:
        if documents:
            for document in await _embedded(self.embedding_model, documents):
                self._documents[document.id] = document

    async def search(
        self, query: str, *, limit: int = DEFAULT_LIMIT, similarity_threshold: float = DEFAULT_SIMILARITY_THRESHOLD
    ) -> list[Document]:
        (vector,) = await self.embedding_model.embed([query])
        return _best(list(self._documents.values()), list(vector), limit, similarity_threshold)

    def __len__(self) -> int:
        return len(self._documents)


class RedisRepository:
    """Documents in Redis hashes under ``key_prefix`` (``<prefix><id>``), listed in the set ``<prefix>ids``."""

    def __init__(self, embedding_model: EmbeddingModel, client: redis.asyncio.Redis, *, key_prefix: str = "doc:"):
        self.embedding_model = embedding_model
        self.client = client
        self.key_prefix = key_prefix

    @property
    def index_key(self) -> str:
        return f"{self.key_prefix}ids"

    async def save(self, documents: Sequence[Document]) -> None:
        if not documents:
            return
        async with self.client.pipeline(transaction=True) as pipe:
            for document in await _embedded(self.embedding_model, documents):
                metadata = json.dumps(document.metadata, ensure_ascii=False, default=str)
                vector = array("f", document.embedding or []).tobytes()
                pipe.hset(
                    self.key_prefix + document.id,
                    mapping={"content": document.content, "metadata": metadata, "embedding": vector},
                )
                pipe.sadd(self.index_key, document.id)
            await pipe.execute()

    async def search(
        self, query: str, *, limit: int = DEFAULT_LIMIT, similarity_threshold: float = DEFAULT_SIMILARITY_THRESHOLD
    ) -> list[Document]:
        (vector,) = await self.embedding_model.embed([query])
        ids = sorted(await self.client.smembers(self.index_key))
        async with self.client.pipeline(transaction=False) as pipe:
            for key in ids:
                pipe.hgetall(self.key_prefix + _text(key))
            rows = await pipe.execute()
        documents = [_document(_text(key), row) for key, row in zip(ids, rows, strict=True) if row]
        return _best(documents, list(vector), limit, similarity_threshold)

    async def count(self) -> int:
        return int(await self.client.scard(self.index_key))

    async def drop(self) -> None:
        """Delete every document of this prefix."""
        ids = await self.client.smembers(self.index_key)
        keys = [self.key_prefix + _text(key) for key in ids]
        if keys:
            await self.client.delete(*keys)
        await self.client.delete(self.index_key)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _document(doc_id: str, row: dict[bytes, bytes]) -> Document:
    vector = array("f")
    vector.frombytes(row[b"embedding"])
    return Document(row[b"content"].decode(), json.loads(row[b"metadata"]), doc_id, embedding=vector.tolist())

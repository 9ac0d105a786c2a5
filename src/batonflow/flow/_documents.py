"""Documents for the repositories: the ``Document`` type, text splitters, and a loader for files and folders
inside the engine's ``base_dir`` and ``http(s)`` URLs on allowed hosts.

The splitters are solon-ai's. ``RegexTextSplitter`` cuts at a pattern (a blank line by default).
``TokenSizeTextSplitter`` cuts a text into chunks of about ``chunk_size`` tokens, each ending at its last ``.``,
``?``, ``!`` or newline when that falls past ``min_chunk_size_chars``. Its tokens are words, runs of space, marks,
and single CJK characters, counted by a pattern rather than by an OpenAI tokenizer (whose tables would be a
download), so that splitting runs offline and gives the same chunks everywhere.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..graph import Node
from ._allow import fetch_text, read_text_file, resolve_file, resolve_folder_files
from ._base import FlowSettings
from ._errors import FlowMetaError

__all__ = [
    "Document",
    "DocumentSplitter",
    "RegexTextSplitter",
    "SplitterPipeline",
    "TokenSizeTextSplitter",
    "load_source",
    "load_url",
    "splitter_named",
]

TEXT_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".rst", ".html", ".htm", ".csv", ".json", ".yml", ".yaml"})
"""The files a folder source loads (others are skipped)."""


def _java_map(values: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f"{key}={value}" for key, value in values.items()) + "}"


@dataclass(slots=True)
class Document:
    """A piece of text with its metadata; a repository gives it an ``id`` and an ``embedding``, a search a
    ``score``. It is written (in an augmented prompt) as solon-ai writes its documents."""

    content: str
    metadata: dict[str, Any] = field(default_factory=dict)
    id: str = ""
    score: float = 0.0
    embedding: list[float] | None = field(default=None, repr=False)

    def with_new_id(self) -> Document:
        if not self.id:
            self.id = uuid.uuid4().hex
        return self

    def __str__(self) -> str:
        return (
            f"Document{{id='{self.id}', score={self.score}, content='{self.content}', "
            f"metadata={_java_map(self.metadata)}}}"
        )


@runtime_checkable
class DocumentSplitter(Protocol):
    """Turns documents into (smaller) documents."""

    def split(self, documents: list[Document]) -> list[Document]: ...


class _TextSplitter:
    def split(self, documents: list[Document]) -> list[Document]:
        return [
            Document(chunk, dict(document.metadata))
            for document in documents
            for chunk in self.split_text(document.content)
            if chunk
        ]

    def split_text(self, text: str) -> list[str]:
        raise NotImplementedError


class RegexTextSplitter(_TextSplitter):
    """Cuts at every match of ``pattern`` (default: a blank line)."""

    def __init__(self, pattern: str = "\n\n") -> None:
        self.pattern = re.compile(pattern)

    def split_text(self, text: str) -> list[str]:
        return self.pattern.split(text)


_CJK = "\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|\s+|[^\w\s]")


def tokens_of(text: str) -> list[str]:
    """The pattern's tokens of ``text``; they join back to it."""
    return _TOKEN.findall(text)


class TokenSizeTextSplitter(_TextSplitter):
    """Chunks of at most ``chunk_size`` tokens, cut back to their last sentence end past ``min_chunk_size_chars``;
    chunks of ``min_chunk_length_to_embed`` characters or fewer are dropped; after ``max_chunk_count`` chunks the
    rest is one more."""

    def __init__(
        self,
        chunk_size: int = 500,
        min_chunk_size_chars: int = 300,
        min_chunk_length_to_embed: int = 5,
        max_chunk_count: int = 1000,
        keep_separator: bool = True,
    ) -> None:
        self.chunk_size = chunk_size
        self.min_chunk_size_chars = min_chunk_size_chars
        self.min_chunk_length_to_embed = min_chunk_length_to_embed
        self.max_chunk_count = max_chunk_count
        self.keep_separator = keep_separator

    def split_text(self, text: str) -> list[str]:
        chunks: list[str] = []
        if not text.strip():
            return chunks
        tokens = tokens_of(text)
        count = 0
        while tokens and count < self.max_chunk_count:
            chunk = "".join(tokens[: self.chunk_size])
            if not chunk.strip():
                tokens = tokens[self.chunk_size :]
                continue
            cut = max(chunk.rfind("."), chunk.rfind("?"), chunk.rfind("!"), chunk.rfind("\n"))
            if cut > 0 and cut > self.min_chunk_size_chars:
                chunk = chunk[: cut + 1]
            kept = chunk.strip() if self.keep_separator else chunk.replace("\n", " ").strip()
            if len(kept) > self.min_chunk_length_to_embed:
                chunks.append(kept)
            tokens = tokens[len(tokens_of(chunk)) :]
            count += 1
        rest = "".join(tokens).replace("\n", " ").strip()
        if len(rest) > self.min_chunk_length_to_embed:
            chunks.append(rest)
        return chunks


class SplitterPipeline:
    """Splitters applied one after the other; none leaves a text one document."""

    def __init__(self, splitters: Sequence[DocumentSplitter] = ()) -> None:
        self.splitters = list(splitters)

    def split(self, documents: list[Document]) -> list[Document]:
        for splitter in self.splitters:
            documents = splitter.split(documents)
        return documents


_SPLITTERS: dict[str, Callable[[], DocumentSplitter]] = {
    "RegexTextSplitter": RegexTextSplitter,
    "TokenSizeTextSplitter": TokenSizeTextSplitter,
}


def splitter_named(name: str, settings: FlowSettings, node: Node) -> DocumentSplitter:
    """A splitter by name: one registered on the engine, else a built-in one (``RegexTextSplitter``,
    ``TokenSizeTextSplitter``; solon-ai's class names, ``org.noear.solon.ai.rag.splitter.RegexTextSplitter``,
    name them too)."""
    registered = settings.engine.get_component(name)
    if isinstance(registered, DocumentSplitter):
        return registered
    factory = _SPLITTERS.get(name.rpartition(".")[2])
    if factory is None:
        raise FlowMetaError(
            f"expected a splitter registered on the engine or one of {sorted(_SPLITTERS)}, got {name!r}",
            graph_id=node.graph.id,
            node_id=node.id,
            meta="splitPipeline",
        )
    return factory()


# -- loading -----------------------------------------------------------------------------------------------------


async def load_source(source: str, settings: FlowSettings, node: Node, *, meta: str) -> list[Document]:
    """The documents of ``source``: a URL's text (allowed hosts only, bounded), a file's, or every text file of a
    folder, inside ``base_dir`` (read in a worker thread, off the event loop)."""
    if source.startswith(("http://", "https://")):
        return [await load_url(source, settings, node, meta=meta)]
    return await asyncio.to_thread(_load_path, source, settings, node, meta)


def _load_path(source: str, settings: FlowSettings, node: Node, meta: str) -> list[Document]:
    path = resolve_file(source, settings, node, meta, what="the document source")
    if path.is_dir():
        files = resolve_folder_files(path, TEXT_SUFFIXES, settings, node, meta)
    elif path.is_file():
        files = [path]
    else:
        raise FlowMetaError(
            f"expected an http(s) URL, a file or a folder, got {source!r} (no such file or folder: {path})",
            graph_id=node.graph.id,
            node_id=node.id,
            meta=meta,
        )
    return [Document(read_text_file(file, settings, node, meta), {"source": str(file)}) for file in files]


async def load_url(url: str, settings: FlowSettings, node: Node, *, meta: str) -> Document:
    """The text at ``url`` as a document (see ``fetch_text``: allowed hosts, redirects checked, bounded)."""
    return Document(await fetch_text(url, settings, node, meta), {"source": url})

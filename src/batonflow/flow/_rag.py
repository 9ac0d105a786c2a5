"""The ``InMemoryRepository`` and ``RedisRepository`` components.

Each needs the ``embeddingModel`` property (an ``@EmbeddingModel`` node before it). The first run builds the
repository (cached per node) and loads ``documentSources`` through ``splitPipeline``. Then text, or a message's
text, is a query: the output is solon-ai's augmented user message with the documents found. A ``Document`` or a
list of them is saved, with no output. The repository is handed on as the ``repository`` property.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..graph import FlowContext, Node
from ..schema import Message
from ._allow import check_address
from ._base import AiComponent, meta_mapping, meta_texts
from ._documents import Document, SplitterPipeline, load_source, splitter_named
from ._errors import FlowComponentError, FlowMetaError
from ._repository import InMemoryRepository, RedisRepository, Repository, augment

if TYPE_CHECKING:
    from ..models import EmbeddingModel

__all__ = ["InMemoryRepositoryComponent", "RedisRepositoryComponent"]

DOCUMENT_SOURCES, SPLIT_PIPELINE, REDIS_CONFIG = "documentSources", "splitPipeline", "redisConfig"


class _RepositoryComponent(AiComponent):
    async def do_run(self, context: FlowContext, node: Node) -> None:
        repository = self._cache.get(node)
        if repository is None:
            embedding_model = self.get_property(context, "embeddingModel")
            if embedding_model is None:
                raise FlowMetaError(
                    "Missing embeddingModel property! (expected an @EmbeddingModel node to run before this one)",
                    graph_id=node.graph.id,
                    node_id=node.id,
                    meta="embeddingModel",
                )
            await self.check(node)
            repository = self.make(embedding_model, node)
            await self._load_sources(repository, node)
            self._cache[node] = repository
        data = self.get_input(context, node)
        if data is None:
            raise FlowComponentError(
                f"Repository input is null: expected a query or documents in {self.input_name(node)!r}",
                graph_id=node.graph.id,
                node_id=node.id,
                meta="input",
            )
        self.set_property(context, "repository", repository)
        await self._use(repository, data, context, node)

    async def _use(self, repository: Repository, data: Any, context: FlowContext, node: Node) -> None:
        where = {"graph_id": node.graph.id, "node_id": node.id, "meta": "input"}
        if isinstance(data, Message):
            data = data.content
        try:
            if isinstance(data, str):
                self.set_output(context, node, augment(data, await repository.search(data)))
            elif isinstance(data, Document):
                await repository.save([data])
            elif isinstance(data, list) and all(isinstance(item, Document) for item in data):
                await repository.save(data)
            else:
                raise FlowComponentError(
                    f"Unsupported data type: {type(data).__name__}; expected a query, a Document or a list of them",
                    **where,
                )
        except FlowComponentError:
            raise
        except Exception as error:
            raise FlowComponentError(f"the repository failed: {type(error).__name__}: {error}", **where) from error

    async def _load_sources(self, repository: Repository, node: Node) -> None:
        sources = meta_texts(node, DOCUMENT_SOURCES)
        if not sources:
            return
        pipeline = SplitterPipeline(
            [splitter_named(name, self.settings, node) for name in meta_texts(node, SPLIT_PIPELINE)]
        )
        for source in sources:
            documents = pipeline.split(await load_source(source, self.settings, node, meta=DOCUMENT_SOURCES))
            try:
                await repository.save(documents)
            except Exception as error:
                raise FlowComponentError(
                    f"cannot store the documents of {source!r}: {type(error).__name__}: {error}",
                    graph_id=node.graph.id,
                    node_id=node.id,
                    meta=DOCUMENT_SOURCES,
                ) from error

    async def check(self, node: Node) -> None:
        """Refuse what the node would reach and the engine does not allow, before anything is built."""

    def make(self, embedding_model: EmbeddingModel, node: Node) -> Repository:
        raise NotImplementedError


class InMemoryRepositoryComponent(_RepositoryComponent):
    """``@InMemoryRepository``: documents in this process."""

    name = "InMemoryRepository"

    def make(self, embedding_model: EmbeddingModel, node: Node) -> Repository:
        return InMemoryRepository(embedding_model)


class RedisRepositoryComponent(_RepositoryComponent):
    """``@RedisRepository``: documents in Redis; ``redisConfig`` is ``{server: "host:port", db, user, password,
    keyPrefix}`` (default ``127.0.0.1:6379``, db 0, prefix ``doc:``), on a host in ``allowed_hosts``."""

    name = "RedisRepository"

    async def check(self, node: Node) -> None:
        host, port, _, _ = _redis_config(node)
        await check_address(host, port, f"redisConfig server {host}:{port}", self.settings, node, REDIS_CONFIG)

    def make(self, embedding_model: EmbeddingModel, node: Node) -> Repository:
        import redis.asyncio

        config: Mapping[str, Any] = meta_mapping(node, REDIS_CONFIG) or {}
        host, port, db, prefix = _redis_config(node)
        client = redis.asyncio.Redis(
            host=host, port=port, db=db, username=config.get("user"), password=config.get("password")
        )
        self.settings.engine.add_closer(client.aclose)
        return RedisRepository(embedding_model, client, key_prefix=prefix)


def _redis_config(node: Node) -> tuple[str, int, int, str]:
    """The host, port, db and key prefix of ``redisConfig``, checked."""
    config: Mapping[str, Any] = meta_mapping(node, REDIS_CONFIG) or {}
    server = str(config.get("server") or "127.0.0.1:6379")
    host, _, port = server.rpartition(":") if ":" in server else (server, "", "6379")
    db, prefix = config.get("db", 0), config.get("keyPrefix", "doc:")
    if not host or not port.isdigit() or isinstance(db, bool) or not isinstance(db, int) or not isinstance(prefix, str):
        raise FlowMetaError(
            f"expected server 'host:port', db a number and keyPrefix text, got {server!r}, {db!r}, {prefix!r}",
            graph_id=node.graph.id,
            node_id=node.id,
            meta=REDIS_CONFIG,
        )
    return host.strip("[]"), int(port), db, prefix

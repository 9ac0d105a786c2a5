"""Repositories: cosine search, solon-ai's augmented prompt, saving documents, and Redis on the real server."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio
from tests.services import REDIS_DB, REDIS_SERVER, REDIS_URL

from batonflow.flow import (
    DEFAULT_LIMIT,
    DEFAULT_SIMILARITY_THRESHOLD,
    AiFlowEngine,
    Document,
    FlowComponentError,
    FlowMetaError,
    InMemoryRepository,
    RedisRepository,
    augment,
    cosine_similarity,
)
from batonflow.graph import FlowContext, Graph
from batonflow.schema import Message, user

from .conftest import WordEmbedding


class Fixed:
    """Embeds each known text as the vector given for it."""

    model_name = "fixed"

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.vectors[text] for text in texts]


def test_cosine_similarity() -> None:
    assert cosine_similarity([1, 0], [1, 0]) == 1.0
    assert cosine_similarity([1, 0], [0, 1]) == 0.0
    assert cosine_similarity([1, 1], [-1, -1]) == pytest.approx(-1.0)
    assert cosine_similarity([0, 0], [1, 1]) == 0.0
    with pytest.raises(ValueError, match="different lengths"):
        cosine_similarity([1], [1, 2])


async def test_search_keeps_the_best_four_scoring_at_least_0_4_best_first() -> None:
    texts = {f"d{i}": [1.0, i / 2] for i in range(7)}  # similarity to [1, 0] falls as i grows
    texts["far"] = [0.0, 1.0]
    repository = InMemoryRepository(Fixed({**texts, "q": [1.0, 0.0]}))
    await repository.save([Document(text) for text in texts])

    found = await repository.search("q")

    assert (DEFAULT_LIMIT, DEFAULT_SIMILARITY_THRESHOLD) == (4, 0.4)
    assert [d.content for d in found] == ["d0", "d1", "d2", "d3"]
    assert found[0].score == pytest.approx(1.0) and found[0].score >= found[1].score >= found[3].score
    # scores: d3 0.55, d4 0.45, d5 0.37, d6 0.32, far 0
    assert [d.content for d in await repository.search("q", limit=10)] == ["d0", "d1", "d2", "d3", "d4"]
    assert [d.content for d in await repository.search("q", limit=10, similarity_threshold=0.5)] == [
        "d0",
        "d1",
        "d2",
        "d3",
    ]


async def test_saved_documents_get_ids_and_vectors() -> None:
    repository = InMemoryRepository(Fixed({"a": [1.0, 0.0]}))
    document = Document("a")

    await repository.save([document])

    assert len(repository) == 1 and len(document.id) == 32 and document.embedding == [1.0, 0.0]


def test_the_augmented_prompt_is_solon_s_text() -> None:
    message = augment("Who?", [Document("noear", {}, "1", 0.9)])

    assert message.role == "user"
    assert re.fullmatch(
        r"Who\?\n\n Now: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\n\n References: "
        r"\[Document\{id='1', score=0\.9, content='noear', metadata=\{\}\}\]",
        message.content,
    )


def rag(repository: str = "@InMemoryRepository", repo_meta: str = "", embedding: bool = True) -> Graph:
    nodes = ['  - {task: "@EmbeddingModel", meta: {embeddingConfig: {model: words}}}\n'] if embedding else []
    nodes.append(f'  - {{id: repo, task: "{repository}", meta: {{{repo_meta}}}}}\n')
    return Graph.from_yaml("id: rag\nlayout:\n" + "".join(nodes))


async def test_a_query_becomes_the_augmented_user_message(engine: AiFlowEngine, tmp_path: Path) -> None:
    (tmp_path / "about.md").write_text("Solon is developed by noear\n\nPython is a language")
    engine = AiFlowEngine(base_dir=tmp_path)
    engine.register("words", WordEmbedding())

    context = await engine.eval(
        rag(repo_meta="documentSources: [about.md], splitPipeline: [RegexTextSplitter]"),
        FlowContext(variables={"message": user("Who developed Solon?")}),
    )

    answer = context.get("message")
    assert isinstance(answer, Message) and answer.content.startswith("Who developed Solon?\n\n Now: ")
    assert "content='Solon is developed by noear'" in answer.content
    assert "Python" not in answer.content  # too far from the question
    assert isinstance(context.get("property_repository")[0], InMemoryRepository)


async def test_documents_as_input_are_saved_with_no_output(engine: AiFlowEngine) -> None:
    engine.register("words", WordEmbedding())
    graph = rag()
    context = FlowContext(variables={"message": [Document("red apples"), Document("green pears")]})
    await engine.eval(graph, context)
    assert isinstance(context.get("message"), list)  # saving writes no output
    context.put("message", Document("yellow bananas"))
    await engine.eval(graph, context)

    context.put("message", "yellow bananas")
    await engine.eval(graph, context)

    assert "content='yellow bananas'" in context.get("message").content
    assert len(context.get("property_repository")[0]) == 3


async def test_a_repository_without_an_embedding_model_is_refused(engine: AiFlowEngine) -> None:
    with pytest.raises(FlowMetaError) as caught:
        await engine.eval(rag(embedding=False), FlowContext(variables={"message": "q"}))

    assert (caught.value.graph_id, caught.value.node_id, caught.value.meta) == ("rag", "repo", "embeddingModel")
    assert "Missing embeddingModel property!" in str(caught.value)


async def test_a_repository_without_input_is_an_error(engine: AiFlowEngine) -> None:
    engine.register("words", WordEmbedding())

    with pytest.raises(FlowComponentError, match="Repository input is null") as caught:
        await engine.eval(rag())

    assert caught.value.meta == "input"


async def test_a_repository_refuses_other_input(engine: AiFlowEngine) -> None:
    engine.register("words", WordEmbedding())

    with pytest.raises(FlowComponentError, match="Unsupported data type: int"):
        await engine.eval(rag(), FlowContext(variables={"message": 7}))


# -- Redis ------------------------------------------------------------------------------------------------------


@pytest.fixture
async def prefix() -> AsyncIterator[str]:
    """A key prefix of this test's own; its keys are deleted afterwards."""
    name = f"batonflow-test:{uuid.uuid4().hex}:"
    yield name
    client = redis.asyncio.Redis.from_url(REDIS_URL)
    keys = [key async for key in client.scan_iter(f"{name}*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


async def test_redis_repository_stores_in_hashes_and_searches_in_process(prefix: str) -> None:
    client = redis.asyncio.Redis.from_url(REDIS_URL)
    repository = RedisRepository(WordEmbedding(), client, key_prefix=prefix)
    await repository.save([Document("Solon is developed by noear", {"lang": "en"}), Document("Pears are green")])

    found = await repository.search("who developed solon")

    assert await repository.count() == 2
    assert [(d.content, d.metadata) for d in found] == [("Solon is developed by noear", {"lang": "en"})]
    assert await client.hget(prefix + found[0].id, "content") == b"Solon is developed by noear"
    await repository.drop()
    assert await repository.count() == 0
    await client.aclose()


async def test_the_redis_component_answers_from_the_real_server(prefix: str, tmp_path: Path) -> None:
    (tmp_path / "about.md").write_text("Solon is developed by noear\n\nPears are green")
    meta = f'documentSources: [about.md], splitPipeline: [RegexTextSplitter], redisConfig: {{server: "{REDIS_SERVER}", db: {REDIS_DB}, keyPrefix: "{prefix}"}}'
    async with AiFlowEngine(base_dir=tmp_path, allowed_hosts=[REDIS_SERVER]) as engine:
        engine.register("words", WordEmbedding())
        await engine.eval(rag("@RedisRepository", meta), FlowContext(variables={"message": "warm up"}))

    # another engine (another process, as far as it knows) with no documents to load finds them in Redis
    async with AiFlowEngine(allowed_hosts=[REDIS_SERVER]) as other:
        other.register("words", WordEmbedding())
        config = f'redisConfig: {{server: "{REDIS_SERVER}", db: {REDIS_DB}, keyPrefix: "{prefix}"}}'
        context = await other.eval(
            rag("@RedisRepository", config), FlowContext(variables={"message": "Who developed Solon?"})
        )

    assert "content='Solon is developed by noear'" in context.get("message").content
    assert isinstance(context.get("property_repository")[0], RedisRepository)


async def test_a_bad_redis_config_names_the_meta(engine: AiFlowEngine) -> None:
    engine.register("words", WordEmbedding())

    with pytest.raises(FlowMetaError) as caught:
        await engine.eval(
            rag("@RedisRepository", 'redisConfig: {server: "host:port"}'), FlowContext(variables={"message": "q"})
        )

    assert caught.value.meta == "redisConfig"

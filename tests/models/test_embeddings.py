"""Embedding models: the OpenAI-compatible provider against a real llama.cpp server and a mocked transport, the
offline llama.cpp embedder in-process, and ``load_embedding_model``."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest

from batonflow.errors import ModelConnectionError, ModelError, ModelHTTPError, ModelResponseError, UserError
from batonflow.models import EmbeddingModel, OpenAIEmbeddingModel, load_embedding_model
from batonflow.models.local import LlamaCppEmbeddingModel

from ..conftest import free_port, serve_llama

TEXTS = ["The cat sat on the mat.", "A kitten rests on a rug.", "Stock markets fell sharply on Monday."]


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


# -- against llama.cpp's server ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server_model(llama_embedding_server: str) -> OpenAIEmbeddingModel:
    return OpenAIEmbeddingModel("smollm2", base_url=llama_embedding_server, batch_size=2, timeout=60)


@pytest.mark.real_server
async def test_the_server_gives_one_vector_per_text_in_order_across_batches(
    server_model: OpenAIEmbeddingModel,
) -> None:
    vectors = await server_model.embed(TEXTS)  # batch_size 2: two requests

    assert len(vectors) == 3
    assert {len(v) for v in vectors} == {576}  # SmolLM2's hidden size
    assert all(isinstance(x, float) for v in vectors for x in v)
    # The same text alone gets the same vector: the order of the batch answer is the order of the texts.
    alone = await server_model.embed([TEXTS[2]])
    assert cosine(alone[0], vectors[2]) == pytest.approx(1.0, abs=1e-4)
    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2])


@pytest.mark.real_server
async def test_the_server_is_not_called_for_no_texts(server_model: OpenAIEmbeddingModel) -> None:
    unreachable = OpenAIEmbeddingModel("smollm2", base_url=f"http://127.0.0.1:{free_port()}/v1")

    assert await unreachable.embed([]) == []
    assert isinstance(server_model, EmbeddingModel)


@pytest.mark.real_server
async def test_a_server_without_embeddings_answers_an_error_naming_the_model_and_url(llama_server: str) -> None:
    # The chat server runs without --embedding: llama_cpp.server answers 500, which must name model and URL.
    model = OpenAIEmbeddingModel("smollm2", base_url=llama_server)

    with pytest.raises(ModelHTTPError) as caught:
        await model.embed(["hello"])

    assert caught.value.status_code == 500
    assert f"embedding model 'smollm2' request to {llama_server}/embeddings failed: HTTP 500" in str(caught.value)
    assert caught.value.url == f"{llama_server}/embeddings"


@pytest.mark.real_server
async def test_a_server_that_does_not_pool_sends_a_vector_per_token_which_is_refused_saying_so() -> None:
    with serve_llama("--embedding", "true") as base_url:  # SmolLM2 without the pooling override
        model = OpenAIEmbeddingModel("smollm2", base_url=base_url)

        with pytest.raises(ModelResponseError) as caught:
            await model.embed(["Hello there, world."])

    assert "embedding 0: expected a list of floats, got a list of" in str(caught.value)
    assert "vectors (one per token: the server does not pool them into one vector per text" in str(caught.value)
    assert caught.value.url == f"{base_url}/embeddings" and caught.value.status_code == 200


async def test_nobody_listening_is_a_connection_error_naming_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    model = OpenAIEmbeddingModel("bge-small", base_url=url, timeout=5)

    with pytest.raises(ModelConnectionError, match=rf"embedding model 'bge-small' request to {url}/embeddings failed"):
        await model.embed(["hello"])


# -- against a mocked transport: the request and every answer shape that must be refused --------------------------


def model_for(handler: Callable[[httpx2.Request], httpx2.Response], **options: Any) -> OpenAIEmbeddingModel:
    http_client = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    client = openai.AsyncOpenAI(api_key="sk-test", base_url="http://provider.test/v1", http_client=http_client)
    return OpenAIEmbeddingModel("test-embed", client=client, **options)


def answering(data: Callable[[list[str]], Any], requests: list[dict[str, Any]] | None = None) -> Any:
    def handler(request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == "/v1/embeddings"
        body = json.loads(request.content)
        if requests is not None:
            requests.append(body)
        return httpx2.Response(200, json={"object": "list", "model": "test-embed", "data": data(body["input"])})

    return handler


def items(vectors: list[Any]) -> list[dict[str, Any]]:
    return [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]


async def test_requests_carry_the_model_floats_dimensions_and_batches_in_order() -> None:
    requests: list[dict[str, Any]] = []
    handler = answering(lambda texts: items([[float(len(t)), 1.0] for t in texts]), requests)
    model = model_for(handler, batch_size=2, dimensions=2)

    vectors = await model.embed(["a", "bb", "ccc", "dddd", "eeeee"])

    assert vectors == [[1.0, 1.0], [2.0, 1.0], [3.0, 1.0], [4.0, 1.0], [5.0, 1.0]]
    assert [r["input"] for r in requests] == [["a", "bb"], ["ccc", "dddd"], ["eeeee"]]
    assert {(r["model"], r["encoding_format"], r["dimensions"]) for r in requests} == {("test-embed", "float", 2)}


async def test_an_answer_out_of_order_is_put_back_in_the_order_of_its_indexes() -> None:
    model = model_for(answering(lambda texts: list(reversed(items([[float(i)] for i in range(len(texts))])))))

    assert await model.embed(["x", "y", "z"]) == [[0.0], [1.0], [2.0]]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (lambda texts: items([[1.0]]), "expected 2 embeddings (one per text), got 1"),
        (lambda texts: items([[1.0], "oops"]), "embedding 1: expected a list of floats, got str"),
        (lambda texts: items([[1.0], []]), "embedding 1: expected a list of floats, got an empty list"),
        (lambda texts: items([[1.0], [1.0, 2.0]]), "embedding 1: expected 1 dimensions, got 2"),
        (lambda texts: items([[1.0], [True]]), "embedding 1: expected a list of finite floats, got True at position 0"),
        (lambda texts: items([[1.0], ["1"]]), "embedding 1: expected a list of finite floats, got '1' at position 0"),
        (
            lambda texts: items([[[1.0], [2.0]], [[3.0]]]),
            "embedding 0: expected a list of floats, got a list of 2 vectors (one per token: the server does not pool",
        ),
        (
            lambda texts: [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [2.0]}],
            "expected the indexes 0 to 1, got [0, 0]",
        ),
    ],
)
async def test_an_answer_of_the_wrong_shape_is_a_response_error_saying_what_was_wrong(
    data: Callable[[list[str]], Any], expected: str
) -> None:
    model = model_for(answering(data))

    with pytest.raises(ModelResponseError) as caught:
        await model.embed(["one", "two"])

    assert expected in str(caught.value)
    assert str(caught.value).startswith(
        "embedding model 'test-embed' request to http://provider.test/v1/embeddings failed: HTTP 200: "
    )
    assert caught.value.url == "http://provider.test/v1/embeddings"


async def test_a_web_page_instead_of_the_api_says_so() -> None:
    page = "<!doctype html><html><head><title>Router login</title></head></html>"
    model = model_for(lambda request: httpx2.Response(200, headers={"content-type": "text/html"}, text=page))

    with pytest.raises(ModelResponseError, match="expected the API's JSON, got an HTML page titled 'Router login'"):
        await model.embed(["hello"])


async def test_an_http_error_carries_the_provider_s_words_status_and_url() -> None:
    model = model_for(
        lambda request: httpx2.Response(404, json={"error": {"message": "model 'nope' not found", "type": "x"}})
    )

    with pytest.raises(ModelHTTPError) as caught:
        await model.embed(["hello"])

    assert str(caught.value) == (
        "embedding model 'test-embed' request to http://provider.test/v1/embeddings failed: HTTP 404: "
        "model 'nope' not found"
    )
    assert (caught.value.status_code, caught.value.model) == (404, "test-embed")


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        ("just one string", "expected a sequence of strings (a list of texts), got str"),
        (["fine", 3], "expected texts[1] to be a str, got int"),
    ],
)
async def test_texts_that_are_not_a_list_of_strings_are_a_user_error(texts: Any, expected: str) -> None:
    model = model_for(answering(lambda texts: items([[1.0]] * len(texts))))

    with pytest.raises(UserError, match=re.escape(expected)):
        await model.embed(texts)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"batch_size": 0}, "batch_size: expected an int of at least 1, got 0"),
        ({"dimensions": -3}, "dimensions: expected None or an int of at least 1, got -3"),
    ],
)
def test_bad_options_are_refused(options: dict[str, Any], expected: str) -> None:
    with pytest.raises(UserError, match=expected):
        OpenAIEmbeddingModel("m", base_url="http://127.0.0.1:1/v1", **options)


def test_without_an_api_key_or_a_base_url_the_model_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    with pytest.raises(UserError, match=r"needs an API key: expected api_key=\.\.\. or OPENAI_API_KEY"):
        OpenAIEmbeddingModel("text-embedding-3-small")


# -- offline, in-process ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local_embedder() -> LlamaCppEmbeddingModel:
    return LlamaCppEmbeddingModel()


async def test_the_offline_embedder_needs_no_server_and_tells_related_texts_apart(
    local_embedder: LlamaCppEmbeddingModel,
) -> None:
    vectors = await local_embedder.embed(TEXTS)

    assert len(vectors) == 3
    assert {len(v) for v in vectors} == {576}
    assert all(math.isclose(math.fsum(x * x for x in v), 1.0, rel_tol=1e-4) for v in vectors)  # normalized
    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2])
    assert await local_embedder.embed([]) == []
    again = await local_embedder.embed([TEXTS[1]])
    assert cosine(again[0], vectors[1]) == pytest.approx(1.0, abs=1e-5)


async def test_the_offline_embedder_refuses_a_lone_string(local_embedder: LlamaCppEmbeddingModel) -> None:
    with pytest.raises(UserError, match="expected a sequence of strings"):
        await local_embedder.embed("not a list")  # type: ignore[arg-type]


def test_the_offline_embedder_refuses_a_missing_file_and_an_unknown_pooling(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"expected a GGUF file, got '.*missing\.gguf' which does not exist"):
        LlamaCppEmbeddingModel(str(tmp_path / "missing.gguf"))
    with pytest.raises(UserError, match=r"pooling: expected one of \['cls', 'last', 'mean'\] or None, got 'max'"):
        LlamaCppEmbeddingModel(pooling="max")


async def test_a_file_that_is_no_model_fails_typed_on_first_use(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"not a gguf file")

    with pytest.raises(ModelError, match="cannot load local embedding model"):
        await LlamaCppEmbeddingModel(str(bogus)).embed(["hello"])


# -- load_embedding_model ----------------------------------------------------------------------------------------


def test_uris_make_the_provider_they_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:11500")

    openai_model = load_embedding_model("openai:text-embedding-3-small", dimensions=256)
    compatible = load_embedding_model("openai-compatible:http://127.0.0.1:8080/v1#bge-small", batch_size=8)
    ollama = load_embedding_model("ollama:nomic-embed-text")
    local = load_embedding_model("local:smollm2")

    assert isinstance(openai_model, OpenAIEmbeddingModel) and openai_model.dimensions == 256
    assert isinstance(compatible, OpenAIEmbeddingModel)
    assert (compatible.model_name, compatible.url, compatible.batch_size) == (
        "bge-small",
        "http://127.0.0.1:8080/v1/embeddings",
        8,
    )
    assert compatible._client.api_key == "not-needed"  # OPENAI_API_KEY is not sent to a third-party server
    assert isinstance(ollama, OpenAIEmbeddingModel) and ollama.url == "http://127.0.0.1:11500/v1/embeddings"
    assert isinstance(local, LlamaCppEmbeddingModel) and local.pooling == "mean"


def test_a_local_uri_takes_a_gguf_path(local_embedder: LlamaCppEmbeddingModel) -> None:
    model = load_embedding_model(f"local:{local_embedder.model_path}", pooling="cls")

    assert isinstance(model, LlamaCppEmbeddingModel)
    assert (model.model_path, model.pooling) == (local_embedder.model_path, "cls")


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("text-embedding-3-small", "expected '<provider>:<model>' such as 'openai:text-embedding-3-small', got"),
        (
            "cohere:embed-v3",
            r"expected a provider in \['local', 'ollama', 'openai', 'openai-compatible'\], got 'cohere'",
        ),
        ("openai-compatible:bge-small", "expected 'openai-compatible:<http\\(s\\) base URL>#<model>'"),
        ("local:bge", "expected 'local:smollm2' or 'local:<path to a .gguf file>', got 'local:bge'"),
    ],
)
def test_bad_uris_are_refused_saying_what_was_expected(uri: str, expected: str) -> None:
    with pytest.raises(UserError, match=expected):
        load_embedding_model(uri)

"""Embeddings served over the OpenAI ``/v1/embeddings`` API: OpenAI, vLLM, Ollama's /v1, llama.cpp's servers…

Built on the official ``openai`` SDK with its retries switched off, as the chat provider is: a failure surfaces
once, typed, naming the model and the URL. The answer is read from the JSON the server sent, not from the SDK's
models (which accept anything): servers that call themselves compatible differ, and a vector of the wrong shape
would otherwise reach a vector store and fail there, far from its cause.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import openai

from ..errors import ModelConnectionError, ModelError, ModelHTTPError, ModelResponseError, ModelTimeoutError, UserError
from ._embedding import check_texts, describe_vector_problem
from ._openai import _expected_the_api, _is_html, _provider_message, openai_client

__all__ = ["OpenAIEmbeddingModel"]


class OpenAIEmbeddingModel:
    """A model behind an OpenAI-compatible ``/embeddings`` endpoint.

    Texts go in batches of ``batch_size`` per request (in order; the vectors come back in the order of the texts).
    ``dimensions`` asks the server for shorter vectors (OpenAI's ``text-embedding-3`` models) and is checked on
    the answer. ``api_key`` falls back to ``OPENAI_API_KEY``, then to a placeholder when ``base_url`` points at a
    local server that needs none. A ``client`` you pass is used with this model's ``timeout`` and no SDK retries.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dimensions: int | None = None,
        batch_size: int = 64,
        timeout: float = 60.0,
        client: openai.AsyncOpenAI | None = None,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise UserError(f"OpenAIEmbeddingModel batch_size: expected an int of at least 1, got {batch_size!r}")
        if dimensions is not None and (
            isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1
        ):
            raise UserError(
                f"OpenAIEmbeddingModel dimensions: expected None or an int of at least 1, got {dimensions!r}"
            )
        self.model_name = model
        self.dimensions = dimensions
        self.batch_size = batch_size
        self.timeout = timeout
        self._client = openai_client(client, api_key, base_url, timeout, f"OpenAIEmbeddingModel({model!r})")

    @property
    def url(self) -> str:
        """Where the requests go: the ``/embeddings`` endpoint under the client's base URL."""
        return f"{str(self._client.base_url).rstrip('/')}/embeddings"

    def __repr__(self) -> str:
        return f"OpenAIEmbeddingModel({self.model_name!r}, base_url={str(self._client.base_url)!r})"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        batch = check_texts(texts, model=self.model_name)
        vectors: list[list[float]] = []
        for start in range(0, len(batch), self.batch_size):
            vectors.extend(await self._embed_batch(batch[start : start + self.batch_size]))
        return vectors

    async def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        request: dict[str, Any] = {"model": self.model_name, "input": texts, "encoding_format": "float"}
        if self.dimensions is not None:
            request["dimensions"] = self.dimensions
        try:
            response = await self._client.embeddings.with_raw_response.create(**request)
        except openai.OpenAIError as exc:
            raise self._error(exc) from exc
        return self._vectors(response, len(texts))

    def _vectors(self, response: Any, count: int) -> list[list[float]]:
        """The vectors of a successful answer, checked: ``count`` of them, each a list of finite numbers, all of one
        length (``dimensions`` when asked), in the order of the ``index`` each one names."""
        text = response.text
        content_type = response.headers.get("content-type", "")
        try:
            body = json.loads(text)
        except ValueError:
            body = None
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            if body is None or _is_html(content_type, text):
                found = _expected_the_api(text, content_type)
            else:
                found = f"expected a JSON object with a 'data' list, got {text[:200]!r}"
            raise self._bad_answer(response, f"{found} (is base_url the API's address?)")
        if len(data) != count:
            raise self._bad_answer(response, f"expected {count} embeddings (one per text), got {len(data)}")
        items = data
        indexes = [i for i in map(_index, data) if i is not None]
        if len(indexes) == count:  # every item names its place: put them there (servers may answer out of order)
            if sorted(indexes) != list(range(count)):
                raise self._bad_answer(response, f"expected the indexes 0 to {count - 1}, got {sorted(indexes)}")
            items = [item for _, item in sorted(zip(indexes, data, strict=True), key=lambda pair: pair[0])]
        vectors: list[list[float]] = []
        for i, item in enumerate(items):
            vector = item.get("embedding") if isinstance(item, dict) else None
            problem = describe_vector_problem(
                vector, dimensions=self.dimensions or (len(vectors[0]) if vectors else None)
            )
            if problem is not None:
                raise self._bad_answer(response, f"embedding {i}: {problem}")
            vectors.append([float(x) for x in vector])  # type: ignore[union-attr]  # checked just above
        return vectors

    def _bad_answer(self, response: Any, problem: str) -> ModelResponseError:
        return ModelResponseError(
            f"embedding model {self.model_name!r} request to {response.url} failed: HTTP {response.status_code}: "
            f"{problem}",
            url=str(response.url),
            status_code=response.status_code,
            content_type=response.headers.get("content-type", ""),
            body=response.text,
            model=self.model_name,
        )

    def _error(self, exc: openai.OpenAIError) -> ModelError:
        prefix = f"embedding model {self.model_name!r} request to {self.url} failed"
        if isinstance(exc, openai.APITimeoutError):
            return ModelTimeoutError(f"{prefix}: no answer within {self.timeout} s", model=self.model_name)
        if isinstance(exc, openai.APIConnectionError):
            reason = f"{exc.__cause__}" if exc.__cause__ is not None else exc.message
            return ModelConnectionError(f"{prefix}: {reason}", model=self.model_name)
        if isinstance(exc, openai.APIStatusError):
            url = str(exc.response.url)
            if _is_html(exc.response.headers.get("content-type", ""), exc.body):
                said = _expected_the_api(exc.body)
            else:
                said = _provider_message(exc)
            return ModelHTTPError(
                f"{prefix}: HTTP {exc.status_code}: {said}",
                status_code=exc.status_code,
                model=self.model_name,
                body=exc.body,
                url=url,
            )
        return ModelError(f"{prefix}: {exc}", model=self.model_name)


def _index(item: object) -> int | None:
    index = item.get("index") if isinstance(item, dict) else None
    return index if isinstance(index, int) and not isinstance(index, bool) else None

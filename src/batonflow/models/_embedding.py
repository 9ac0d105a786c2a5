"""Embedding models: text in, one vector of floats per text out, for retrieval (RAG) and similarity.

``EmbeddingModel`` is the interface every embedder meets; ``load_embedding_model`` makes one from a URI, with the
conventions of ``load_model`` (``"<provider>:<model>"``). The providers live beside their chat counterparts: the
OpenAI-compatible one in ``_openai_embedding``, the in-process llama.cpp one in ``local``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from ..errors import UserError
from ._uri import compatible_target, ollama_base_url, provider_of

__all__ = ["EmbeddingModel", "check_texts", "describe_vector_problem", "load_embedding_model"]


@runtime_checkable
class EmbeddingModel(Protocol):
    """Turns texts into vectors: ``embed`` returns one vector per text, in the order of the texts.

    An empty sequence of texts gives an empty list, without a call to any server. Every vector of one model has
    the same length (``len(vectors[0])``).
    """

    model_name: str

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in the same order."""
        ...


def check_texts(texts: Sequence[str], *, model: str) -> list[str]:
    """``texts`` as a list, refused with a ``UserError`` unless it is a sequence of strings.

    A lone string is a sequence of characters: embedding each character is never what was meant.
    """
    if isinstance(texts, str | bytes) or not isinstance(texts, Sequence):
        raise UserError(
            f"embedding model {model!r}: expected a sequence of strings (a list of texts), got {type(texts).__name__}"
        )
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise UserError(f"embedding model {model!r}: expected texts[{i}] to be a str, got {type(text).__name__}")
    return list(texts)


def describe_vector_problem(vector: object, *, dimensions: int | None) -> str | None:
    """What is wrong with one vector a provider returned (``None`` if nothing is): not a list, empty, of other
    things than finite numbers, or of another length than ``dimensions``."""
    if not isinstance(vector, list):
        return f"expected a list of floats, got {type(vector).__name__}"
    if not vector:
        return "expected a list of floats, got an empty list"
    if all(isinstance(item, list) for item in vector):
        # llama.cpp servers running a model without pooling answer with one vector per token.
        return (
            f"expected a list of floats, got a list of {len(vector)} vectors (one per token: the server does not "
            "pool them into one vector per text; run a model that pools, or pass a pooling type to the server)"
        )
    for j, item in enumerate(vector):
        if isinstance(item, bool) or not isinstance(item, int | float) or not math.isfinite(item):
            return f"expected a list of finite floats, got {item!r} at position {j}"
    if dimensions is not None and len(vector) != dimensions:
        return f"expected {dimensions} dimensions, got {len(vector)}"
    return None


def load_embedding_model(spec: str, **options: Any) -> EmbeddingModel:
    """The embedding model named by ``spec``; ``options`` go to the model's constructor.

    - ``openai:text-embedding-3-small`` (``OPENAI_API_KEY``)
    - ``openai-compatible:http://127.0.0.1:8080/v1#bge-small`` (any ``/v1/embeddings``: llama.cpp's server run
      with embeddings on, vLLM, LM Studio…; pass ``api_key=`` if the server wants one)
    - ``ollama:nomic-embed-text`` (``OLLAMA_HOST``, default ``http://127.0.0.1:11434``)
    - ``local:smollm2`` or ``local:/path/to/model.gguf`` (in-process llama.cpp, ``batonflow[local]``: no server,
      no download)
    """
    factory, name = provider_of(spec, _PROVIDERS, "embedding model URI", "openai:text-embedding-3-small")
    return factory(name, **options)


def _openai_model(name: str, **options: Any) -> EmbeddingModel:
    from ._openai_embedding import OpenAIEmbeddingModel  # the openai SDK takes a second to import: only when used

    return OpenAIEmbeddingModel(name, **options)


def _openai_compatible(target: str, **options: Any) -> EmbeddingModel:
    base_url, name = compatible_target(target, "embedding model URI", "http://127.0.0.1:8080/v1#bge-small")
    # Never send OPENAI_API_KEY to a third-party server by default.
    options.setdefault("api_key", "not-needed")
    return _openai_model(name, base_url=base_url, **options)


def _ollama(name: str, **options: Any) -> EmbeddingModel:
    options.setdefault("api_key", "ollama")
    return _openai_model(name, base_url=ollama_base_url(), **options)


def _local(target: str, **options: Any) -> EmbeddingModel:
    from .local import LlamaCppEmbeddingModel  # llama.cpp is an optional extra

    if target == "smollm2":
        return LlamaCppEmbeddingModel(**options)
    if target.endswith(".gguf"):
        return LlamaCppEmbeddingModel(target, **options)
    raise UserError(
        f"embedding model URI: expected 'local:smollm2' or 'local:<path to a .gguf file>', got 'local:{target}'"
    )


_PROVIDERS: dict[str, Callable[..., EmbeddingModel]] = {
    "openai": _openai_model,
    "openai-compatible": _openai_compatible,
    "ollama": _ollama,
    "local": _local,
}

"""``chatConfig``, ``embeddingConfig`` and ``generateConfig`` mapped onto batonflow's model URIs.

Solon's configs name a ``provider``, a ``model``, the endpoint's full ``apiUrl`` and an ``apiKey``:

- ``openai`` (the default): OpenAI, or any OpenAI-compatible server when ``apiUrl`` is given (the base URL is the
  ``apiUrl`` without its ``/chat/completions``, ``/embeddings`` or ``/images/generations``);
- ``ollama``: Ollama through its OpenAI-compatible ``/v1``, on the host and port of ``apiUrl``
  (``http://127.0.0.1:11434/api/chat`` gives ``http://127.0.0.1:11434/v1``);
- ``local``: the in-process llama.cpp model (``model`` is ``smollm2``, the default, or a ``.gguf`` path).

``defaultOptions`` go with every request: ``max_tokens``, ``temperature``, ``top_p``, ``seed`` and ``stop`` as
batonflow's ``ModelSettings``, anything else as a provider-specific field (``settings(node, meta)``).

A config with only a ``model`` that names a model registered on the engine (``engine.register(name, model)``) is
that model: tests and embedded uses need no server.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from ..graph import Node
from ..models import ModelSettings
from ._allow import check_url, resolve_file
from ._base import FlowSettings, config_text
from ._errors import FlowMetaError

__all__ = ["PROVIDERS", "ModelConfig", "checked_config", "default_settings", "read_config"]

PROVIDERS = ("local", "ollama", "openai", "openai-compatible")
_ENDPOINTS = ("/chat/completions", "/embeddings", "/images/generations", "/api/chat", "/api/embed", "/api/generate")


class ModelConfig:
    """A config read and checked: ``registered`` (a model name the engine may hold) or ``uri`` and ``options``
    for ``load_model`` / ``load_embedding_model``; ``raw`` is the mapping as written."""

    def __init__(self, raw: Mapping[str, Any], uri: str, options: dict[str, Any], registered: str | None) -> None:
        self.raw = raw
        self.uri = uri
        self.options = options
        self.registered = registered


def _base_url(api_url: str) -> str:
    url = api_url.rstrip("/")
    for suffix in _ENDPOINTS:
        if url.endswith(suffix):
            return url[: -len(suffix)]
    return url


def read_config(node: Node, meta: str, *, default_model: str = "") -> ModelConfig:
    """The node's ``meta`` config as a model URI, checked; a missing, mistyped or unknown part is a
    ``FlowMetaError`` naming the meta."""
    raw = node.meta.get(meta)
    where = {"graph_id": node.graph.id, "node_id": node.id, "meta": meta}
    if not isinstance(raw, Mapping):
        raise FlowMetaError(
            f"expected a mapping with provider, model, apiUrl and apiKey, got {type(raw).__name__} {raw!r}", **where
        )
    provider = config_text(node, meta, raw, "provider")
    model = config_text(node, meta, raw, "model") or default_model
    api_url = config_text(node, meta, raw, "apiUrl")
    api_key = config_text(node, meta, raw, "apiKey")
    options: dict[str, Any] = {}
    timeout = raw.get("timeout")
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise FlowMetaError(f"expected a positive number of seconds for 'timeout', got {timeout!r}", **where)
        options["timeout"] = float(timeout)
    registered = model if provider is None and api_url is None and model else None
    name = (provider or "openai").lower()
    if name not in PROVIDERS:
        raise FlowMetaError(f"unknown provider {provider!r}: expected one of {list(PROVIDERS)}", **where)
    if not model and name != "local":
        raise FlowMetaError(f"expected a 'model' for the provider {name!r}, got none", **where)
    if name == "local":
        return ModelConfig(raw, f"local:{model or 'smollm2'}", options, registered)
    if name == "ollama":
        parts = urlsplit(api_url or "http://127.0.0.1:11434")
        base = f"{parts.scheme}://{parts.netloc}/v1"
        options["api_key"] = api_key or "ollama"
        return ModelConfig(raw, f"openai-compatible:{base}#{model}", options, registered)
    if api_url is not None:
        if not api_url.startswith(("http://", "https://")):
            raise FlowMetaError(f"expected an http(s) URL for 'apiUrl', got {api_url!r}", **where)
        if api_key is not None:
            options["api_key"] = api_key
        return ModelConfig(raw, f"openai-compatible:{_base_url(api_url)}#{model}", options, registered)
    if api_key is not None:
        options["api_key"] = api_key
    return ModelConfig(raw, f"openai:{model}", options, registered)


_OPENAI_BASE_URL = "https://api.openai.com/v1"


async def checked_config(
    node: Node, meta: str, settings: FlowSettings, *, default_model: str = "", sdk_client: bool = True
) -> ModelConfig:
    """``read_config``, then what it would reach checked: the endpoint's host (``apiUrl``, Ollama's, or OpenAI's
    own, ``OPENAI_BASE_URL`` when set) against ``allowed_hosts``, a local ``.gguf`` path against ``base_dir`` (the
    URI then names the resolved file). A model registered on the engine is the owner's: not checked. With
    ``sdk_client`` the options get an openai client that follows no redirect."""
    config = read_config(node, meta, default_model=default_model)
    if config.registered is not None:
        return config
    provider, _, target = config.uri.partition(":")
    if provider == "local":
        if target.endswith(".gguf"):  # any other name than smollm2 is refused by the model loader
            path = resolve_file(target, settings, node, meta, what="the local model file")
            config.uri = f"local:{path}"
        return config
    base = (
        target.rpartition("#")[0]
        if provider == "openai-compatible"
        else (os.environ.get("OPENAI_BASE_URL") or _OPENAI_BASE_URL)
    )
    await check_url(base, settings, node, meta)
    # The SDK follows redirects on its own; one from an endpoint a file named is not followed, so that it cannot
    # lead past allowed_hosts.
    client = no_redirect_client(config, base) if sdk_client else None
    if client is not None:
        config.options["client"] = client
    return config


def no_redirect_client(config: ModelConfig, base_url: str) -> Any:
    """An SDK client for ``base_url`` that does not follow redirects, with the key the model would use; ``None``
    (the model's own client) when there is no key, which the model then reports."""
    import openai

    api_key = config.options.get("api_key") or os.environ.get("OPENAI_API_KEY")
    if api_key is None and config.uri.startswith("openai:"):
        return None
    http_client = openai.DefaultAsyncHttpxClient(follow_redirects=False)
    return openai.AsyncOpenAI(api_key=api_key or "not-needed", base_url=base_url, http_client=http_client)


_SETTINGS = {"max_tokens": int, "temperature": float, "top_p": float, "seed": int, "stop": list}


def _fits(kind: type, value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if kind is float:
        return isinstance(value, int | float)
    if kind is list:
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    return isinstance(value, kind)


def default_settings(node: Node, meta: str) -> ModelSettings | None:
    """The config's ``defaultOptions`` as ``ModelSettings`` (``None`` when it has none)."""
    raw = node.meta.get(meta)
    options = raw.get("defaultOptions") if isinstance(raw, Mapping) else None
    if options is None:
        return None
    where = {"graph_id": node.graph.id, "node_id": node.id, "meta": meta}
    if not isinstance(options, Mapping):
        raise FlowMetaError(f"expected a mapping for 'defaultOptions', got {options!r}", **where)
    known: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in options.items():
        kind = _SETTINGS.get(key)
        if kind is None:
            extra[key] = value
        elif not _fits(kind, value):
            raise FlowMetaError(f"expected {kind.__name__} for 'defaultOptions.{key}', got {value!r}", **where)
        else:
            known[key] = value
    return ModelSettings(**known, extra=extra or None)

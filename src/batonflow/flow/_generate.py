"""The ``EmbeddingModel`` and ``GenerateModel`` components, and the image model ``GenerateModel`` builds.

``EmbeddingModel`` builds an embedding model from ``embeddingConfig`` once per node (the original rebuilds it on
every run) and hands it on as the ``embeddingModel`` property. ``GenerateModel`` builds an image model from
``generateConfig`` (an OpenAI-compatible ``/images/generations`` endpoint, over HTTP; ``defaultOptions`` such as ``size`` go
with each request) and turns its text input into a ``GeneratedImage``.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..errors import RunError, UserError
from ..graph import FlowContext, Node
from ..schema import Message
from ._base import AiComponent, FlowSettings
from ._config import ModelConfig, checked_config
from ._errors import FlowComponentError, FlowMetaError

if TYPE_CHECKING:
    from ..models import EmbeddingModel

__all__ = [
    "MAX_IMAGE_RESPONSE_BYTES",
    "EmbeddingModelComponent",
    "GenerateModelComponent",
    "GeneratedImage",
    "ImageModel",
    "OpenAIImageModel",
]

EMBEDDING_CONFIG, GENERATE_CONFIG = "embeddingConfig", "generateConfig"


@dataclass(frozen=True, slots=True)
class GeneratedImage:
    """An image a model generated: its ``url``, or its data as base64 (``value`` is a URL either way)."""

    url: str = ""
    b64_json: str = ""
    revised_prompt: str = ""

    @property
    def value(self) -> str:
        return self.url or (f"data:image/png;base64,{self.b64_json}" if self.b64_json else "")


@runtime_checkable
class ImageModel(Protocol):
    """Makes an image from a prompt."""

    model_name: str

    async def generate_image(self, prompt: str) -> GeneratedImage: ...


MAX_IMAGE_RESPONSE_BYTES = 64 * 1024 * 1024
"""The most an images endpoint's answer may be (64 MiB: a large image as base64 fits)."""


class OpenAIImageModel:
    """An OpenAI-compatible images endpoint: ``POST {base_url}/images/generations`` with the model, the prompt and
    ``options`` (``size``, ``quality``…); the first image of the answer. ``base_url`` defaults to
    ``OPENAI_BASE_URL``, else OpenAI's. The answer is read as it streams in, at most ``max_response_bytes``, and
    the whole request takes at most ``timeout`` seconds; redirects are not followed."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        options: dict[str, Any] | None = None,
        max_response_bytes: int = MAX_IMAGE_RESPONSE_BYTES,
    ) -> None:
        self.model_name = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/")
        self.options = dict(options or {})
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes
        self._api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")

    async def generate_image(self, prompt: str) -> GeneratedImage:
        import httpx

        url = f"{self.base_url}/images/generations"
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        body = {"model": self.model_name, "prompt": prompt, **self.options}
        try:
            # httpx's timeout is per read; the deadline bounds the whole request, however slowly it answers.
            async with (
                asyncio.timeout(self.timeout),
                httpx.AsyncClient(timeout=self.timeout) as client,
                client.stream("POST", url, json=body, headers=headers) as response,
            ):
                response.raise_for_status()
                data = bytearray()
                async for chunk in response.aiter_bytes():
                    data.extend(chunk)
                    if len(data) > self.max_response_bytes:
                        raise ValueError(f"the answer is larger than {self.max_response_bytes} bytes")
            first = json.loads(bytes(data))["data"][0]
        except TimeoutError:
            raise RunError(
                f"image model {self.model_name!r} request to {url} took longer than {self.timeout} s"
            ) from None
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as error:
            raise RunError(
                f"image model {self.model_name!r} request to {url} failed: {type(error).__name__}: {error}"
            ) from error
        return GeneratedImage(first.get("url") or "", first.get("b64_json") or "", first.get("revised_prompt") or "")


def _registered(settings: FlowSettings, name: str | None, kind: type[Any]) -> Any:
    found = None if name is None else settings.engine.get_component(name)
    return found if isinstance(found, kind) else None


def build_embedding_model(node: Node, settings: FlowSettings, config: ModelConfig) -> EmbeddingModel:
    from ..models import EmbeddingModel, load_embedding_model

    where = {"graph_id": node.graph.id, "node_id": node.id, "meta": EMBEDDING_CONFIG}
    if config.registered is not None:
        found: EmbeddingModel | None = _registered(settings, config.registered, EmbeddingModel)
        if found is None:
            raise FlowMetaError(
                "expected 'model' to name an embedding model registered on the engine, or a 'provider' or an "
                f"'apiUrl', got {config.registered!r} (no embedding model is registered under that name)",
                **where,
            )
        return found
    key = f"embedding {config.uri}"
    if config.uri.startswith("local:") and key in settings.shared:
        shared: EmbeddingModel = settings.shared[key]
        return shared
    try:
        model = load_embedding_model(config.uri, **config.options)
    except UserError as error:
        raise FlowMetaError(str(error), **where) from error
    if config.uri.startswith("local:"):
        settings.shared[key] = model
    return model


class EmbeddingModelComponent(AiComponent):
    """``@EmbeddingModel``: sets the ``embeddingModel`` property; no input, no output."""

    name = "EmbeddingModel"

    async def do_run(self, context: FlowContext, node: Node) -> None:
        if node not in self._cache:
            config = await checked_config(node, EMBEDDING_CONFIG, self.settings)
            self._cache[node] = build_embedding_model(node, self.settings, config)
        model = self._cache[node]
        self.set_property(context, "embeddingModel", model)


def build_image_model(node: Node, settings: FlowSettings, config: ModelConfig) -> ImageModel:
    where = {"graph_id": node.graph.id, "node_id": node.id, "meta": GENERATE_CONFIG}
    if config.registered is not None:
        found: ImageModel | None = _registered(settings, config.registered, ImageModel)
        if found is None:
            raise FlowMetaError(
                f"expected 'model' to name an image model registered on the engine, or an 'apiUrl', got "
                f"{config.registered!r} (no image model is registered under that name)",
                **where,
            )
        return found
    provider, _, target = config.uri.partition(":")
    if provider == "local":
        raise FlowMetaError("the local provider makes no images: expected 'openai' with an 'apiUrl'", **where)
    options = config.raw.get("defaultOptions") or {}
    if not isinstance(options, dict):
        raise FlowMetaError(f"expected a mapping for 'defaultOptions', got {options!r}", **where)
    base_url, _, model = target.rpartition("#") if provider == "openai-compatible" else (None, "", target)
    api_key = config.options.get("api_key") or ("not-needed" if base_url else None)
    return OpenAIImageModel(model, base_url=base_url or None, api_key=api_key, options=options)


class GenerateModelComponent(AiComponent):
    """``@GenerateModel``: sets the ``generateModel`` property; text (or a message's text) in, a
    ``GeneratedImage`` out."""

    name = "GenerateModel"

    async def do_run(self, context: FlowContext, node: Node) -> None:
        if node not in self._cache:
            config = await checked_config(node, GENERATE_CONFIG, self.settings, sdk_client=False)
            self._cache[node] = build_image_model(node, self.settings, config)
        model: ImageModel = self._cache[node]
        self.set_property(context, "generateModel", model)
        data = self.get_input(context, node)
        if data is None:
            return
        if isinstance(data, Message):
            data = data.content
        if not isinstance(data, str):
            raise FlowComponentError(
                f"Unsupported data type: {type(data).__name__}; expected text or a Message",
                graph_id=node.graph.id,
                node_id=node.id,
                meta="input",
            )
        try:
            image = await model.generate_image(data)
        except Exception as error:
            raise FlowComponentError(
                f"the image model failed: {type(error).__name__}: {error}",
                graph_id=node.graph.id,
                node_id=node.id,
                meta=GENERATE_CONFIG,
            ) from error
        self.set_output(context, node, image)

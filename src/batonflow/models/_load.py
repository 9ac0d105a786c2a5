"""Chat models named by a URI, ``"<provider>:<model>"``, for configuration files and command lines."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..errors import UserError
from ._base import ChatModel
from ._uri import compatible_target, ollama_base_url, provider_of

__all__ = ["as_model", "load_model"]

_DEEPSEEK_BASE_URL = "https://api.deepseek.com"


def load_model(uri: str, **kwargs: Any) -> ChatModel:
    """The chat model named by ``uri``; ``kwargs`` go to the model's constructor.

    - ``openai:gpt-4o-mini`` (``OPENAI_API_KEY``)
    - ``openai-compatible:http://127.0.0.1:8000/v1#my-model`` (pass ``api_key=`` if the server wants one)
    - ``ollama:llama3.2`` (``OLLAMA_HOST``, default ``http://127.0.0.1:11434``)
    - ``deepseek:deepseek-chat`` (``DEEPSEEK_API_KEY``; no structured output, which DeepSeek does not have)
    - ``anthropic:claude-sonnet-4-5`` (``ANTHROPIC_API_KEY``; ``batonflow[anthropic]``)
    - ``gemini:gemini-2.5-flash`` (``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``; ``batonflow[gemini]``)
    - ``local:smollm2`` or ``local:/path/to/model.gguf`` (in-process llama.cpp, ``batonflow[local]``)
    """
    factory, name = provider_of(uri, _PROVIDERS, "model URI", "openai:gpt-4o-mini")
    return factory(name, **kwargs)


def as_model(model: ChatModel | str, where: str) -> ChatModel:
    """``model`` itself, or the model its URI names (``load_model``: nothing is loaded or called yet). Anything else
    is refused with a ``TypeError`` that names ``where`` it was given (``"ChatModelAgent 'support' model"``)."""
    if isinstance(model, str):
        return load_model(model)
    if isinstance(model, type) or not callable(getattr(model, "generate", None)):  # a model whose calls can be made
        raise TypeError(
            f"{where}: expected a ChatModel or a model URI such as 'local:smollm2' or 'openai:gpt-4o-mini', "
            f"got {type(model).__name__}"
        )
    return model


def OpenAIChatModel(name: str, **kwargs: Any) -> ChatModel:
    from ._openai import OpenAIChatModel as cls  # the openai SDK takes a second to import: only when used

    return cls(name, **kwargs)


def _openai(name: str, **kwargs: Any) -> ChatModel:
    return OpenAIChatModel(name, **kwargs)


def _openai_compatible(target: str, **kwargs: Any) -> ChatModel:
    base_url, name = compatible_target(target, "model URI", "http://127.0.0.1:8000/v1#qwen2.5")
    # Never send OPENAI_API_KEY to a third-party server by default.
    kwargs.setdefault("api_key", "not-needed")
    return OpenAIChatModel(name, base_url=base_url, **kwargs)


def _ollama(name: str, **kwargs: Any) -> ChatModel:
    kwargs.setdefault("api_key", "ollama")
    return OpenAIChatModel(name, base_url=ollama_base_url(), **kwargs)


def _deepseek(name: str, **kwargs: Any) -> ChatModel:
    api_key = kwargs.pop("api_key", None) or os.environ.get("DEEPSEEK_API_KEY")
    if not api_key:
        raise UserError(f"model URI 'deepseek:{name}': expected DEEPSEEK_API_KEY in the environment, got none")
    # DeepSeek's API knows no json_schema response format (only JSON mode, without a schema): output schemas go
    # in the prompt there.
    kwargs.setdefault("structured_output", None)
    return OpenAIChatModel(name, base_url=_DEEPSEEK_BASE_URL, api_key=api_key, **kwargs)


def _anthropic(name: str, **kwargs: Any) -> ChatModel:
    from ._anthropic import AnthropicChatModel  # an optional extra, imported when used

    return AnthropicChatModel(name, **kwargs)


def _gemini(name: str, **kwargs: Any) -> ChatModel:
    from ._gemini import GeminiChatModel  # an optional extra, imported when used

    return GeminiChatModel(name, **kwargs)


def _local(target: str, **kwargs: Any) -> ChatModel:
    from .local import LlamaCppChatModel  # llama.cpp is an optional extra

    if target == "smollm2":
        return LlamaCppChatModel(**kwargs)
    if target.endswith(".gguf"):
        return LlamaCppChatModel(target, **kwargs)
    raise UserError(f"model URI: expected 'local:smollm2' or 'local:<path to a .gguf file>', got 'local:{target}'")


# One entry per URI scheme. Fakes from batonflow.testing ("scripted") register here too.
_PROVIDERS: dict[str, Callable[..., ChatModel]] = {
    "openai": _openai,
    "openai-compatible": _openai_compatible,
    "ollama": _ollama,
    "deepseek": _deepseek,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "local": _local,
}

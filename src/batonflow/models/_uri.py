"""What chat and embedding model URIs share: ``"<provider>:<model>"``, an OpenAI-compatible server's
``"<base URL>#<model>"``, and where Ollama listens."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TypeVar

from ..errors import UserError

__all__ = ["compatible_target", "ollama_base_url", "provider_of"]

_OLLAMA_DEFAULT_HOST = "http://127.0.0.1:11434"

F = TypeVar("F")


def provider_of(uri: str, providers: Mapping[str, F], what: str, example: str) -> tuple[F, str]:
    """The factory of ``uri``'s provider and the rest of the URI; ``what`` ("model URI") and ``example`` go into
    the error that a malformed URI or an unknown provider raises."""
    provider, sep, name = uri.partition(":")
    if not sep or not provider or not name:
        raise UserError(f"{what}: expected '<provider>:<model>' such as {example!r}, got {uri!r}")
    factory = providers.get(provider)
    if factory is None:
        raise UserError(f"{what} {uri!r}: expected a provider in {sorted(providers)}, got {provider!r}")
    return factory, name


def compatible_target(target: str, what: str, example: str) -> tuple[str, str]:
    """The base URL and the model of an ``openai-compatible:<http(s) base URL>#<model>`` URI's target."""
    base_url, sep, name = target.partition("#")
    if not sep or not name or not base_url.startswith(("http://", "https://")):
        raise UserError(
            f"{what}: expected 'openai-compatible:<http(s) base URL>#<model>' such as "
            f"'openai-compatible:{example}', got 'openai-compatible:{target}'"
        )
    return base_url, name


def ollama_base_url() -> str:
    """Ollama's OpenAI-compatible ``/v1`` (``OLLAMA_HOST``, default ``http://127.0.0.1:11434``)."""
    host = os.environ.get("OLLAMA_HOST") or _OLLAMA_DEFAULT_HOST
    if "://" not in host:  # Ollama itself accepts OLLAMA_HOST=host:port
        host = f"http://{host}"
    return f"{host.rstrip('/')}/v1"

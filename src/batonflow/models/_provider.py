"""What the native providers (Anthropic, Gemini) share: a provider's HTTP error as batonflow's typed error, the
``retry-after`` it asked for, a lazily imported SDK with the extra that installs it, and the answer's JSON checks."""

from __future__ import annotations

import email.utils
import importlib
import time
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from ..errors import ModelHTTPError, ModelResponseError, UserError

__all__ = ["http_error", "import_sdk", "not_the_api", "retry_after_of"]


def import_sdk(module: str, extra: str, owner: str) -> ModuleType:
    """``module``, or a one-line ``UserError`` naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise UserError(
            f"{owner} needs the {module.split('.')[0]!r} package: pip install 'batonflow[{extra}]'"
        ) from exc


def retry_after_of(headers: Mapping[str, str] | Any) -> float | None:
    """The seconds a ``retry-after`` (or ``retry-after-ms``) header asks to wait: a number or an HTTP date."""
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(float(millis) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def http_error(
    model: str,
    status: int,
    said: str,
    *,
    body: object = None,
    url: str = "",
    headers: Mapping[str, str] | Any = None,
) -> ModelHTTPError:
    """``HTTP <status>: <the provider's message>`` as a ``ModelHTTPError``; ``is_retryable_error`` tells which are
    transient (429, 529 and the other 5xx), and ``retry_after`` carries the wait the provider asked for."""
    return ModelHTTPError(
        f"model {model!r} request failed: HTTP {status}: {said}",
        status_code=status,
        model=model,
        body=body,
        url=url,
        retry_after=retry_after_of(headers),
    )


def not_the_api(model: str, status: int, url: str, content_type: str, body: str, what: str) -> ModelResponseError:
    """A success status with a body that is not ``what`` the API answers with (garbage, a web page)."""
    start = " ".join(body.split())[:100]
    return ModelResponseError(
        f"model {model!r} request failed: HTTP {status} from {url}: expected {what}, got a "
        f"{content_type or 'body'} starting {start!r} (is base_url the API's address?)",
        url=url,
        status_code=status,
        content_type=content_type,
        body=body,
        model=model,
    )

"""The HTTP exchange a served flow runs in, for ``WebInput`` and ``WebOutput``.

A serving layer (any HTTP framework) wraps each request in a ``WebExchange`` and runs the flow inside
``serving(exchange)``: ``WebInput`` then reads the request's parameters and files, ``WebOutput`` writes the
response in chunks as a model streams. Outside ``serving`` there is no exchange and both fall back to the context
and the console.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, Protocol, runtime_checkable

__all__ = ["WebExchange", "current_exchange", "serving"]


@runtime_checkable
class WebExchange(Protocol):
    """One HTTP request and its response, as the web components see them."""

    def param(self, name: str) -> str | None:
        """The request parameter ``name`` (query or form), or ``None``."""
        ...

    def file(self, name: str) -> Any:
        """The uploaded file ``name``, or ``None``."""
        ...

    async def write(self, text: str) -> None:
        """Send ``text`` to the client now (written and flushed)."""
        ...


_CURRENT: ContextVar[WebExchange | None] = ContextVar("batonflow_flow_web_exchange", default=None)


@contextlib.contextmanager
def serving(exchange: WebExchange) -> Iterator[WebExchange]:
    """Run the flows started inside the block as answers to ``exchange``."""
    token = _CURRENT.set(exchange)
    try:
        yield exchange
    finally:
        _CURRENT.reset(token)


def current_exchange() -> WebExchange | None:
    """The exchange of the flow running now, or ``None`` when it is not served."""
    return _CURRENT.get()

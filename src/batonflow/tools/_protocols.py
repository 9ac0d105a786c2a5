"""The ``Tool`` interface: a description for the model and one method to call it with the model's arguments.

Retries, approvals, sanitising and instrumentation are wrappers around a ``Tool``, not subclasses of one.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..schema import Stream, ToolInfo
from ._context import ToolContext

__all__ = ["StreamingTool", "Tool"]


@runtime_checkable
class Tool(Protocol):
    """Something a model can call."""

    @property
    def info(self) -> ToolInfo:
        """The name, description and argument schema shown to the model."""
        ...

    async def invoke(self, arguments: str, ctx: ToolContext | None = None) -> str:
        """Run the tool with ``arguments``, the raw JSON text the model produced; return the observation.

        Arguments that are not valid raise ``ToolArgumentsError``, whose text is written for the model.
        """
        ...


@runtime_checkable
class StreamingTool(Tool, Protocol):
    """A tool that can also hand out its observation in chunks as they are produced."""

    def stream(self, arguments: str, ctx: ToolContext | None = None) -> Stream[str]:
        """Like ``invoke``, as a stream of text chunks; invalid arguments raise before the stream is returned."""
        ...

"""A small MCP server for the tests, written with the SDK's own server class: ``python mcp_server.py stdio`` or
``python mcp_server.py http <port>`` (streamable HTTP on 127.0.0.1)."""

from __future__ import annotations

import os
import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, ImageContent, TextContent
from pydantic import BaseModel

server = MCPServer("batonflow-test-server")


class Forecast(BaseModel):
    city: str
    celsius: int


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def weather(city: str, unit: str = "celsius") -> str:
    """The weather in a city, in words."""
    return f"Sunny in {city}, 21 degrees {unit}"


@server.tool()
def forecast(city: str) -> Forecast:
    """Tomorrow's forecast for a city, as structured data."""
    return Forecast(city=city, celsius=19)


@server.tool()
def two_parts(name: str) -> list[TextContent | ImageContent]:
    """A greeting in two text parts and an image."""
    return [
        TextContent(type="text", text=f"Hello, {name}."),
        TextContent(type="text", text="Nice to meet you."),
        ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png"),
    ]


@server.tool()
def fail(reason: str) -> str:
    """Always fails, with the reason given."""
    raise ValueError(reason)


@server.tool()
def quota() -> CallToolResult:
    """A failure the tool reports itself, in words that already say it is one."""
    return CallToolResult(content=[TextContent(type="text", text="Error: quota exceeded")], is_error=True)


@server.tool()
async def slow(seconds: float) -> str:
    """Answers after a while."""
    await anyio.sleep(seconds)
    return "done"


_arrived: dict[str, int] = {}
_all_in: dict[str, anyio.Event] = {}


@server.tool()
async def meet(group: str, count: int) -> str:
    """Answers "met" once ``count`` calls of ``group`` are in at once, or "alone" after 60 s without them."""
    _arrived[group] = _arrived.get(group, 0) + 1
    everyone = _all_in.setdefault(group, anyio.Event())
    if _arrived[group] == count:
        everyone.set()
    with anyio.move_on_after(60):
        await everyone.wait()
    return "met" if everyone.is_set() else "alone"


@server.tool()
def pid() -> int:
    """The server's process id, for tests that kill it."""
    return os.getpid()


@server.tool()
def header(name: str, ctx: Context) -> str:
    """A header of the HTTP request that carried this call ('' over stdio)."""
    request = ctx.request_context.request
    return str(request.headers.get(name, "")) if request is not None else ""


@server.tool(name="dotted.name")
def dotted() -> str:
    """A tool whose name a chat model would not accept."""
    return "dotted"


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))

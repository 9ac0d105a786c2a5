"""``batonflow mcp APP``: the agents ``APP`` names as the tools of an MCP server (``create_mcp_server``), over
stdio (the client starts this command and talks over its stdin and stdout) or, with ``--http``, streamable HTTP
at ``http://HOST:PORT/mcp`` (uvicorn). ``APP`` is what ``batonflow serve`` takes (``module:attr``), or
``path/to/file.py:attr``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ..adk import Agent
from ..errors import UserError
from ._options import Store
from ._target import load_target, open_stores

__all__ = ["mcp_agents", "mcp_command", "serve_mcp"]


def mcp_command(
    target: Annotated[str, typer.Argument(help="module:attr or file.py:attr — the agents to serve as MCP tools")],
    http: Annotated[bool, typer.Option(help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio")] = False,
    host: Annotated[str, typer.Option(help="with --http: the address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="with --http: the port to listen on")] = 8000,
    store: Store = "memory",
    tools: Annotated[bool, typer.Option(help="list the agents' own tools as MCP tools too")] = False,
) -> None:
    """Serve the agents as the tools of an MCP server, over stdio (default) or streamable HTTP (the mcp extra)."""
    serve_mcp(target, http=http, host=host, port=port, store=store, tools=tools)


def serve_mcp(target: str, *, http: bool, host: str, port: int, store: str, tools: bool) -> None:
    """Serve ``target``'s agents until the client hangs up (stdio) or the process is stopped (HTTP)."""
    import anyio
    from mcp.server.stdio import stdio_server

    from ..interop import create_mcp_server

    checkpoints, sessions = open_stores(store)
    server = create_mcp_server(mcp_agents(target), tools=tools, checkpoint_store=checkpoints, session_store=sessions)
    if http:
        import uvicorn

        uvicorn.run(server.streamable_http_app(host=host), host=host, port=port, log_level="warning")
        return

    async def over_stdio() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(over_stdio)


def mcp_agents(target: str) -> dict[str, Agent]:
    """The agents ``target`` names: ``module:attr`` as ``serve`` loads it, or a ``file.py:attr`` (the file's folder
    on the import path, as ``python file.py`` has it); graphs have no place among MCP tools and are refused."""
    location, sep, attr = target.rpartition(":")
    if sep and location.endswith(".py"):
        path = Path(location).resolve()
        if not path.is_file():
            raise UserError(f"target {target!r}: expected {location} to be a Python file, found none")
        if str(path.parent) not in sys.path:
            sys.path.insert(0, str(path.parent))
        _load_file(path)
        target = f"{path.stem}:{attr}"
    agents, graphs = load_target(target)
    if not agents:
        found = f"{len(graphs)} graph(s)"
        raise UserError(f"target {target!r}: expected agents to serve as MCP tools, got {found} and no agent")
    return agents


def _load_file(path: Path) -> Any:
    """Import the module of ``path`` under its stem, so that ``load_target`` finds it."""
    if path.stem in sys.modules:
        return sys.modules[path.stem]
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise UserError(f"target: expected an importable Python file, got {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module

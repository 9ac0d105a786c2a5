"""The tools of a ``ChatModel`` node: ``toolProviders`` (names of tools registered on the engine) and
``mcpServers`` (MCP servers, each started once per node and kept for the engine's life).

A registered tool provider is a ``Tool``, a function (made a tool as ``@tool`` makes one), a list of those, or an
object with an ``async tools()`` method (an ``MCPToolProvider`` opened in code, say). An ``mcpServers`` entry is
``{type: stdio, command, args, env, cwd}`` (``cwd`` defaults to the engine's ``base_dir``) or ``{type: streamable,
url, headers}``, with an optional ``timeout`` in seconds. A stdio server runs only a command the engine's owner
allowed (``allowed_commands``), in a ``cwd`` inside ``base_dir``; an HTTP one only on an allowed host.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..graph import Node
from ..schema import ToolInfo
from ..tools import Tool, as_tool
from ._allow import check_command, check_url
from ._base import FlowSettings, meta_mapping, meta_texts
from ._errors import FlowComponentError, FlowMetaError

__all__ = ["NodeTools", "node_tools"]

TOOL_PROVIDERS, MCP_SERVERS = "toolProviders", "mcpServers"
_HTTP_TYPES = ("streamable", "streamable_http", "http")


@dataclass(slots=True)
class NodeTools:
    """The node's tools by name, their descriptions for the model, and the meta each came from."""

    by_name: dict[str, Tool] = field(default_factory=dict)
    infos: list[ToolInfo] = field(default_factory=list)
    meta_of: dict[str, str] = field(default_factory=dict)

    def add(self, tools: Sequence[Tool], meta: str, node: Node) -> None:
        for tool in tools:
            name = tool.info.name
            if name in self.by_name:
                raise FlowMetaError(
                    f"two tools are named {name!r}: expected each tool name once among toolProviders and mcpServers",
                    graph_id=node.graph.id,
                    node_id=node.id,
                    meta=meta,
                )
            self.by_name[name] = tool
            self.infos.append(tool.info)
            self.meta_of[name] = meta


async def node_tools(node: Node, settings: FlowSettings) -> NodeTools:
    tools = NodeTools()
    for name in meta_texts(node, TOOL_PROVIDERS):
        tools.add(await _provided(name, node, settings), TOOL_PROVIDERS, node)
    servers = meta_mapping(node, MCP_SERVERS) or {}
    # Every server is checked before any starts: a refused one leaves nothing running.
    checked = [(name, *await _checked_options(name, config, node, settings)) for name, config in servers.items()]
    for name, kind, options in checked:
        tools.add(await _mcp_tools(name, kind, options, node, settings), MCP_SERVERS, node)
    return tools


async def _provided(name: str, node: Node, settings: FlowSettings) -> list[Tool]:
    where = {"graph_id": node.graph.id, "node_id": node.id, "meta": TOOL_PROVIDERS}
    provider = settings.engine.get_component(name)
    if provider is None:
        raise FlowMetaError(
            f"no tool provider is registered as {name!r}: expected engine.register({name!r}, tools) first", **where
        )
    lister = getattr(provider, "tools", None)
    if callable(lister) and not isinstance(provider, Tool):
        try:
            provider = await lister()
        except Exception as error:
            raise FlowComponentError(
                f"the tool provider {name!r} could not list its tools: {type(error).__name__}: {error}", **where
            ) from error
    candidates = provider if isinstance(provider, list | tuple) else [provider]
    try:
        return [as_tool(candidate, where=f"tool provider {name!r}") for candidate in candidates]
    except Exception as error:
        raise FlowMetaError(str(error), **where) from error


def _mcp_options(name: str, config: Any, node: Node) -> tuple[str, dict[str, Any]]:
    where = {"graph_id": node.graph.id, "node_id": node.id, "meta": MCP_SERVERS}
    if not isinstance(config, Mapping):
        raise FlowMetaError(
            f"server {name!r}: expected a mapping with type and url or command, got {config!r}", **where
        )
    kind = str(config.get("type") or ("stdio" if "command" in config else "streamable")).lower()
    options: dict[str, Any] = {}
    timeout = config.get("timeout")
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise FlowMetaError(f"server {name!r}: expected a positive 'timeout' in seconds, got {timeout!r}", **where)
        options["timeout"] = float(timeout)
    if kind == "stdio":
        command = config.get("command")
        args = config.get("args") or []
        if not isinstance(command, str) or not command or not isinstance(args, list):
            raise FlowMetaError(
                f"server {name!r}: expected 'command' as text and 'args' as a list, got {command!r} and {args!r}",
                **where,
            )
        options.update(args=[str(arg) for arg in args])
        return kind, options
    if kind in _HTTP_TYPES:
        url = config.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise FlowMetaError(f"server {name!r}: expected an http(s) 'url', got {url!r}", **where)
        options["url"] = url
        if config.get("headers") is not None:
            options["headers"] = dict(config["headers"])
        return "http", options
    raise FlowMetaError(f"server {name!r}: expected type 'stdio' or 'streamable', got {kind!r}", **where)


async def _checked_options(name: str, config: Any, node: Node, settings: FlowSettings) -> tuple[str, dict[str, Any]]:
    kind, options = _mcp_options(name, config, node)
    if kind == "stdio":
        options.update(check_command(name, config, settings, node, MCP_SERVERS))
    else:
        await check_url(options["url"], settings, node, MCP_SERVERS)
    return kind, options


async def _mcp_tools(name: str, kind: str, options: dict[str, Any], node: Node, settings: FlowSettings) -> list[Tool]:
    from ..tools.mcp import MCPToolProvider

    try:
        if kind == "stdio":
            provider = MCPToolProvider.stdio(options.pop("command"), options.pop("args"), **options)
        else:
            provider = MCPToolProvider.http(options.pop("url"), **options)
        settings.engine.add_closer(provider.close)
        return list(await provider.tools())
    except Exception as error:
        raise FlowComponentError(
            f"the MCP server {name!r} did not give its tools: {type(error).__name__}: {error}",
            graph_id=node.graph.id,
            node_id=node.id,
            meta=MCP_SERVERS,
        ) from error

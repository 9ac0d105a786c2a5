"""An MCP server with one tool, get_weather, for mcp_case1.yml: `python weather_mcp_server.py [--port 8000]`
serves it over streamable HTTP at http://127.0.0.1:<port>/mcp (`--stdio` serves it over stdin and stdout)."""

from __future__ import annotations

import argparse

from mcp.server.mcpserver import MCPServer

server = MCPServer("weather")


@server.tool(description="Get the weather of a city")
def get_weather(location: str) -> str:
    """The weather of ``location``, the city the user names."""
    return f"Sunny, 24 degrees in {location}"


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--stdio", action="store_true")
    args = parser.parse_args()
    if args.stdio:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.port)

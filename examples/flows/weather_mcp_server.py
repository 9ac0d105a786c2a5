"""An MCP server with one tool, get_weather, for mcp_case1.yml: `python weather_mcp_server.py [--port 8000]`
serves it over streamable HTTP at http://127.0.0.1:<port>/mcp."""

from __future__ import annotations

import argparse

from mcp.server.fastmcp import FastMCP


def build(port: int) -> FastMCP:
    server = FastMCP("weather", host="127.0.0.1", port=port)

    @server.tool(description="Get the weather of a city")
    def get_weather(location: str) -> str:
        """The weather of ``location`` (the city the user names)."""
        return f"Sunny, 24 degrees in {location}"

    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8000)
    build(parser.parse_args().port).run(transport="streamable-http")

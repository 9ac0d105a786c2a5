"""batonflow over the open agent protocols: agents served and called over A2A, runs streamed as AG-UI events, and
agents exposed as the tools of an MCP server. Each protocol is spoken through its official Python package (an extra
of its own); this package holds the mapping between batonflow's runs and each protocol's tasks, messages and events.
"""

__all__: list[str] = []

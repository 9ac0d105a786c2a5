"""batonflow over the open agent protocols: agents served and called over A2A, runs streamed as AG-UI events, and
agents exposed as the tools of an MCP server. Each protocol is spoken through its official Python package (an extra
of its own); this package holds the mapping between batonflow's runs and each protocol's tasks, messages and events.

AG-UI (the ``agui`` extra, ``ag-ui-protocol``): ``agui_router(host)``, ``POST /agui/{agent}`` on an app that runs
the agents (``batonflow.server.create_app(agui=True)`` mounts it), and ``AguiTranslator``, a run's frames as AG-UI
events.

A2A (the ``a2a`` extra, ``a2a-sdk``): ``a2a_router(host)``, each agent an A2A server at ``/a2a/{agent}``
(``create_app(a2a=True)`` mounts it), ``agent_card``, an agent's A2A card, and ``RemoteA2AAgent``, a remote A2A agent as a
batonflow agent.

MCP (the ``mcp`` extra): ``create_mcp_server(agents)``, the agents (and their tools) as the tools of an MCP server
(``batonflow mcp`` serves it over stdio or streamable HTTP).

Their names are imported on first use, so that this package imports without the protocols' packages.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._a2a import A2AHost as A2AHost
    from ._a2a import a2a_router as a2a_router
    from ._a2a_card import agent_card as agent_card
    from ._a2a_remote import RemoteA2AAgent as RemoteA2AAgent
    from ._agui import AguiHost as AguiHost
    from ._agui import agui_router as agui_router
    from ._agui_events import AguiTranslator as AguiTranslator
    from ._mcp import create_mcp_server as create_mcp_server

__all__ = [
    "A2AHost",
    "AguiHost",
    "AguiTranslator",
    "RemoteA2AAgent",
    "a2a_router",
    "agent_card",
    "agui_router",
    "create_mcp_server",
]

# The protocols' packages are extras: a missing one is a ModuleNotFoundError for 'ag_ui', 'a2a' or 'mcp'.
_MODULES = {
    "AguiHost": "_agui",
    "agui_router": "_agui",
    "AguiTranslator": "_agui_events",
    "A2AHost": "_a2a",
    "a2a_router": "_a2a",
    "agent_card": "_a2a_card",
    "RemoteA2AAgent": "_a2a_remote",
    "create_mcp_server": "_mcp",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)

"""batonflow over the open agent protocols: agents served and called over A2A, runs streamed as AG-UI events, and
agents exposed as the tools of an MCP server. Each protocol is spoken through its official Python package (an extra
of its own); this package holds the mapping between batonflow's runs and each protocol's tasks, messages and events.

AG-UI (the ``agui`` extra, ``ag-ui-protocol``): ``agui_router(host)``, ``POST /agui/{agent}`` on an app that runs
the agents (``batonflow.server.create_app(agui=True)`` mounts it), and ``AguiTranslator``, a run's frames as AG-UI
events. MCP (the ``mcp`` extra): ``create_mcp_server(agents)``, the agents (and their tools) as the tools of an MCP
server (``batonflow mcp`` serves it over stdio or streamable HTTP). Their names are imported on first use, so that
this package imports without the protocols' packages.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._agui import AguiHost as AguiHost
    from ._agui import agui_router as agui_router
    from ._agui_events import AguiTranslator as AguiTranslator
    from ._mcp import create_mcp_server as create_mcp_server

__all__ = ["AguiHost", "AguiTranslator", "agui_router", "create_mcp_server"]

_AGUI = {"AguiHost": "_agui", "agui_router": "_agui", "AguiTranslator": "_agui_events", "create_mcp_server": "_mcp"}


def __getattr__(name: str) -> Any:
    module = _AGUI.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if module == "_mcp":  # the mcp SDK is an extra: a missing one is a ModuleNotFoundError for 'mcp'
        from . import _mcp

        return getattr(_mcp, name)
    if module == "_agui":  # the AG-UI package is an extra: a missing one is a ModuleNotFoundError for 'ag_ui'
        from . import _agui

        return getattr(_agui, name)
    from . import _agui_events

    return getattr(_agui_events, name)

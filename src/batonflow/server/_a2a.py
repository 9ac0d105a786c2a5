"""The server as the host of the A2A endpoint (``create_app(a2a=True)``): its runs go the way the AG-UI endpoint's
go (a segment submitted to the backend, counted among the active runs, its records read from the run's event log,
cancelled once nobody follows them), and its refusals are the API's (an ``ApiError``, shown to the A2A client as
the text of the task's status)."""

from fastapi import APIRouter

from ..adk import Agent
from ..errors import UserError
from ._agui import ServerHost
from ._errors import ApiError
from ._server import Server

__all__ = ["a2a_routes"]


class A2AServerHost(ServerHost):
    """``batonflow.interop.A2AHost`` on ``server``."""

    def agent(self, name: str) -> Agent:
        return self.server.agent(name)

    def refused(self, error: BaseException) -> str | None:
        if isinstance(error, ApiError):
            return f"{error.code}: {error.message}"
        return None


def a2a_routes(server: Server) -> APIRouter:
    """``/a2a/{agent}`` on ``server``; a missing ``a2a-sdk`` package is a ``UserError`` that names the extra."""
    try:
        from ..interop import a2a_router
    except ModuleNotFoundError as error:
        if error.name is None or error.name.split(".")[0] not in ("a2a", "google"):
            raise
        raise UserError(
            "a2a=True: expected the a2a-sdk package (the A2A endpoint speaks through it), found none: "
            "pip install 'batonflow[a2a]'"
        ) from error
    from .. import __version__

    return a2a_router(A2AServerHost(server), version=__version__, keep_tasks=server.limits.keep_finished_runs)

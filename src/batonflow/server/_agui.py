"""The server as the host of the AG-UI endpoint (``create_app(agui=True)``): its runs go the way every run of the
API goes (a segment submitted to the backend, counted among the active runs, its records read from the run's event
log, cancelled once its client has gone), and its refusals are the API's, in its error body."""

from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel

from ..distributed import EventRecord, SegmentRequest
from ..errors import UserError
from ..schema import Message
from ._errors import ApiError
from ._follow import segment_records
from ._models import InputMessage
from ._server import Server, pending_session

__all__ = ["agui_routes"]


class ServerHost:
    """``batonflow.interop.AguiHost`` on ``server``."""

    def __init__(self, server: Server) -> None:
        self.server = server

    def check_agent(self, name: str) -> None:
        self.server.agent(name)

    def check(self, body: BaseModel, *nested: str) -> None:
        self.server.check(body, *nested)

    def messages(self, given: Sequence[tuple[str, str]]) -> list[Message]:
        return self.server.messages([InputMessage(role=role, content=text) for role, text in given], "messages")  # type: ignore[arg-type]

    async def known(self, session_id: str) -> bool:
        return await self.server.sessions.get(session_id, last=1) is not None

    async def resume_targets(self, session_id: str, targets: Mapping[str, Any]) -> dict[str, Any]:
        self.server.busy("session", session_id)
        return await pending_session(self.server, session_id, targets)

    async def start(self, request: SegmentRequest) -> AsyncGenerator[EventRecord, None]:
        server = self.server
        server.busy("session", request.run_key)
        run, after = await server.submit(request, detached=False)

        async def records() -> AsyncGenerator[EventRecord, None]:
            server.followers.attach(run)
            try:
                async with aclosing(segment_records(server.backend, run.run, run.segment_id, after)) as followed:
                    async for record in followed:
                        if record.kind == "end":
                            server.ended(run.segment_id)
                        yield record
            finally:
                server.followers.detach(run)

        return records()

    def refuse(self, status: int, code: str, message: str, *, expected: Any, found: Any) -> Exception:
        return ApiError(status, code, message, expected=expected, found=found)


def agui_routes(server: Server) -> APIRouter:
    """``POST /agui/{agent}`` on ``server``; a missing ``ag-ui-protocol`` package is a ``UserError`` that names the
    extra to install."""
    try:
        from ..interop import agui_router
    except ModuleNotFoundError as error:
        if error.name is None or error.name.split(".")[0] != "ag_ui":
            raise
        raise UserError(
            "agui=True: expected the ag-ui-protocol package (the AG-UI endpoint speaks through it), found none: "
            "pip install 'batonflow[agui]'"
        ) from error
    return agui_router(ServerHost(server))

"""``POST /runs`` answered before FastAPI's routing: the app's innermost middleware, under the body limit and CORS.

A run request whose body is JSON that ``RunRequest`` takes, with a valid ``Idempotency-Key`` if any, from a client
the bearer token lets in, is answered here by the route's own function (``start_run``) and its refusals by the
app's own handler of ``ApiError``; everything else (another route, malformed JSON, a body off the schema, a missing
or wrong token) goes on to FastAPI with its body as it came, and is answered there as before. So there is one
implementation of each check and of each refusal, and what the fast path saves is what FastAPI does around a
handler (routing, the request's exit stacks, solving dependencies, the exception middleware), which was about a
third of the server's CPU per streamed run.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from fastapi.encoders import jsonable_encoder
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ._errors import ApiError, api_error
from ._models import RunRequest
from ._routes import IDEMPOTENCY_KEY_MAX, start_run
from ._server import Server
from ._wire import JSONAnswer

__all__ = ["Bearer", "FastRuns"]

Bearer = tuple[HTTPBearer, Callable[[HTTPAuthorizationCredentials | None], Awaitable[None]]]
"""The app's bearer check: the scheme that reads the header, and the check of what it read (raises ``ApiError``)."""


class FastRuns:
    """``POST /runs`` for ``server``, before the routing of ``app`` (the rest of the stack), checked by ``bearer``
    when the server has a token."""

    def __init__(self, app: ASGIApp, *, server: Server, bearer: Bearer | None) -> None:
        self.app = app
        self.server = server
        self.bearer = bearer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or _route_path(scope) != "/runs":
            await self.app(scope, receive, send)
            return
        messages = await _body(receive)
        request = Request(scope, receive)
        taken = await self._taken(request, b"".join(m.get("body", b"") for m in messages), messages)
        if taken is None:
            await self.app(scope, _replay(messages, receive), send)
            return
        body, key = taken
        try:
            answer = await start_run(body, self.server, request, key)
        except ApiError as error:
            answer = api_error(request, error)
        response = answer if isinstance(answer, Response) else JSONAnswer(jsonable_encoder(answer))
        await response(scope, receive, send)

    async def _taken(
        self, request: Request, raw: bytes, messages: list[Message]
    ) -> tuple[RunRequest, str | None] | None:
        """The run request and its ``Idempotency-Key``, when FastAPI's route would take them as they are; None
        when it would refuse them (or the client left before its body ended), for it to say why."""
        if messages[-1]["type"] != "http.request" or messages[-1].get("more_body", False):
            return None
        content_type = request.headers.get("content-type", "")
        key = request.headers.get("idempotency-key")
        if content_type.partition(";")[0].strip().lower() != "application/json" or (
            key is not None and len(key) > IDEMPOTENCY_KEY_MAX
        ):
            return None
        try:
            body = RunRequest.model_validate(json.loads(raw), from_attributes=True)
        except (ValueError, RecursionError, ValidationError):  # malformed or too deep JSON, or off the schema
            return None
        if self.bearer is not None:
            scheme, check = self.bearer
            try:
                await check(await scheme(request))
            except ApiError:
                return None
        return body, key


async def _body(receive: Receive) -> list[Message]:
    """The request's messages up to the end of its body (or the client's leaving)."""
    messages = [await receive()]
    while messages[-1]["type"] == "http.request" and messages[-1].get("more_body", False):
        messages.append(await receive())
    return messages


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """``receive``, giving ``messages`` (read already) first."""
    pending = list(messages)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed


def _route_path(scope: Scope) -> str:
    """The path the router matches (``scope["path"]`` without the ``root_path`` it starts with), as Starlette has
    it."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if not root or not path.startswith(root):
        return path
    if path == root:
        return ""
    return path[len(root) :] if path[len(root)] == "/" else path

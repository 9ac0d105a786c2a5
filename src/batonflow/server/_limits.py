"""The request body limit, as ASGI middleware: a body over it is refused before any handler reads it."""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ._errors import error_body

__all__ = ["BodyLimit"]


class BodyLimit:
    """Refuses, with 413, a request whose body is longer than ``limit`` bytes: by its ``Content-Length`` when it
    says, else by counting as it arrives (the body is read here, up to the limit, and handed on whole)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = None
        for name, value in scope["headers"]:  # the last one, as a dict of them has it
            if name == b"content-length":
                length = value
        if length is not None:
            if not length.isdigit():
                await _refuse(
                    send,
                    400,
                    "invalid_content_length",
                    "Content-Length: expected a number of bytes",
                    "digits",
                    length.decode("latin-1")[:40],
                )
                return
            if int(length) > self.limit:
                await self._too_large(send, int(length))
                return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break  # the client went away before the body ended
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await self._too_large(send, size, at_least=True)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, send: Send, size: int, *, at_least: bool = False) -> None:
        found = f"{'more than ' if at_least else ''}{size - 1 if at_least else size} bytes"
        await _refuse(
            send,
            413,
            "body_too_large",
            f"request body: expected at most {self.limit} bytes, got {found}",
            f"<= {self.limit} bytes",
            found,
        )


async def _refuse(send: Send, status: int, code: str, message: str, expected: str, found: str) -> None:
    payload = json.dumps(error_body(code, message, expected, found)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})

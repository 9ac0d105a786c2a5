"""A provider's HTTP API faked on loopback: a raw ASGI app served by uvicorn that answers with scripted replies
(JSON bodies, server-sent events, error statuses, garbage) and records what it was asked."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.server.conftest import serving as serve_app


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before the answer starts (for timeouts)


def json_reply(data: Any, status: int = 200, **headers: str) -> Reply:
    return Reply(status=status, body=json.dumps(data).encode(), headers=headers)


def sse_reply(events: Sequence[tuple[str | None, Any]]) -> Reply:
    """An event stream: ``(event name or None, data)``; data that is not a str is sent as JSON."""
    lines = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        lines.append((f"event: {name}\n" if name else "") + f"data: {text}\n\n")
    return Reply(body="".join(lines).encode(), content_type="text/event-stream")


@dataclass
class Request:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any


class FakeAPI:
    """Answers each request with the next reply (the last one repeats) and keeps the requests."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[Request] = []

    @property
    def body(self) -> Any:
        """The JSON body of the only request."""
        assert len(self.requests) == 1, self.requests
        return self.requests[0].body

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        self.requests.append(
            Request(scope["method"], scope["path"], scope["query_string"].decode(), headers, json.loads(raw or b"null"))
        )
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if reply.delay:
            await asyncio.sleep(reply.delay)
        out = [(b"content-type", reply.content_type.encode())]
        out += [(k.encode(), v.encode()) for k, v in reply.headers.items()]
        await send({"type": "http.response.start", "status": reply.status, "headers": out})
        await send({"type": "http.response.body", "body": reply.body})


@asynccontextmanager
async def serving(app: FakeAPI) -> AsyncIterator[str]:
    """``app`` on uvicorn on 127.0.0.1 (a free port), in this event loop; its base URL. A reply still waiting out
    its delay is not waited for."""
    async with serve_app(app, lifespan="off", force_exit=True) as url:
        yield url

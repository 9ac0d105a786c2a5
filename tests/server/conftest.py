"""Helpers for the server tests: an HTTP client on the app (ASGI) or on a real uvicorn on loopback, and SSE parsing."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI


@dataclass
class Sse:
    id: str
    event: str
    data: Any


def parse_sse(text: str) -> list[Sse]:
    """The events of an SSE body (comments, such as heartbeats, left out)."""
    found = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            fields[name] = value[1:] if value.startswith(" ") else value
        if "data" in fields:
            data = fields["data"]
            found.append(
                Sse(
                    fields.get("id", ""), fields.get("event", "message"), json.loads(data) if data != "[DONE]" else data
                )
            )
    return found


def asgi_client(app: FastAPI, **kwargs: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://app", **kwargs)


@asynccontextmanager
async def serving(app: Any, *, lifespan: str = "on", force_exit: bool = False) -> AsyncIterator[str]:
    """``app`` on a real uvicorn on 127.0.0.1 (a free port), in this event loop; its base URL. With ``force_exit``
    the server stops without waiting for the replies still under way."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan=lifespan)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.005)
        if task.done():
            task.result()
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        server.force_exit = force_exit
        await task


def run_tasks() -> list[asyncio.Task[Any]]:
    """The run tasks of any app still going in this loop."""
    return [t for t in asyncio.all_tasks() if t.get_name().startswith("batonflow ") and not t.done()]


async def eventually(check: Any, within: float = 5.0) -> None:
    """Wait until ``check()`` is true (polling every few ms)."""
    deadline = asyncio.get_running_loop().time() + within
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("the condition did not hold in time")
        await asyncio.sleep(0.005)

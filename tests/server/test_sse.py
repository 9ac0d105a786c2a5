"""The SSE response of a run: its headers, the end of a stream when uvicorn is told to stop, and what a stream
leaves behind (no task of its own once it ended)."""

from __future__ import annotations

import asyncio

import httpx
import uvicorn

from batonflow.server import ServerLimits, create_app

from . import apps
from .conftest import eventually, parse_sse, run_tasks, serving


def stream_tasks() -> list[str]:
    """The tasks of this loop that are not the test's own or uvicorn's: what streams may leave behind."""
    mine = asyncio.current_task()
    left = [t.get_coro() for t in asyncio.all_tasks() if t is not mine and not t.done()]
    code = [getattr(c, "cr_code", None) for c in left]
    return [repr(c) for c, k in zip(left, code, strict=True) if k is None or "/uvicorn/" not in k.co_filename]


async def test_a_streamed_run_has_the_event_stream_headers_and_its_frames() -> None:
    async with serving(create_app([apps.echo()])) as url, httpx.AsyncClient(base_url=url) as client:
        answer = await client.post("/runs", json={"agent": "echo", "input": "hi", "stream": True})
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert answer.headers["cache-control"] == "no-store"
    assert answer.headers["x-accel-buffering"] == "no"
    assert answer.headers["x-run-id"]
    frames = parse_sse(answer.text)
    assert frames[0].event == "run" and frames[-1].event == "end"
    assert frames[-1].data["text"] == "echo: hi"


async def test_a_stream_that_ended_leaves_no_task_behind() -> None:
    server = create_app([apps.echo()], limits=ServerLimits(heartbeat=0.05))
    async with serving(server) as url, httpx.AsyncClient(base_url=url) as client:
        for _ in range(3):
            answer = await client.post("/runs", json={"agent": "echo", "input": "hi", "stream": True})
            assert parse_sse(answer.text)[-1].event == "end"
        await eventually(lambda: not run_tasks())
        # No heartbeat, disconnect listener or lease renewal is left going once the streams ended.
        await eventually(lambda: not stream_tasks(), within=2.0)


async def test_a_server_told_to_stop_ends_the_streams_it_has_open() -> None:
    model = apps.Blocking()
    app = create_app([apps.blocking(model)], limits=ServerLimits(heartbeat=0.05))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
    serve = asyncio.create_task(server.serve())
    await eventually(lambda: server.started)
    port = server.servers[0].sockets[0].getsockname()[1]
    lines: list[str] = []
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        body = {"agent": "slow", "input": "x", "stream": True}
        async with client.stream("POST", "/runs", json=body) as stream:
            async for line in stream.aiter_lines():  # to its end: uvicorn waits for open responses
                lines.append(line)
                if line.startswith(": "):  # the run is going, and its heartbeats come
                    server.should_exit = True  # as uvicorn's handler of SIGTERM does
    await asyncio.wait_for(serve, 10)
    assert any(line.startswith("event: run") for line in lines)
    assert model.started == 1 and model.cancelled == 1  # the backend, closed with the app, cancelled the run


def test_the_bearer_scheme_is_in_the_openapi_document_only_when_the_server_has_a_token() -> None:
    # Without a token no request is checked: no dependency is solved per request, none is advertised.
    assert "securitySchemes" not in create_app([apps.echo()]).openapi().get("components", {})
    with_token = create_app([apps.echo()], auth_token="s3cret").openapi()
    assert with_token["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"

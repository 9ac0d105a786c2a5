"""``POST /runs`` before FastAPI's routing: a request the route would take is answered by the fast path (no route
matched, no endpoint called through FastAPI) with the route's answers; one it would refuse goes on to FastAPI, which
refuses it as before. What the fast path could get wrong: bad JSON, a body off the schema, the token, the body
limit, CORS, a too-long idempotency key (a client that hangs up: test_app's test, which the fast path now answers)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from batonflow.server import ServerLimits, create_app

from . import apps
from .conftest import parse_sse


class Spied:
    """An app, and the scopes of the requests it answered: FastAPI's router puts the matched ``endpoint`` in a
    request's scope, so a scope without one was answered before the routing."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.scopes: list[Scope] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.scopes.append(scope)
        await self.app(scope, receive, send)

    @property
    def routed(self) -> bool:
        """Whether the last request went through FastAPI's routing."""
        return "endpoint" in self.scopes[-1]


def spied(**kwargs: Any) -> tuple[Spied, httpx.AsyncClient]:
    app = Spied(create_app([apps.echo(), apps.refunds()], **kwargs))
    return app, httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://app")


async def test_a_run_the_route_takes_is_answered_before_the_routing_as_the_route_answers() -> None:
    app, client = spied()
    async with client:
        streamed = await client.post("/runs", json={"agent": "echo", "input": "a b", "stream": True})
        fast_stream = not app.routed
        answered = await client.post("/runs", json={"agent": "echo", "input": "hi"})
        fast_json = not app.routed
        detached = await client.post("/runs", json={"agent": "echo", "input": "x", "detached": True})
        fast_detached = not app.routed
        listed = await client.get("/agents")
    assert fast_stream and fast_json and fast_detached and app.routed  # GET /agents: FastAPI's
    assert streamed.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert streamed.headers["x-run-id"] and streamed.headers["cache-control"] == "no-store"
    frames = parse_sse(streamed.text)
    assert [f.event for f in frames][:2] == ["run", "message_start"] and frames[-1].data["text"] == "echo: a b"
    assert answered.status_code == 200 and answered.json()["text"] == "echo: hi"
    assert detached.status_code == 202 and detached.headers["location"] == f"/runs/{detached.json()['run_id']}"
    assert listed.status_code == 200


async def test_a_refusal_of_the_runs_own_checks_comes_from_the_fast_path_in_the_apis_shape() -> None:
    app, client = spied(limits=ServerLimits(max_message_chars=3))
    async with client:
        unknown = await client.post("/runs", json={"agent": "nope", "input": "x", "stream": True})
        long = await client.post("/runs", json={"agent": "echo", "input": "abcd", "stream": True})
    assert not app.routed
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "unknown_agent")
    assert unknown.json()["error"]["expected"] == ["echo", "refunds"]
    assert (long.status_code, long.json()["error"]["code"]) == (422, "message_too_long")


@pytest.mark.parametrize(
    ("content", "headers", "status", "code"),
    [
        (b'{"agent": ', {"content-type": "application/json"}, 400, "malformed_json"),
        (b'{"agent": "echo", "input": 1}', {"content-type": "application/json"}, 422, "invalid_request"),
        (b'{"agent": "echo", "inptu": "x"}', {"content-type": "application/json"}, 422, "invalid_request"),
        (b'{"agent": "echo", "input": "x"}', {"content-type": "text/plain"}, 422, "invalid_request"),
        (b'{"agent": "echo", "input": "x"}', {}, 422, "invalid_request"),
        (b"", {"content-type": "application/json"}, 422, "invalid_request"),
        (
            b'{"agent": "echo", "input": "x"}',
            {"content-type": "application/json", "idempotency-key": "k" * 256},
            422,
            "invalid_request",
        ),
    ],
)
async def test_a_body_the_route_refuses_goes_on_to_fastapi_and_is_refused_as_before(
    content: bytes, headers: dict[str, str], status: int, code: str
) -> None:
    app, client = spied()
    async with client:
        answer = await client.post("/runs", content=content, headers=headers)
    assert app.routed
    assert (answer.status_code, answer.json()["error"]["code"]) == (status, code)
    assert answer.json()["error"]["found"] is not None


@pytest.mark.parametrize("body", [b"[" * 100_000 + b"]" * 100_000, b'{"agent": "echo", "input": ' + b"[" * 50_000])
async def test_json_nested_past_what_the_parser_recurses_goes_on_to_fastapi_and_is_a_400(body: bytes) -> None:
    app, client = spied()
    async with client:
        answer = await client.post("/runs", content=body, headers={"content-type": "application/json"})
    assert app.routed
    assert answer.status_code == 400 and answer.json()["error"]["message"] == "There was an error parsing the body"


async def test_the_token_is_checked_by_the_routes_check_and_a_refused_client_is_refused_by_fastapi() -> None:
    app, client = spied(auth_token="s3cret")
    body = {"agent": "echo", "input": "x", "stream": True}
    async with client:
        missing = await client.post("/runs", json=body)
        missing_routed = app.routed
        wrong = await client.post("/runs", json=body, headers={"Authorization": "Bearer nope"})
        wrong_routed = app.routed
        right = await client.post("/runs", json=body, headers={"Authorization": "Bearer s3cret"})
    assert missing_routed and wrong_routed and not app.routed
    assert (missing.status_code, missing.json()["error"]["code"]) == (401, "missing_token")
    assert missing.headers["www-authenticate"] == "Bearer"
    assert (wrong.status_code, wrong.json()["error"]["code"]) == (401, "wrong_token")
    assert right.status_code == 200 and parse_sse(right.text)[-1].data["status"] == "completed"


async def test_a_body_over_the_limit_is_a_413_before_the_fast_path_reads_it() -> None:
    app, client = spied(limits=ServerLimits(max_body_bytes=60))

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"agent": "echo", "stream": true, '
        yield b'"input": "' + b"x" * 40 + b'"}'

    async with client:
        declared = await client.post("/runs", json={"agent": "echo", "input": "x" * 60, "stream": True})
        streamed = await client.post("/runs", content=chunks(), headers={"content-type": "application/json"})
    assert declared.status_code == 413 and declared.json()["error"]["code"] == "body_too_large"
    assert streamed.status_code == 413 and streamed.json()["error"]["found"] == "more than 85 bytes"
    assert not any("endpoint" in scope for scope in app.scopes)


async def test_a_body_that_comes_in_parts_is_taken_whole() -> None:
    app, client = spied()

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"agent": "echo", "stream": true, '
        yield b'"input": "in parts"}'

    async with client:
        answer = await client.post("/runs", content=chunks(), headers={"content-type": "application/json"})
    assert not app.routed
    assert parse_sse(answer.text)[-1].data["text"] == "echo: in parts"


async def test_a_streamed_run_answered_by_the_fast_path_has_the_cors_headers_of_its_origin() -> None:
    app, client = spied(cors=["http://ui.example"])
    body = {"agent": "echo", "input": "x", "stream": True}
    async with client:
        allowed = await client.post("/runs", json=body, headers={"Origin": "http://ui.example"})
        other = await client.post("/runs", json=body, headers={"Origin": "http://evil.example"})
    assert not app.routed
    assert allowed.headers["access-control-allow-origin"] == "http://ui.example"
    assert "x-run-id" in allowed.headers["access-control-expose-headers"].lower()
    assert "access-control-allow-origin" not in other.headers

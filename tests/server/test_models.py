"""What the request bodies may hold, checked at the door: text that is Unicode (no lone surrogate, which JSON's
``"\\ud800"`` carries) and values nested no deeper than ``ServerLimits.max_value_depth``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from batonflow.server import ServerLimits, create_app

from . import apps
from .conftest import asgi_client

BAD = "hi \ud800"


def app(**kwargs: Any) -> Any:
    return create_app([apps.echo(), apps.refunds()], **kwargs)


def raw(body: Any) -> dict[str, Any]:
    """``body`` as a request's JSON, lone surrogates written as JSON escapes (as a hostile client sends them)."""
    return {"content": json.dumps(body), "headers": {"content-type": "application/json"}}


def nested(levels: int) -> Any:
    value: Any = 0
    for _ in range(levels):
        value = [value]
    return value


SURROGATES = {
    "prompt": ("/runs", {"agent": "echo", "input": BAD}, "input"),
    "streamed prompt": ("/runs", {"agent": "echo", "input": [{"content": BAD}], "stream": True}, "input[0].content"),
    "session value": (
        "/runs",
        {"agent": "echo", "input": "x", "session_id": "s1", "session_values": {"k": [1, BAD]}},
        "session_values.k[1]",
    ),
    "session value key": (
        "/runs",
        {"agent": "echo", "input": "x", "session_id": "s1", "session_values": {BAD: 1}},
        "session_values (a key)",
    ),
    "session id": ("/runs", {"agent": "echo", "input": "x", "session_id": BAD}, "session_id"),
    "resume targets": ("/checkpoints/c1/resume", {"targets": {"i": BAD}}, "targets.i"),
    "chat completion": ("/v1/chat/completions", {"model": "echo", "messages": [{"role": "user", "content": BAD}]}, ""),
    "streamed chat completion": (
        "/v1/chat/completions",
        {"model": "echo", "messages": [{"role": "user", "content": BAD}], "stream": True},
        "messages[0].content",
    ),
}


@pytest.mark.parametrize("case", SURROGATES)
async def test_a_lone_surrogate_is_a_400_that_names_the_field_and_the_session_stays_readable(case: str) -> None:
    path, body, field = SURROGATES[case]
    field = field or "messages[0].content"
    async with asgi_client(app()) as client:
        first = await client.post("/runs", json={"agent": "echo", "input": "one", "session_id": "s1"})
        refused = await client.post(path, **raw(body))
        session = await client.get("/sessions/s1")
    assert first.status_code == 200
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["code"] == "invalid_text"
    assert error["message"].startswith(f"{field}: expected Unicode text, got a lone surrogate")
    assert session.status_code == 200
    assert [m["content"] for m in session.json()["messages"]] == ["one", "echo: one"]


async def test_a_lone_surrogate_in_a_flow_s_variables_is_a_400() -> None:
    from batonflow.graph import Graph

    flow = Graph.from_yaml("id: f\nlayout:\n  - {id: start, type: start}\n  - {id: end, type: end}\n")
    async with asgi_client(create_app(flows=[flow])) as client:
        refused = await client.post("/flows/f/eval", **raw({"variables": {"name": BAD}}))
    assert refused.status_code == 400
    assert refused.json()["error"]["message"].startswith("variables.name: expected Unicode text")


async def test_session_values_nested_past_the_limit_are_a_400_that_names_it() -> None:
    async with asgi_client(app()) as client:
        deep = await client.post(
            "/runs", **raw({"agent": "refunds", "input": "x", "session_id": "s1", "session_values": {"v": nested(600)}})
        )
        # The dict and 99 lists: 100 levels, the limit, which the stores' codec writes (it fails near 490).
        at_limit = await client.post(
            "/runs", json={"agent": "refunds", "input": "x", "session_id": "s2", "session_values": {"v": nested(99)}}
        )
        session = await client.get("/sessions/s2")
    assert deep.status_code == 400
    error = deep.json()["error"]
    assert error["code"] == "value_too_deep"
    assert error["message"].startswith(
        "session_values: expected values nested at most 100 levels deep (ServerLimits.max_value_depth), got more at "
        "session_values.v[0][0]"
    )
    assert at_limit.json()["status"] == "interrupted"  # its state saved, values and all
    assert session.json()["pending"] is True


async def test_the_depth_limit_is_set_by_server_limits_and_covers_resume_targets() -> None:
    async with asgi_client(app(limits=ServerLimits(max_value_depth=2))) as client:
        fits = await client.post("/runs", json={"agent": "echo", "input": "x", "session_values": {"a": [1]}})
        deep = await client.post("/runs", json={"agent": "echo", "input": "x", "session_values": {"a": [[1]]}})
        targets = await client.post("/checkpoints/c1/resume", json={"targets": {"i": {"j": {}}}})
    assert fits.json()["status"] == "completed"
    assert deep.status_code == 400 and deep.json()["error"]["message"].endswith("got more at session_values.a[0]")
    assert targets.status_code == 400 and targets.json()["error"]["message"].startswith("targets: expected values")

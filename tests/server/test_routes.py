"""Ids are data in every route: an id a store takes (``/``, ``?``, ``%``, ``..`` included) is listed, fetched,
resumed and deleted by its quoted path segment; and a checkpoint and a conversation of one id stay apart."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from batonflow import FileSessionStore
from batonflow.server import create_app

from . import apps
from .conftest import asgi_client, serving

IDS = ["a/b", "x?y", "[/]", "..", ".", ".hidden", "%2e%2e", "a/b/resume", "#frag", "sp ace"]


def segment(value: str) -> str:
    """``value`` as one path segment: every reserved character quoted, and the dot segments too, which URL
    parsers would otherwise resolve away."""
    quoted = quote(value, safe="")
    return quoted.replace(".", "%2E") if quoted in (".", "..") else quoted


async def test_a_checkpoint_of_any_id_is_listed_fetched_and_resumed_over_http() -> None:
    async with serving(create_app([apps.refunds()])) as url, httpx.AsyncClient(base_url=url) as client:
        for checkpoint_id in IDS:
            await client.post("/runs", json={"agent": "refunds", "input": "r", "checkpoint_id": checkpoint_id})
        listed = [c["checkpoint_id"] for c in (await client.get("/checkpoints")).json()["checkpoints"]]
        fetched, resumed = {}, {}
        for checkpoint_id in IDS:
            fetched[checkpoint_id] = (await client.get(f"/checkpoints/{segment(checkpoint_id)}")).json()
            target = fetched[checkpoint_id]["interrupts"][0]["id"]
            body = {"targets": {target: "yes"}}
            resumed[checkpoint_id] = (
                await client.post(f"/checkpoints/{segment(checkpoint_id)}/resume", json=body)
            ).json()
    assert listed == IDS[::-1]  # the newest first
    assert {i: f["checkpoint_id"] for i, f in fetched.items()} == {i: i for i in IDS}
    assert {i: r["text"] for i, r in resumed.items()} == {i: "order 42: refunded" for i in IDS}


async def test_a_conversation_of_any_id_is_read_and_deleted_over_http_with_a_file_store(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path / "sessions")
    async with (
        serving(create_app([apps.echo()], session_store=store)) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        for session_id in IDS:
            ran = await client.post("/runs", json={"agent": "echo", "input": session_id, "session_id": session_id})
            assert ran.status_code == 200, session_id
        listed = (await client.get("/sessions")).json()["sessions"]
        read = {i: (await client.get(f"/sessions/{segment(i)}")).json() for i in IDS}
        deleted = {i: (await client.delete(f"/sessions/{segment(i)}")).status_code for i in IDS}
    assert listed == IDS
    assert {i: r["messages"][0]["content"] for i, r in read.items()} == {i: i for i in IDS}
    assert deleted == {i: 204 for i in IDS}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sessions"]  # noqa: ASYNC240 (nothing outside the store)


async def test_an_id_no_store_takes_is_a_4xx_naming_it() -> None:
    async with asgi_client(create_app([apps.echo()])) as client:
        long = await client.get(f"/sessions/{'x' * 300}")
        empty = await client.post("/checkpoints//resume", json={"targets": {}})
    assert long.status_code == 422 and long.json()["error"]["code"] == "invalid_session_id"
    assert empty.status_code == 422 and "non-empty" in empty.json()["error"]["message"]


async def _both_waiting(client: httpx.AsyncClient) -> tuple[dict[str, Any], dict[str, Any]]:
    checkpoint = (await client.post("/runs", json={"agent": "refunds", "input": "r", "checkpoint_id": "x"})).json()
    conversation = (await client.post("/runs", json={"agent": "refunds", "input": "r", "session_id": "x"})).json()
    return checkpoint, conversation


async def test_a_checkpoint_and_a_conversation_of_one_id_are_both_listed_and_each_reached() -> None:
    async with asgi_client(create_app([apps.refunds()])) as client:
        checkpoint, conversation = await _both_waiting(client)
        listed = (await client.get("/checkpoints")).json()["checkpoints"]
        plain = (await client.get("/checkpoints/x")).json()
        chat = (await client.get("/checkpoints/x", params={"session": True})).json()
        answer = {"targets": {conversation["interrupts"][0]["id"]: "no"}}
        resumed_chat = (await client.post("/checkpoints/x/resume", params={"session": True}, json=answer)).json()
        left = (await client.get("/checkpoints")).json()["checkpoints"]
        answer = {"targets": {checkpoint["interrupts"][0]["id"]: "yes"}}
        resumed = (await client.post("/checkpoints/x/resume", json=answer)).json()
    assert [(c["checkpoint_id"], c["session_id"]) for c in listed] == [("x", None), ("x", "x")]
    assert (plain["session_id"], chat["session_id"]) == (None, "x")
    assert (resumed_chat["session_id"], resumed_chat["text"]) == ("x", "order 42: not refunded")
    assert [(c["checkpoint_id"], c["session_id"]) for c in left] == [("x", None)]
    assert (resumed["checkpoint_id"], resumed["text"]) == ("x", "order 42: refunded")


async def test_deleting_a_conversation_leaves_the_checkpoint_of_its_id_pending() -> None:
    async with asgi_client(create_app([apps.refunds()])) as client:
        await _both_waiting(client)
        deleted = await client.delete("/sessions/x")
        listed = (await client.get("/checkpoints")).json()["checkpoints"]
        no_chat = await client.get("/checkpoints/x", params={"session": True})
    assert deleted.status_code == 204
    assert [(c["checkpoint_id"], c["session_id"]) for c in listed] == [("x", None)]
    assert no_chat.status_code == 404


@pytest.mark.parametrize("session", [False, True])
async def test_a_conversation_alone_is_still_reached_by_its_id_as_a_checkpoint(session: bool) -> None:
    async with asgi_client(create_app([apps.refunds()])) as client:
        waiting = (await client.post("/runs", json={"agent": "refunds", "input": "r", "session_id": "s"})).json()
        answer = {"targets": {waiting["interrupts"][0]["id"]: "yes"}}
        params = {"session": True} if session else {}
        resumed = (await client.post("/checkpoints/s/resume", params=params, json=answer)).json()
    assert (resumed["session_id"], resumed["text"]) == ("s", "order 42: refunded")

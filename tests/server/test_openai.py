"""The OpenAI-compatible endpoints, driven by the official ``openai`` SDK against a real uvicorn on loopback."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest

from batonflow.server import create_app

from . import apps
from .conftest import asgi_client, run_tasks, serving


def app(**kwargs: Any) -> Any:
    return create_app([apps.echo(), apps.refunds()], **kwargs)


def client(url: str, key: str = "none") -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0)


async def test_the_sdk_lists_each_agent_as_a_model_and_chats_with_one() -> None:
    async with serving(app()) as url, client(url) as sdk:
        models = [m.id async for m in sdk.models.list()]
        answer = await sdk.chat.completions.create(
            model="echo",
            messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello there"}],
        )
    assert models == ["echo", "refunds"]
    choice = answer.choices[0]
    assert (choice.message.role, choice.message.content, choice.finish_reason) == (
        "assistant",
        "echo: hello there",
        "stop",
    )
    assert answer.model == "echo"


async def test_the_sdk_streams_the_answer_in_chunks() -> None:
    async with serving(app()) as url, client(url) as sdk:
        stream = await sdk.chat.completions.create(
            model="echo", messages=[{"role": "user", "content": "one two three"}], stream=True
        )
        chunks = [chunk async for chunk in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text == "echo: one two three"
    assert len([c for c in chunks if c.choices[0].delta.content]) == 4
    assert [c.choices[0].finish_reason for c in chunks][-1] == "stop"
    assert not run_tasks()


async def test_an_interrupted_run_says_so_in_finish_reason_and_names_its_checkpoint() -> None:
    async with serving(app()) as url, client(url) as sdk, httpx.AsyncClient(base_url=url) as http:
        answer = await sdk.chat.completions.create(model="refunds", messages=[{"role": "user", "content": "refund"}])
        extension = answer.model_extra["batonflow"] if answer.model_extra else {}
        checkpoint_id = extension["checkpoint_id"]
        target = extension["interrupts"][0]["id"]
        resumed = await http.post(f"/checkpoints/{checkpoint_id}/resume", json={"targets": {target: "yes"}})
    choice = answer.choices[0]
    assert choice.finish_reason == "interrupted"
    assert checkpoint_id == answer.id and checkpoint_id in (choice.message.content or "")
    assert '{"approve_refund": 42}' in (choice.message.content or "")
    assert resumed.json()["text"] == "order 42: refunded"


async def test_a_streamed_interrupted_run_ends_with_the_interrupted_finish_reason() -> None:
    async with serving(app()) as url, client(url) as sdk:
        stream = await sdk.chat.completions.create(
            model="refunds", messages=[{"role": "user", "content": "refund"}], stream=True
        )
        chunks = [chunk async for chunk in stream]
    last = chunks[-1]
    assert last.choices[0].finish_reason == "interrupted"
    assert last.model_extra is not None and last.model_extra["batonflow"]["checkpoint_id"] == last.id


async def test_an_unknown_model_and_a_wrong_key_are_errors_the_sdk_raises() -> None:
    async with serving(app(auth_token="k")) as url:
        async with client(url, "k") as sdk:
            with pytest.raises(openai.NotFoundError, match=r"model: expected one of \['echo', 'refunds'\]"):
                await sdk.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
        async with client(url, "wrong") as sdk:
            with pytest.raises(openai.AuthenticationError, match="expected the server's bearer token"):
                await sdk.models.list()


async def test_client_tool_results_are_left_out_and_text_parts_joined() -> None:
    body = {
        "model": "echo",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "a "}, {"type": "text", "text": "b"}]},
            {"role": "tool", "content": "ignored", "tool_call_id": "x"},
        ],
    }
    async with asgi_client(app()) as http:
        answer = (await http.post("/v1/chat/completions", json=body)).json()
        empty = await http.post("/v1/chat/completions", json={"model": "echo", "messages": []})
    assert answer["choices"][0]["message"]["content"] == "echo: a b"
    assert empty.status_code == 422


async def test_a_failed_run_is_a_200_with_the_error_finish_reason_so_that_clients_do_not_retry_it() -> None:
    from .test_app import failing

    async with asgi_client(create_app([failing()])) as http:
        answer = await http.post(
            "/v1/chat/completions", json={"model": "broken", "messages": [{"role": "user", "content": "x"}]}
        )
    choice = answer.json()["choices"][0]
    assert answer.status_code == 200 and choice["finish_reason"] == "error"
    assert choice["message"]["content"].startswith("[run failed: ModelError: provider down")

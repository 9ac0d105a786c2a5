"""``/a2a/{agent}`` of ``create_app(a2a=True)``, driven by the ``a2a-sdk`` package's own client: the card, a sent
message and a streamed one, a task read back and one cancelled, an interrupt as ``input-required`` and its resume,
and the refusals of bad input as JSON-RPC errors."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from a2a.client import Client, ClientConfig, create_client
from a2a.helpers.proto_helpers import get_data_parts, get_text_parts, new_data_part
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from a2a.utils.errors import TaskNotFoundError
from google.protobuf.json_format import MessageToDict
from tests.server.conftest import serving

from batonflow.server import ServerLimits, create_app

from .agui_checks import Blocking, approvals, blocking, echo, failing, refunds

WAIT = 30.0  # a deadline for what a test waits for, never a claim about how long it takes


@asynccontextmanager
async def a2a(app: Any, agent: str, *, streaming: bool = True) -> AsyncIterator[Client]:
    """The SDK's client of ``agent`` on ``app`` (over httpx's ASGI transport), from the agent's card."""
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://app") as http:
        client = await create_client(f"http://app/a2a/{agent}", ClientConfig(httpx_client=http, streaming=streaming))
        yield client


def user_message(*parts: Part, task: Task | None = None) -> SendMessageRequest:
    message = Message(role=Role.ROLE_USER, message_id=f"m-{id(parts)}", parts=list(parts))
    if task is not None:
        message.task_id, message.context_id = task.id, task.context_id
    return SendMessageRequest(message=message)


def text(value: str) -> Part:
    return Part(text=value)


async def send(client: Client, request: SendMessageRequest) -> list[StreamResponse]:
    return [event async for event in client.send_message(request)]


async def settled(client: Client, request: SendMessageRequest) -> Task:
    """The task ``request`` makes (or answers) once its stream has ended, as ``tasks/get`` reads it back."""
    events = await send(client, request)
    assert events[-1].HasField("status_update"), events[-1]
    return await client.get_task(GetTaskRequest(id=events[-1].status_update.task_id))


def status_text(task: Task) -> str:
    return "\n".join(get_text_parts(task.status.message.parts))


async def test_the_card_names_the_agent_its_tools_and_the_endpoint() -> None:
    app = create_app([refunds()], a2a=True)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://app") as http:
        card = (await http.get("/a2a/refunds/.well-known/agent-card.json")).json()
    assert card["name"] == "refunds" and card["description"] == "Refunds orders."
    assert card["capabilities"]["streaming"] is True
    assert [s["id"] for s in card["skills"]] == ["refunds", "refund"]
    assert card["supportedInterfaces"][0]["url"] == "http://app/a2a/refunds"


async def test_message_send_completes_the_task_with_the_answer() -> None:
    async with a2a(create_app([echo()], a2a=True), "echo", streaming=False) as client:
        [event] = await send(client, user_message(text("hello there")))
    task = event.task
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert status_text(task) == "echo: hello there"
    assert "".join(p.text for a in task.artifacts for p in a.parts) == "echo: hello there"


async def test_message_stream_sends_the_text_as_artifact_chunks_then_the_status() -> None:
    async with a2a(create_app([echo()], a2a=True), "echo") as client:
        events = await send(client, user_message(text("one two three")))
    ids = MessageToDict(events[-1].status_update.metadata)["batonflow"]
    assert ids["session_id"] == events[0].task.context_id and ids["segment_id"]
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds[0] == "task" and kinds[-1] == "status_update"
    chunks = [e.artifact_update for e in events if e.HasField("artifact_update")]
    assert len(chunks) > 1 and not chunks[0].append and all(c.append for c in chunks[1:])
    assert "".join(c.artifact.parts[0].text for c in chunks) == "echo: one two three"
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED


async def test_tasks_get_reads_a_finished_task_and_a_context_is_one_conversation() -> None:
    async with a2a(create_app([echo()], a2a=True), "echo", streaming=False) as client:
        [first] = await send(client, user_message(text("first")))
        assert status_text(first.task) == "echo: first"
        follow = user_message(text("second"))
        follow.message.context_id = first.task.context_id
        [second] = await send(client, follow)
        got = await client.get_task(GetTaskRequest(id=first.task.id))
    assert got.status.state == TaskState.TASK_STATE_COMPLETED and status_text(got) == "echo: first"
    assert second.task.context_id == first.task.context_id and second.task.id != first.task.id
    assert status_text(second.task) == "echo: second"


async def test_an_interrupt_is_input_required_and_a_follow_up_resumes_the_run() -> None:
    async with a2a(create_app([refunds()], a2a=True), "refunds") as client:
        paused = await settled(client, user_message(text("refund order 42")))
        assert paused.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert status_text(paused) == '{"approve_refund": 42}'
        [data] = get_data_parts(paused.status.message.parts)
        [interrupt] = data["batonflow"]["interrupts"]
        assert interrupt["kind"] == "question"
        done = await settled(client, user_message(text("yes"), task=paused))
    assert done.id == paused.id
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert status_text(done) == "order 42: refunded"


async def test_an_approval_is_answered_by_yes_no_or_a_data_part_of_decisions() -> None:
    app = create_app([approvals()], a2a=True)
    async with a2a(app, "support") as client:
        paused = await settled(client, user_message(text("refund both")))
        assert paused.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert status_text(paused).count("Answer yes or no.") == 2
        done = await settled(client, user_message(text("no"), task=paused))
        assert done.status.state == TaskState.TASK_STATE_COMPLETED
        assert "refunded" not in status_text(done)
        again = await settled(client, user_message(text("refund both")))
        decisions = {"call_1": {"action": "approve"}, "call_2": {"action": "reject", "comment": "no"}}
        mixed = await settled(client, user_message(new_data_part(decisions), task=again))
    assert mixed.status.state == TaskState.TASK_STATE_COMPLETED
    assert "refunded 1" in status_text(mixed) and "refunded 2" not in status_text(mixed)


async def test_a_bad_answer_leaves_the_task_waiting_and_says_what_was_expected() -> None:
    async with a2a(create_app([approvals()], a2a=True), "support") as client:
        paused = await settled(client, user_message(text("refund both")))
        still = await settled(client, user_message(text("perhaps"), task=paused))
        assert still.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert status_text(still).startswith("invalid_decision: ")
        again = await settled(client, user_message(text("maybe"), task=still))
        assert status_text(again).count("invalid_decision: ") == 1
        assert status_text(again).endswith(status_text(paused))
        done = await settled(client, user_message(text("yes"), task=again))
    assert status_text(done) == "refunded 1 / refunded 2"


async def test_a_failing_run_fails_its_task_with_the_error() -> None:
    async with a2a(create_app([failing()], a2a=True), "broken") as client:
        task = await settled(client, user_message(text("hi")))
    assert task.status.state == TaskState.TASK_STATE_FAILED
    assert "provider down" in status_text(task)


async def test_tasks_cancel_cancels_the_run() -> None:
    model = Blocking()
    app = create_app([blocking(model)], a2a=True)
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as http:
        client = await create_client(f"{url}/a2a/slow", ClientConfig(httpx_client=http, streaming=True))
        events = client.send_message(user_message(text("wait")))
        first = await anext(events)
        await asyncio.wait_for(model.started.wait(), WAIT)
        cancelled = await client.cancel_task(CancelTaskRequest(id=first.task.id))
        await asyncio.wait_for(model.cancelled.wait(), WAIT)
        await events.aclose()
        got = await client.get_task(GetTaskRequest(id=first.task.id))
        health = (await http.get("/health")).json()
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    assert got.status.state == TaskState.TASK_STATE_CANCELED
    assert health["active_runs"] == 0


async def test_malformed_json_rpc_is_the_json_rpc_error_body() -> None:
    app = create_app([echo()], a2a=True)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://app") as http:
        broken = await http.post("/a2a/echo", content=b"{not json", headers={"content-type": "application/json"})
        unknown = await http.post("/a2a/echo", json={"jsonrpc": "2.0", "id": 7, "method": "Nope", "params": {}})
        legacy = await http.post(
            "/a2a/echo", json={"jsonrpc": "2.0", "id": 8, "method": "tasks/get", "params": {"id": "nobody"}}
        )
        nobody = await http.post("/a2a/nobody", json={"jsonrpc": "2.0", "id": 9, "method": "GetTask", "params": {}})
    assert broken.json()["error"]["code"] == -32700 and broken.json()["id"] is None
    assert unknown.json()["error"]["code"] == -32601 and unknown.json()["id"] == 7
    assert legacy.json()["error"]["code"] == -32001 and legacy.json()["id"] == 8  # TaskNotFoundError, A2A 0.3
    assert nobody.status_code == 404 and nobody.json()["error"]["code"] == "unknown_agent"


async def test_an_unknown_task_id_is_task_not_found() -> None:
    async with a2a(create_app([echo()], a2a=True), "echo") as client:
        with pytest.raises(TaskNotFoundError):
            await client.get_task(GetTaskRequest(id="no-such-task"))
        with pytest.raises(TaskNotFoundError):
            await client.cancel_task(CancelTaskRequest(id="no-such-task"))
        missing = user_message(text("hi"))
        missing.message.task_id = "no-such-task"
        with pytest.raises(TaskNotFoundError, match="no-such-task"):
            await send(client, missing)


async def test_a_context_id_the_session_store_refuses_rejects_the_task() -> None:
    async with a2a(create_app([echo()], a2a=True), "echo") as client:
        odd = user_message(text("hi"))
        odd.message.context_id = "../" * 100
        task = await settled(client, odd)
    assert task.status.state == TaskState.TASK_STATE_REJECTED
    assert status_text(task).startswith("invalid_context_id: contextId: expected an id the session store takes")


async def test_a_second_task_on_a_context_whose_run_goes_on_is_rejected_as_run_in_progress() -> None:
    model = Blocking()
    app = create_app([blocking(model)], a2a=True)
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as http:
        client = await create_client(f"{url}/a2a/slow", ClientConfig(httpx_client=http, streaming=True))
        events = client.send_message(user_message(text("wait")))
        first = await anext(events)
        await asyncio.wait_for(model.started.wait(), WAIT)
        again = user_message(text("again"))
        again.message.context_id = first.task.context_id
        second = await settled(client, again)
        await client.cancel_task(CancelTaskRequest(id=first.task.id))
        await events.aclose()
    assert second.status.state == TaskState.TASK_STATE_REJECTED
    assert status_text(second).startswith("run_in_progress: ")


async def test_the_server_forgets_the_oldest_finished_tasks_beyond_keep_finished_runs() -> None:
    app = create_app([echo()], a2a=True, limits=ServerLimits(keep_finished_runs=2))
    async with a2a(app, "echo", streaming=False) as client:
        sent = [(await send(client, user_message(text(f"turn {i}"))))[0].task for i in range(3)]
        with pytest.raises(TaskNotFoundError):
            await client.get_task(GetTaskRequest(id=sent[0].id))
        last = await client.get_task(GetTaskRequest(id=sent[2].id))
    assert status_text(last) == "echo: turn 2"


async def test_a_turn_reads_text_and_data_parts_and_one_with_neither_is_rejected() -> None:
    async with a2a(create_app([echo()], a2a=True), "echo") as client:
        data = await settled(client, user_message(new_data_part({"city": "Oslo"})))
        empty = await settled(client, user_message(Part(url="https://example.com/a.png")))
    assert status_text(data) == 'echo: {"city": "Oslo"}'
    assert empty.status.state == TaskState.TASK_STATE_REJECTED
    assert status_text(empty).startswith("empty_input: message: expected a text or data part")

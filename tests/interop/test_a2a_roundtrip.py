"""A batonflow agent calling another batonflow agent over A2A: the remote (``create_app(a2a=True)``) pauses on a
human approval, the local run pauses on it in turn, and the local resume answers the remote task."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from tests.server.conftest import serving

from batonflow import ChatModelAgent, Runner
from batonflow.adk import TRANSFER_TOOL_NAME, set_sub_agents
from batonflow.errors import RemoteAgentError
from batonflow.interop import RemoteA2AAgent
from batonflow.schema import Message
from batonflow.server import create_app
from batonflow.store import MemoryCheckpointStore
from batonflow.testing import FunctionModel, tool_calls

from .agui_checks import Blocking, approvals, blocking, failing

WAIT = 30.0  # a deadline for what a test waits for, never a claim about how long it takes


def local(http: httpx.AsyncClient) -> ChatModelAgent:
    """A front desk that transfers every request to the remote ``support`` agent."""

    def route(messages: list[Message], tools: Any) -> Message:
        return tool_calls((TRANSFER_TOOL_NAME, {"agent_name": "support"}))

    support = RemoteA2AAgent(name="support", url="http://app/a2a/support", description="refunds", http_client=http)
    desk = ChatModelAgent(name="desk", description="front desk", model=FunctionModel(route))
    return set_sub_agents(desk, [support])  # type: ignore[return-value]


async def test_a_remote_approval_pauses_the_local_run_and_its_resume_approves_it() -> None:
    app = create_app([approvals()], a2a=True)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://app") as http:
        runner = Runner(local(http), checkpoint_store=MemoryCheckpointStore(), enable_streaming=True)
        paused = await runner.call("refund orders 1 and 2", checkpoint_id="desk-1")
        assert paused.interrupt is not None
        [asked] = [c for c in paused.interrupt.interrupt_contexts if c.is_root_cause]
        assert asked.info["agent"] == "support"
        assert asked.info["asked"].count("approve pay_back(") == 2
        [remote] = asked.info["data"][0]["batonflow"]["interrupts"]
        assert remote["kind"] == "approval"
        pending = (await http.get("/checkpoints")).json()
        done = await runner.call_resume("desk-1", {asked.id: "yes"})
    assert [entry["kind"] for entry in pending["checkpoints"][0]["interrupts"]] == ["approval"]
    assert done.text == "refunded 1 / refunded 2"


async def test_a_rejection_travels_to_the_remote_too() -> None:
    app = create_app([approvals()], a2a=True)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://app") as http:
        runner = Runner(local(http), checkpoint_store=MemoryCheckpointStore())
        paused = await runner.call("refund orders 1 and 2", checkpoint_id="desk-2")
        assert paused.interrupt is not None
        [asked] = [c for c in paused.interrupt.interrupt_contexts if c.is_root_cause]
        done = await runner.call_resume("desk-2", {asked.id: "no"})
    assert "refunded" not in done.text


async def test_a_local_run_that_stops_cancels_the_remote_task_and_its_run() -> None:
    model = Blocking()
    app = create_app([blocking(model)], a2a=True)
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as http:
        slow = RemoteA2AAgent(name="slow", url=f"{url}/a2a/slow", http_client=http)
        events = Runner(slow, enable_streaming=True).query("wait")
        reading = asyncio.create_task(anext(aiter(events)))
        await asyncio.wait_for(model.started.wait(), WAIT)
        reading.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reading
        await events.aclose()
        await asyncio.wait_for(model.cancelled.wait(), WAIT)
        health = (await http.get("/health")).json()
    assert model.cancelled.is_set() and health["active_runs"] == 0


async def test_behind_a_token_the_card_and_the_endpoint_want_it_and_a_remote_agent_sends_its_client_s() -> None:
    app = create_app([approvals()], a2a=True, auth_token="s3cret")
    transport = httpx.ASGITransport(app=app)
    async with (
        httpx.AsyncClient(transport=transport, base_url="http://app", headers={"Authorization": "Bearer s3cret"}) as ok,
        httpx.AsyncClient(transport=transport, base_url="http://app") as anonymous,
    ):
        card = await anonymous.get("/a2a/support/.well-known/agent-card.json")
        refused = RemoteA2AAgent(name="support", url="http://app/a2a/support", http_client=anonymous)
        with pytest.raises(RemoteAgentError, match="expected its agent card"):
            await Runner(refused).call("refund orders 1 and 2")
        allowed = RemoteA2AAgent(name="support", url="http://app/a2a/support", http_client=ok)
        paused = await Runner(allowed, checkpoint_store=MemoryCheckpointStore()).call("refund", checkpoint_id="t-1")
    assert card.status_code == 401
    assert paused.interrupted


async def test_a_remote_task_that_fails_is_a_remote_agent_error_with_the_remote_s_error() -> None:
    app = create_app([failing()], a2a=True)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://app") as http:
        broken = RemoteA2AAgent(name="broken", url="http://app/a2a/broken", http_client=http)
        with pytest.raises(RemoteAgentError, match="expected its task to complete, got it failed: ") as raised:
            await Runner(broken).call("hi")
    assert "provider down" in str(raised.value) and raised.value.task_id

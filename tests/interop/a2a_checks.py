"""An A2A server made of the ``a2a-sdk`` package's own classes alone (a tiny ``AgentExecutor``), for
``RemoteA2AAgent`` to call: it streams its answer in chunks, or asks for input first and answers with what it was
told; and endpoints that misbehave (a stream cut short, an answer that is not JSON-RPC, one that never comes)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

BASE = "http://remote"


def card(path: str, *, streaming: bool = True) -> AgentCard:
    return AgentCard(
        name="weather",
        description="Tells the weather of a city.",
        version="1.0.0",
        supported_interfaces=[AgentInterface(url=f"{BASE}{path}", protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="weather", name="weather", description="the weather of a city", tags=["weather"])],
    )


class Weather(AgentExecutor):
    """Answers ``sunny in <text>`` in three chunks; told ``ask``, first asks which city (``input-required``)."""

    def __init__(self) -> None:
        self.told: list[str] = []

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None:
            assert context.message is not None
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        said = context.get_user_input()
        self.told.append(said)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        if said == "ask":
            asked = new_text_message("Which city?", context_id=task.context_id, task_id=task.id)
            await updater.requires_input(asked)
            return
        for i, chunk in enumerate(["sunny ", "in ", said]):
            await updater.add_artifact([Part(text=chunk)], artifact_id="forecast", append=i > 0, last_chunk=i == 2)
        await updater.complete(new_text_message(f"sunny in {said}", context_id=task.context_id, task_id=task.id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def weather_app(executor: Weather, *, streaming: bool = True) -> Starlette:
    """The executor behind the SDK's own request handler, JSON-RPC routes and card route, at ``/weather``."""
    served = card("/weather", streaming=streaming)
    handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=served)
    routes = create_jsonrpc_routes(handler, "/weather")
    routes += create_agent_card_routes(served, card_url="/weather/.well-known/agent-card.json")
    return Starlette(routes=routes)


def broken_app(answer: str) -> Starlette:
    """A card that points at an endpoint answering ``answer``: ``cut`` (a stream of one task event, then its end),
    ``garbage`` (a 200 that is not JSON-RPC), ``silent`` (an answer that never comes)."""
    served = card("/broken")

    async def rpc(request: Request) -> Response:
        body = await request.json()
        if answer == "garbage":
            return Response("<html>surprise</html>", media_type="application/json")
        if answer == "silent":
            await asyncio.Event().wait()
        task = {"id": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_WORKING"}}
        event = {"jsonrpc": "2.0", "id": body["id"], "result": {"task": task}}

        async def cut() -> AsyncIterator[str]:
            yield f"data: {json.dumps(event)}\n\n"

        return StreamingResponse(cut(), media_type="text/event-stream")

    routes = [Route("/broken", rpc, methods=["POST"])]
    routes += create_agent_card_routes(served, card_url="/broken/.well-known/agent-card.json")
    return Starlette(routes=routes)


@asynccontextmanager
async def over(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client of ``app`` (in this process, over httpx's ASGI transport) at ``BASE``."""
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as http:
        yield http

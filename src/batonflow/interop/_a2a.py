"""``/a2a/{agent}``: a batonflow agent as an A2A server, on the ``a2a-sdk`` package's own server classes.

Each agent has its JSON-RPC endpoint (``POST /a2a/{agent}``: ``SendMessage``/``message/send``,
``SendStreamingMessage``/``message/stream`` over SSE, ``GetTask``/``tasks/get``, ``CancelTask``/``tasks/cancel``,
the A2A 1.0 names and the 0.3 ones) and its card (``GET /a2a/{agent}/.well-known/agent-card.json``). The SDK's
``DefaultRequestHandler`` keeps the tasks (an ``InMemoryTaskStore``) and their event queues; its ``AgentExecutor``
here runs nothing itself: the app that mounts it is its ``A2AHost``, which submits the run's segment to its backend
and reads the run's frames back, as it does for its own runs (``batonflow.server`` is such a host:
``create_app(a2a=True)``). What is A2A's is here: a context is a batonflow conversation (its id the session id),
a task one turn of it; an interrupted run leaves its task ``input-required``, and the task's next message resumes
the conversation's pending run from its checkpoint with the answer.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import aclosing
from typing import Any, Protocol

from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes import create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import Message, Task, TaskState
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from ..adk import Agent
from ..distributed import EventRecord, SegmentRequest, body_of
from ..schema import Message as BatonflowMessage
from ..store import check_session_id
from ._a2a_card import agent_card
from ._a2a_events import A2ATranslator, answer_targets, asked_interrupts, turn_text

__all__ = ["A2AHost", "BatonflowExecutor", "a2a_router"]

CARD_PATH = "/.well-known/agent-card.json"


class A2AHost(Protocol):
    """What the A2A endpoint needs of the app that mounts it: its agents, its refusals, and its runs."""

    def agent(self, name: str) -> Agent:
        """The agent the app serves as ``name``; refused (its 404) when it serves none."""
        ...

    def messages(self, given: Sequence[tuple[str, str]]) -> list[BatonflowMessage]:
        """``(role, text)`` pairs as the run's input messages, within the app's limits."""
        ...

    async def resume_targets(self, session_id: str, targets: Mapping[str, Any]) -> dict[str, Any]:
        """``targets`` checked against the interrupts the conversation's pending run waits on."""
        ...

    async def start(self, request: SegmentRequest) -> AsyncGenerator[EventRecord, None]:
        """Submit ``request``'s segment; its records, up to its ``end``. Closing them lets the run go: it is
        cancelled when nobody else follows it."""
        ...

    def refuse(self, status: int, code: str, message: str, *, expected: Any, found: Any) -> Exception:
        """The app's refusal of a request."""
        ...

    def refused(self, error: BaseException) -> str | None:
        """The text of ``error`` when it is one of the app's refusals (``refuse``'s or its own), else None."""
        ...


class BatonflowExecutor(AgentExecutor):
    """The SDK's ``AgentExecutor`` of agent ``name`` on ``host``: a task's message is a turn of its context's
    conversation, or (the task waits for input) the answer that resumes the conversation's pending run."""

    def __init__(self, host: A2AHost, name: str) -> None:
        self.host = host
        self.name = name

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Run the turn (or the resume) of the task, its updates on ``event_queue`` up to the task's status."""
        task = context.current_task
        if task is None:
            assert context.message is not None  # a SendMessage always has one
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        translator = A2ATranslator(task_id=task.id, context_id=task.context_id)
        waiting = task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        try:
            records = await self.host.start(await self._request(context, task, waiting))
        except Exception as error:
            refusal = self.host.refused(error)
            if refusal is None:
                raise
            await event_queue.enqueue_event(_refused(translator, task, waiting, refusal))
            return
        await event_queue.enqueue_event(translator.status(TaskState.TASK_STATE_WORKING, []))
        async with aclosing(records):
            async for record in records:
                if record.kind == "end":
                    await event_queue.enqueue_event(translator.ended(record.data))
                    return
                for update in translator.frame(str(record.data["event"]), body_of(record.data)):
                    await event_queue.enqueue_event(update)
        ended = "the run's events ended before its end"
        await event_queue.enqueue_event(translator.status(TaskState.TASK_STATE_FAILED, [new_text_part(ended)]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Mark the task cancelled; the SDK then cancels ``execute``, whose records, closed, cancel the run."""
        task = context.current_task
        if task is None or context.task_id is None:
            return
        translator = A2ATranslator(task_id=context.task_id, context_id=task.context_id)
        cancelled = translator.status(TaskState.TASK_STATE_CANCELED, [new_text_part("cancelled by the client")])
        await event_queue.enqueue_event(cancelled)

    async def _request(self, context: RequestContext, task: Task, waiting: bool) -> SegmentRequest:
        """The segment the task's message asks for: a turn of its context's conversation, or its resume."""
        message = context.message
        assert message is not None
        session = self._session(task.context_id)
        if waiting:
            return await self._resume(session, message, task)
        said = turn_text(message)
        if not said:
            raise self.host.refuse(
                422,
                "empty_input",
                "message: expected a text or data part (the user's turn), got neither",
                expected="a text or data part",
                found=[part.WhichOneof("content") for part in message.parts],
            )
        messages = self.host.messages([("user", said)])
        return SegmentRequest(agent=self.name, session_id=session, messages=tuple(messages), stream=True)

    async def _resume(self, session: str, message: Message, task: Task) -> SegmentRequest:
        """The resume of the conversation's pending run with the answer ``message`` gives to ``task``'s interrupts."""
        interrupts = asked_interrupts(task.status.message if task.status.HasField("message") else None)
        targets = answer_targets(message, interrupts)
        if not targets:
            raise self.host.refuse(
                422,
                "empty_answer",
                "message: expected the answer to the task's interrupts (a text part, or a data part of targets), "
                "got neither",
                expected="a text or data part",
                found=[part.WhichOneof("content") for part in message.parts],
            )
        checked = await self.host.resume_targets(session, targets)
        return SegmentRequest(agent=self.name, session_id=session, targets=checked, stream=True)

    def _session(self, context_id: str) -> str:
        """The session id of the context ``context_id``: the id itself, refused when the session store would."""
        try:
            return check_session_id(context_id)
        except Exception as error:
            raise self.host.refuse(
                422,
                "invalid_context_id",
                f"contextId: expected an id the session store takes (a context is a conversation), got one it "
                f"refuses: {error}",
                expected="a session id",
                found=context_id,
            ) from None


def _refused(translator: A2ATranslator, task: Task, waiting: bool, refusal: str) -> Any:
    """The status of a task whose message the app refused: still waiting for a good answer (the question asked
    again after the refusal), else rejected."""
    if not waiting:
        return translator.status(TaskState.TASK_STATE_REJECTED, [new_text_part(refusal)])
    # An input-required status message ends with its question and its interrupts (a text part, a data part); an
    # earlier refusal before them is not said again.
    asked = list(task.status.message.parts)[-2:] if task.status.HasField("message") else []
    return translator.status(TaskState.TASK_STATE_INPUT_REQUIRED, [new_text_part(refusal), *asked])


class KeptTasks(InMemoryTaskStore):
    """The SDK's in-memory task store, which forgets the oldest tasks that are not going (done, or waiting for
    input) beyond the last ``keep``: a server's memory is not the record of every task it ran."""

    def __init__(self, keep: int) -> None:
        super().__init__()
        self.keep = keep
        self._order: OrderedDict[str, ServerCallContext] = OrderedDict()

    async def save(self, task: Task, context: ServerCallContext) -> None:
        await super().save(task, context)
        self._order[task.id] = context
        self._order.move_to_end(task.id)
        excess = len(self._order) - self.keep
        for task_id, owner in list(self._order.items()):
            if excess <= 0:
                break
            kept = await self.get(task_id, owner)
            if kept is None or kept.status.state not in _GOING:
                await self.delete(task_id, owner)
                excess -= 1

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        await super().delete(task_id, context)
        self._order.pop(task_id, None)


_GOING = (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)


def a2a_router(host: A2AHost, *, version: str = "1.0.0", keep_tasks: int = 1024) -> APIRouter:
    """The router of ``POST /a2a/{agent}`` (A2A's JSON-RPC) and ``GET /a2a/{agent}/.well-known/agent-card.json``
    (the agent's card) on ``host``; each agent's handler is made on its first request, and keeps its last
    ``keep_tasks`` tasks that are not going (``KeptTasks``)."""
    handlers: dict[str, Callable[[Request], Any]] = {}

    def card_of(agent: str, request: Request) -> Any:
        url = str(request.url_for("a2a_rpc", agent=agent))
        return agent_card(host.agent(agent), url=url, version=version)

    def handler(agent: str, request: Request) -> Callable[[Request], Any]:
        if agent not in handlers:
            card = card_of(agent, request)
            sdk = DefaultRequestHandler(
                agent_executor=BatonflowExecutor(host, agent), task_store=KeptTasks(keep_tasks), agent_card=card
            )
            [route] = create_jsonrpc_routes(sdk, f"/a2a/{agent}", enable_v0_3_compat=True)
            handlers[agent] = route.endpoint
        return handlers[agent]

    async def rpc(agent: str, request: Request) -> Response:
        """A2A's JSON-RPC for ``agent``: its answer, or (streamed methods) its SSE."""
        host.agent(agent)
        answer: Response = await handler(agent, request)(request)
        return answer

    async def card(agent: str, request: Request) -> JSONResponse:
        """The A2A agent card of ``agent``."""
        return JSONResponse(agent_card_to_dict(card_of(agent, request)))

    router = APIRouter(tags=["a2a"])
    router.add_api_route("/a2a/{agent}", rpc, methods=["POST"], name="a2a_rpc", response_class=Response)
    router.add_api_route("/a2a/{agent}" + CARD_PATH, card, methods=["GET"], name="a2a_card")
    return router

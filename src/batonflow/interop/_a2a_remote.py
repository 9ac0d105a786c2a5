"""``RemoteA2AAgent``: an agent served over A2A somewhere else, as a batonflow agent, spoken to through the
``a2a-sdk`` package's own client.

A run sends the remote one message: the input's user message, or (an input of more than one message, such as the
history a transfer hands over) the conversation as a transcript. The remote's text (its artifacts' text parts as
they stream, else its final status message, or the message it answers with) is the agent's assistant message,
streamed when the run streams. A remote task that ends ``input-required`` is a batonflow interrupt: its info the
remote's question, its saved state the remote task's ids, so that the answer it resumes with goes to the remote as
the task's follow-up message (a text part for a string, a data part for anything else). A remote that cannot be
reached, goes away before its task's final status, answers what is not A2A, or ends its task failed, rejected or
cancelled, is a ``RemoteAgentError``; each wait on the remote is bounded by ``timeout``. A run that stops while the
remote works cancels the remote task.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack
from typing import Any

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, create_client
from a2a.helpers.proto_helpers import get_data_parts, get_text_parts, new_data_part
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    TaskState,
)

from ..adk import AgentEvent, AgentInput, ResumeInfo, RunContext, event_from_message, stateful_interrupt
from ..errors import RemoteAgentError, UserError
from ..schema import Message as BatonflowMessage
from ..schema import Stream, assistant

__all__ = ["RemoteA2AAgent"]

_FINAL = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
    TaskState.TASK_STATE_INPUT_REQUIRED,
    TaskState.TASK_STATE_AUTH_REQUIRED,
}


class RemoteA2AAgent:
    """The A2A agent whose card is at ``url`` (its base URL: the card at ``<url>/.well-known/agent-card.json``) as
    the batonflow agent ``name``: a sub-agent to transfer to, an ``AgentTool``, a team member, a graph node.

    ``description`` is what a router or a team's supervisor reads of it (the card's is not fetched before a run);
    ``timeout`` bounds each wait on the remote, in seconds; ``http_client`` is the ``httpx.AsyncClient`` to speak
    through (its own, closed after each run, when None; the SDK sets its ``A2A-Version`` header on a given one)."""

    def __init__(
        self,
        *,
        name: str,
        url: str,
        description: str | None = None,
        timeout: float = 60.0,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise UserError(f"RemoteA2AAgent.url: expected an http(s) URL of an A2A agent, got {url!r}")
        if not isinstance(timeout, int | float) or timeout <= 0:
            raise UserError(f"RemoteA2AAgent.timeout: expected a number of seconds > 0, got {timeout!r}")
        self._name = name
        self.url = url.rstrip("/")
        self._description = description if description is not None else f"The A2A agent at {self.url}."
        self.timeout = float(timeout)
        self.http_client = http_client
        self._card: AgentCard | None = None  # the remote's card, read on the first run

    @property
    def name(self) -> str:
        return self._name

    @property
    def description(self) -> str:
        return self._description

    def __repr__(self) -> str:
        return f"RemoteA2AAgent(name={self._name!r}, url={self.url!r})"

    async def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        """Send the input to the remote as a new task; its answer, or its question as an interrupt."""
        # A context of its own (a client may name it): a task this run cancels before its id came is found by it.
        message = _outgoing([Part(text=_text_of(input.messages))], context_id=uuid.uuid4().hex)
        async for event in self._exchange(message, input.enable_streaming, ctx):
            yield event

    async def resume(self, info: ResumeInfo, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        """Answer the remote task the run paused on with the resume data: its follow-up message."""
        state = info.interrupt_state if isinstance(info.interrupt_state, dict) else {}
        if not info.is_resume_target or info.resume_data is None:  # not answered: the remote task still asks
            yield stateful_interrupt(_checked(ctx), state.get("info"), state)
            return
        answer = info.resume_data
        part = Part(text=answer) if isinstance(answer, str) else new_data_part(answer)
        message = _outgoing([part], task_id=str(state.get("task_id", "")), context_id=str(state.get("context_id", "")))
        async for event in self._exchange(message, info.enable_streaming, ctx):
            yield event

    async def _exchange(self, message: Message, streaming: bool, ctx: RunContext | None) -> AsyncIterator[AgentEvent]:
        """One message to the remote and its task up to its final status, as the agent's events."""
        async with AsyncExitStack() as stack:
            http = self.http_client
            if http is None:
                http = await stack.enter_async_context(httpx.AsyncClient(timeout=self.timeout))
            client = await self._client(http)
            stack.push_async_callback(client.close)
            reply = _Reply(self, client.send_message(SendMessageRequest(message=message)), message.context_id)
            stack.push_async_callback(reply.close)
            try:
                texts = reply.texts()
                first = await anext(texts, None)
                if first is not None and streaming:
                    caller, whole = Stream.from_async_iter(_chunks(first, texts)).tap()
                    yield event_from_message(stream=caller)
                    await whole.chunks()  # what the reader left unread: the task's status comes after the text
                elif first is not None:
                    yield event_from_message(assistant("".join([first, *[text async for text in texts]])))
            except (asyncio.CancelledError, GeneratorExit):  # the run stopped: the remote task stops with it
                await reply.cancel(client)
                raise
            for event in reply.outcome(ctx):
                yield event

    async def _client(self, http: httpx.AsyncClient) -> Client:
        """The SDK's client of the remote, from its card (read on the first run, then kept)."""
        if self._card is None:
            try:
                async with asyncio.timeout(self.timeout):
                    self._card = await A2ACardResolver(http, self.url).get_agent_card()
            except Exception as error:
                raise self.error(f"expected its agent card at {self.url}, got {_what(error)}") from error
        return await create_client(self._card, ClientConfig(httpx_client=http, streaming=True))

    def error(self, found: str, task_id: str = "") -> RemoteAgentError:
        """A ``RemoteAgentError`` of this remote saying what was ``found``."""
        return RemoteAgentError(f"remote A2A agent {self._name!r}: {found}", url=self.url, task_id=task_id)


class _Reply:
    """The remote's events for one message, read up to its task's final status: its text as it comes
    (``texts``), then what the status makes of the run (``outcome``)."""

    def __init__(self, agent: RemoteA2AAgent, events: AsyncIterator[StreamResponse], context_id: str) -> None:
        self.agent = agent
        self.events = events
        self.task_id = ""
        self.context_id = context_id
        self.state: int = TaskState.TASK_STATE_UNSPECIFIED
        self.status: Message | None = None
        self.told = False  # some text of the answer was given already

    async def texts(self) -> AsyncIterator[str]:
        """The answer's text chunks, up to the task's final status (a direct message's text, whole)."""
        while self.state not in _FINAL:
            event = await self._next()
            for text in self._read(event):
                self.told = True
                yield text
        if self.state == TaskState.TASK_STATE_COMPLETED and not self.told and self.status is not None:
            text = "\n".join(get_text_parts(self.status.parts))
            if text:
                yield text

    def outcome(self, ctx: RunContext | None) -> list[AgentEvent]:
        """The events the task's final status makes: none for an answer, an interrupt for a question; a failed,
        rejected or cancelled task raises."""
        said = "\n".join(get_text_parts(self.status.parts)) if self.status is not None else ""
        if self.state in (TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED):
            info: dict[str, Any] = {"agent": self.agent.name, "asked": said}
            data = get_data_parts(self.status.parts) if self.status is not None else []
            if data:
                info["data"] = data
            state = {"task_id": self.task_id, "context_id": self.context_id, "info": info}
            return [stateful_interrupt(_checked(ctx), info, state)]
        if self.state != TaskState.TASK_STATE_COMPLETED:
            shown = TaskState.Name(self.state).removeprefix("TASK_STATE_").lower()
            raise self.agent.error(f"expected its task to complete, got it {shown}: {said}", self.task_id)
        return []

    def _read(self, event: StreamResponse) -> list[str]:
        """The text ``event`` adds to the answer, its task's ids and status recorded."""
        kind = event.WhichOneof("payload")
        if kind == "message":
            self.state, self.status = TaskState.TASK_STATE_COMPLETED, event.message
            self.context_id = event.message.context_id
            return []
        if kind == "task":
            task = event.task
            self.task_id, self.context_id = task.id, task.context_id
            self._status(task.status.state, task.status.message if task.status.HasField("message") else None)
            if self.state in _FINAL:  # a whole task (the remote does not stream): its artifacts' text
                return [t for artifact in task.artifacts for t in get_text_parts(artifact.parts)]
            return []
        if kind == "artifact_update":
            return get_text_parts(event.artifact_update.artifact.parts)
        if kind == "status_update":
            update = event.status_update
            self.task_id = self.task_id or update.task_id
            self.context_id = self.context_id or update.context_id
            self._status(update.status.state, update.status.message if update.status.HasField("message") else None)
            return []
        raise self.agent.error(f"expected a task, a message or a task update, got {kind!r}", self.task_id)

    def _status(self, state: int, message: Message | None) -> None:
        self.state = state
        if message is not None:
            self.status = message

    async def _next(self) -> StreamResponse:
        """The remote's next event, within the timeout; its going away before the final status is an error."""
        try:
            async with asyncio.timeout(self.agent.timeout):
                return await anext(self.events)
        except StopAsyncIteration:
            raise self.agent.error(
                "expected its task's final status, got the end of its events (it went away mid-task)", self.task_id
            ) from None
        except TimeoutError:
            raise self.agent.error(
                f"expected its next event within {self.agent.timeout:g} s, got none", self.task_id
            ) from None
        except RemoteAgentError:
            raise
        except Exception as error:
            raise self.agent.error(f"expected an A2A answer, got {_what(error)}", self.task_id) from error

    async def cancel(self, client: Client) -> None:
        """Cancel the remote task when it is going still (the run that waits for it stopped); a remote that does
        not take it is left be."""
        if self.state in _FINAL:
            return
        try:
            async with asyncio.timeout(min(self.agent.timeout, 10.0)):
                ids = [self.task_id]
                if not ids[0] and self.context_id:  # stopped before the task's id came: the tasks of its context
                    listed = await client.list_tasks(ListTasksRequest(context_id=self.context_id))
                    ids = [task.id for task in listed.tasks if task.status.state not in _FINAL]
                for task_id in filter(None, ids):
                    await client.cancel_task(CancelTaskRequest(id=task_id))
        except Exception:  # the run stops anyway: its remote's answer to the cancel changes nothing here
            return

    async def close(self) -> None:
        closer = getattr(self.events, "aclose", None)
        if closer is not None:
            await closer()


async def _chunks(first: str, rest: AsyncIterator[str]) -> AsyncIterator[BatonflowMessage]:
    """The answer's chunks as assistant message chunks."""
    yield assistant(first)
    async for text in rest:
        yield assistant(text)


def _outgoing(parts: list[Part], *, task_id: str = "", context_id: str = "") -> Message:
    return Message(
        role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=parts, task_id=task_id, context_id=context_id
    )


def _text_of(messages: Sequence[BatonflowMessage]) -> str:
    """What the remote is sent: the one user message, or the conversation as a transcript."""
    said = [m for m in messages if m.role in ("user", "assistant") and m.content]
    if len(said) == 1 and said[0].role == "user":
        return said[0].content
    return "\n\n".join(f"{m.role}: {m.content}" for m in said)


def _checked(ctx: RunContext | None) -> RunContext:
    if ctx is None:
        raise UserError("RemoteA2AAgent: expected a RunContext (run it through a Runner or a flow), got None")
    return ctx


def _what(error: BaseException) -> str:
    text = str(error) or "no message"
    return f"{type(error).__name__}: {text[:300]}"

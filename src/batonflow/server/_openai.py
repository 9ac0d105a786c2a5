"""The OpenAI-compatible endpoints: every agent served as a model, so that any OpenAI client can talk to it.

``POST /v1/chat/completions`` runs the agent named by ``model`` on the messages (stateless, as OpenAI clients send
the whole conversation each time) and answers as OpenAI does, streamed or not. Where OpenAI has no word for what
happened, the answer says it in its own terms: ``finish_reason`` is ``"interrupted"`` when the run waits for an
answer (the content says which checkpoint to resume, and ``batonflow.checkpoint_id`` holds it) and ``"error"`` when
it failed (a 200, not a 5xx: OpenAI clients retry those, and a retry would run the agent's tools again).
"""

import json
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field
from sse_starlette import EventSourceResponse, ServerSentEvent

from ..distributed import SegmentOutcome, SegmentRequest, body_of
from ._errors import ApiError, shown
from ._follow import Run, segment_records
from ._models import InputMessage
from ._server import Server, state
from ._wire import json_text, summary

__all__ = ["openai_routes"]


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None


class ChatCompletionRequest(BaseModel):
    """OpenAI's request; options batonflow's agents set themselves (temperature, tools, …) are accepted and
    ignored."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1, max_length=256)
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False


def _text(content: str | list[dict[str, Any]] | None) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    return "".join(str(part.get("text", "")) for part in content if part.get("type") == "text")


def _inputs(messages: list[ChatMessage]) -> list[InputMessage]:
    """The conversation as the agent reads it: its texts. Tool results of the client's own tools have no place in a
    batonflow run (its agents call their tools themselves), so they are left out."""
    kept = []
    for m in messages:
        if m.role == "tool":
            continue
        role = "system" if m.role == "developer" else m.role
        text = _text(m.content)
        if text or role == "user":
            kept.append(InputMessage(role=role, content=text))
    return kept


def _finish(state: dict[str, Any]) -> tuple[str, str]:
    """``finish_reason`` and the content OpenAI clients show, from the run's summary."""
    if state["status"] == "interrupted":
        asked = "; ".join(json.dumps(i.get("info"), ensure_ascii=False) for i in state["interrupts"])
        where = state["checkpoint_id"]
        note = f"[waiting for an answer: {asked}. Resume checkpoint {where} with POST /checkpoints/{where}/resume]"
        return "interrupted", f"{state['text']}\n\n{note}" if state["text"] else note
    if state["status"] in ("failed", "cancelled"):
        error = state["error"] or {"type": "Cancelled", "message": "the run was cancelled"}
        return "error", f"[run failed: {error['type']}: {error['message']}]"
    return "stop", state["text"]


def _extension(state: dict[str, Any]) -> dict[str, Any]:
    return {
        "run_id": state["run_id"],
        "status": state["status"],
        "checkpoint_id": state["checkpoint_id"] if state["status"] == "interrupted" else None,
        "interrupts": state["interrupts"],
        "error": state["error"],
    }


Srv = Annotated[Server, Depends(state)]


async def list_models(server: Srv) -> dict[str, Any]:
    """Each agent as a model (OpenAI's list)."""
    return {
        "object": "list",
        "data": [{"id": name, "object": "model", "created": 0, "owned_by": "batonflow"} for name in server.agents],
    }


async def chat_completions(body: ChatCompletionRequest, server: Srv, request: Request) -> Any:
    """Run the agent named by ``model`` on ``messages``; OpenAI's answer, or its stream of chunks."""
    server.check(body)
    if body.model not in server.agents:
        raise ApiError(
            404,
            "model_not_found",
            f"model: expected one of {sorted(server.agents)} (the agents served), got {shown(body.model)}",
            expected=sorted(server.agents),
            found=body.model,
        )
    messages = server.messages(_inputs(body.messages), "messages")
    if not messages:
        raise ApiError(422, "empty_input", "messages: expected some text, got none", expected="text", found=[])
    checkpoint_id = f"chatcmpl-{uuid.uuid4().hex}"
    segment = SegmentRequest(
        agent=body.model, checkpoint_id=checkpoint_id, messages=tuple(messages), stream=body.stream
    )
    run, after = await server.submit(segment, detached=False)
    created = int(time.time())
    if body.stream:
        return EventSourceResponse(_chunks(server, run, after, checkpoint_id, created), ping=server.limits.heartbeat)
    answered = await server.result(run, after, request)
    reason, content = _finish(answered)
    return {
        "id": checkpoint_id,
        "object": "chat.completion",
        "created": created,
        "model": body.model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": reason}],
        "usage": answered["usage"],
        "batonflow": _extension(answered),
    }


def openai_routes() -> APIRouter:
    api = APIRouter(tags=["openai"])
    api.add_api_route("/v1/models", list_models, methods=["GET"])
    api.add_api_route("/v1/chat/completions", chat_completions, methods=["POST"], response_model=None)
    return api


async def _chunks(
    server: Server, run: Run, after: str, completion_id: str, created: int
) -> AsyncIterator[ServerSentEvent]:
    """The run's assistant text as ``chat.completion.chunk`` objects, then the finish and ``[DONE]``; a client that
    goes away cancels the run."""

    def chunk(delta: dict[str, Any], reason: str | None = None, **extra: Any) -> ServerSentEvent:
        body = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": run.agent,
            "choices": [{"index": 0, "delta": delta, "finish_reason": reason}],
            **extra,
        }
        return ServerSentEvent(data=json_text(body))

    yield chunk({"role": "assistant", "content": ""})
    roles: dict[int, str] = {}
    streamed = False
    ended: SegmentOutcome | None = None
    server.followers.attach(run)
    try:
        async with aclosing(segment_records(server.backend, run.run, run.segment_id, after)) as records:
            async for record in records:
                if record.kind == "end":
                    ended = SegmentOutcome.from_payload(record.data)
                    server.ended(run.segment_id)
                    continue
                frame = record.data["event"]
                if frame not in ("message_start", "delta"):
                    continue
                data = body_of(record.data)
                if frame == "message_start":
                    roles[data["seq"]] = data["role"]
                elif frame == "delta" and roles.get(data["seq"]) == "assistant" and data["content"]:
                    streamed = True
                    yield chunk({"content": data["content"]})
    finally:
        server.followers.detach(run)
    answered = summary(run.segment_id, ended if ended is not None else await server.outcome(run.segment_id), run.agent)
    reason, content = _finish(answered)
    if reason != "stop":
        yield chunk({"content": ("\n\n" if streamed else "") + content})
    elif not streamed and content:
        yield chunk({"content": content})
    yield chunk({}, reason, usage=answered["usage"], batonflow=_extension(answered))
    yield ServerSentEvent(data="[DONE]")

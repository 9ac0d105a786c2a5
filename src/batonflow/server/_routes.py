"""The endpoints of the API: agents, runs (JSON, SSE, detached, reconnection), checkpoints and sessions."""

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from sse_starlette import EventSourceResponse

from ..distributed import SegmentRequest
from ..schema import Message
from ..store import check_checkpoint_id, check_session_id
from ._distributed import Distributed, is_segment_id
from ._errors import ApiError, shown
from ._models import ResumeRequest, RunRequest
from ._runs import Pending, RunRecord, parse_event_id
from ._server import Server, answer, check_targets, checked, finished, pending_session, result, sse, state
from ._wire import jsonable, message_json

__all__ = ["routes"]

Srv = Annotated[Server, Depends(state)]


async def list_agents(server: Srv) -> dict[str, Any]:
    """The agents served, with their descriptions and the agents of their trees."""
    return {
        "agents": [
            {"name": name, "description": tree.description, "tree": [a.name for a in tree.walk()]}
            for name, tree in server.agents.items()
        ]
    }


async def start_run(body: RunRequest, server: Srv, request: Request) -> Any:
    """Start a run: the result as JSON, the events as SSE (``stream``), or 202 and the run id (``detached``)."""
    server.check(body, "session_values", "targets")
    server.agent(body.agent)
    if server.distributed is not None:
        return await _distributed_run(body, server.distributed, server)
    if body.session_id is not None:
        record = await _conversation_turn(body, body.session_id, server)
    else:
        record = await _lone_run(body, server)
    return await _answered(record, body.stream, body.detached, server, request)


async def _answered(record: RunRecord, stream: bool, detached: bool, server: Server, request: Request) -> Any:
    early = answer(record, stream, detached, server)
    if early is not None:
        return early
    await finished(record, request)
    return result(record)


async def _turn(body: RunRequest, session_id: str, server: Server) -> tuple[str, list[Message], dict[str, Any]]:
    """A conversation turn's session id, input and resume targets, once they fit together (and the session has a
    pending run, for a turn without input)."""
    session_id = checked(check_session_id, session_id, "session_id")
    messages = server.messages(body.input)
    targets = body.targets
    if body.checkpoint_id is not None:
        raise ApiError(
            422,
            "checkpoint_with_session",
            "checkpoint_id: expected none with a session_id (a conversation keeps its pending run), got one",
            expected="no checkpoint_id",
            found=shown(body.checkpoint_id),
        )
    if not messages:
        targets = await pending_session(server, session_id, targets or {})
    elif targets:
        raise _targets_without_resume()
    return session_id, messages, dict(targets or {})


async def _conversation_turn(body: RunRequest, session_id: str, server: Server) -> RunRecord:
    server.busy("session", checked(check_session_id, session_id, "session_id"))
    session_id, messages, targets = await _turn(body, session_id, server)
    return server.start(
        body.agent,
        lambda r: r.run(messages, session_id=session_id, session_values=body.session_values, targets=targets),
        stream=body.stream,
        trace=body.trace,
        detached=body.detached,
        checkpoint_id=None,
        session_id=session_id,
        resumed=not messages,
    )


def _prompt(body: RunRequest, server: Server) -> list[Message]:
    """The messages a run without a session starts on: a prompt it must have, and no resume targets."""
    messages = server.messages(body.input)
    if not messages:
        raise ApiError(
            422,
            "empty_input",
            "input: expected a prompt (a text or messages), got none",
            expected="a non-empty input",
            found=body.input,
        )
    if body.targets:
        raise _targets_without_resume()
    return messages


async def _lone_run(body: RunRequest, server: Server) -> RunRecord:
    messages = _prompt(body, server)
    if body.checkpoint_id is None:
        checkpoint_id = f"ckpt-{uuid.uuid4().hex}"
    else:
        checkpoint_id = checked(check_checkpoint_id, body.checkpoint_id, "checkpoint_id")
        server.busy("checkpoint", checkpoint_id)
        if checkpoint_id in server.runs.pending or await server.checkpoints.get(checkpoint_id) is not None:
            raise ApiError(
                409,
                "checkpoint_exists",
                f"checkpoint_id: expected a free id, got {shown(checkpoint_id)}, which holds a pending run "
                "(resume it, or choose another id)",
                expected="an id with no pending run",
                found=checkpoint_id,
            )
    return server.start(
        body.agent,
        lambda r: r.run(messages, checkpoint_id=checkpoint_id, session_values=body.session_values),
        stream=body.stream,
        trace=body.trace,
        detached=body.detached,
        checkpoint_id=checkpoint_id,
        session_id=None,
        resumed=False,
    )


async def _distributed_run(body: RunRequest, distributed: Distributed, server: Server) -> Any:
    """A run on the backend's workers, a conversation's turn included: its segment enqueued, answered as a local
    run is."""
    if body.session_id is not None:
        session_id, messages, targets = await _turn(body, body.session_id, server)
        segment = SegmentRequest(
            agent=body.agent,
            session_id=session_id,
            messages=tuple(messages),
            targets=targets,
            session_values=body.session_values or {},
        )
    else:
        messages = _prompt(body, server)
        checkpoint_id = (
            f"ckpt-{uuid.uuid4().hex}"
            if body.checkpoint_id is None
            else checked(check_checkpoint_id, body.checkpoint_id, "checkpoint_id")
        )
        segment = SegmentRequest(
            agent=body.agent,
            checkpoint_id=checkpoint_id,
            messages=tuple(messages),
            session_values=body.session_values or {},
        )
    sid = await distributed.start(segment)
    return await distributed.answer(sid, stream=body.stream, detached=body.detached)


async def get_run(run_id: str, server: Srv) -> dict[str, Any]:
    """A run's state: running or how it ended, its answer so far, its interrupts."""
    if server.distributed is not None and is_segment_id(run_id):
        return await server.distributed.summary(run_id)
    return server.runs.get(run_id).summary()


async def run_events(
    run_id: str,
    server: Srv,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID", max_length=64)] = None,
) -> EventSourceResponse:
    """A run's events as SSE, from the start or after ``Last-Event-ID`` (replayed from the run's buffer)."""
    if server.distributed is not None and is_segment_id(run_id):
        return server.distributed.sse(run_id, last_event_id)
    record = server.runs.get(run_id)
    after = (0, 0) if last_event_id is None else parse_event_id(last_event_id)
    record.check_resumable(after)  # from the start too: a run whose first frames the buffer dropped is a 410
    return sse(record, after, server.limits.heartbeat)


async def cancel_run(run_id: str, server: Srv) -> dict[str, Any]:
    """Cancel a run (a detached one, typically); its summary once it has stopped."""
    if server.distributed is not None and is_segment_id(run_id):
        return await server.distributed.cancel(run_id)
    record = server.runs.get(run_id)
    record.cancel()
    await record.finished.wait()
    return record.summary()


async def list_checkpoints(server: Srv) -> dict[str, Any]:
    """The checkpoints this server's runs left waiting, and with a backend the runs paused on its workers, with
    their interrupts (the ids to resume by); then the conversations waiting (``session_id`` set), which may share
    an id with a checkpoint."""
    listed = [p.json() for p in server.runs.pending.values()]
    if server.distributed is not None:
        listed += [p for p in await server.distributed.paused() if p["checkpoint_id"] not in server.runs.pending]
    listed += [p.json() for p in server.runs.pending_sessions.values()]
    return {"checkpoints": listed}


Session = Annotated[
    bool,
    Query(description="the conversation of this id waiting, not the checkpoint (for a conversation listed with it)"),
]


async def get_checkpoint(checkpoint_id: str, server: Srv, session: Session = False) -> dict[str, Any]:
    """One pending checkpoint and its interrupts (with ``session``, or when no checkpoint has the id, the pending
    conversation of that id)."""
    entry = None if session else server.runs.pending.get(checkpoint_id)
    if entry is None and not session and server.distributed is not None:
        checkpoint_id = checked(check_checkpoint_id, checkpoint_id, "checkpoint_id")
        found = await server.distributed.paused(checkpoint_id)
        if found:
            return found[0]
    entry = entry or server.runs.pending_sessions.get(checkpoint_id)
    if entry is None:
        why = "no run of this server left it pending"
        if session:
            why = "no conversation of this id waits on this server"
        elif server.distributed is not None:
            why += ", and none waits on the workers"
        raise _no_checkpoint(checkpoint_id, why)
    return entry.json()


async def resume_checkpoint(
    checkpoint_id: str, body: ResumeRequest, server: Srv, request: Request, session: Session = False
) -> Any:
    """Resume a pending checkpoint with ``targets``, answered as ``POST /runs`` answers (with ``session``, or when
    no checkpoint of the id waits and no agent is named, the pending conversation of that id)."""
    server.check(body, "targets")
    checkpoint_id = checked(check_checkpoint_id, checkpoint_id, "checkpoint_id")
    conversation = server.runs.pending_sessions.get(checkpoint_id)
    if session:
        if conversation is None:
            raise _no_checkpoint(checkpoint_id, "no conversation of this id waits on this server")
        return await _resume_conversation(conversation, body, server, request)
    entry = server.runs.pending.get(checkpoint_id)
    if server.distributed is not None:
        agent = body.agent
        if agent is None:  # the agent of the run paused on the workers
            found = await server.distributed.paused(checkpoint_id)
            if not found and conversation is not None:
                return await _resume_conversation(conversation, body, server, request)
            if not found:
                raise _no_checkpoint(checkpoint_id, "none waits on the workers; name its agent to resume it there")
            agent = found[0]["agent"]
        server.agent(agent)
        segment = SegmentRequest(agent=agent, checkpoint_id=checkpoint_id, targets=body.targets)
        sid = await server.distributed.start(segment)
        return await server.distributed.answer(sid, stream=body.stream, detached=body.detached)
    if entry is None and body.agent is None and conversation is not None:
        return await _resume_conversation(conversation, body, server, request)
    server.busy("checkpoint", checkpoint_id)
    agent, targets = await _resumable(server, checkpoint_id, entry, body)
    record = server.start(
        agent,
        lambda r: r.resume(checkpoint_id, targets),
        stream=body.stream,
        trace=body.trace,
        detached=body.detached,
        checkpoint_id=checkpoint_id,
        session_id=None,
        resumed=True,
    )
    return await _answered(record, body.stream, body.detached, server, request)


async def _resume_conversation(entry: Pending, body: ResumeRequest, server: Server, request: Request) -> Any:
    session_id = entry.checkpoint_id
    server.busy("session", session_id)
    targets = await pending_session(server, session_id, body.targets)
    record = server.start(
        entry.agent,
        lambda r: r.run([], session_id=session_id, targets=targets),
        stream=body.stream,
        trace=body.trace,
        detached=body.detached,
        checkpoint_id=None,
        session_id=session_id,
        resumed=True,
    )
    return await _answered(record, body.stream, body.detached, server, request)


async def _resumable(
    server: Server, checkpoint_id: str, entry: Pending | None, body: ResumeRequest
) -> tuple[str, dict[str, Any]]:
    """The agent to resume ``checkpoint_id`` with, and the targets, once both are known to fit the checkpoint."""
    agent = body.agent if entry is None or body.agent is not None else entry.agent
    if agent is None:
        raise _no_checkpoint(checkpoint_id, "the server made no such checkpoint; name its agent to resume it")
    server.agent(agent)
    if await server.checkpoints.get(checkpoint_id) is None:
        server.runs.pending.pop(checkpoint_id, None)
        raise _no_checkpoint(checkpoint_id, "the checkpoint store holds no such checkpoint")
    return agent, body.targets if entry is None else check_targets(entry.interrupts, body.targets)


async def list_sessions(server: Srv) -> dict[str, Any]:
    """The conversations this server's runs took part in, the latest last."""
    return {"sessions": list(server.runs.sessions)}


async def get_session(
    session_id: str,
    server: Srv,
    last: Annotated[int | None, Query(ge=1, le=100_000, description="the last N messages")] = None,
) -> dict[str, Any]:
    """A conversation's messages (the ``last`` ones when given), attributes and pending state."""
    session_id = checked(check_session_id, session_id, "session_id")
    data = await server.sessions.get(session_id, last=last)
    if data is None:
        raise _no_session(session_id)
    return {
        "session_id": session_id,
        "messages": [message_json(m) for m in data.messages],
        "attributes": jsonable(data.state.attrs),
        "pending": data.state.pending,
        "pending_reason": data.state.pending_reason,
    }


async def delete_session(session_id: str, server: Srv) -> Response:
    """Forget a conversation: its messages, attributes and pending run."""
    session_id = checked(check_session_id, session_id, "session_id")
    server.busy("session", session_id)
    if await server.sessions.get(session_id, last=1) is None:
        raise _no_session(session_id)
    await server.sessions.delete(session_id)
    server.runs.sessions.pop(session_id, None)
    server.runs.pending_sessions.pop(session_id, None)
    return Response(status_code=204)


def _no_checkpoint(checkpoint_id: str, why: str) -> ApiError:
    return ApiError(
        404,
        "unknown_checkpoint",
        f"checkpoint: expected a pending checkpoint, got {shown(checkpoint_id)}: {why}",
        expected="an id from GET /checkpoints",
        found=checkpoint_id,
    )


def _no_session(session_id: str) -> ApiError:
    return ApiError(
        404,
        "unknown_session",
        f"session: expected a stored conversation, got {shown(session_id)}, which the session store does not hold",
        expected="an id from GET /sessions",
        found=session_id,
    )


def _targets_without_resume() -> ApiError:
    return ApiError(
        422,
        "targets_without_resume",
        "targets: expected none with an input (targets answer a pending run, resumed with no input), got some",
        expected="no targets, or no input",
        found="targets and an input",
    )


def routes() -> APIRouter:
    """The router of every endpoint here (the app adds its auth dependency)."""
    api = APIRouter()
    api.add_api_route("/agents", list_agents, methods=["GET"], tags=["agents"])
    api.add_api_route("/runs", start_run, methods=["POST"], tags=["runs"], response_model=None)
    api.add_api_route("/runs/{run_id}", get_run, methods=["GET"], tags=["runs"])
    api.add_api_route("/runs/{run_id}/events", run_events, methods=["GET"], tags=["runs"], response_model=None)
    api.add_api_route("/runs/{run_id}/cancel", cancel_run, methods=["POST"], tags=["runs"])
    api.add_api_route("/checkpoints", list_checkpoints, methods=["GET"], tags=["checkpoints"])
    # Ids are data: one may hold "/" (a store takes it), so the routes of an id take the rest of the path.
    api.add_api_route("/checkpoints/{checkpoint_id:path}", get_checkpoint, methods=["GET"], tags=["checkpoints"])
    api.add_api_route(
        "/checkpoints/{checkpoint_id:path}/resume",
        resume_checkpoint,
        methods=["POST"],
        tags=["checkpoints"],
        response_model=None,
    )
    api.add_api_route("/sessions", list_sessions, methods=["GET"], tags=["sessions"])
    api.add_api_route("/sessions/{session_id:path}", get_session, methods=["GET"], tags=["sessions"])
    api.add_api_route(
        "/sessions/{session_id:path}",
        delete_session,
        methods=["DELETE"],
        tags=["sessions"],
        status_code=204,
        response_class=Response,
    )
    return api

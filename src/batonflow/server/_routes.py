"""The endpoints of the API: agents, runs (JSON, SSE, detached, reconnection), checkpoints and sessions."""

import hashlib
import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request, Response

from ..distributed import SegmentRequest
from ..schema import Message
from ..store import check_checkpoint_id, check_session_id
from ._errors import ApiError, shown
from ._follow import parse_event_id
from ._history import ForkRequest, get_history_step, get_run_history, kept_history, replay_run, root_agent, step_of
from ._models import ResumeRequest, RunRequest
from ._refusals import no_checkpoint
from ._server import Server, checked, pending_session, state
from ._sse import EventStream
from ._structure import agent_structure, flow_structure
from ._targets import check_targets
from ._wire import jsonable, message_json

__all__ = ["IDEMPOTENCY_KEY_MAX", "routes", "start_run"]

Srv = Annotated[Server, Depends(state)]


async def list_agents(server: Srv) -> dict[str, Any]:
    """The agents served, with their descriptions and the agents of their trees."""
    return {
        "agents": [
            {"name": name, "description": tree.description, "tree": [a.name for a in tree.walk()]}
            for name, tree in server.agents.items()
        ]
    }


IDEMPOTENCY_KEY_MAX = 255

IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        max_length=IDEMPOTENCY_KEY_MAX,
        description="a key of the client's: the same key and body again answer the same run, never a second one",
    ),
]


async def start_run(body: RunRequest, server: Srv, request: Request, idempotency_key: IdempotencyKey = None) -> Any:
    """Start a run: the result as JSON, the events as SSE (``stream``), or 202 and the run id (``detached``). With
    an ``Idempotency-Key``, the run's checkpoint id is ``idem-`` and a digest of the key: a retry of the request
    answers the same run."""
    server.check(body, "session_values", "targets")
    server.agent(body.agent)
    if idempotency_key is not None:
        segment = await _lone_run(body, server, _idempotent_id(body, idempotency_key))
    elif body.session_id is not None:
        session_id, messages, targets = await _turn(body, body.session_id, server)
        segment = SegmentRequest(
            agent=body.agent,
            session_id=session_id,
            messages=tuple(messages),
            targets=targets,
            session_values=body.session_values or {},
            stream=body.stream,
            trace=body.trace,
        )
    else:
        segment = await _lone_run(body, server)
    run, after = await server.submit(segment, detached=body.detached, idempotency_key=idempotency_key)
    return await server.answer(run, after, body.stream, body.detached, request)


def _idempotent_id(body: RunRequest, key: str) -> str:
    """The checkpoint id of the run an ``Idempotency-Key`` names, once the key and the body fit together."""
    if not key or not key.isprintable():
        raise ApiError(
            400,
            "invalid_idempotency_key",
            f"Idempotency-Key: expected 1 to 255 printable characters, got {shown(key)}",
            expected="1 to 255 printable characters",
            found=shown(key),
        )
    for given, name in ((body.session_id, "session_id"), (body.checkpoint_id, "checkpoint_id")):
        if given is not None:
            why = (
                "a conversation's turn is named by where the conversation stands; retry a turn by sending it again"
                if name == "session_id"
                else "the key names the run's checkpoint"
            )
            raise ApiError(
                400,
                f"idempotency_key_with_{name}",
                f"Idempotency-Key: expected a run without a {name} ({why}), got {name} {shown(given)}",
                expected=f"no {name} with an Idempotency-Key",
                found=shown(given),
            )
    return f"idem-{hashlib.sha256(key.encode()).hexdigest()[:32]}"


async def _turn(body: RunRequest, session_id: str, server: Server) -> tuple[str, list[Message], dict[str, Any]]:
    """A conversation turn's session id, input and resume targets, once they fit together (and the session has a
    pending run, for a turn without input)."""
    session_id = checked(check_session_id, session_id, "session_id")
    server.busy("session", session_id)
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


async def _lone_run(body: RunRequest, server: Server, idempotent: str | None = None) -> SegmentRequest:
    """A run without a session: under a fresh checkpoint id, the one given, or (``idempotent``) an Idempotency-Key's,
    which a retry attaches to (the backend compares what the two requests ask)."""
    messages = _prompt(body, server)
    checkpoint_id = idempotent if idempotent is not None else await _free_checkpoint_id(server, body.checkpoint_id)
    return SegmentRequest(
        agent=body.agent,
        checkpoint_id=checkpoint_id,
        messages=tuple(messages),
        session_values=body.session_values or {},
        stream=body.stream,
        trace=body.trace,
    )


async def _free_checkpoint_id(server: Server, given: str | None) -> str:
    """A new run's checkpoint id: a fresh one, or the one given once it is valid and no pending run holds it."""
    if given is None:
        return f"ckpt-{uuid.uuid4().hex}"
    checkpoint_id = checked(check_checkpoint_id, given, "checkpoint_id")
    server.busy("checkpoint", checkpoint_id)
    if await server.checkpoints.get(checkpoint_id) is not None:
        raise ApiError(
            409,
            "checkpoint_exists",
            f"checkpoint_id: expected a free id, got {shown(checkpoint_id)}, which holds a pending run "
            "(resume it, or choose another id)",
            expected="an id with no pending run",
            found=checkpoint_id,
        )
    return checkpoint_id


async def fork_run(run_id: str, body: ForkRequest, server: Srv, request: Request) -> Any:
    """A new run from the state after step ``at`` of a kept run (docs/history.md), answered as ``POST /runs``
    answers; the kept run is left as it was."""
    server.check(body, "session_values")
    history = await kept_history(server, run_id)
    after = history[step_of(history, body.at)].state
    agent = root_agent(history, body.agent)
    server.agent(agent)
    added = server.messages(body.input)
    if body.checkpoint_id == history.run_id:
        raise ApiError(
            409,
            "fork_onto_original",
            f"checkpoint_id: expected a new id for the fork, got the kept run's ({shown(body.checkpoint_id)})",
            expected="an id other than the kept run's",
            found=body.checkpoint_id,
        )
    segment = SegmentRequest(
        agent=agent,
        checkpoint_id=await _free_checkpoint_id(server, body.checkpoint_id),
        messages=(*after.messages, *added),
        session_values={**after.session_values, **(body.session_values or {})},
        stream=body.stream,
        trace=body.trace,
    )
    run, start = await server.submit(segment, detached=body.detached)
    return await server.answer(run, start, body.stream, body.detached, request)


async def get_run(run_id: str, server: Srv) -> dict[str, Any]:
    """A run's state: running or how it ended, its answer, its interrupts."""
    return await server.summary(run_id)


History = Annotated[
    bool,
    Query(
        description="the frames of the segments before this one in the run's log first (a resumed run's segments "
        "before each interrupt, a conversation's earlier turns), each from its run to its end"
    ),
]


async def run_events(
    run_id: str,
    server: Srv,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID", max_length=64)] = None,
    history: History = False,
) -> EventStream:
    """A run's events as SSE, from the start or after ``Last-Event-ID`` (replayed from the run's event log); with
    ``history``, the earlier segments' first, as the log keeps them."""
    given = None if last_event_id is None else parse_event_id(last_event_id)  # a malformed one is a 400 first
    await server.outcome(run_id)  # an unknown run is a 404
    run_key = run_id.rpartition("@")[0]  # the run's checkpoint id, or a conversation's session id
    after = await server.check_after(run_key, given)
    return await server.sse(run_id, run_key, after, history=history)


async def cancel_run(run_id: str, server: Srv) -> dict[str, Any]:
    """Cancel a run (a detached one, typically); its summary once it has stopped."""
    return await server.cancel(run_id)


async def list_checkpoints(server: Srv) -> dict[str, Any]:
    """The runs waiting for an answer, with their interrupts (the ids to resume by): the checkpoints, then the
    conversations (``session_id`` set), which may share an id with a checkpoint."""
    return {"checkpoints": await server.paused()}


async def list_failed_segments(server: Srv) -> dict[str, Any]:
    """The segments given up after the workers' recovery limit (each start's worker died before it ended), newest
    first: a backend without a pool of workers (in process) has none."""
    failed = getattr(server.backend, "failed_segments", None)
    return {"segments": [] if failed is None else [segment.payload() for segment in await failed()]}


Session = Annotated[
    bool,
    Query(description="the conversation of this id waiting, not the checkpoint (for a conversation listed with it)"),
]


async def get_checkpoint(checkpoint_id: str, server: Srv, session: Session = False) -> dict[str, Any]:
    """One pending checkpoint and its interrupts (with ``session``, or when no checkpoint has the id, the pending
    conversation of that id)."""
    if not session:
        found = await server.paused(checked(check_checkpoint_id, checkpoint_id, "checkpoint_id"))
        if found:
            return found[0]
    conversation = await _waiting_conversation(server, checkpoint_id)
    if conversation is None:
        why = "no conversation of this id waits" if session else "no run waits on it"
        raise no_checkpoint(checkpoint_id, why)
    return conversation


async def _waiting_conversation(server: Server, session_id: str) -> dict[str, Any] | None:
    """The conversation ``session_id`` as ``GET /checkpoints`` lists it, when it waits for an answer."""
    listed = next((p for p in await server.paused() if p["session_id"] == session_id), None)
    if listed is not None:
        return listed
    data = await server.sessions.get(session_id, last=1)
    if data is None or not data.state.pending:
        return None
    return {
        "checkpoint_id": session_id,
        "agent": "",
        "session_id": session_id,
        "run_id": "",
        "created": None,
        "interrupts": [],
    }


async def resume_checkpoint(
    checkpoint_id: str, body: ResumeRequest, server: Srv, request: Request, session: Session = False
) -> Any:
    """Resume a pending checkpoint with ``targets``, answered as ``POST /runs`` answers (with ``session``, or when
    no checkpoint of the id waits and no agent is named, the pending conversation of that id)."""
    server.check(body, "targets")
    checkpoint_id = checked(check_checkpoint_id, checkpoint_id, "checkpoint_id")
    if session:
        return await _resume_conversation(checkpoint_id, body, server, request)
    found = await server.paused(checkpoint_id)
    entry = found[0] if found else None
    claim = None if entry is not None else await server.claim(checkpoint_id)
    if claim is not None and not claim.segment_id.endswith("@start"):
        # Its pause was answered already: the same answer again attaches to that resume, another is a 409.
        targets = check_targets(claim.answered, body.targets) if claim.answered else body.targets
        segment = SegmentRequest(
            agent=body.agent or claim.agent,
            checkpoint_id=checkpoint_id,
            targets=targets,
            stream=body.stream,
            trace=body.trace,
        )
        run, after = await server.submit(segment, detached=body.detached)
        return await server.answer(run, after, body.stream, body.detached, request)
    if entry is None and body.agent is None:
        if await _waiting_conversation(server, checkpoint_id) is not None:
            return await _resume_conversation(checkpoint_id, body, server, request)
        raise no_checkpoint(checkpoint_id, "no run waits on it; name its agent to resume it")
    agent = body.agent if body.agent is not None else entry["agent"] if entry is not None else ""
    server.agent(agent)
    if await server.checkpoints.get(checkpoint_id) is None:
        raise no_checkpoint(checkpoint_id, "the checkpoint store holds no such checkpoint")
    targets = body.targets if entry is None else check_targets(entry["interrupts"], body.targets)
    segment = SegmentRequest(
        agent=agent, checkpoint_id=checkpoint_id, targets=targets, stream=body.stream, trace=body.trace
    )
    run, after = await server.submit(segment, detached=body.detached)
    return await server.answer(run, after, body.stream, body.detached, request)


async def _resume_conversation(session_id: str, body: ResumeRequest, server: Server, request: Request) -> Any:
    waiting = await _waiting_conversation(server, session_id)
    if waiting is None:
        raise no_checkpoint(session_id, "no conversation of this id waits")
    agent = body.agent or waiting["agent"]
    if not agent:
        raise no_checkpoint(session_id, "the conversation waits, but its agent is not known here; name it")
    server.agent(agent)
    server.busy("session", session_id)
    targets = await pending_session(server, session_id, body.targets)
    segment = SegmentRequest(agent=agent, session_id=session_id, targets=targets, stream=body.stream, trace=body.trace)
    run, after = await server.submit(segment, detached=body.detached)
    return await server.answer(run, after, body.stream, body.detached, request)


async def list_sessions(server: Srv) -> dict[str, Any]:
    """The conversations this server's runs took part in, the latest last."""
    return {"sessions": list(server.conversations)}


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
    server.conversations.pop(session_id, None)
    return Response(status_code=204)


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
    api.add_api_route("/agents/{name}/structure", agent_structure, methods=["GET"], tags=["agents"])
    api.add_api_route("/flows/{flow_id}/structure", flow_structure, methods=["GET"], tags=["flows"])
    api.add_api_route("/runs", start_run, methods=["POST"], tags=["runs"], response_model=None)
    # A run id is its segment id, a checkpoint's or session's id and "@<generation>": it may hold "/", so the
    # routes of a run take the rest of the path too, the longer ones first (an id never ends in "/events").
    api.add_api_route("/runs/{run_id:path}/events", run_events, methods=["GET"], tags=["runs"], response_model=None)
    api.add_api_route("/runs/{run_id:path}/history", get_run_history, methods=["GET"], tags=["runs"])
    api.add_api_route("/runs/{run_id:path}/history/{index}", get_history_step, methods=["GET"], tags=["runs"])
    api.add_api_route("/runs/{run_id:path}/fork", fork_run, methods=["POST"], tags=["runs"], response_model=None)
    api.add_api_route("/runs/{run_id:path}/replay", replay_run, methods=["POST"], tags=["runs"])
    api.add_api_route("/runs/{run_id:path}/cancel", cancel_run, methods=["POST"], tags=["runs"])
    api.add_api_route("/runs/{run_id:path}", get_run, methods=["GET"], tags=["runs"])
    api.add_api_route("/checkpoints", list_checkpoints, methods=["GET"], tags=["checkpoints"])
    api.add_api_route("/segments/failed", list_failed_segments, methods=["GET"], tags=["runs"])
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

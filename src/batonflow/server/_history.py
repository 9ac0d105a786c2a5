"""The endpoints of kept runs (docs/history.md): a run's steps, the state after one, a replay, and a fork.

A kept run's record lives in the server's checkpoint store, written there by whichever process ran it (this
server's default backend, a worker, a script on the same database). Reading it is this process's; a replay runs
the served agent tree here, with no model or tool called; a fork is a new run submitted to the server's backend
like any ``POST /runs``, so it runs where runs run.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import Depends, Path, Request
from pydantic import Field

from ..adk import RunHistory, Runner, read_history
from ..distributed import SegmentRequest, event_json, event_kind
from ..errors import ReplayMismatchError, RunHistoryError
from ..store import check_checkpoint_id
from ._errors import ApiError, shown
from ._models import InputMessage, RunOptions
from ._server import Server, checked, state
from ._wire import jsonable, message_json

__all__ = ["ForkRequest", "ReplayRequest", "fork_run", "get_history_step", "get_run_history", "replay_run"]

Srv = Annotated[Server, Depends(state)]


class ForkRequest(RunOptions):
    """Start a new run from the state after step ``at`` of a kept run: its messages so far, then ``input``; its
    session values, with ``session_values`` merged in. Answered as ``POST /runs`` answers."""

    at: int = Field(ge=0, le=10_000_000, description="the step (its index in GET /runs/{id}/history) to fork after")
    input: str | list[InputMessage] = Field(
        default="", description="messages added after the step's (a text or messages)"
    )
    session_values: dict[str, Any] | None = Field(default=None, description="merged into the step's session values")
    agent: str | None = Field(
        default=None, min_length=1, max_length=256, description="the agent to run (default: the kept run's root agent)"
    )
    checkpoint_id: str | None = Field(
        default=None, min_length=1, max_length=256, description="the new run's id (one is made when omitted)"
    )


class ReplayRequest(RunOptions):
    """Run a kept run again from its record with a served agent tree; no model or tool is called."""

    agent: str | None = Field(
        default=None, min_length=1, max_length=256, description="the agent tree to replay with (default: the run's)"
    )


async def _kept(server: Server, run_id: str) -> RunHistory:
    """The history of ``run_id`` (a checkpoint id, or a run id of ``POST /runs``), or a 404 that says why."""
    run_id = checked(check_checkpoint_id, run_id, "run_id")
    try:
        try:
            return await read_history(server.checkpoints, run_id)
        except RunHistoryError:
            checkpoint_id = run_id.rpartition("@")[0]  # a run id from POST /runs: the checkpoint id and "@<n>"
            if not checkpoint_id:
                raise
            return await read_history(server.checkpoints, checkpoint_id)
    except RunHistoryError as error:
        raise ApiError(
            404,
            "run_history",
            str(error),
            expected="a run kept with Runner(..., keep_history=True) in the server's checkpoint store",
            found=None,
        ) from None


def _root_agent(history: RunHistory, given: str | None) -> str:
    """The agent named, or the kept run's root agent."""
    agent = given if given is not None else history.root_agent
    if agent is None:
        raise ApiError(
            422,
            "unknown_root_agent",
            f"agent: expected one for run {history.run_id!r}, whose steps name no agent, got none",
            expected="an agent name",
            found=None,
        )
    return agent


def _step_of(history: RunHistory, at: int) -> int:
    if not 0 <= at < len(history):
        raise ApiError(
            404,
            "unknown_step",
            f"step: expected a step from 0 to {len(history) - 1} of run {history.run_id!r}, got {at}",
            expected=f"0 to {len(history) - 1}",
            found=at,
        )
    return at


async def get_run_history(run_id: str, server: Srv) -> dict[str, Any]:
    """The steps of a run kept with ``keep_history`` in the server's checkpoint store (docs/history.md), by its
    checkpoint id or its run id."""
    payload = (await _kept(server, run_id)).payload()
    for step in payload["steps"]:
        step["session_values"] = jsonable(step["session_values"])
    return payload


async def get_history_step(
    run_id: str, index: Annotated[int, Path(ge=0, le=10_000_000)], server: Srv
) -> dict[str, Any]:
    """One step of a kept run, with the state after it: the messages so far and the session values."""
    history = await _kept(server, run_id)
    step = history[_step_of(history, index)]
    shown_step = history.payload()["steps"][index]
    after = step.state
    shown_step["session_values"] = jsonable(shown_step["session_values"])
    shown_step["state"] = {
        "messages": [message_json(m) for m in after.messages],
        "session_values": jsonable(after.session_values),
    }
    return {"run_id": history.run_id, **shown_step}


async def fork_run(run_id: str, body: ForkRequest, server: Srv, request: Request) -> Any:
    """A new run from the state after step ``at`` of a kept run, answered as ``POST /runs`` answers; the kept
    run is left as it was."""
    server.check(body, "session_values")
    history = await _kept(server, run_id)
    after = history[_step_of(history, body.at)].state
    agent = _root_agent(history, body.agent)
    server.agent(agent)
    added = server.messages(body.input)
    if body.checkpoint_id is None:
        checkpoint_id = f"ckpt-{uuid.uuid4().hex}"
    else:
        checkpoint_id = checked(check_checkpoint_id, body.checkpoint_id, "checkpoint_id")
        if checkpoint_id == history.run_id:
            raise ApiError(
                409,
                "fork_onto_original",
                f"checkpoint_id: expected a new id for the fork, got the kept run's ({shown(checkpoint_id)})",
                expected="an id other than the kept run's",
                found=checkpoint_id,
            )
        server.busy("checkpoint", checkpoint_id)
        if await server.checkpoints.get(checkpoint_id) is not None:
            raise ApiError(
                409,
                "checkpoint_exists",
                f"checkpoint_id: expected a free id, got {shown(checkpoint_id)}, which holds a pending run",
                expected="an id with no pending run",
                found=checkpoint_id,
            )
    segment = SegmentRequest(
        agent=agent,
        checkpoint_id=checkpoint_id,
        messages=(*after.messages, *added),
        session_values={**after.session_values, **(body.session_values or {})},
        stream=body.stream,
        trace=body.trace,
    )
    run, start = await server.submit(segment, detached=body.detached)
    return await server.answer(run, start, body.stream, body.detached, request)


async def replay_run(run_id: str, body: ReplayRequest, server: Srv) -> dict[str, Any]:
    """A kept run produced again by a served agent tree from its record, in this process, no model or tool
    called: its events, or a 409 ``replay_mismatch`` naming the agent and the step where the tree and the record
    part."""
    history = await _kept(server, run_id)
    agent = _root_agent(history, body.agent)
    runner = Runner(server.agent(agent), checkpoint_store=server.checkpoints)
    events: list[dict[str, Any]] = []
    try:
        async for event in runner.replay(history.run_id):
            variant = event.message_output
            message = None if variant is None else await variant.get_message()
            events.append({"event": event_kind(event), **event_json(event, message)})
    except ReplayMismatchError as error:
        raise ApiError(
            409,
            "replay_mismatch",
            str(error),
            expected=f"the agent tree that ran {history.run_id!r}",
            found={"agent_name": error.agent_name, "step": error.step},
        ) from None
    last = next((e["message"]["content"] for e in reversed(events) if "message" in e), "")
    return {"run_id": history.run_id, "agent": agent, "steps": len(history), "text": last, "events": events}

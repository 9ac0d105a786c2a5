"""The endpoints of kept runs (docs/history.md): a run's steps, the state after one, a replay, and a fork.

A kept run's record lives in the server's checkpoint store, written there by whichever process ran it (this
server's default backend, a worker, a script on the same database). Reading it is this process's; a replay runs
the served agent tree here, with no model or tool called. A fork is a new run, started beside ``POST /runs``
(``_routes``) and submitted to the server's backend as any run is, so it runs where runs run.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Path
from pydantic import Field

from ..adk import RunHistory, Runner, read_history
from ..distributed import replay_json
from ..errors import ReplayMismatchError, RunHistoryError
from ..store import check_checkpoint_id
from ._errors import ApiError
from ._models import InputMessage, RunOptions
from ._server import Server, checked, state
from ._wire import jsonable, message_json

__all__ = [
    "ForkRequest",
    "ReplayRequest",
    "get_history_step",
    "get_run_history",
    "kept_history",
    "replay_run",
    "root_agent",
    "step_of",
]

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


async def kept_history(server: Server, run_id: str) -> RunHistory:
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


def root_agent(history: RunHistory, given: str | None) -> str:
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


def step_of(history: RunHistory, at: int) -> int:
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
    payload = (await kept_history(server, run_id)).payload()
    for step in payload["steps"]:
        step["session_values"] = jsonable(step["session_values"])
    return payload


async def get_history_step(
    run_id: str, index: Annotated[int, Path(ge=0, le=10_000_000)], server: Srv
) -> dict[str, Any]:
    """One step of a kept run, with the state after it: the messages so far and the session values."""
    history = await kept_history(server, run_id)
    step = history[step_of(history, index)]
    shown = step.payload()
    after = step.state
    shown["session_values"] = jsonable(shown["session_values"])
    shown["state"] = {"messages": [message_json(m) for m in after.messages], "session_values": shown["session_values"]}
    return {"run_id": history.run_id, **shown}


async def replay_run(run_id: str, body: ReplayRequest, server: Srv) -> dict[str, Any]:
    """A kept run produced again by a served agent tree from its record, in this process, no model or tool
    called: its events, or a 409 ``replay_mismatch`` naming the agent and the step where the tree and the record
    part."""
    history = await kept_history(server, run_id)
    agent = root_agent(history, body.agent)
    runner = Runner(server.agent(agent), checkpoint_store=server.checkpoints)
    try:
        replayed = await replay_json(runner, history.run_id)
    except ReplayMismatchError as error:
        raise ApiError(
            409,
            "replay_mismatch",
            str(error),
            expected=f"the agent tree that ran {history.run_id!r}",
            found={"agent_name": error.agent_name, "step": error.step},
        ) from None
    return {"run_id": history.run_id, "agent": agent, "steps": len(history), **replayed}

"""``batonflow runs history|replay|fork RUN``: a run kept with ``keep_history`` — its steps, a replay of it from its
record, a new run from the state after one of its steps — through a server (``--url``) or straight from the store it
was kept in (``--store``, with the agents from ``--target`` for a replay or a fork)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from ._options import Token, Url

if TYPE_CHECKING:
    from ..adk import RunHistory, Runner

__all__ = ["runs"]

runs = typer.Typer(help="The runs kept with keep_history (docs/history.md).", no_args_is_help=True)

RunId = Annotated[str, typer.Argument(help="the run's id (its checkpoint id; a conversation turn's history id)")]
StoreOption = Annotated[
    str | None,
    typer.Option("--store", help="read the store here, not a server: sqlite:PATH or postgres:URL"),
]
JsonFlag = Annotated[bool, typer.Option("--json", help="print the steps as JSON, not a table")]
TargetOption = Annotated[
    str | None,
    typer.Option("--target", help="with --store: module:attr, the agents to replay or fork with (as `batonflow run`)"),
]
AgentOption = Annotated[str | None, typer.Option("--agent", help="the agent to run (default: the run's root agent)")]


@runs.command()
def history(
    run_id: RunId,
    store: StoreOption = None,
    as_json: JsonFlag = False,
    url: Url = "http://127.0.0.1:8000",
    token: Token = None,
) -> None:
    """A kept run's steps: kind, agent, address, summary (and the session values after each, with --json)."""
    payload = asyncio.run(_from_store(store, run_id)) if store is not None else _from_server(url, token, run_id)
    if as_json:
        typer.echo(json.dumps(payload, indent=2, default=str))
        return
    table = Table("step", "kind", "agent", "address", "summary")
    for step in payload["steps"]:
        table.add_row(str(step["index"]), step["kind"], step["agent_name"], step["address"], step["summary"])
    Console(highlight=False, width=200).print(table)


def _from_server(url: str, token: str | None, run_id: str) -> dict[str, Any]:
    from ..store import check_checkpoint_id
    from ._remote import Remote, segment

    check_checkpoint_id(run_id)
    found: dict[str, Any] = Remote(url, token).call("GET", f"/runs/{segment(run_id)}/history")
    return found


async def _from_store(spec: str, run_id: str) -> dict[str, Any]:
    from ..adk import read_history
    from ._target import open_stores

    checkpoints, sessions = open_stores(spec)
    try:
        return (await read_history(checkpoints, run_id)).payload()
    finally:
        await checkpoints.close()
        await sessions.close()


@runs.command()
def replay(
    run_id: RunId,
    store: StoreOption = None,
    target: TargetOption = None,
    agent: AgentOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the replay's events as JSON")] = False,
    url: Url = "http://127.0.0.1:8000",
    token: Token = None,
) -> None:
    """Run a kept run again from its record, with no model or tool called: exit 0 when the agents replay it, 1 with
    the agent and step where they part from it (the agents changed since the run)."""
    if store is not None:
        payload = asyncio.run(_replay_locally(_local(store, target), store, run_id, agent))
    else:
        payload = _remote(url, token, run_id, "replay", {"agent": agent} if agent else {})
    if as_json:
        typer.echo(json.dumps(payload, indent=2, default=str))
        return
    typer.echo(
        f"replayed {payload['run_id']} ({payload['agent']}): {payload['steps']} steps, {len(payload['events'])} events"
    )
    typer.echo(payload["text"])


@runs.command()
def fork(
    run_id: RunId,
    at: Annotated[int, typer.Option("--at", min=0, help="the step (its index in `runs history`) to start after")],
    add: Annotated[str, typer.Option("--input", help="a user message added after the step's messages")] = "",
    values: Annotated[
        list[str] | None, typer.Option("--value", help="KEY=JSON: a session value set for the new run (repeatable)")
    ] = None,
    checkpoint_id: Annotated[str | None, typer.Option(help="the new run's id (one is made when omitted)")] = None,
    store: StoreOption = None,
    target: TargetOption = None,
    agent: AgentOption = None,
    replay: Annotated[
        bool, typer.Option("--replay", help="with --store: replay the run to the step and go on inside its tree")
    ] = False,
    url: Url = "http://127.0.0.1:8000",
    token: Token = None,
) -> None:
    """Start a new run from the state after step --at of a kept run (its messages, then --input; its session values,
    then --value), and print its answer; the kept run is left as it was."""
    from ..errors import UserError

    set_values = dict(_value_pair(item) for item in values or ())
    if replay and (store is None or add):
        raise UserError("--replay: expected --store (a fork over HTTP starts at the root) and no --input, got other")
    if store is not None:
        fork = _Fork(run_id, at, add, set_values, checkpoint_id, agent, replay)
        answer = asyncio.run(_fork_locally(_local(store, target), store, fork))
    else:
        body: dict[str, Any] = {"at": at, "input": add, "session_values": set_values}
        body.update({k: v for k, v in (("checkpoint_id", checkpoint_id), ("agent", agent)) if v is not None})
        answer = _remote(url, token, run_id, "fork", body)
    typer.echo(f"forked {run_id} at step {at} as {answer['checkpoint_id']}: {answer['status']}")
    typer.echo(answer["text"])
    if answer["status"] != "completed":
        raise typer.Exit(3 if answer["status"] == "interrupted" else 1)


def _value_pair(item: str) -> tuple[str, Any]:
    from ..errors import UserError

    key, sep, raw = item.partition("=")
    if not sep or not key:
        raise UserError(f"--value: expected KEY=JSON, got {item!r}")
    try:
        return key, json.loads(raw)
    except ValueError:
        raise UserError(f"--value {key}: expected a JSON value after '=', got {raw!r}") from None


def _local(store: str, target: str | None) -> str:
    from ..errors import UserError

    if target is None:
        raise UserError(f"--store {store}: expected --target module:attr too (the agents to run), got none")
    return target


def _remote(url: str, token: str | None, run_id: str, action: str, body: dict[str, Any]) -> dict[str, Any]:
    from ..store import check_checkpoint_id
    from ._remote import Remote, segment

    check_checkpoint_id(run_id)
    found: dict[str, Any] = Remote(url, token).call("POST", f"/runs/{segment(run_id)}/{action}", body)
    return found


@asynccontextmanager
async def _kept_runner(
    target: str, spec: str, run_id: str, agent: str | None
) -> AsyncIterator[tuple[Runner, str, RunHistory]]:
    """A Runner of the agent that ran ``run_id`` (or ``agent``), on the stores ``spec`` names, and its history;
    the store closed on the way out."""
    from ..adk import Runner, read_history
    from ..errors import UserError
    from ._target import load_target, open_stores

    agents, _ = load_target(target)
    checkpoints, sessions = open_stores(spec)
    await sessions.close()
    try:
        history = await read_history(checkpoints, run_id)
        name = agent or history.root_agent or ""
        if name not in agents:
            raise UserError(f"--agent: expected one of {sorted(agents)}, got {name!r}")
        yield Runner(agents[name], checkpoint_store=checkpoints), name, history
    finally:
        await checkpoints.close()


async def _replay_locally(target: str, spec: str, run_id: str, agent: str | None) -> dict[str, Any]:
    from ..distributed import replay_json

    async with _kept_runner(target, spec, run_id, agent) as (runner, name, history):
        replayed = await replay_json(runner, run_id)
    return {"run_id": run_id, "agent": name, "steps": len(history), **replayed}


@dataclass(frozen=True, slots=True)
class _Fork:
    run_id: str
    at: int
    add: str
    values: dict[str, Any]
    checkpoint_id: str | None
    agent: str | None
    replay: bool


async def _fork_locally(target: str, spec: str, fork: _Fork) -> dict[str, Any]:
    import uuid

    from ..adk import RunState, collect_events
    from ..schema import user

    new_id = fork.checkpoint_id or f"ckpt-{uuid.uuid4().hex}"

    def edit(state: RunState) -> RunState:
        added = [user(fork.add)] if fork.add else []
        return RunState(messages=[*state.messages, *added], session_values={**state.session_values, **fork.values})

    chosen = {"session_values": fork.values} if fork.replay else edit
    async with _kept_runner(target, spec, fork.run_id, fork.agent) as (runner, _, _):
        events = await collect_events(
            runner.fork(fork.run_id, at=fork.at, edit=chosen, checkpoint_id=new_id, replay=fork.replay)
        )
    failed = next((e.error for e in events if e.error is not None), None)
    if failed is not None:
        raise failed
    last = events[-1].action if events else None
    paused = last is not None and last.interrupted is not None  # a replayed interrupt was answered: not the last
    said = [e.message_output.message for e in events if e.message_output is not None]
    text = next((m.content for m in reversed(said) if m is not None), "")
    return {"checkpoint_id": new_id, "status": "interrupted" if paused else "completed", "text": text}

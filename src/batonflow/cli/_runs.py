"""``batonflow runs history RUN``: the steps of a run kept with ``keep_history``, from a server (``--url``) or
straight from the store it was kept in (``--store``)."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from ._options import Token, Url

__all__ = ["runs"]

runs = typer.Typer(help="The runs kept with keep_history (docs/history.md).", no_args_is_help=True)

RunId = Annotated[str, typer.Argument(help="the run's id (its checkpoint id)")]
StoreOption = Annotated[
    str | None,
    typer.Option("--store", help="read the store here, not a server: sqlite:PATH or postgres:URL"),
]
JsonFlag = Annotated[bool, typer.Option("--json", help="print the steps as JSON, not a table")]


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

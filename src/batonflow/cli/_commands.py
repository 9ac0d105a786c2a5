"""The ``batonflow`` commands (typer): demo, run, eval, serve, mcp, web, chat, checkpoints, runs, and ``--version``."""

from __future__ import annotations

import asyncio
import importlib
import sys
import uuid
from enum import StrEnum
from typing import Annotated

import typer
from rich.console import Console

from ..errors import BatonflowError, UserError
from ._checkpoints import checkpoints
from ._mcp import mcp_command
from ._options import DatabaseUrl, DbPool, Grace, KeepHistory, RedisUrl, Store, Token, WorkerStore
from ._runs import runs

__all__ = ["app"]

app = typer.Typer(
    name="batonflow",
    help="Multi-agent LLM applications: run the demo, serve agents over HTTP, chat with them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(checkpoints, name="checkpoints")
app.command(name="mcp")(mcp_command)
app.add_typer(runs, name="runs")

Target = Annotated[
    str, typer.Argument(help="module:attr — an agent or a graph, a mapping or list of them, or a factory")
]


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"batonflow {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="print the version and exit")
    ] = False,
) -> None:
    """Multi-agent LLM applications."""


class Approve(StrEnum):
    auto = "auto"
    ask = "ask"
    yes = "yes"
    no = "no"


@app.command()
def demo(
    model: Annotated[
        str,
        typer.Option(
            help="model URI: local:smollm2 (default, offline), openai:gpt-4o-mini, "
            "openai-compatible:http://host:port/v1#model, ollama:llama3.2, "
            "scripted (a deterministic replay without any model)"
        ),
    ] = "local:smollm2",
    approve: Annotated[
        Approve,
        typer.Option(
            help="refund approvals: ask on a terminal, else approve the first and reject the rest (auto); "
            "always ask; approve all; reject all"
        ),
    ] = Approve.auto,
    team: Annotated[
        bool,
        typer.Option(
            "--team",
            help="run the team demo instead: a researcher, a writer and a reviewer write a paragraph "
            "(batonflow.team; in a fixed order on a local model)",
        ),
    ] = False,
) -> None:
    """A customer-service team of agents (router, refunds, complaints, products) answering a few requests;
    with --team, a research team (researcher, writer, reviewer) writing a paragraph."""
    from . import demo as demo_package  # on first use: the demo pulls in the agents and a model

    if model.startswith("local:"):
        importlib.import_module("llama_cpp")  # the model loads on its first call: a missing extra is said up front
    if team:
        asyncio.run(demo_package.run_team_demo(model, out=sys.stdout))
    else:
        asyncio.run(demo_package.run_demo(model, out=sys.stdout, approve=approve.value))


_FLOW_SUFFIXES = (".yml", ".yaml", ".json")

# What a flow file may reach beyond its own folder: nothing unless opened here.
AllowHost = Annotated[
    list[str] | None,
    typer.Option(
        metavar="HOST", help="a host the flow may connect to: name, name:port, an IP or a CIDR network (default: none)"
    ),
]
AllowCommand = Annotated[
    list[str] | None,
    typer.Option(
        metavar="COMMAND",
        help="a command a stdio MCP server of the flow may run: a bare name or an absolute path (default: none)",
    ),
]
BaseDir = Annotated[
    str | None,
    typer.Option(metavar="DIR", help="the folder the flow may read files in (default: the flow file's folder)"),
]
Var = Annotated[
    list[str] | None,
    typer.Option(
        metavar="KEY=VALUE",
        help="a flow's context variable; a value that reads as JSON (4, true, [1,2]) is that value, else text",
    ),
]
GraphPaths = Annotated[
    list[str] | None,
    typer.Option(metavar="PATH", help="other graphs the flow calls as '#id': a file, a folder or a glob pattern"),
]
Steps = Annotated[int, typer.Option(help="stop a flow after this many node visits (default: no limit)")]
NoCheckJoins = Annotated[
    bool,
    typer.Option(
        "--no-check-joins",
        help="build the flow even with a parallel join that can never go on (it then waits), as the file's "
        "checkJoins: false does",
    ),
]


@app.command("run")
def run(
    ctx: typer.Context,
    target: Annotated[
        str,
        typer.Argument(
            metavar="FLOW.yml|MODULE:ATTR",
            help="a graph file (.yml, .yaml or .json), or module:attr: an agent, a mapping of agents, or a factory",
        ),
    ],
    input: Annotated[str | None, typer.Option(help="the text an agent runs on (module:attr only)")] = None,
    agent: Annotated[str | None, typer.Option(help="which agent, when the target holds several")] = None,
    store: Annotated[
        str, typer.Option(help="where an agent's checkpoint is kept when it waits: memory, or sqlite:PATH")
    ] = "memory",
    var: Var = None,
    graph: GraphPaths = None,
    steps: Steps = -1,
    allow_host: AllowHost = None,
    allow_command: AllowCommand = None,
    base_dir: BaseDir = None,
    no_check_joins: NoCheckJoins = False,
) -> int:
    """Run a graph flow and print where it ended, as JSON; or run an agent on --input, its events streamed.

    An agent's run exits 0 when it answers, 1 when it fails, 3 when it waits for a person (its interrupts and how
    to resume them are printed). A flow exits 0 when it finished, 1 when it fails, 3 when it stopped short (where
    and why is printed).
    """
    if target.endswith(_FLOW_SUFFIXES):
        for name, given in (("--input", input), ("--agent", agent)):
            if given is not None:
                raise typer.BadParameter(
                    f"expected with a module:attr target, got a flow file {target!r}", ctx, None, name
                )
        opened = (allow_host or [], allow_command or [], base_dir)
        return _run_flow_file(target, var or [], graph or [], steps, *opened, check_joins=not no_check_joins)
    flow_only = (
        ("--allow-host", allow_host),
        ("--allow-command", allow_command),
        ("--base-dir", base_dir),
        ("--no-check-joins", no_check_joins),
    )
    for name, used in (("--var", var), ("--graph", graph), ("--steps", steps != -1), *flow_only):
        if used:
            raise typer.BadParameter(
                f"expected with a FLOW.yml target, got the agent target {target!r}", ctx, None, name
            )
    if input is None:
        raise typer.BadParameter(f"expected the text to run {target} on, got none", ctx, None, "--input")
    from ._agent_run import agent_run  # on first use: it pulls in the runtime

    code = asyncio.run(agent_run(ctx, target, agent, store).run(input))
    if code:
        raise typer.Exit(code)
    return 0


def _run_flow_file(
    target: str,
    var: list[str],
    graphs: list[str],
    steps: int,
    allowed_hosts: list[str],
    allowed_commands: list[str],
    base_dir: str | None,
    *,
    check_joins: bool,
) -> int:
    """``batonflow run FLOW.yml``: the flow on its variables, reaching only what the options open. A run that did
    not finish says on stderr where it stopped and why, and exits 3, as an agent's run that waits does."""
    from ._run import parse_vars, run_flow

    variables = parse_vars(var)
    try:
        context = asyncio.run(
            run_flow(
                target,
                variables=variables,
                graphs=graphs,
                steps=steps,
                out=sys.stdout,
                check_joins=None if check_joins else False,
                allowed_hosts=allowed_hosts,
                allowed_commands=allowed_commands,
                base_dir=base_dir,
            )
        )
    except BatonflowError as error:
        if getattr(error, "file", ""):
            raise  # named where it was read
        joint = ", " if getattr(error, "graph_id", "") else ": "
        raise UserError(f"file {target!r}{joint}{error}") from error  # what went wrong as it ran names it too
    outcome = context.outcome
    if outcome is None or outcome.finished:  # an unfinished outcome names at least one stop
        return 0
    first = outcome.stops[0]
    typer.echo(
        f"batonflow: the flow did not finish: graph {first.graph_id!r}, node {first.node_id!r}: {first.reason}",
        err=True,
    )
    raise typer.Exit(3)


@app.command("eval")
def eval_command(
    ctx: typer.Context,
    eval_set: Annotated[
        str, typer.Argument(metavar="SET", help="an eval set: YAML, JSON, or Google ADK's .evalset.json")
    ],
    target: Annotated[
        str, typer.Argument(help="module:attr or FILE.py:attr — an agent, a mapping of them, or a factory")
    ],
    agent: Annotated[str | None, typer.Option(help="which agent, when the target holds several")] = None,
    compare: Annotated[
        str | None, typer.Option(metavar="TARGET2", help="a second target, compared side by side")
    ] = None,
    judge: Annotated[str | None, typer.Option(metavar="MODEL_URI", help="the model that grades rubrics")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="cases run at once")] = 4,
    json_path: Annotated[str | None, typer.Option("--json", metavar="PATH", help="write the report as JSON")] = None,
    html_path: Annotated[str | None, typer.Option("--html", metavar="PATH", help="write the report as HTML")] = None,
) -> int:
    """Run an eval set on an agent and print the report; exit 1 when a case fails."""
    from ._eval import EvalOptions, run_eval  # on first use: it pulls in the runtime

    options = EvalOptions(
        eval_set=eval_set,
        target=target,
        agent=agent,
        compare=compare,
        judge=judge,
        concurrency=concurrency,
        json_path=json_path,
        html_path=html_path,
    )
    code = run_eval(ctx, options)
    if code:
        raise typer.Exit(code)
    return 0


EventsUrl = Annotated[
    str | None,
    typer.Option(
        envvar="BATONFLOW_EVENTS_URL",
        help="with --backend dbos: where runs' events are, redis://… or postgresql://… (instead of --redis-url)",
    ),
]
ClientPool = Annotated[
    int | None,
    typer.Option(
        min=1,
        envvar="BATONFLOW_CLIENT_POOL",
        help="with --backend dbos: connections the DBOS client's pool may hold (DBOS: 5)",
    ),
]
EventsPool = Annotated[
    int | None,
    typer.Option(
        min=1,
        envvar="BATONFLOW_EVENTS_POOL",
        help="with --backend dbos: connections the event log may hold for statements (PostgreSQL: 10, Redis: 500)",
    ),
]


@app.command()
def serve(
    target: Target,
    host: Annotated[str, typer.Option(help="the address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="the port to listen on")] = 8000,
    reload: Annotated[bool, typer.Option(help="restart when the code changes (development)")] = False,
    store: Store = "memory",
    token: Token = None,
    backend: Annotated[
        str, typer.Option(help="where runs run: local (this process) or dbos (on batonflow worker processes)")
    ] = "local",
    database_url: Annotated[
        str | None, typer.Option(envvar="BATONFLOW_DATABASE_URL", help="with --backend dbos: the DBOS database")
    ] = None,
    redis_url: Annotated[
        str | None, typer.Option(envvar="BATONFLOW_REDIS_URL", help="with --backend dbos: where runs' events are")
    ] = None,
    events_url: EventsUrl = None,
    db_pool: ClientPool = None,
    events_pool: EventsPool = None,
    agui: Annotated[
        bool, typer.Option(help="serve POST /agui/{agent} too: the agents for AG-UI front ends (the agui extra)")
    ] = False,
    a2a: Annotated[
        bool, typer.Option(help="serve /a2a/{agent} too: the agents as A2A servers, with their cards (the a2a extra)")
    ] = False,
    keep_history: KeepHistory = False,
) -> None:
    """Serve the agents over HTTP: the API, SSE streams and the OpenAI-compatible endpoint (uvicorn); with --agui,
    the AG-UI endpoint; with --a2a, the A2A one."""
    from ._serve import serve as run_server
    from ._target import refuse_memory_store

    if backend == "dbos":
        refuse_memory_store(store, "serve --backend dbos")

    run_server(
        target,
        host=host,
        port=port,
        reload=reload,
        store=store,
        token=token,
        backend=backend,
        database_url=database_url,
        redis_url=redis_url,
        events_url=events_url,
        db_pool=db_pool,
        events_pool=events_pool,
        agui=agui,
        a2a=a2a,
        keep_history=keep_history,
    )


@app.command()
def worker(
    target: Target,
    database_url: DatabaseUrl,
    store: WorkerStore,
    concurrency: Annotated[int, typer.Option(min=1, help="segments this worker runs at once")] = 100,
    branch_concurrency: Annotated[
        int | None,
        typer.Option(min=1, help="branches of distributed parallel agents it runs at once (--concurrency if omitted)"),
    ] = None,
    app_version: Annotated[
        str | None, typer.Option(help="the application version it runs (batonflow's pinned one when omitted)")
    ] = None,
    connect_within: Annotated[
        float, typer.Option(min=0, help="seconds to keep retrying an unreachable database before giving up")
    ] = 30.0,
    redis_url: RedisUrl = None,
    events_url: Annotated[
        str | None,
        typer.Option(
            envvar="BATONFLOW_EVENTS_URL",
            help="where runs' live events go, redis://… or postgresql://… (instead of --redis-url)",
        ),
    ] = None,
    lease_ttl: Annotated[
        float, typer.Option(min=0.1, help="seconds after which a silent worker counts as dead and its segments move")
    ] = 10.0,
    step_mode: Annotated[
        bool,
        typer.Option(
            help="record each model reply and tool result, so a re-run segment repeats only the call in flight"
        ),
    ] = False,
    max_attempts: Annotated[
        int, typer.Option(min=1, help="starts of a segment whose workers died before it fails (a poison tool)")
    ] = 3,
    grace: Grace = 20.0,
    db_pool: DbPool = None,
    keep_history: KeepHistory = False,
) -> None:
    """Run segments of the DBOS backend: a worker process for the agents (the dbos extra)."""
    from ._worker import work

    work(
        target,
        database_url=database_url,
        store=store,
        concurrency=concurrency,
        branch_concurrency=branch_concurrency,
        app_version=app_version,
        connect_within=connect_within,
        redis_url=redis_url,
        events_url=events_url,
        lease_ttl=lease_ttl,
        step_mode=step_mode,
        max_attempts=max_attempts,
        grace=grace,
        db_pool=db_pool,
        keep_history=keep_history,
    )


@app.command()
def segments(
    database_url: DatabaseUrl,
    failed: Annotated[bool, typer.Option("--failed", help="the segments given up after the recovery limit")] = False,
    limit: Annotated[int, typer.Option(min=1, help="at most this many, newest first")] = 100,
) -> None:
    """List the DBOS workers' segments given up after their recovery limit, one JSON object a line."""
    from ._worker import failed_segments

    if not failed:
        raise UserError("segments: expected --failed (the one listing there is), got no listing")
    for line in failed_segments(database_url, limit):
        typer.echo(line)


@app.command()
def web(
    target: Target,
    host: Annotated[str, typer.Option(help="the address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="the port to listen on")] = 8000,
    store: Store = "memory",
    token: Token = None,
    keep_history: Annotated[
        bool, typer.Option(help="keep each run's record, for the UI's steps and fork (the last 1,000 runs)")
    ] = True,
) -> None:
    """Serve the agents and open the dev UI (/ui) in a browser."""
    from ._serve import serve as run_server

    run_server(
        target, host=host, port=port, reload=False, store=store, token=token, browse=True, keep_history=keep_history
    )


@app.command()
def chat(
    target: Annotated[str, typer.Argument(help="module:attr — an agent, a mapping or list of agents, or a factory")],
    session: Annotated[str | None, typer.Option(help="the conversation to continue (a new one when omitted)")] = None,
    store: Store = "memory",
    agent: Annotated[str | None, typer.Option(help="which agent, when the target holds several")] = None,
) -> int:
    """Chat with an agent tree on the terminal: streamed answers, tool calls, transfers, approvals inline."""
    from ._chat import Chat, pick
    from ._events import plain
    from ._target import load_target, open_stores

    chosen = pick(load_target(target)[0], agent)
    _, sessions = open_stores(store)
    session_id = session or f"chat-{uuid.uuid4().hex[:12]}"
    console = Console(highlight=False, soft_wrap=True)
    console.print(
        plain(f"batonflow chat with {chosen.name}, session {session_id} (Ctrl-C cancels a run, Ctrl-D leaves)", "dim")
    )

    async def talk() -> int:
        try:
            return await Chat(chosen, session_id=session_id, sessions=sessions, console=console).loop()
        finally:
            await sessions.close()

    code = asyncio.run(talk())
    if code:
        raise typer.Exit(code)
    return 0

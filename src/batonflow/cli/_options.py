"""Options more than one command takes."""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["DatabaseUrl", "DbPool", "Grace", "KeepHistory", "RedisUrl", "Store", "Token", "Url", "WorkerStore"]

Url = Annotated[str, typer.Option(envvar="BATONFLOW_URL", help="the server's base URL")]
Token = Annotated[str | None, typer.Option(envvar="BATONFLOW_TOKEN", help="the server's bearer token")]
Store = Annotated[str, typer.Option(help="where checkpoints and sessions live: memory, sqlite:PATH or postgres:URL")]
KeepHistory = Annotated[
    bool,
    typer.Option(
        help="keep each run's record after it ends, for history, replay and fork (the last 1,000 runs of the store)"
    ),
]
RedisUrl = Annotated[
    str | None, typer.Option(envvar="BATONFLOW_REDIS_URL", help="where runs' live events go (a Redis URL)")
]
DatabaseUrl = Annotated[
    str, typer.Option(envvar="BATONFLOW_DATABASE_URL", help="the PostgreSQL URL of the DBOS system database")
]
WorkerStore = Annotated[
    str, typer.Option(help="where checkpoints and sessions live, shared by the API: sqlite:PATH or postgres:URL")
]
Grace = Annotated[
    float, typer.Option(min=0, help="on SIGTERM: seconds running segments get before the rest go back to the queue")
]
DbPool = Annotated[
    int | None,
    typer.Option(min=1, envvar="BATONFLOW_DB_POOL", help="connections DBOS's pool may hold to the database (DBOS: 20)"),
]

"""Options more than one command takes."""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["Store", "Token", "Url"]

Url = Annotated[str, typer.Option(envvar="BATONFLOW_URL", help="the server's base URL")]
Token = Annotated[str | None, typer.Option(envvar="BATONFLOW_TOKEN", help="the server's bearer token")]
Store = Annotated[str, typer.Option(help="where checkpoints and sessions live: memory, sqlite:PATH or postgres:URL")]

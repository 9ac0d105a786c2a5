"""What ``batonflow serve`` and ``batonflow chat`` serve: ``module:attr``, an agent or a graph, a mapping or list of
them, or a factory that returns one of those; and the store a ``--store`` option names."""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import typer

from ..adk import Agent
from ..errors import UserError
from ..graph import Graph
from ..store import (
    CheckpointStore,
    MemoryCheckpointStore,
    MemorySessionStore,
    PostgresCheckpointStore,
    PostgresSessionStore,
    SessionStore,
    SqliteCheckpointStore,
    SqliteSessionStore,
)

__all__ = ["chosen_events_url", "load_target", "open_stores", "refuse_memory_store"]


def _is_agent(value: Any) -> bool:
    return callable(getattr(value, "run", None)) and isinstance(getattr(value, "name", None), str)


def load_target(target: str) -> tuple[dict[str, Agent], list[Graph]]:
    """The agents (by name) and graphs ``target`` (``module:attr``, importable from the current folder) names."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise UserError(f"target: expected module:attr (for example myapp.agents:root), got {target!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as python -m does: the app's own modules are found
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise UserError(f"target {target!r}: expected an importable module {module_name!r}, got {error}") from None
    value: Any = module
    for part in attr.split("."):
        if not hasattr(value, part):
            raise UserError(f"target {target!r}: expected {module_name} to have {attr!r}, got no {part!r}")
        value = getattr(value, part)
    if callable(value) and not _is_agent(value) and not isinstance(value, Mapping | Graph):
        try:
            inspect.signature(value).bind()
        except TypeError:
            raise UserError(f"target {target!r}: expected a factory that takes no arguments, got {value!r}") from None
        except ValueError:
            pass  # no signature to read (a builtin): call it and see
        value = value()  # a factory
    return _named(target, value)


def _named(target: str, value: Any) -> tuple[dict[str, Agent], list[Graph]]:
    if _is_agent(value) or isinstance(value, Graph):
        value = [value]
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, Sequence) and not isinstance(value, str):
        items = [(getattr(a, "name", getattr(a, "id", "")), a) for a in value]
    else:
        items = []
    graphs = [g for _, g in items if isinstance(g, Graph)]
    agents = [(n, a) for n, a in items if not isinstance(a, Graph)]
    if not items or not all(_is_agent(a) and isinstance(n, str) and n for n, a in agents):
        raise UserError(
            f"target {target!r}: expected an agent or a graph, a mapping or list of them, or a factory of one, "
            f"got {type(value).__qualname__}"
        )
    return dict(agents), graphs


def open_stores(spec: str) -> tuple[CheckpointStore, SessionStore]:
    """The checkpoint and session stores ``spec`` names: ``memory``, ``sqlite:PATH`` (one file holds both), or
    ``postgres:URL`` (one database holds both: what processes on several machines share)."""
    if spec == "memory":
        return MemoryCheckpointStore(), MemorySessionStore()
    kind, _, path = spec.partition(":")
    if kind == "sqlite" and path:
        return SqliteCheckpointStore(path), SqliteSessionStore(path)
    if kind == "postgres" and path:
        return PostgresCheckpointStore(path), PostgresSessionStore(path)
    raise UserError(f"--store: expected 'memory', 'sqlite:PATH' or 'postgres:URL', got {spec!r}")


def chosen_events_url(events: str | None, redis: str | None) -> str | None:
    """Where runs' live events are: ``--events-url`` (``redis://…`` or ``postgresql://…``) or ``--redis-url``, the
    older spelling of a Redis one; never both."""
    if events and redis:
        raise UserError(
            "--events-url: expected it or --redis-url, got both (BATONFLOW_REDIS_URL may have set --redis-url)"
        )
    return events or redis or None


def refuse_memory_store(store: str, command: str) -> None:
    """Exit 2 on ``--store memory`` with the DBOS backend: a run paused in one process could not be resumed by
    another."""
    if store == "memory":
        typer.echo(
            f"batonflow {command}: --store memory cannot be used with the DBOS backend (a paused run's checkpoint "
            "would live in one process, unresumable by the others); use --store postgres:URL, or sqlite:PATH on "
            "one machine",
            err=True,
        )
        raise typer.Exit(2)

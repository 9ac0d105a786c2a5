"""``batonflow serve``: the app of ``create_app`` on uvicorn. With ``--reload`` uvicorn imports the app itself, in
each process it restarts, so the options travel in the environment to ``app_from_env``."""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
import urllib.request
import webbrowser

from fastapi import FastAPI

from ..distributed import LiveBackend
from ..errors import UserError
from ..server import create_app
from ..store import CheckpointStore, SessionStore
from ._target import chosen_events_url, load_target, open_stores

__all__ = ["app_from_env", "make_app", "serve"]

_TARGET, _STORE, _TOKEN = "BATONFLOW_SERVE_TARGET", "BATONFLOW_SERVE_STORE", "BATONFLOW_TOKEN"
_AGUI = "BATONFLOW_SERVE_AGUI"
_A2A = "BATONFLOW_SERVE_A2A"
_HISTORY = "BATONFLOW_SERVE_KEEP_HISTORY"


def _browse(url: str, within: float = 30.0) -> None:
    """Open ``url`` in the user's browser (``$BROWSER`` when set) as soon as the server answers there; say so when
    no browser could be opened (a machine without one, a remote shell)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1):
                break
        except OSError:
            time.sleep(0.1)
    if not webbrowser.open(url):
        print(f"batonflow web: no browser could be opened here; open {url} in one", file=sys.stderr, flush=True)


def make_app(
    target: str,
    store: str,
    token: str | None,
    *,
    backend: str = "local",
    database_url: str | None = None,
    redis_url: str | None = None,
    events_url: str | None = None,
    db_pool: int | None = None,
    events_pool: int | None = None,
    agui: bool = False,
    a2a: bool = False,
    keep_history: bool = False,
) -> FastAPI:
    """The app ``serve`` serves: the target's agents and flows on the stores ``store`` names, behind ``token``, on
    the backend chosen; with ``agui`` and ``a2a``, the AG-UI and A2A endpoints too; with ``keep_history``, the
    runs it starts keep their record (the last 1,000 runs of the store)."""
    if keep_history and backend != "local":
        raise UserError(
            "--keep-history: expected --backend local (with --backend dbos the workers run the runs: "
            f"start them with batonflow worker --keep-history), got --backend {backend}"
        )
    checkpoints, sessions = open_stores(store)
    agents, flows = load_target(target)
    return create_app(
        agents,
        flows=flows,
        checkpoint_store=checkpoints,
        session_store=sessions,
        auth_token=token,
        backend=_backend(
            backend,
            checkpoints,
            sessions,
            database_url,
            events_url=events_url,
            redis_url=redis_url,
            pools=(db_pool, events_pool),
        ),
        agui=agui,
        a2a=a2a,
        keep_history=keep_history,
    )


def _backend(
    kind: str,
    checkpoints: CheckpointStore,
    sessions: SessionStore,
    database_url: str | None,
    *,
    events_url: str | None,
    redis_url: str | None,
    pools: tuple[int | None, int | None] = (None, None),
) -> LiveBackend | None:
    """The backend ``--backend`` names: ``local`` (runs in this process) or ``dbos`` (on the workers), the latter
    with ``pools``: its DBOS client's and its event log's connections at most (``--db-pool``, ``--events-pool``)."""
    if kind == "local":
        if pools != (None, None):
            raise UserError("--db-pool and --events-pool: expected --backend dbos (their pools are its), got local")
        return None
    if kind != "dbos":
        raise UserError(f"--backend: expected 'local' or 'dbos', got {kind!r}")
    events_url = chosen_events_url(events_url, redis_url)
    if not database_url or not events_url:
        wanted = (("--database-url", database_url), ("--events-url (or --redis-url)", events_url))
        missing = [name for name, value in wanted if not value]
        raise UserError(f"--backend dbos: expected {' and '.join(missing)}, got none")
    from ..distributed import DBOSBackend, event_log_at

    db_pool, events_pool = pools
    backend: LiveBackend = DBOSBackend(
        checkpoints,
        database_url=database_url,
        events=event_log_at(events_url, max_connections=events_pool),
        sessions=sessions,
        db_pool=db_pool,
    )
    return backend


def app_from_env() -> FastAPI:
    """The app ``serve`` describes in the environment (uvicorn's factory when it reloads)."""
    return make_app(
        os.environ[_TARGET],
        os.environ.get(_STORE, "memory"),
        os.environ.get(_TOKEN) or None,
        agui=os.environ.get(_AGUI) == "1",
        a2a=os.environ.get(_A2A) == "1",
        keep_history=os.environ.get(_HISTORY) == "1",
    )


def serve(
    target: str,
    *,
    host: str,
    port: int,
    reload: bool,
    store: str,
    token: str | None,
    browse: bool = False,
    backend: str = "local",
    database_url: str | None = None,
    redis_url: str | None = None,
    events_url: str | None = None,
    db_pool: int | None = None,
    events_pool: int | None = None,
    agui: bool = False,
    a2a: bool = False,
    keep_history: bool = False,
) -> None:
    """Serve the target on uvicorn; with ``browse``, open the dev UI in a browser once the server listens; with
    ``agui``, the AG-UI endpoint too (``POST /agui/{agent}``); with ``a2a``, the A2A one (``/a2a/{agent}``)."""
    import uvicorn

    if reload and backend != "local":
        raise UserError(f"--reload: expected --backend local (a development server), got --backend {backend}")
    app = make_app(
        target,
        store,
        token,
        backend=backend,
        database_url=database_url,
        redis_url=redis_url,
        events_url=events_url,
        db_pool=db_pool,
        events_pool=events_pool,
        agui=agui,
        a2a=a2a,
        keep_history=keep_history,
    )  # made here first, so that a bad target fails before uvicorn starts
    if browse:
        url = ui_url(host, port)
        print(f"batonflow web: the dev UI is at {url}", flush=True)  # before a browser is tried: it may be none
        threading.Thread(target=_browse, args=(url,), daemon=True).start()
    if not reload:
        # What the process holds once the app is made (modules, the agents) lives as long as it does: out of the
        # collector's sight, a full collection walks only what the runs made, not a hundred thousand objects more.
        gc.freeze()
        uvicorn.run(app, host=host, port=port)
        return
    os.environ[_TARGET], os.environ[_STORE] = target, store
    os.environ[_AGUI] = "1" if agui else ""
    os.environ[_A2A] = "1" if a2a else ""
    os.environ[_HISTORY] = "1" if keep_history else ""
    if token is not None:
        os.environ[_TOKEN] = token
    uvicorn.run(f"{__name__}:app_from_env", factory=True, host=host, port=port, reload=True, reload_dirs=[os.getcwd()])


def ui_url(host: str, port: int) -> str:
    """The dev UI's address on ``host``: an IPv6 address in brackets (``http://[::1]:8000/ui/``)."""
    return f"http://[{host}]:{port}/ui/" if ":" in host else f"http://{host}:{port}/ui/"

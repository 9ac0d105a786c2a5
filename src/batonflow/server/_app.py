"""``create_app``: the agents of an application behind one FastAPI app.

The app is thin over the public API: each run is a segment of a ``batonflow.distributed`` backend (a
``batonflow.Runner`` run: conversations through the session store, interrupts saved in the checkpoint store), its
events JSON frames in the run's event log, which the app sends as SSE. What it adds is what HTTP needs: validated
bodies, answers that say what was wrong, auth, limits, and runs that outlive a request.
"""

import hmac
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import RedirectResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles

from ..adk import Agent, FlowAgent
from ..distributed import InProcessBackend, LiveBackend, MemoryEventLog
from ..errors import UserError
from ..graph import FlowEngine, Graph
from ..store import CheckpointStore, HistoryRetention, MemoryCheckpointStore, MemorySessionStore, SessionStore
from ._a2a import a2a_routes
from ._agui import agui_routes
from ._errors import ApiError, ErrorBody, install_handlers
from ._fast import Bearer, FastRuns
from ._flows import flow_routes, load_flows
from ._limits import BodyLimit
from ._openai import openai_routes
from ._routes import routes
from ._server import Server, ServerLimits, state
from ._wire import JSONAnswer

__all__ = ["create_app"]


_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": what}
    for code, what in [
        (400, "malformed JSON, a bad Last-Event-ID, text with a lone surrogate, values nested too deep"),
        (401, "a missing or wrong bearer token"),
        (404, "an unknown agent, run, checkpoint or session"),
        (409, "a checkpoint or session in a state that does not allow it"),
        (413, "a body over the size limit"),
        (422, "a body that does not match the schema, or passes a bound"),
        (429, "too many runs at once"),
    ]
}


def _in_process(
    agents: Mapping[str, Agent],
    checkpoints: CheckpointStore,
    sessions: SessionStore,
    limits: ServerLimits,
    keep_history: bool | HistoryRetention,
) -> InProcessBackend:
    """The default backend: runs as tasks of this process, their frames in a ``MemoryEventLog``."""
    log = MemoryEventLog(maxlen=limits.buffer_events, keep_runs=limits.keep_finished_runs)
    return InProcessBackend(
        agents,
        checkpoints,
        sessions=sessions,
        events=log,
        keep_finished=limits.keep_finished_runs,
        keep_history=keep_history,
    )


def create_app(
    agents: Agent | Mapping[str, Agent] | Sequence[Agent] = (),
    *,
    flows: Graph | Sequence[Graph] | Mapping[str, Graph] | None = None,
    flow_engine: FlowEngine | None = None,
    checkpoint_store: CheckpointStore | None = None,
    session_store: SessionStore | None = None,
    auth_token: str | None = None,
    cors: Sequence[str] | None = None,
    limits: ServerLimits | None = None,
    title: str = "batonflow",
    backend: LiveBackend | None = None,
    agui: bool = False,
    a2a: bool = False,
    keep_history: bool | HistoryRetention = False,
) -> FastAPI:
    """A FastAPI app serving ``agents`` (one, a list named by their names, or a mapping of API name to agent) and
    graph ``flows`` (run by ``flow_engine``, which holds their components; a new engine when None).

    Interrupted runs are saved in ``checkpoint_store`` and conversations kept in ``session_store``; both are kept
    in memory when None (a development server). With ``auth_token`` every endpoint but ``/health`` and the
    OpenAPI document wants ``Authorization: Bearer <auth_token>``. ``cors`` lists the origins a browser may call
    from. ``GET /sessions`` lists the conversations this app's runs took part in (stores cannot list theirs).

    Every run goes through ``backend``, a ``batonflow.distributed.LiveBackend``: by default an
    ``InProcessBackend`` (runs are tasks of this process, their frames in a ``MemoryEventLog`` of
    ``limits.buffer_events`` frames a run), else such as ``DBOSBackend`` with an event log (runs on its workers,
    not here; any API process of the same backend serves their events). Either way a run id is its segment id,
    an SSE event's id its record id in the log (``Last-Event-ID``), and ``GET /checkpoints`` lists the runs the
    backend knows to be paused. With ``keep_history`` (as the Runner's; the default backend only) each run keeps
    its record in ``checkpoint_store``, which ``GET /runs/{id}/history`` shows (docs/history.md).

    With ``agui``, ``POST /agui/{agent}`` runs an agent for an AG-UI front end, and with ``a2a``, ``/a2a/{agent}``
    serves it over A2A (``batonflow.interop``; the ``agui`` and ``a2a`` extras): a thread or context is a
    conversation of ``session_store``, an A2A task's ``input-required`` an interrupted run.
    """
    limits = _checked(limits, auth_token, backend)
    engine, graphs = load_flows(flows, flow_engine)
    named = _named(agents, bool(graphs))
    checkpoints = checkpoint_store if checkpoint_store is not None else MemoryCheckpointStore()
    sessions = session_store if session_store is not None else MemorySessionStore()
    if backend is None:
        backend = _in_process(named, checkpoints, sessions, limits, keep_history)
    server = Server(named, checkpoints, sessions, limits, engine, graphs, backend)

    app = FastAPI(
        title=title,
        version=_version(),
        lifespan=_lifespan(server, backend),
        responses=_ERRORS,
        default_response_class=JSONAnswer,
    )
    app.state.batonflow = server
    install_handlers(app)
    bearer = _bearer(auth_token) if auth_token is not None else None
    _middleware(app, server, limits, cors, bearer)
    _routes(app, server, bearer, agui, a2a)
    _ui(app)
    return app


def _routes(app: FastAPI, server: Server, bearer: Bearer | None, agui: bool, a2a: bool) -> None:
    """The endpoints: health without the token, the rest behind it (with ``agui`` and ``a2a``, their endpoints
    too)."""
    app.add_api_route("/health", health, methods=["GET"], tags=["server"])
    app.add_api_route("/health/ready", ready, methods=["GET"], tags=["server"], response_model=None)
    # No token, nothing to check: no dependency solved per request, no bearer scheme in the OpenAPI document.
    auth = [Depends(bearer[1])] if bearer is not None else []
    app.include_router(routes(), dependencies=auth)
    app.include_router(openai_routes(), dependencies=auth)
    app.include_router(flow_routes(), dependencies=auth)
    if agui:
        app.include_router(agui_routes(server), dependencies=auth)
    if a2a:
        app.include_router(a2a_routes(server), dependencies=auth)


def _middleware(
    app: FastAPI, server: Server, limits: ServerLimits, cors: Sequence[str] | None, bearer: Bearer | None
) -> None:
    """The body limit on every request, and CORS for the origins given; under them (the innermost), ``POST /runs``
    answered before FastAPI's routing."""
    app.add_middleware(FastRuns, server=server, bearer=bearer)
    app.add_middleware(BodyLimit, limit=limits.max_body_bytes)
    if cors is not None:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(cors),
            allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
            allow_headers=["Authorization", "Content-Type", "Last-Event-ID"],
            expose_headers=["X-Run-Id", "Location"],
        )


def _lifespan(server: Server, backend: LiveBackend) -> Callable[[FastAPI], Any]:
    """What the app does when it stops: stop watching its runs, then let go of its backend (which cancels what it
    runs here)."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        await server.close()
        await backend.close()

    return lifespan


def _ui(app: FastAPI) -> None:
    """The dev UI at ``/ui``: static files shipped in the package. They hold no secret, so they are served without
    the token; the page asks for it and sends it with each call."""
    app.add_api_route("/ui", lambda: RedirectResponse("/ui/"), methods=["GET"], include_in_schema=False)
    app.mount("/ui/", StaticFiles(directory=Path(__file__).with_name("ui"), html=True), name="ui")


async def health(server: Annotated[Server, Depends(state)]) -> dict[str, Any]:
    """Liveness, the number of agents and flows served and of runs going now."""
    return {
        "status": "ok",
        "agents": len(server.agents),
        "flows": len(server.flows),
        "active_runs": len(server.active),
        "active_evals": server.evals,
    }


async def ready(server: Annotated[Server, Depends(state)]) -> JSONAnswer:
    """Readiness: whether this process can take runs now. A backend that runs them elsewhere reports its checks
    (for DBOS: the database answers, its schema is there, workers were seen); each check's result is given, and
    the answer is 200 when all pass, else 503. The in-process backend is always ready."""
    readiness = getattr(server.backend, "readiness", None)
    checks: dict[str, Any] = {}
    if readiness is not None:
        try:
            async with server.bounded("checking readiness"):
                checks = await readiness()
        except ApiError as error:
            checks = {"database": {"ok": False, "detail": error.found}}
    ok = all(check["ok"] for check in checks.values())
    body = {"status": "ready" if ok else "not_ready", "checks": checks}
    return JSONAnswer(body, status_code=200 if ok else 503, headers=None if ok else {"Retry-After": "2"})


def _version() -> str:
    from .. import __version__

    return __version__


def _checked(limits: ServerLimits | None, auth_token: str | None, backend: object) -> ServerLimits:
    if backend is not None and not isinstance(backend, LiveBackend):
        raise UserError(
            f"backend: expected a LiveBackend (submit, outcome, cancel, events, status, paused), got "
            f"{type(backend).__qualname__}"
        )
    limits = ServerLimits() if limits is None else limits
    if not isinstance(limits, ServerLimits):
        raise UserError(f"limits: expected ServerLimits, got {type(limits).__qualname__}")
    if auth_token is not None and (not isinstance(auth_token, str) or not auth_token):
        raise UserError(f"auth_token: expected a non-empty string or None, got {auth_token!r}")
    return limits


def _named(agents: Agent | Mapping[str, Agent] | Sequence[Agent], flows: bool) -> dict[str, FlowAgent]:
    """The agents by the names the API calls them, each as the root of its tree."""
    if isinstance(agents, Mapping):
        items = list(agents.items())
    elif isinstance(agents, Sequence) and not isinstance(agents, str):
        items = [(getattr(a, "name", ""), a) for a in agents]
    else:
        items = [(getattr(agents, "name", ""), agents)]
    named: dict[str, FlowAgent] = {}
    for name, agent in items:
        if not callable(getattr(agent, "run", None)) or not isinstance(getattr(agent, "name", None), str):
            raise UserError(f"agents: expected agents (with a name and run), got {type(agent).__qualname__}")
        if not isinstance(name, str) or not name:
            raise UserError(f"agents: expected a non-empty name for each agent, got {name!r}")
        if name in named:
            raise UserError(f"agents: expected unique names, got {name!r} twice")
        named[name] = agent if isinstance(agent, FlowAgent) else FlowAgent(agent)
    if not named and not flows:
        raise UserError("agents: expected at least one agent (or flows), got none")
    return named


def _bearer(token: str) -> Bearer:
    """The scheme that reads a request's bearer token (in the OpenAPI document) and the check of what it read: the
    routes' dependency, and the fast path's check."""
    scheme = HTTPBearer(auto_error=False, description="the server's auth_token")
    expected = token.encode()

    async def check(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(scheme)]) -> None:
        if credentials is None:
            raise ApiError(
                401,
                "missing_token",
                "Authorization: expected 'Bearer <token>', got no bearer token",
                expected="Authorization: Bearer <token>",
                found=None,
                headers={"WWW-Authenticate": "Bearer"},
            )
        if not hmac.compare_digest(credentials.credentials.encode(), expected):
            raise ApiError(
                401,
                "wrong_token",
                "Authorization: expected the server's bearer token, got another one",
                expected="the server's token",
                found="a token that does not match",
                headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
            )

    return scheme, check

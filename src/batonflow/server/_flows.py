"""The graph flows an app serves: ``GET /flows`` lists them, ``POST /flows/{id}/eval`` runs one on the variables
given and answers where it ended (as ``batonflow run FLOW.yml`` prints it)."""

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from ..errors import UserError
from ..flow import AiFlowEngine
from ..graph import FlowContext, FlowEngine, FlowOutcome, Graph, GraphError
from ._errors import ApiError, shown
from ._server import Server, state
from ._wire import error_json, jsonable

__all__ = ["flow_graph", "flow_routes", "load_flows"]


def load_flows(
    flows: Graph | Sequence[Graph] | Mapping[str, Graph] | None, engine: FlowEngine | None
) -> tuple[FlowEngine, dict[str, Graph]]:
    """The engine that runs the flows (``engine``, with its components, or a new one), made to know every flow so
    that their ``#id`` tasks find each other; and the flows by id. A new one's AI components have the closed
    defaults: a served flow runs no command, reads no file and connects to no host (pass an ``AiFlowEngine`` with
    ``allowed_commands``, ``base_dir`` or ``allowed_hosts`` to allow some)."""
    engine = AiFlowEngine() if engine is None else engine
    if flows is None:
        return engine, {}
    graphs = list(flows.values()) if isinstance(flows, Mapping) else [flows] if isinstance(flows, Graph) else flows
    served: dict[str, Graph] = {}
    for graph in graphs:
        if not isinstance(graph, Graph):
            raise UserError(f"flows: expected graphs (batonflow.graph.Graph), got {type(graph).__qualname__}")
        served[graph.id] = engine.load(graph)
    return engine, served


class EvalRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    variables: dict[str, Any] = Field(default_factory=dict, description="the flow context's variables")
    steps: int = Field(default=-1, ge=-1, le=1_000_000, description="stop after this many node visits (-1: no limit)")


Srv = Annotated[Server, Depends(state)]


def flow_graph(server: Server, flow_id: str) -> Graph:
    """The flow served as ``flow_id``; a 404 that lists the served ones when there is none."""
    graph = server.flows.get(flow_id)
    if graph is None:
        raise ApiError(
            404,
            "unknown_flow",
            f"flow: expected one of {sorted(server.flows)}, got {shown(flow_id)}",
            expected=sorted(server.flows),
            found=flow_id,
        )
    return graph


async def list_flows(server: Srv) -> dict[str, Any]:
    """The flows served: id, title, and their nodes."""
    return {
        "flows": [{"id": graph.id, "title": graph.title, "nodes": list(graph.nodes)} for graph in server.flows.values()]
    }


async def eval_flow(flow_id: str, body: EvalRequest, server: Srv) -> dict[str, Any]:
    """Run a flow on ``variables``: where it ended, whether it finished (and if not, where it stopped and why) or
    was stopped, and its variables after.
    A failure while it ran (a task that raised, a limit passed) is ``status: "failed"`` with the error. An
    evaluation takes a place among the server's active runs while it goes (``ServerLimits.max_active_runs``)."""
    graph = flow_graph(server, flow_id)
    server.check(body, "variables")
    context = FlowContext(variables=body.variables)
    error: dict[str, Any] | None = None
    with server.evaluating():
        try:
            await server.engine.eval(graph, context, steps=body.steps)
        except GraphError as problem:  # the graph cannot run as written: the request named it
            raise ApiError(422, "invalid_flow", str(problem), expected="a flow that can run", found=graph.id) from None
        except Exception as problem:
            error = error_json(problem)
    outcome = context.outcome or FlowOutcome(finished=False, reached_end=context.trace.is_end(graph.id))
    finished = outcome.finished
    return {
        "flow": graph.id,
        "status": "failed" if error else "stopped" if context.is_stopped else "completed" if finished else "paused",
        "last_node": context.last_node_id,
        **outcome.to_dict(),
        "stopped": context.is_stopped,
        "variables": jsonable(dict(context.data)),
        "error": error,
    }


def flow_routes() -> APIRouter:
    api = APIRouter(tags=["flows"])
    api.add_api_route("/flows", list_flows, methods=["GET"])
    api.add_api_route("/flows/{flow_id}/eval", eval_flow, methods=["POST"])
    return api

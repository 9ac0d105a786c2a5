"""Graph flows: solon-flow's engine in Python.

A ``Graph`` is built in code (``GraphSpec``) or read from YAML or JSON (``Graph.from_yaml``, ``Graph.load``); a
``FlowEngine`` runs it on a ``FlowContext`` (``await engine.eval(graph, context)``) with the original's rules:
depth-first from the start node; activities follow every link whose condition holds; exclusive gateways the first
that holds, else the default; inclusive gateways fork by condition and join by counted arrivals; parallel gateways
run every branch concurrently and join by counted arrivals; loops walk ``$in``; ``steps`` limits a run, ``stop()``
ends it and ``interrupt()`` ends a branch; a context with a recorded node resumes there by replaying the graph.
"""

from ._agent import AgentTask as AgentTask
from ._agent import GraphAgent as GraphAgent
from ._agent import GraphState as GraphState
from ._context import FlowContext as FlowContext
from ._context import FlowOutcome as FlowOutcome
from ._context import FlowStop as FlowStop
from ._context import FlowTrace as FlowTrace
from ._context import NodeRecord as NodeRecord
from ._document import MAX_DOCUMENT_BYTES as MAX_DOCUMENT_BYTES
from ._document import MAX_DOCUMENT_DEPTH as MAX_DOCUMENT_DEPTH
from ._document import MAX_DOCUMENT_VALUES as MAX_DOCUMENT_VALUES
from ._engine import DEFAULT_MAX_VISITS as DEFAULT_MAX_VISITS
from ._engine import MAX_WALK_DEPTH as MAX_WALK_DEPTH
from ._engine import YIELD_EVERY as YIELD_EVERY
from ._engine import FlowEngine as FlowEngine
from ._errors import ComponentError as ComponentError
from ._errors import FlowRunError as FlowRunError
from ._errors import GraphError as GraphError
from ._errors import GraphFileError as GraphFileError
from ._errors import JoinError as JoinError
from ._errors import LoopError as LoopError
from ._errors import ScriptTaskError as ScriptTaskError
from ._errors import VisitLimitError as VisitLimitError
from ._exchanger import MAX_STOPS as MAX_STOPS
from ._exchanger import FlowInterceptor as FlowInterceptor
from ._exchanger import FlowInvocation as FlowInvocation
from ._expr import Expression as Expression
from ._expr import ExpressionError as ExpressionError
from ._expr import ExpressionLimitError as ExpressionLimitError
from ._expr import compile_expression as compile_expression
from ._graph import Graph as Graph
from ._graph import Link as Link
from ._graph import Node as Node
from ._host import GraphHost as GraphHost
from ._host import HostRun as HostRun
from ._host import current_host as current_host
from ._spec import ConditionComponent as ConditionComponent
from ._spec import ConditionLike as ConditionLike
from ._spec import GraphSpec as GraphSpec
from ._spec import LinkSpec as LinkSpec
from ._spec import NodeSpec as NodeSpec
from ._spec import NodeType as NodeType
from ._spec import TaskComponent as TaskComponent
from ._spec import TaskLike as TaskLike
from ._template import MAX_RENDERED as MAX_RENDERED
from ._template import render_template as render_template
from ._work import MAX_ITEMS as MAX_ITEMS
from ._work import MAX_WORK as MAX_WORK

__all__ = [
    "DEFAULT_MAX_VISITS",
    "MAX_DOCUMENT_BYTES",
    "MAX_DOCUMENT_DEPTH",
    "MAX_DOCUMENT_VALUES",
    "MAX_ITEMS",
    "MAX_RENDERED",
    "MAX_STOPS",
    "MAX_WALK_DEPTH",
    "MAX_WORK",
    "YIELD_EVERY",
    "AgentTask",
    "ComponentError",
    "ConditionComponent",
    "ConditionLike",
    "Expression",
    "ExpressionError",
    "ExpressionLimitError",
    "FlowContext",
    "FlowEngine",
    "FlowInterceptor",
    "FlowInvocation",
    "FlowOutcome",
    "FlowRunError",
    "FlowStop",
    "FlowTrace",
    "Graph",
    "GraphAgent",
    "GraphError",
    "GraphFileError",
    "GraphHost",
    "GraphSpec",
    "GraphState",
    "HostRun",
    "JoinError",
    "Link",
    "LinkSpec",
    "LoopError",
    "Node",
    "NodeRecord",
    "NodeSpec",
    "NodeType",
    "ScriptTaskError",
    "TaskComponent",
    "TaskLike",
    "VisitLimitError",
    "compile_expression",
    "current_host",
    "render_template",
]

"""The state of one run of a graph (``Exchanger``, with a ``Branch`` per concurrent branch), and the interceptor
chain around it (``FlowInterceptor``, ``FlowInvocation``)."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from ._context import FlowContext

if TYPE_CHECKING:
    from ._engine import FlowEngine
    from ._graph import Graph, Node

__all__ = ["Branch", "Exchanger", "FlowInterceptor", "FlowInvocation", "maybe_await"]


class FlowInterceptor:
    """Hooks around a flow and its nodes. Override what you need; each may be plain or ``async``.

    ``intercept_flow`` wraps a whole run (a sub-graph's too) and must call ``await invocation.invoke()`` to go on;
    ``on_node_start`` and ``on_node_end`` run around each node's task, not while a run replays.
    """

    async def intercept_flow(self, invocation: FlowInvocation) -> None:
        await invocation.invoke()

    def on_node_start(self, context: FlowContext, node: Node) -> Any:
        return None

    def on_node_end(self, context: FlowContext, node: Node) -> Any:
        return None


class Branch:
    """One branch of a run: ``interrupt()`` ends it and no other."""

    __slots__ = ("interrupted",)

    def __init__(self) -> None:
        self.interrupted = False


class Exchanger:
    """The state of one graph's run: shared by its branches, copied (with the step counter shared) for each
    sub-graph it calls."""

    __slots__ = (
        "context",
        "counts",
        "graph",
        "interceptors",
        "max_visits",
        "reverting",
        "stacks",
        "stepped",
        "steps",
        "stopped",
        "visits",
    )

    def __init__(
        self,
        graph: Graph,
        context: FlowContext,
        steps: int,
        interceptors: tuple[FlowInterceptor, ...],
        max_visits: int,
        stepped: list[int],
        visits: dict[tuple[str, str], int],
    ) -> None:
        self.graph = graph
        self.context = context
        self.steps = steps
        self.interceptors = interceptors
        self.max_visits = max_visits
        self.stepped = stepped  # one cell, shared with sub-graph runs
        self.visits = visits
        self.counts: dict[str, int] = {}
        self.stacks: dict[str, list[Any]] = {}
        self.stopped = False
        self.reverting = True

    def copy(self, graph: Graph) -> Exchanger:
        return Exchanger(graph, self.context, self.steps, self.interceptors, self.max_visits, self.stepped, self.visits)

    @property
    def is_stopped(self) -> bool:
        return self.stopped or self.context._stopped

    def stop(self) -> None:
        self.stopped = True
        self.context._stopped = True

    def next_step(self) -> bool:
        if self.steps < 0:
            return True
        self.stepped[0] += 1
        return self.stepped[0] <= self.steps

    def prev_step(self) -> None:
        if self.steps >= 0:
            self.stepped[0] -= 1

    def stack(self, name: str) -> list[Any]:
        return self.stacks.setdefault(name, [])


class FlowInvocation:
    """A run about to start, as ``FlowInterceptor.intercept_flow`` sees it: ``invoke()`` goes on to the next
    interceptor, and after the last to the graph."""

    __slots__ = ("_branch", "_engine", "_exchanger", "_index", "start_node")

    def __init__(self, engine: FlowEngine, exchanger: Exchanger, branch: Branch, start_node: Node) -> None:
        self._engine = engine
        self._exchanger = exchanger
        self._branch = branch
        self._index = 0
        self.start_node = start_node
        """Where the run resumes: the recorded last node, else the graph's start."""

    @property
    def context(self) -> FlowContext:
        return self._exchanger.context

    @property
    def graph(self) -> Graph:
        return self._exchanger.graph

    async def invoke(self) -> None:
        interceptors = self._exchanger.interceptors
        if self._index < len(interceptors):
            interceptor = interceptors[self._index]
            self._index += 1
            await maybe_await(interceptor.intercept_flow(self))
        else:
            ex = self._exchanger
            await self._engine._walk(ex, self._branch, ex.graph.start, self.start_node)


async def maybe_await(value: Any) -> Any:
    """``value``, awaited first if it is awaitable: hooks and tasks may be plain or ``async``."""
    return await value if inspect.isawaitable(value) else value

"""The graph-as-agent host: what ``GraphAgent`` and ``TeamAgent`` both are, a graph run as the body of an agent.

``GraphHost.run`` evaluates the graph in a task of its own and yields, at the reader's pace, the events its agent
nodes hand over (``HostRun.hand_over``): the flow waits while its reader does, as every agent's events are pulled,
and trace events keep their order with it. Leaving the iterator early cancels the flow and waits for it.

An agent at a node runs through ``HostRun.run_agent``, the one node-agent task: its events go out as they come, an
interrupt stops the flow at that node (the host's owner saves the flow context, and ``resume_nodes`` says which
nodes resume their agent when the flow is replayed to them), an error becomes the owner's error, and its last
answer is kept. ``NodeTrace`` gives every node of a hosted graph its ``NodeStart`` and ``NodeEnd``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from ..adk import AgentEvent, RunContext, composite_interrupt
from ..schema import RunStep
from ..tools import InterruptSignal
from ..trace import NodeEnd, NodeStart
from ._context import FlowContext, running_context
from ._engine import FlowEngine
from ._exchanger import FlowInterceptor
from ._graph import Graph, Node

__all__ = ["GraphHost", "HostRun", "NodeTrace", "current_host"]


@dataclass(slots=True, kw_only=True)
class HostRun:
    """One hosted run of a graph, as its nodes see it (``current_host()``): the agent's run context (which carries
    this run in its scope once the host runs it), the nodes whose agents resume, and what the run's agent nodes did
    (their interrupts, their answers)."""

    ctx: RunContext
    graph_id: str
    resume_nodes: set[str] = field(default_factory=set)
    queue: asyncio.Queue[tuple[AgentEvent, asyncio.Future[None]] | None] = field(default_factory=asyncio.Queue)
    interrupts: list[tuple[str, AgentEvent]] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)

    async def hand_over(self, event: AgentEvent) -> None:
        """Give ``event`` to the host's reader and wait until it asks for the next one."""
        taken = asyncio.get_running_loop().create_future()
        self.queue.put_nowait((event, taken))
        await taken

    def step_of(self, node: Node) -> str:
        """The node's step in the run path: its id, or ``graph/node`` for a node of a sub-graph, so that equal node
        ids of two graphs stay apart."""
        return node.id if node.graph.id == self.graph_id else f"{node.graph.id}/{node.id}"

    def resuming(self, step: str) -> bool:
        """Whether the agent at ``step`` resumes (once: a node visited again later starts afresh)."""
        if step in self.resume_nodes:
            self.resume_nodes.discard(step)
            return True
        return False

    async def run_agent(
        self,
        events: AsyncIterator[AgentEvent],
        context: FlowContext,
        *,
        step: str,
        own_path: tuple[RunStep, ...],
        failed: Callable[[BaseException], Exception],
        seen: Callable[[AgentEvent], None] | None = None,
    ) -> tuple[AgentEvent | None, bool]:
        """Run an agent at a node: its last answer event at ``own_path`` (None for none) and whether it interrupted.

        An interrupt stops the flow (the node waits, the owner saves the flow); an error event raises ``failed(the
        error)``; every other event is handed over, after ``seen`` has looked at it."""
        last: AgentEvent | None = None
        async with aclosing(events) as source:  # type: ignore[type-var]
            async for event in source:
                if event.action is not None and event.action.signal is not None:
                    self.interrupts.append((step, event))
                    context.stop()
                    return None, True
                if event.error is not None:
                    raise failed(event.error) from event.error
                if seen is not None:
                    seen(event)
                await self.hand_over(event)
                if event.run_path == own_path and is_answer(event):
                    last = event
        return last, False

    async def answer_text(self, event: AgentEvent) -> str:
        """The text of an agent's answer event, once the agent is done (see ``text_of``)."""
        return await text_of(event, self.ctx)

    def interrupt_event(self, message: str, state: Any, name: str) -> AgentEvent:
        """The owner's interrupt, saving ``state``: it stands where the node's interrupt stood, or, for several at
        once, at the owner (``name``) itself."""
        subs: Sequence[InterruptSignal] = [
            event.action.signal for _, event in self.interrupts if event.action and event.action.signal
        ]
        wrapped = composite_interrupt(self.ctx, message, state, *subs)
        at = self.interrupts[0][1] if len(self.interrupts) == 1 else None
        wrapped.agent_name = at.agent_name if at is not None else name
        wrapped.run_path = at.run_path if at is not None else self.ctx.run_path
        return wrapped


def current_host() -> HostRun | None:
    """The hosted run the running node belongs to, or None outside a graph agent or a team: the hosted run on the
    run context of the flow running now (``FlowContext.run``, which the host sets for its own flow). A plain
    ``eval`` inside a node has a flow context of its own, without a run, so it is no part of the hosted run."""
    context = running_context()
    run = context.run if context is not None else None
    return run.scope.get(HostRun) if run is not None else None


class GraphHost:
    """Runs graphs on ``engine`` as the bodies of agents; see the module doc. One host serves many runs."""

    __slots__ = ("engine",)

    def __init__(self, engine: FlowEngine) -> None:
        self.engine = engine

    async def run(
        self, graph: Graph, context: FlowContext, run: HostRun, *, interceptors: Sequence[FlowInterceptor] = ()
    ) -> AsyncGenerator[AgentEvent, None]:
        """The events of ``run``: the graph evaluated on ``context`` to its end or its stop. An error of the flow
        is raised here, once the flow is over."""
        run.ctx = run.ctx.scoped(run)  # the run's context carries its hosted run; the caller's stays as it was
        context.run = run.ctx
        flow = asyncio.create_task(self._eval(graph, context, run, interceptors))
        try:
            while (item := await run.queue.get()) is not None:
                event, taken = item
                yield event
                taken.set_result(None)
            await flow
        finally:
            if not flow.done():
                flow.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await flow
            context.run = None

    async def _eval(
        self, graph: Graph, context: FlowContext, run: HostRun, interceptors: Sequence[FlowInterceptor]
    ) -> None:
        try:
            await self.engine.eval(graph, context, interceptors=[*interceptors, NodeTrace(run.ctx)])
        finally:
            run.queue.put_nowait(None)


class NodeTrace(FlowInterceptor):
    """``NodeStart`` and ``NodeEnd`` trace events for the nodes of a hosted graph (its sub-graphs' included)."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.started: dict[tuple[str, str], float] = {}

    async def on_node_start(self, context: FlowContext, node: Node) -> None:
        if self.ctx.trace is None:
            return
        self.started[(node.graph.id, node.id)] = time.perf_counter()
        await self.ctx.trace.event(NodeStart, graph_id=node.graph.id, node_id=node.id, node_type=node.type.value)

    async def on_node_end(self, context: FlowContext, node: Node) -> None:
        if self.ctx.trace is None:
            return
        started = self.started.pop((node.graph.id, node.id), time.perf_counter())
        await self.ctx.trace.event(
            NodeEnd,
            graph_id=node.graph.id,
            node_id=node.id,
            node_type=node.type.value,
            duration_ms=(time.perf_counter() - started) * 1000,
        )


def is_answer(event: AgentEvent) -> bool:
    """Whether ``event`` is an assistant's message (streamed or not)."""
    variant = event.output.message_output if event.output is not None else None
    return variant is not None and variant.role == "assistant"


async def text_of(event: AgentEvent, ctx: RunContext | None) -> str:
    """The text of an answer event. A streamed answer belongs to the reader; the session's record of it keeps a
    tap of every chunk, read here once the agent is done."""
    assert event.output is not None and event.output.message_output is not None
    variant = event.output.message_output
    if variant.message is not None:
        return variant.message.text
    if ctx is None:  # nobody else reads it
        return (await variant.get_message()).text
    for entry in reversed(ctx.session.events):
        if entry.run_path == event.run_path:
            return (await entry.get_message()).text
    return ""

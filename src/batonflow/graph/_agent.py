"""Agents and graphs, both ways: any ``Agent`` as a node's task (``AgentTask``), and a graph as an ``Agent``
(``GraphAgent``).

Inside a ``GraphAgent`` run, an agent node runs on the run's conversation (the session history, as any sub-agent
does) with the run path ``[<graph agent>, <node id>, <agent>, …]``; its events stream out as they come and its
final answer lands in the flow variable its node's meta ``output`` names (default ``message``). An interrupt of the
agent (a HITL question, a tool approval) stops the flow at that node; the graph agent's own interrupt saves the flow
context, so that ``Runner.resume`` replays the graph to the node and resumes the agent there: finished nodes and
tools do not run again. On parallel branches the other agents run to their end first, and the context's journal
keeps them from running again; several that interrupt at once all resume.

Outside a ``GraphAgent`` (a plain ``engine.eval``), an agent node runs alone on the variable its meta ``input``
names (default ``message``); it cannot be interrupted there.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from contextlib import aclosing
from contextvars import ContextVar
from dataclasses import dataclass, field

from ..adk import (
    Agent,
    AgentEvent,
    AgentInput,
    Branch,
    FlowAgent,
    ResumeInfo,
    RunContext,
    agent_with_options,
    branch_of,
    check_branch,
    composite_interrupt,
    current_dispatcher,
    dispatch,
    event_from_message,
)
from ..codec import register_type
from ..errors import ResumeError, UserError
from ..schema import RunStep, assistant, user
from ..trace import NodeEnd, NodeStart
from ._context import FlowContext
from ._engine import FlowEngine
from ._errors import FlowRunError, GraphError
from ._exchanger import FlowInterceptor
from ._graph import ComponentRef, Graph, Node

__all__ = ["AgentTask", "GraphAgent", "GraphState"]

DEFAULT_VARIABLE = "message"


@dataclass(slots=True, kw_only=True)
class GraphState:
    """What a graph agent saves when a node's agent interrupts: the flow context, and the nodes to resume."""

    context: str
    nodes: list[str] = field(default_factory=list)
    given: str | None = None  # the input the run started with, which is no answer


register_type(GraphState, name="GraphState")


@dataclass(slots=True, kw_only=True)
class _AgentRun:
    """One run of a graph agent, as its agent nodes see it (through ``_RUN``)."""

    ctx: RunContext
    graph_id: str
    queue: asyncio.Queue[tuple[AgentEvent, asyncio.Future[None]] | None]
    resume_nodes: set[str]
    interrupts: list[tuple[str, AgentEvent]] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)

    async def hand_over(self, event: AgentEvent) -> None:
        """Give ``event`` to the graph agent's reader and wait until it asks for the next one: the flow goes on at
        the reader's pace, as every agent's events are pulled, and trace events keep their order with it."""
        taken = asyncio.get_running_loop().create_future()
        self.queue.put_nowait((event, taken))
        await taken


_RUN: ContextVar[_AgentRun | None] = ContextVar("batonflow_graph_agent_run", default=None)


class AgentTask:
    """An ``Agent`` as a node's task. The engine wraps agents in one itself; make one to use it elsewhere."""

    __slots__ = ("agent",)

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    def __repr__(self) -> str:
        return f"AgentTask({self.agent.name!r})"

    async def run(self, context: FlowContext, node: Node) -> None:
        output = str(node.meta.get("output", DEFAULT_VARIABLE))
        run = _RUN.get()
        if run is None:
            answer = await self._alone(context, node)
        else:
            answer = await self._in_run(run, context, node)
        if answer is not None:
            context.put(output, answer)

    async def _in_run(self, run: _AgentRun, context: FlowContext, node: Node) -> str | None:
        # A node of a sub-graph is named with its graph, so that equal node ids of two graphs stay apart.
        step = node.id if node.graph.id == run.graph_id else f"{node.graph.id}/{node.id}"
        node_ctx = run.ctx.child(step)
        resuming = step in run.resume_nodes
        run.resume_nodes.discard(step)
        dispatcher = current_dispatcher() if _distributed(node) else None
        events: AsyncIterator[AgentEvent]
        if dispatcher is not None:  # on the worker pool: the agent's events come back when it is done
            branch = await branch_of(run.ctx, name=self.agent.name, resuming=resuming, step=step)
            events = dispatch(dispatcher, run.ctx, branch)
        else:
            events = node_events(self.agent, node_ctx, resuming)
        own_path = (*node_ctx.run_path, RunStep(self.agent.name))
        last: AgentEvent | None = None
        async with aclosing(events) as source:  # type: ignore[type-var]
            async for event in source:
                if event.action is not None and event.action.signal is not None:
                    run.interrupts.append((step, event))
                    context.stop()  # the flow waits at this node; the graph agent saves it
                    return None
                if event.error is not None:
                    raise FlowRunError(
                        f"agent {self.agent.name!r} failed: {event.error}", graph_id=node.graph.id, node_id=node.id
                    ) from event.error
                await run.hand_over(event)
                if event.run_path == own_path and _is_answer(event):
                    last = event
        if last is None:
            return None
        # Read once the agent is done: a streamed answer is whole by then (its reader, not us, reads the stream).
        answer = await _text_of(last, run.ctx)
        run.answers.append(answer)
        return answer

    async def _alone(self, context: FlowContext, node: Node) -> str | None:
        value = context.get(str(node.meta.get("input", DEFAULT_VARIABLE)))
        messages = [] if value is None else [user(str(value))]
        answer: str | None = None
        events = FlowAgent(self.agent).run(AgentInput(messages=messages))
        async with aclosing(events) as source:  # type: ignore[type-var]
            async for event in source:
                if event.action is not None and event.action.signal is not None:
                    raise FlowRunError(
                        f"agent {self.agent.name!r} interrupted; an agent node can be interrupted and resumed only "
                        "in a GraphAgent run under a Runner",
                        graph_id=node.graph.id,
                        node_id=node.id,
                    )
                if event.error is not None:
                    raise FlowRunError(
                        f"agent {self.agent.name!r} failed: {event.error}", graph_id=node.graph.id, node_id=node.id
                    ) from event.error
                if _is_answer(event):
                    answer = await _text_of(event, None)
        return answer


def node_events(agent: Agent, node_ctx: RunContext, resuming: bool) -> AsyncIterator[AgentEvent]:
    """The events of an agent node's agent, started or resumed on the node's context."""
    flow = agent_with_options(agent)
    if resuming:
        return flow.resume(ResumeInfo(enable_streaming=node_ctx.enable_streaming), node_ctx)
    return flow.run(node_ctx.root_input or AgentInput(messages=[]), node_ctx)


def _distributed(node: Node) -> bool:
    """Whether the node asks for its agent to run on the worker pool (meta ``distribute``)."""
    value = node.meta.get("distribute", False)
    if not isinstance(value, bool):
        raise GraphError(
            f"graph '{node.graph.id}', node '{node.id}', meta 'distribute': expected true or false, got {value!r}"
        )
    return value


def _is_answer(event: AgentEvent) -> bool:
    variant = event.output.message_output if event.output is not None else None
    return variant is not None and variant.role == "assistant"


async def _text_of(event: AgentEvent, ctx: RunContext | None) -> str:
    assert event.output is not None and event.output.message_output is not None
    variant = event.output.message_output
    if variant.message is not None:
        return variant.message.text
    if ctx is None:  # nobody else reads it
        return (await variant.get_message()).text
    # A streamed answer belongs to the reader; the session's record of it keeps a tap of every chunk.
    for entry in reversed(ctx.session.events):
        if entry.run_path == event.run_path:
            return (await entry.get_message()).text
    return ""


class _NodeTrace(FlowInterceptor):
    """``NodeStart`` and ``NodeEnd`` trace events for the nodes of a graph agent's run."""

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


class GraphAgent:
    """A graph as an ``Agent``: under a ``Runner``, inside a flow or workflow agent, as an ``AgentTool``, or as a
    node of another graph. The text of the run's last user message (the request the run began with) starts the
    flow in ``input_key``; the flow's ``output_key`` at the end is the answer (unless an agent node said it last or
    it is that text unchanged)."""

    def __init__(
        self,
        graph: Graph,
        *,
        engine: FlowEngine | None = None,
        name: str | None = None,
        description: str | None = None,
        input_key: str = DEFAULT_VARIABLE,
        output_key: str = DEFAULT_VARIABLE,
    ) -> None:
        if not isinstance(graph, Graph):
            raise GraphError(f"GraphAgent expects a Graph, got {type(graph).__name__}")
        for node in graph.nodes.values():
            _distributed(node)  # a bad meta 'distribute' is refused here, not when the node runs
        self.graph = graph
        self.engine = engine if engine is not None else FlowEngine()
        self.name = name if name is not None else graph.id
        self.description = description if description is not None else graph.title
        self.input_key = input_key
        self.output_key = output_key

    def __repr__(self) -> str:
        return f"GraphAgent({self.name!r}, graph={self.graph.id!r})"

    def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        if ctx is None:
            ctx = RunContext(root_input=input, enable_streaming=input.enable_streaming).child(self.name)
        context = FlowContext()
        # The request the run began with: in an agent tree the input also holds other agents' words as history.
        messages = (ctx.root_input or input).messages
        given = next((m.text for m in reversed(messages) if m.role == "user"), None)
        context.put(self.input_key, given)
        return self._run(ctx, context, set(), given)

    def resume(self, info: ResumeInfo, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        ctx = ctx if ctx is not None else RunContext().child(self.name)
        state = info.interrupt_state
        if not isinstance(state, GraphState):
            error = ResumeError(
                f"graph agent '{self.name}' cannot resume: expected its saved flow, got {type(state).__name__}"
            )
            return _single(AgentEvent(error=error))
        context = FlowContext.from_json(state.context)
        return self._run(ctx, context, set(state.nodes), state.given)

    async def _run(
        self, ctx: RunContext, context: FlowContext, resume_nodes: set[str], given: str | None
    ) -> AsyncIterator[AgentEvent]:
        run = _AgentRun(ctx=ctx, graph_id=self.graph.id, queue=asyncio.Queue(), resume_nodes=resume_nodes)
        flow = asyncio.create_task(self._eval(run, context))
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
        if run.interrupts:
            nodes = [node_id for node_id, _ in run.interrupts]
            subs = [event.action.signal for _, event in run.interrupts if event.action and event.action.signal]
            state = GraphState(context=context.to_json(), nodes=nodes, given=given)
            wrapped = composite_interrupt(ctx, "Graph interrupted", state, *subs)
            # It stands where the node's interrupt stood, or, for several at once, at the graph agent itself.
            at = run.interrupts[0][1] if len(run.interrupts) == 1 else None
            wrapped.agent_name = at.agent_name if at is not None else self.name
            wrapped.run_path = at.run_path if at is not None else ctx.run_path
            yield wrapped
            return
        # The flow's answer, unless it is the input unchanged (the flow said nothing) or an agent node said it last.
        answer = context.get(self.output_key)
        if answer is not None and answer != given and (not run.answers or run.answers[-1] != str(answer)):
            yield event_from_message(assistant(str(answer)))

    def branch_events(self, branch: Branch, ctx: RunContext) -> AsyncIterator[AgentEvent]:
        """Run the agent node a dispatcher sent here (``BranchHost``): ``branch.step`` names the node, as in the run
        path (``node`` of this graph, ``graph/node`` of a sub-graph)."""
        graph_id, _, node_id = branch.step.rpartition("/")
        graph = self.graph if not graph_id else self.engine.get_graph(graph_id)
        node = graph.nodes.get(node_id) if graph is not None else None
        agents = {n.id: n._target.agent for n in self.graph.nodes.values() if isinstance(n._target, AgentTask)}
        task = node._target if node is not None else None
        if isinstance(task, ComponentRef):
            task = self.engine.get_component(task.name)
        agent = task.agent if isinstance(task, AgentTask) else task if isinstance(task, Agent) else None
        if agent is None:
            raise UserError(
                f"branch {branch.where}: expected an agent node {branch.step!r} in graph '{self.graph.id}', got "
                f"{'no such node' if node is None else 'a node whose task is not an agent'}"
            )
        check_branch(self, branch, sorted(a.name for a in agents.values()), agent.name)
        return node_events(agent, ctx.child(branch.step), branch.resume_records is not None)

    async def _eval(self, run: _AgentRun, context: FlowContext) -> None:
        _RUN.set(run)  # this task's own copy: agent nodes of this run find it, nested graph agents set theirs
        try:
            await self.engine.eval(self.graph, context, interceptors=[_NodeTrace(run.ctx)])
        finally:
            run.queue.put_nowait(None)


async def _single(event: AgentEvent) -> AsyncIterator[AgentEvent]:
    yield event

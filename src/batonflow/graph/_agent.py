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

from collections.abc import AsyncIterator
from contextlib import aclosing
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
    dispatch,
    event_from_message,
)
from ..codec import register_type
from ..errors import ResumeError, UserError
from ..schema import Message, RunStep, Stream, assistant, user
from ._context import FlowContext
from ._engine import FlowEngine
from ._errors import FlowRunError, GraphError
from ._graph import ComponentRef, Graph, Node
from ._host import GraphHost, HostRun, current_host, is_answer, text_of

__all__ = ["AgentTask", "GraphAgent", "GraphState"]

DEFAULT_VARIABLE = "message"


@dataclass(slots=True, kw_only=True)
class GraphState:
    """What a graph agent saves when a node's agent interrupts: the flow context, and the nodes to resume."""

    context: str
    nodes: list[str] = field(default_factory=list)
    given: str | None = None  # the input the run started with, which is no answer


register_type(GraphState, name="GraphState")


class AgentTask:
    """An ``Agent`` as a node's task. The engine wraps agents in one itself; make one to use it elsewhere."""

    __slots__ = ("agent",)

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    def __repr__(self) -> str:
        return f"AgentTask({self.agent.name!r})"

    async def run(self, context: FlowContext, node: Node) -> None:
        output = str(node.meta.get("output", DEFAULT_VARIABLE))
        host = current_host()
        if host is None:
            answer = await self._alone(context, node)
        else:
            answer = await self._hosted(host, context, node)
        if answer is not None:
            context.put(output, answer)

    async def _hosted(self, host: HostRun, context: FlowContext, node: Node) -> str | None:
        step = host.step_of(node)
        node_ctx = host.ctx.child(step)
        resuming = host.resuming(step)
        dispatcher = host.ctx.dispatcher if _distributed(node) else None
        events: AsyncIterator[AgentEvent]
        if dispatcher is not None:  # on the worker pool: the agent's events come back when it is done
            branch = await branch_of(host.ctx, name=self.agent.name, resuming=resuming, step=step)
            events = dispatch(dispatcher, host.ctx, branch)
        else:
            events = node_events(self.agent, node_ctx, resuming)

        def failed(error: BaseException) -> Exception:
            return FlowRunError(f"agent {self.agent.name!r} failed: {error}", graph_id=node.graph.id, node_id=node.id)

        own_path = (*node_ctx.run_path, RunStep(self.agent.name))
        last, _ = await host.run_agent(events, context, step=step, own_path=own_path, failed=failed)
        if last is None:
            return None
        # Read once the agent is done: a streamed answer is whole by then (its reader, not us, reads the stream).
        answer = await text_of(last, host.ctx)
        host.answers.append(answer)
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
                if is_answer(event):
                    answer = await text_of(event, None)
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
        self._host = GraphHost(self.engine)
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
        run = HostRun(ctx=ctx, graph_id=self.graph.id, resume_nodes=resume_nodes)
        async with aclosing(self._host.run(self.graph, context, run)) as events:
            async for event in events:
                yield event
        if run.interrupts:
            state = GraphState(context=context.to_json(), nodes=[step for step, _ in run.interrupts], given=given)
            yield run.interrupt_event("Graph interrupted", state, self.name)
            return
        # The flow's answer, unless it is the input unchanged (the flow said nothing) or an agent node said it last.
        answer = context.get(self.output_key)
        if answer is None or answer == given:
            return
        text = await _answer_text(answer)
        if not run.answers or run.answers[-1] != text:
            yield event_from_message(assistant(text))

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


async def _answer_text(answer: object) -> str:
    """The flow's answer as text: a message's text, a stream's (a ``@ChatModel`` node's with ``stream: true``)
    read to its end, anything else as ``str`` makes it."""
    if isinstance(answer, Message):
        return answer.text
    if isinstance(answer, Stream):
        return "".join(item.text if isinstance(item, Message) else str(item) for item in await answer.collect())
    return str(answer)


async def _single(event: AgentEvent) -> AsyncIterator[AgentEvent]:
    yield event

"""``TeamAgent``: Solon's team, a graph its protocol builds (start → supervisor → members → end, shaped by the
protocol), run by the flow engine with no step limit, as an ``Agent`` of the runtime.

Its members run on the run's context one step below the team (run path ``[team, member, …]``, the supervisor's
decisions under ``[team, supervisor]``), each on the prompt its protocol prepares: the team's working memory plus
what the protocol adds, with the protocol's instruction as a system message first. A member's interrupt (a HITL
approval) stops the flow at its node and interrupts the team, which saves the flow's position; ``Runner.resume``
replays the graph to that node and resumes the member there, so that finished members and tools do not run again.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import aclosing

from ..adk import (
    Agent,
    AgentEvent,
    AgentInput,
    ResumeInfo,
    RunContext,
    event_from_message,
)
from ..adk.loop import ModelRetry, ModelStep
from ..errors import ResumeError, UserError
from ..graph import FlowContext, FlowEngine, Graph, GraphHost, GraphSpec, NodeType
from ..models import ChatModel, as_model
from ..schema import Message, assistant
from ..trace import TeamEnd, TeamStart
from ._a2a import A2AProtocol
from ._blackboard import BlackboardProtocol
from ._config import MemberMap, TeamConfig
from ._contract_net import ContractNetProtocol
from ._current import current_team_run
from ._hierarchical import HierarchicalProtocol
from ._interceptor import TeamInterceptor
from ._market import MarketBasedProtocol
from ._member import Member
from ._protocol import SUPERVISOR, NoneProtocol, TeamProtocol
from ._run import MemberTask, TeamRun, TeamState
from ._sequential import SequentialProtocol
from ._swarm import SwarmProtocol
from ._tools import attach_tools
from ._trace import TeamTrace, trace_key

__all__ = ["PROTOCOLS", "PROTOCOL_NAMES", "TeamAgent"]

PROTOCOLS: dict[str, Callable[[], TeamProtocol]] = {
    "a2a": A2AProtocol,
    "blackboard": BlackboardProtocol,
    "contract_net": ContractNetProtocol,
    "market_based": MarketBasedProtocol,
    "none": NoneProtocol,
    "sequential": SequentialProtocol,
    "swarm": SwarmProtocol,
    "hierarchical": HierarchicalProtocol,
}


PROTOCOL_NAMES = tuple(sorted(PROTOCOLS))
"""The protocols a team can be given by name."""


class TeamAgent:
    """A team of agents that a protocol coordinates; see the module doc and ``docs/teams.md``."""

    def __init__(
        self,
        *,
        name: str = "team_agent",
        description: str = "",
        model: ChatModel | str | None = None,
        members: Sequence[Agent | Member] = (),
        protocol: str | TeamProtocol = "hierarchical",
        max_turns: int = 8,
        max_retries: int = 3,
        retry_delay: float = 1.0,
        finish_marker: str | None = None,
        graph_adjuster: Callable[[GraphSpec], None] | None = None,
        interceptors: Sequence[TeamInterceptor] = (),
        feedback: bool = False,
        session_window: int = 8,
        record_window: int = 8,
        role: str | None = None,
        instruction: str | None = None,
        output_key: str | None = None,
    ) -> None:
        member_map = _checked(
            name, members, graph_adjuster, interceptors, max_turns, max_retries, session_window, record_window
        )
        self.name = name
        self.description = description
        self.model = None if model is None else as_model(model, f"TeamAgent '{name}' model")
        self.finish_marker = finish_marker if finish_marker else f"[{name.upper()}_FINISH]"
        self.config = TeamConfig(
            name=name,
            members=member_map,
            finish_marker=self.finish_marker,
            max_turns=max_turns,
            max_retries=max_retries,
            session_window=session_window,
            record_window=record_window,
            feedback=feedback,
            role=role,
            instruction=instruction,
            output_key=output_key,
            graph_adjuster=graph_adjuster,
            trace_key=trace_key(name),
        )
        self.protocol = _protocol(protocol, name)
        self.protocol.bind(self.config)
        if self.protocol.agent_tool_names:
            for member in member_map:
                attach_tools(name, member)
        self.interceptors = tuple(interceptors)
        self.graph = self._build_graph()
        self._host = GraphHost(FlowEngine())
        if model is None and SUPERVISOR in self.graph.nodes:
            raise UserError(
                f"team '{name}': protocol {self.protocol.name} has a supervisor: expected a model, got None"
            )
        self._step = _supervisor_step(self.model, name, max_retries, retry_delay)

    def __repr__(self) -> str:
        return (
            f"TeamAgent(name={self.name!r}, protocol={self.protocol.name!r}, members={self.config.members.names()!r})"
        )

    @property
    def members(self) -> list[Member]:
        return list(self.config.members)

    def _build_graph(self) -> Graph:
        spec = GraphSpec(self.config.trace_key, title=self.description or None)
        self.protocol.build_graph(spec)
        if self.config.graph_adjuster is not None:
            self.config.graph_adjuster(spec)
        by_agent = {id(member.agent): member.name for member in self.config.members}
        for node in spec.nodes.values():
            if node.type is not NodeType.ACTIVITY:
                continue
            if node.task is None and node.id in self.config.members:
                node.task = MemberTask(self.config.members.canonical(node.id) or node.id)
            elif node.task is not None and id(node.task) in by_agent:
                node.task = MemberTask(by_agent[id(node.task)])
        return spec.build()

    def trace(self, ctx_or_values: RunContext | dict[str, object]) -> TeamTrace | None:
        """This team's trace in a run's context or its session values."""
        values = ctx_or_values.session.values if isinstance(ctx_or_values, RunContext) else ctx_or_values
        found = values.get(self.config.trace_key)
        return found if isinstance(found, TeamTrace) else None

    # -- running --------------------------------------------------------------------------------------------------

    def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        if ctx is None:
            ctx = RunContext(root_input=input, enable_streaming=input.enable_streaming).child(self.name)
        return self._start(input, ctx)

    def resume(self, info: ResumeInfo, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        ctx = ctx if ctx is not None else RunContext().child(self.name)
        state = info.interrupt_state
        trace = self.trace(ctx)
        if not isinstance(state, TeamState) or trace is None:
            found = type(state).__name__ if not isinstance(state, TeamState) else "no trace in the session values"
            error = ResumeError(f"team '{self.name}' cannot resume: expected its saved flow and trace, got {found}")
            return _single(AgentEvent(error=error))
        return self._drive(ctx, trace, FlowContext.from_json(state.flow), set(state.nodes))

    async def _start(self, input: AgentInput, ctx: RunContext) -> AsyncIterator[AgentEvent]:
        nested = current_team_run() is not None
        trace = self.trace(ctx)
        if trace is None:
            trace = TeamTrace(team_name=self.name)
            ctx.add_session_value(self.config.trace_key, trace)
        if nested:
            prompt = list(input.messages)
            history: list[Message] = []
        else:
            # The request the run began with: in an agent tree the input also holds other agents' words as history.
            messages = list((ctx.root_input or input).messages)
            last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
            prompt = [messages[last_user]] if last_user >= 0 else []
            history = messages[:last_user] if last_user >= 0 else []
        if any(m.role == "user" and m.text.strip() for m in prompt):
            trace.reset(prompt)
            window = self.config.session_window
            if window > 0 and history:
                trace.working_memory.extend(history[-window:])
            trace.working_memory.extend(prompt)
            flow = FlowContext()
        elif not trace.prompt:
            yield event_from_message(assistant(""))  # nothing to do, nothing to resume (as Solon)
            return
        else:
            flow = FlowContext.from_json(trace.flow) if trace.flow else FlowContext()
            if trace.pending:
                # The supervisor asked the user: it decides again, at the node it asked from.
                trace.route = None
                trace.final_answer = None
                flow.trace.record_node_id(self.graph, SUPERVISOR)
        async with aclosing(self._drive(ctx, trace, flow, set())) as events:
            async for event in events:
                yield event

    async def _drive(
        self, ctx: RunContext, trace: TeamTrace, flow: FlowContext, resume_nodes: set[str]
    ) -> AsyncGenerator[AgentEvent, None]:
        parent = current_team_run()
        run = TeamRun(
            config=self.config,
            protocol=self.protocol,
            interceptors=self.interceptors,
            trace=trace,
            ctx=ctx,
            step=self._step,
            graph_id=self.graph.id,
            resume_nodes=resume_nodes,
        )
        trace.pending = False
        for interceptor in self.interceptors:
            interceptor.on_team_start(trace)
        if ctx.trace is not None:
            await ctx.trace.event(TeamStart)
        started = time.perf_counter()
        failure: BaseException | None = None
        try:
            try:
                hosted = self._host.run(self.graph, flow, run, interceptors=self.interceptors)
                async with aclosing(hosted) as events:
                    async for event in events:
                        yield event
            except Exception as error:
                failure = error
            trace.metrics.total_duration_ms = int((time.perf_counter() - started) * 1000)
            if ctx.trace is not None:
                duration_ms = (time.perf_counter() - started) * 1000
                await ctx.trace.event(TeamEnd, duration_ms=duration_ms, error=failure)
            if parent is not None:
                parent.trace.metrics.add(trace.metrics)
            trace.flow = flow.to_json()
            if failure is not None:
                for interceptor in self.interceptors:
                    interceptor.on_team_end(trace)
                yield AgentEvent(error=failure)
                return
            async with aclosing(self._conclude(run, ctx)) as concluded:
                async for event in concluded:
                    yield event
        finally:
            self.protocol.on_team_finished(trace)

    async def _conclude(self, run: TeamRun, ctx: RunContext) -> AsyncGenerator[AgentEvent, None]:
        """The end of a run: the team's interrupt, or its answer."""
        trace = run.trace
        if run.interrupts:
            state = TeamState(flow=trace.flow or "", nodes=[name for name, _ in run.interrupts])
            yield run.interrupt_event("Team interrupted", state, self.name)
            return
        result = trace.final_answer if trace.final_answer is not None else trace.last_agent_content
        trace.final_answer = result
        if self.config.output_key:
            ctx.add_session_value(self.config.output_key, result)
        if result:
            trace.working_memory.append(assistant(result))
        for interceptor in self.interceptors:
            interceptor.on_team_end(trace)
        yield event_from_message(assistant(result))


def _supervisor_step(model: ChatModel | None, team: str, attempts: int, delay: float) -> ModelStep | None:
    """How the supervisor calls the model: traced, counted, and retried (``attempts`` calls in all, for transient
    failures and empty answers, ``delay·2^(n-1)`` seconds after failed call n, at most 30)."""
    if model is None:
        return None
    if isinstance(delay, bool) or not isinstance(delay, int | float) or delay < 0:
        raise UserError(f"team '{team}': retry_delay: expected 0 or more seconds, got {delay!r}")
    retry = ModelRetry(
        attempts=attempts,
        backoff=lambda attempt: min(delay * 2.0 ** (attempt - 1), 30.0),
        label=f"team '{team}' supervisor",
        retry_empty=True,
    )
    return ModelStep(model, retry=retry)


def _checked(
    name: str,
    members: Sequence[Agent | Member],
    graph_adjuster: object,
    interceptors: Sequence[TeamInterceptor],
    *counts: int,
) -> MemberMap:
    """The member map of a team's settings, once they are checked (a ``UserError`` saying what was expected)."""
    if not isinstance(name, str) or not name:
        raise UserError(f"TeamAgent needs a name: expected a non-empty string, got {name!r}")
    labels = (("max_turns", 1), ("max_retries", 1), ("session_window", 0), ("record_window", 0))
    for (label, least), value in zip(labels, counts, strict=True):
        if type(value) is not int or value < least:
            raise UserError(f"team '{name}': {label}: expected an int of at least {least}, got {value!r}")
    if isinstance(members, (str, bytes)) or not isinstance(members, Sequence):
        raise UserError(f"team '{name}': members: expected a list of agents, got {type(members).__name__}")
    member_map = MemberMap()
    for item in members:
        member_map.add(item if isinstance(item, Member) else Member(item), team=name)
    if not len(member_map) and graph_adjuster is None:
        raise UserError("At least one agent or a graphAdjuster is required.")
    for interceptor in interceptors:
        if not isinstance(interceptor, TeamInterceptor):
            raise UserError(
                f"team '{name}': interceptors: expected TeamInterceptor instances, got {type(interceptor).__name__}"
            )
    return member_map


def _protocol(protocol: str | TeamProtocol, team: str) -> TeamProtocol:
    if isinstance(protocol, TeamProtocol):
        return protocol
    if isinstance(protocol, str):
        make = PROTOCOLS.get(protocol.lower())
        if make is not None:
            return make()
    raise UserError(f"team '{team}': protocol: expected one of {sorted(PROTOCOLS)} or a TeamProtocol, got {protocol!r}")


async def _single(event: AgentEvent) -> AsyncIterator[AgentEvent]:
    yield event

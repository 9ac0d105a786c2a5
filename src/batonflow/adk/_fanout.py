"""Branches that run elsewhere: a ``ParallelAgent(distribute=True)`` hands each branch, and a graph agent each agent
node marked ``distribute: true``, to the run's ``BranchDispatcher`` (a worker pool's), which runs it on any worker
and sends back what it did.

A branch travels as a ``Branch``: where its host sits (the parallel or graph agent's address, found again from the
segment's agent on the worker that takes it), which of its branches it is, and the part of the run it needs — the history before the fork, its own lane,
the session values, the interrupts being resumed. It comes back as a ``BranchResult``: its events (whole messages;
an interrupt as its saved records), its lane, and the session values it set. Both are codec values, so any backend
can carry them without pickle.

With no dispatcher (a run of this process: the Runner alone, the in-process backend) the branches run here, as
tasks: ``distribute`` asks for the pool when there is one, and changes nothing otherwise.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from ..codec import register_type
from ..errors import BranchFailedError, UserError
from ..schema import Address, Message, RunStep, format_address
from ..tools import InterruptSignal
from ._agent import Agent
from ._context import RunContext, RunSession, SessionEvent, current_dispatcher, installed_dispatcher
from ._events import AgentAction, AgentEvent, AgentInput, event_from_message
from ._interrupt import InterruptRecord, ResumePoints, flatten, interrupted_action

__all__ = [
    "Branch",
    "BranchDispatcher",
    "BranchEvent",
    "BranchHost",
    "BranchResult",
    "branch_of",
    "check_branch",
    "current_dispatcher",
    "dispatch",
    "dispatching",
    "find_host",
    "run_branch",
]


@dataclass(slots=True, kw_only=True)
class Branch:
    """One branch of a host (a distributed ``ParallelAgent``, a graph agent), as it travels to the worker that runs
    it."""

    address: Address
    """The host's address: found again, from the segment's agent, through sub-agents."""
    name: str
    """The branch's agent (checked against the host found on the worker)."""
    index: int = -1
    """A parallel agent's branch: its place among the sub-agents."""
    step: str = ""
    """A graph agent's branch: the agent node's step in the run path."""
    run_id: str
    run_path: tuple[RunStep, ...]
    root_messages: list[Message]
    skip_transfer_messages: bool = False
    values: dict[str, Any] = field(default_factory=dict)
    committed: list[SessionEvent] = field(default_factory=list)
    """The history before the fork."""
    lane: list[SessionEvent] = field(default_factory=list)
    """The branch's own events so far (a resumed branch's, from the checkpoint)."""
    visits: dict[Address, int] = field(default_factory=dict)
    resume_records: list[InterruptRecord] | None = None
    """The interrupts of the run being resumed (None: the branch starts)."""
    resume_targets: dict[str, Any] = field(default_factory=dict)

    @property
    def where(self) -> str:
        """The branch's address, for ids and messages."""
        step = f";agent:{self.step}" if self.step else ""
        return f"{format_address(self.address)}{step};agent:{self.name}"


@dataclass(slots=True, kw_only=True)
class BranchEvent:
    """An event of a branch, as it travels back: its message whole, its interrupt as saved records, its error as
    text (an exception cannot travel). An event's ``customized_output`` stays where it was made."""

    agent_name: str
    run_path: tuple[RunStep, ...]
    message: Message | None = None
    role: str = "assistant"
    tool_name: str = ""
    action: AgentAction | None = None
    error: str | None = None
    error_kind: str = ""
    interrupt: list[InterruptRecord] = field(default_factory=list)
    """The signal tree of the branch's interrupt, flattened (root first), as a checkpoint keeps it."""

    @classmethod
    async def of(cls, event: AgentEvent) -> BranchEvent:
        variant = event.message_output
        action, records = event.action, []
        if action is not None and (action.signal is not None or action.interrupted is not None):
            records = flatten(action.signal) if action.signal is not None else []
            action = replace(action, signal=None, interrupted=None)
        return cls(
            agent_name=event.agent_name,
            run_path=event.run_path,
            message=None if variant is None else await variant.get_message(),
            role=variant.role if variant is not None else "assistant",
            tool_name=variant.tool_name if variant is not None else "",
            action=action,
            error=None if event.error is None else f"{type(event.error).__name__}: {event.error}",
            error_kind="" if event.error is None else type(event.error).__name__,
            interrupt=records,
        )

    def event(self) -> AgentEvent:
        """The event again, on the side that dispatch the branch."""
        if self.message is not None:
            event = event_from_message(self.message, role=self.role, tool_name=self.tool_name)  # type: ignore[arg-type]
        else:
            event = AgentEvent()
        event.agent_name, event.run_path, event.action = self.agent_name, self.run_path, self.action
        if self.error is not None:
            event.error = BranchFailedError(self.error, kind=self.error_kind)
        if self.interrupt:
            signal = _signal_tree(self.interrupt)
            kept = self.action or AgentAction()
            rebuilt = interrupted_action(signal, signal.info)
            event.action = replace(kept, interrupted=rebuilt.interrupted, signal=signal)
        return event


@dataclass(slots=True, kw_only=True)
class BranchResult:
    """What a branch did: its events in order, its lane (the history it adds), the session values it set, and the
    loops it started (the session's ``visits``)."""

    events: list[BranchEvent] = field(default_factory=list)
    lane: list[SessionEvent] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)
    visits: dict[Address, int] = field(default_factory=dict)


for _cls in (Branch, BranchEvent, BranchResult):
    register_type(_cls, name=f"fanout.{_cls.__name__}")


@runtime_checkable
class BranchHost(Protocol):
    """An agent whose branches can run elsewhere: what a worker runs a ``Branch`` with, on a context made from
    what the branch carries."""

    name: str

    def branch_events(self, branch: Branch, ctx: RunContext) -> AsyncIterator[AgentEvent]: ...


@runtime_checkable
class BranchDispatcher(Protocol):
    """Runs branches somewhere else and waits for them: what a worker pool gives the runs of its segments."""

    async def run_branch(self, branch: Branch) -> BranchResult: ...


@contextmanager
def dispatching(dispatcher: BranchDispatcher | None) -> Iterator[None]:
    """Give the runs started inside the block ``dispatcher`` for their distributed branches: a run's context made
    here takes it (``RunContext.dispatcher``) and keeps it wherever its events are read."""
    token = installed_dispatcher.set(dispatcher)
    try:
        yield
    finally:
        installed_dispatcher.reset(token)


async def branch_of(ctx: RunContext, *, name: str, resuming: bool, index: int = -1, step: str = "") -> Branch:
    """A branch (agent ``name``) of the host whose context is ``ctx`` (a parallel agent's fork for the branch, a
    graph agent's own), ready to travel: streamed messages of the history joined first."""
    session = ctx.session
    for recorded in (*session.committed, *session.events):
        await recorded.get_message()
    resume = ctx.resume
    # What is still to resume (a loop's earlier iterations consumed theirs), and the targets among it.
    records = list(resume.by_address.values()) if resuming and resume is not None else None
    ids = {r.id for r in records or ()}
    return Branch(
        address=ctx.address,
        name=name,
        index=index,
        step=step,
        run_id=ctx.run_id,
        run_path=ctx.run_path,
        root_messages=list(ctx.root_input.messages) if ctx.root_input is not None else [],
        skip_transfer_messages=ctx.skip_transfer_messages,
        values=dict(session.values),
        committed=list(session.committed),
        lane=list(session.events),
        visits=dict(session.visits),
        resume_records=records,
        resume_targets={k: v for k, v in resume.targets.items() if k in ids} if resume is not None else {},
    )


async def run_branch(root: Agent, branch: Branch) -> BranchResult:
    """Run ``branch`` here: find its host from ``root`` (the segment's agent), run the branch on a context made from
    what it carries, and gather what it did."""
    host = find_host(root, branch.address)
    session = RunSession(
        values=dict(branch.values),
        committed=list(branch.committed),
        events=list(branch.lane),
        visits=dict(branch.visits),
    )
    resuming = branch.resume_records is not None
    ctx = RunContext(
        session=session,
        run_path=branch.run_path,
        root_input=AgentInput(messages=list(branch.root_messages)),
        skip_transfer_messages=branch.skip_transfer_messages,
        address=branch.address,
        resume=ResumePoints(list(branch.resume_records or ()), branch.resume_targets) if resuming else None,
        run_id=branch.run_id,
        trace=None,
    )
    events: list[BranchEvent] = []
    source = host.branch_events(branch, ctx)
    try:
        async for event in source:
            events.append(await BranchEvent.of(event))
    finally:
        close = getattr(source, "aclose", None)
        if close is not None:
            await close()
    added = session.events[len(branch.lane) :]
    for recorded in added:
        await recorded.get_message()
    changed = {k: v for k, v in session.values.items() if k not in branch.values or branch.values[k] != v}
    visits = {a: n for a, n in session.visits.items() if branch.visits.get(a) != n}
    return BranchResult(events=events, lane=added, values=changed, visits=visits)


async def dispatch(dispatcher: BranchDispatcher, ctx: RunContext, branch: Branch) -> AsyncGenerator[AgentEvent, None]:
    """The events of ``branch`` run by ``dispatcher``, once it has ended; the events it recorded, the values it set
    and the loops it started are then ``ctx``'s too. A branch that could not be run is one error event."""
    try:
        result = await dispatcher.run_branch(branch)
    except Exception as error:  # the pool's failure is the branch's: the parallel agent reports it
        yield AgentEvent(
            agent_name=branch.name,
            run_path=(*branch.run_path, *((RunStep(branch.step),) if branch.step else ()), RunStep(branch.name)),
            error=error if isinstance(error, BranchFailedError) else _failed(branch, error),
        )
        return
    session = ctx.session
    session.events.extend(result.lane)
    session.values.update(result.values)
    session.visits.update(result.visits)
    for travelled in result.events:
        yield travelled.event()


def find_host(root: Agent, address: Address) -> BranchHost:
    """The host at ``address`` below ``root``, found through sub-agents (workflow agents' and transfer targets')."""
    where = format_address(address)
    if not address or address[0].kind != "agent" or address[0].id != root.name:
        raise UserError(f"branch of {where}: expected a host of branches below {root.name!r}, got another root")
    agent: Any = root
    for segment in address[1:]:
        if segment.kind != "agent":
            raise UserError(
                f"branch of {where}: expected a host of branches reached through sub-agents, got one inside a "
                f"{segment.kind} ({segment.id!r}); run it with distribute=False"
            )
        found = next((sub for sub in _subs(agent) if sub.name == segment.id), None)
        if found is None:
            raise UserError(f"branch of {where}: expected a sub-agent {segment.id!r} of {agent.name!r}, got none")
        agent = found
    inner = _unwrap(agent)
    if not isinstance(inner, BranchHost):
        raise UserError(
            f"branch of {where}: expected a ParallelAgent or a graph agent there, got {type(inner).__name__}"
        )
    return inner


def check_branch(host: BranchHost, branch: Branch, names: list[str], found: str | None) -> None:
    """Refuse a branch whose agent is not the one the host has there (``found``; ``names`` are the host's)."""
    if found != branch.name:
        at = f"branch {branch.index}" if branch.step == "" else f"node {branch.step!r}"
        raise UserError(
            f"branch {branch.where}: expected {at} of '{host.name}' to be {branch.name!r}, got the agents {names} "
            "(do the workers run another version of the agents?)"
        )


def _unwrap(agent: Any) -> Any:
    from ._flow import FlowAgent

    while isinstance(agent, FlowAgent):
        agent = agent.agent
    return agent


def _subs(agent: Any) -> list[Any]:
    """The agents one step below ``agent``: a flow agent's transfer targets and the inner agent's sub-agents."""
    found = list(getattr(agent, "sub_agents", None) or ())
    inner = _unwrap(agent)
    if inner is not agent:
        found.extend(getattr(inner, "sub_agents", None) or ())
    return found


def _signal_tree(records: list[InterruptRecord]) -> InterruptSignal:
    """The signal tree ``flatten`` made ``records`` of (the root first)."""
    by_parent: dict[str | None, list[InterruptRecord]] = {}
    for record in records:
        by_parent.setdefault(record.parent_id, []).append(record)

    def build(record: InterruptRecord) -> InterruptSignal:
        subs = tuple(build(child) for child in by_parent.get(record.id, ()))
        return InterruptSignal(record.info, address=record.address, state=record.state, subs=subs, id=record.id)

    roots = by_parent.get(None, [])
    if len(roots) != 1:
        raise UserError(f"branch interrupt: expected one root record, got {len(roots)}")
    return build(roots[0])


def _failed(branch: Branch, error: Exception) -> BranchFailedError:
    return BranchFailedError(
        f"branch {branch.where} could not run on the pool: {type(error).__name__}: {error}", kind=type(error).__name__
    )

"""Per-run state: the run session shared by every agent of a run, and each agent's view of it.

Agents are definitions; a run's state lives here (Eino's run context and run session). ``RunContext`` is passed
explicitly to ``Agent.run``; tools reach it through ``ToolContext.run``. Everything a run carries for the code deep
inside it is a field of the context: where trace events go (``trace``), its step log (``steps``), where its
distributed branches go (``dispatcher``), and what the packages above the runtime hang on it (``scope``: a graph
agent's or a team's hosted run). Child contexts carry them on, so each agent, agent tool and node of the run sees
its own run's, and a run nested inside another (an agent tool's, a graph agent's at a node) gets what it is given.

Three of them can also be *installed* around code that starts runs without holding a context (a worker around its
segments, a traced tool call around user code that starts a Runner): ``current_scope`` (trace), ``installed_steps``
(``adk.loop``) and ``current_dispatcher`` are context variables read once, when a run's context is made, and
never by the code of the run.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

from ..codec import register_type
from ..schema import Address, AddressSegment, Message, RunStep, Tap, concat_messages
from ..tools import InterruptState, ResumeContext
from ..trace import TraceScope, current_scope
from ._events import AgentAction, AgentEvent, AgentInput

if TYPE_CHECKING:
    from ._fanout import BranchDispatcher
    from ._interrupt import ResumePoints
    from .loop import StepLog

__all__ = ["RunContext", "RunScope", "RunSession", "SessionEvent", "current_dispatcher", "installed_dispatcher"]

T = TypeVar("T")

# Installed by ``dispatching`` (``_fanout``) around the runs a worker starts; a context made there takes it.
installed_dispatcher: ContextVar[BranchDispatcher | None] = ContextVar("batonflow_branch_dispatcher", default=None)

current_dispatcher = installed_dispatcher.get
"""The dispatcher ``dispatching`` installed around the code running now, if any: what a run's context made here
takes as its ``dispatcher``. Code inside a run reads ``RunContext.dispatcher``."""


@dataclass(slots=True, kw_only=True)
class SessionEvent:
    """An event recorded in the run's history: whose it was, its message, and its action."""

    agent_name: str
    run_path: tuple[RunStep, ...]
    message: Message | None = None
    # A streamed message still being produced: joined when someone reads the history. Not saved.
    _pending: asyncio.Future[Message] | Tap[Message] | None = field(default=None, repr=False, compare=False)
    action: AgentAction | None = None
    # Wall-clock, not monotonic: lanes restored from a checkpoint written elsewhere are ordered against new ones.
    ts: int = field(default_factory=time.time_ns)

    async def get_message(self) -> Message:
        if self.message is None:
            pending = self._pending
            assert pending is not None
            self.message = concat_messages(await pending.chunks()) if isinstance(pending, Tap) else await pending
            self._pending = None
        return self.message


register_type(SessionEvent, name="SessionEvent")


@dataclass(slots=True, kw_only=True)
class RunSession:
    """What every agent of one run shares: session values and the recorded event history.

    A parallel branch works on a fork: the same values, the history committed before the fork, and a lane of
    its own for its events, so that branches do not see each other's (as in Eino's ParallelAgent).
    """

    values: dict[str, Any] = field(default_factory=dict)
    events: list[SessionEvent] = field(default_factory=list)
    committed: list[SessionEvent] = field(default_factory=list)
    visits: dict[Address, int] = field(default_factory=dict)
    """How many loops each address has started in the run (a loop agent's iterations, say): what tells a tool call
    from one with the same id, turn and address in an earlier run of the same agent. Shared by parallel branches
    (their addresses differ) and saved in checkpoints."""

    def history(self) -> list[SessionEvent]:
        return [*self.committed, *self.events] if self.committed else self.events

    def fork(self) -> RunSession:
        return RunSession(values=self.values, committed=self.history(), visits=self.visits)


@dataclass(frozen=True, slots=True)
class RunScope:
    """What packages above the runtime hang on a run for the code deep inside it, one value per class, looked up by
    class (``get``): a graph agent's or a team's hosted run (``batonflow.graph.HostRun``), say. The runtime cannot
    name those classes (they live above it), hence a typed lookup rather than fields. Immutable: ``with_value``
    gives a new scope, so a nested run that adds its own leaves the outer run's as it was."""

    values: tuple[object, ...] = ()

    def get(self, kind: type[T]) -> T | None:
        """The value of class ``kind`` (or of a subclass) added last, or None."""
        for value in reversed(self.values):
            if isinstance(value, kind):
                return value
        return None

    def with_value(self, value: object) -> RunScope:
        """This scope with ``value`` added, in place of a value of the very same class."""
        kept = tuple(v for v in self.values if type(v) is not type(value))
        return RunScope((*kept, value))


_NO_SCOPE = RunScope()


@dataclass(slots=True, kw_only=True)
class RunContext:
    """One agent's view of a run: the shared session plus where this agent stands (its run path).

    ``child(name)`` gives the context for an agent one step further down; the session stays shared.
    """

    session: RunSession = field(default_factory=RunSession)
    run_path: tuple[RunStep, ...] = ()
    root_input: AgentInput | None = None
    enable_streaming: bool = False
    skip_transfer_messages: bool = False
    # Where this agent sits for interrupts (``agent:a;agent:b``). Unlike the run path it does not accumulate
    # the siblings that ran before in a sequence (as in Eino's SequentialAgent).
    address: Address = ()
    # Set while resuming: the saved interrupts and the resume's targets.
    resume: ResumePoints | None = None
    # Where trace events go; None (the usual case) when the run has no trace callbacks. A context created
    # inside a traced tool call (an agent tool's inner run) joins that call's trace.
    trace: TraceScope | None = field(default_factory=current_scope, repr=False, compare=False)
    # Names the run across its interrupts and resumes (the tools' idempotency keys start with it); "" outside a
    # Runner.
    run_id: str = ""
    # The run's step log: the model and tool steps replay what it holds and record what finishes. Set by the
    # Runner while resuming (the journal) and under a worker's recorder (``recording_steps``), chained when both.
    steps: StepLog | None = field(default=None, repr=False, compare=False)
    # Where the run's distributed branches go (a ``ParallelAgent(distribute=True)``'s, a graph agent's nodes marked
    # ``distribute``): a worker pool's dispatcher, or None (they run here). A context made inside ``dispatching``
    # takes the dispatcher installed there.
    dispatcher: BranchDispatcher | None = field(default_factory=current_dispatcher, repr=False, compare=False)
    # What the packages above the runtime hang on the run (see ``RunScope``).
    scope: RunScope = field(default=_NO_SCOPE, repr=False, compare=False)

    def child(self, agent_name: str) -> RunContext:
        # Spelled out rather than dataclasses.replace: every agent of every run comes through here.
        step, segment = _agent_steps(agent_name)
        return RunContext(
            session=self.session,
            run_path=(*self.run_path, step),
            root_input=self.root_input,
            enable_streaming=self.enable_streaming,
            skip_transfer_messages=self.skip_transfer_messages,
            address=(*self.address, segment),
            resume=self.resume,
            trace=self.trace,
            run_id=self.run_id,
            steps=self.steps,
            dispatcher=self.dispatcher,
            scope=self.scope,
        )

    def scoped(self, value: object) -> RunContext:
        """This context with ``value`` in its scope (``RunScope.with_value``); this one is left as it was."""
        return replace(self, scope=self.scope.with_value(value))

    # -- interrupts and resume (Eino's GetInterruptState and GetResumeContext) ----------------------------------

    def get_interrupt_state(self) -> InterruptState:
        """Whether this agent was interrupted in the run being resumed, and the state it saved."""
        return self.interrupt_state(self.address)

    def get_resume_context(self) -> ResumeContext:
        """Whether the resume targets this agent (or an interrupt below it), and the data given to it."""
        return self.resume_context(self.address)

    def interrupt_state(self, address: Address) -> InterruptState:
        return self.resume.interrupt_state(address) if self.resume is not None else InterruptState()

    def resume_context(self, address: Address) -> ResumeContext:
        return self.resume.resume_context(address) if self.resume is not None else ResumeContext()

    def interrupt_id(self, address: Address) -> str | None:
        """The id an interrupt at ``address`` had before, so that re-interrupting keeps it stable."""
        return self.resume.interrupt_id(address) if self.resume is not None else None

    def enter(self, address: Address) -> tuple[InterruptState, ResumeContext, str | None]:
        """A tool call (or a tool batch) starting at ``address``: its saved interrupt state, its resume context and
        the id to interrupt again with, each handed out once in a resume (``ResumePoints.enter``)."""
        if self.resume is None:
            return _FRESH
        return self.resume.enter(address)

    # -- session values (Eino's AddSessionValue & co.) ----------------------------------------------------------

    def add_session_value(self, key: str, value: Any) -> None:
        self.session.values[key] = value

    def add_session_values(self, values: Mapping[str, Any]) -> None:
        self.session.values.update(values)

    def get_session_value(self, key: str, default: Any = None) -> Any:
        return self.session.values.get(key, default)

    def get_session_values(self) -> dict[str, Any]:
        """A copy: changing it does not change the session."""
        return dict(self.session.values)

    # -- history -------------------------------------------------------------------------------------------------

    def record(self, event: AgentEvent) -> None:
        """Add ``event`` to the session history (the flow agent decides which events belong there)."""
        variant = event.output.message_output if event.output is not None else None
        if variant is None:
            return
        entry = SessionEvent(agent_name=event.agent_name, run_path=event.run_path, action=event.action)
        if not variant.is_streaming:
            entry.message = variant.message
        elif variant._joined is not None:
            entry._pending = variant._joined
        else:
            # Someone else's stream: keep every chunk for the history.
            assert variant.message_stream is not None
            variant.message_stream, entry._pending = variant.message_stream.tap()
            variant._kept = entry._pending
        self.session.events.append(entry)


_FRESH: tuple[InterruptState, ResumeContext, str | None] = (InterruptState(), ResumeContext(), None)


@functools.lru_cache(maxsize=1024)
def _agent_steps(agent_name: str) -> tuple[RunStep, AddressSegment]:
    """An agent's run-path step and address segment: immutable, so made once per name and shared."""
    return RunStep(agent_name), AddressSegment("agent", agent_name)

"""Interrupts at the agent layer, and what the caller and a resumed agent see of them, as in Eino.

An agent interrupts by yielding the event that ``interrupt``, ``stateful_interrupt`` or ``composite_interrupt``
builds; a tool does it by calling ``ToolContext.interrupt``. The caller gets ``InterruptInfo``: the root causes,
each with its chain of parents. The Runner saves every signal's address and state in the checkpoint; on resume,
``ResumePoints`` answers each component's questions (was I interrupted? am I a target? with what data?).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..codec import register_type
from ..errors import UserError
from ..schema import Address, format_address
from ..tools import InterruptSignal, InterruptState, ResumeContext
from ._events import AgentAction, AgentEvent

__all__ = [
    "InterruptCtx",
    "InterruptInfo",
    "InterruptRecord",
    "ResumeInfo",
    "ResumePoints",
    "composite_interrupt",
    "interrupt",
    "interrupt_contexts",
    "stateful_interrupt",
]


@dataclass(slots=True, kw_only=True)
class InterruptCtx:
    """One interrupt as the caller sees it. ``id`` is what ``Runner.resume(targets={id: data})`` takes."""

    id: str
    address: str
    info: Any
    is_root_cause: bool
    parent: InterruptCtx | None = None


@dataclass(slots=True, kw_only=True)
class InterruptInfo:
    """The ``interrupted`` action of an event: the info of the outermost interrupt, and the root causes."""

    data: Any = None
    interrupt_contexts: list[InterruptCtx] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class ResumeInfo:
    """What a resumed agent is told about itself."""

    enable_streaming: bool = False
    was_interrupted: bool = False
    interrupt_state: Any = None
    is_resume_target: bool = False
    resume_data: Any = None


@dataclass(slots=True, kw_only=True)
class InterruptRecord:
    """One saved interrupt: the flattened form of a signal tree, as a checkpoint stores it."""

    id: str
    address: Address
    info: Any = None
    state: Any = None
    parent_id: str | None = None


register_type(InterruptRecord, name="InterruptRecord")


def interrupt(ctx: Any, info: Any) -> AgentEvent:
    """An event that stops the run at this agent; ``ctx`` is the agent's RunContext."""
    return stateful_interrupt(ctx, info, None)


def stateful_interrupt(ctx: Any, info: Any, state: Any) -> AgentEvent:
    """An interrupt event that saves ``state``; the agent finds it again with ``ctx.get_interrupt_state()``."""
    return composite_interrupt(ctx, info, state)


def composite_interrupt(ctx: Any, info: Any, state: Any, *subs: InterruptSignal) -> AgentEvent:
    """An interrupt event wrapping the interrupts of components below this agent."""
    address: Address = ctx.address
    signal = InterruptSignal(info, address=address, state=state, subs=subs, id=ctx.interrupt_id(address))
    return AgentEvent(action=interrupted_action(signal, info))


def interrupted_action(signal: InterruptSignal, data: Any) -> AgentAction:
    """The action of an interrupt event, its contexts filled in from the start (as in Eino), so that an agent that
    runs another sees them in the events it passes on; the Runner computes them again for the outermost signal."""
    info = InterruptInfo(data=data, interrupt_contexts=interrupt_contexts(signal))
    return AgentAction(interrupted=info, signal=signal)


def interrupt_contexts(signal: InterruptSignal) -> list[InterruptCtx]:
    """The root causes of ``signal``'s tree, each linked to its parents."""
    found: list[InterruptCtx] = []

    def visit(node: InterruptSignal, parent: InterruptCtx | None) -> None:
        ctx = InterruptCtx(
            id=node.id,
            address=format_address(node.address),
            info=node.info,
            is_root_cause=node.is_root_cause,
            parent=parent,
        )
        if node.is_root_cause:
            found.append(ctx)
        for sub in node.subs:
            visit(sub, ctx)

    visit(signal, None)
    return found


def flatten(signal: InterruptSignal) -> list[InterruptRecord]:
    records: list[InterruptRecord] = []

    def visit(node: InterruptSignal, parent_id: str | None) -> None:
        records.append(
            InterruptRecord(id=node.id, address=node.address, info=node.info, state=node.state, parent_id=parent_id)
        )
        for sub in node.subs:
            visit(sub, node.id)

    visit(signal, None)
    return records


class ResumePoints:
    """The interrupts of the run being resumed, and the resume's targets."""

    def __init__(self, records: list[InterruptRecord], targets: dict[str, Any] | None) -> None:
        self.by_address = {r.address: r for r in records}
        self.targets = dict(targets or {})
        _check_targets(records, self.targets)
        self._target_addresses = [r.address for r in records if r.id in self.targets]
        # The interrupts whose state a component has taken, and the targets whose data it has: each once.
        self._entered: set[str] = set()
        self._answered: set[str] = set()

    def enter(self, address: Address) -> tuple[InterruptState, ResumeContext, str | None]:
        """What a component that starts at ``address`` (a tool call) gets: the saved interrupt there — its state,
        and its id for an interrupt raised again — and, when it is a target, the resume data. Each saved interrupt
        and each datum is handed out once, as in Eino: a later turn that calls the same tool with the same call id
        (models reuse ids) starts afresh instead of taking the earlier call's state and answer."""
        record = self.by_address.get(address)
        if record is None or record.id in self._entered:
            return _NOT_INTERRUPTED, self._conduit(address), None
        self._entered.add(record.id)
        state = InterruptState(was_interrupted=True, state=record.state)
        if record.id in self.targets and record.id not in self._answered:
            self._answered.add(record.id)
            self._target_addresses.remove(record.address)
            return state, ResumeContext(is_resume_target=True, data=self.targets[record.id], has_data=True), record.id
        return state, self._conduit(address), record.id

    def interrupt_state(self, address: Address) -> InterruptState:
        record = self.by_address.get(address)
        return InterruptState(was_interrupted=True, state=record.state) if record else InterruptState()

    def resume_context(self, address: Address) -> ResumeContext:
        record = self.by_address.get(address)
        if record is not None and record.id in self.targets and record.id not in self._answered:
            return ResumeContext(is_resume_target=True, data=self.targets[record.id], has_data=True)
        return self._conduit(address)

    def _conduit(self, address: Address) -> ResumeContext:
        """A target whose data is still to be handed out lies below ``address``: the component there leads to it."""
        n = len(address)
        if any(len(t) > n and t[:n] == address for t in self._target_addresses):
            return _CONDUIT
        return _NOT_TARGETED

    def interrupt_id(self, address: Address) -> str | None:
        record = self.by_address.get(address)
        return record.id if record else None

    def consume(self, address: Address) -> None:
        """Forget the interrupts at and below ``address`` once resumed there: a later visit of the same address
        (the next iteration of a loop, say) is a fresh run, not a resume."""
        n = len(address)
        for key in [a for a in self.by_address if a[:n] == address]:
            del self.by_address[key]
        self._target_addresses = [a for a in self._target_addresses if a[:n] != address]

    def next_steps(self, address: Address) -> list[str]:
        """The names of the agents one step below ``address`` on the way to an interrupt."""
        n = len(address)
        names = {a[n].id for a in self.by_address if len(a) > n and a[:n] == address and a[n].kind == "agent"}
        return sorted(names)


def _check_targets(records: list[InterruptRecord], targets: dict[str, Any]) -> None:
    """Refuse targets that would resume nothing: ids the checkpoint does not hold, and an interrupt that only wraps
    others (an agent's, whose tools wait below it) targeted without any of its root causes, which would then all
    be asked again while the caller believes they were answered."""
    children: dict[str | None, list[InterruptRecord]] = {}
    for record in records:
        children.setdefault(record.parent_id, []).append(record)

    def roots_below(record: InterruptRecord) -> list[InterruptRecord]:
        below = children.get(record.id, [])
        return [record] if not below else [root for child in below for root in roots_below(child)]

    unknown = sorted(set(targets) - {r.id for r in records})
    if unknown:
        ids = sorted(r.id for r in records if r.id not in children)
        raise UserError(f"resume targets: expected interrupt ids among the root causes {ids}, got unknown {unknown}")
    for record in records:
        if record.id not in targets or record.id not in children:
            continue
        roots = sorted(roots_below(record), key=lambda r: format_address(r.address))
        if not any(root.id in targets for root in roots):
            named = ", ".join(f"{root.id!r} at {format_address(root.address)}" for root in roots)
            raise UserError(
                "resume targets: expected the ids of root causes (the interrupts that wait for an answer), got "
                f"{record.id!r} of {format_address(record.address)}, which wraps the root causes [{named}]: target "
                "those, and give the agent's own data (ChatModelAgentResumeData) alongside them"
            )


_NOT_INTERRUPTED = InterruptState()
_NOT_TARGETED = ResumeContext()
_CONDUIT = ResumeContext(is_resume_target=True)

"""``ToolContext``: the seam through which a running tool reaches the run that called it.

A tool receives one per call (declare a parameter annotated ``ToolContext`` in a ``@tool`` function). Today it
carries the call's identity and the run's shared session values; the agent runtime fills in ``run`` (its run
context: interrupts, resume data, actions) so that tools never need globals to find their run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from ..schema import Address, AddressSegment, format_address
from ._interrupt import InterruptSignal, InterruptState, ResumeContext

__all__ = ["ToolContext"]


@dataclass(slots=True, kw_only=True, eq=False)
class ToolContext:
    """One tool call's view of its run.

    ``session_values`` is the run's shared, mutable dict: values added here are seen by the rest of the run
    (other tools, later agents). ``run`` is the runtime's run context, opaque to tools for now.
    """

    tool_name: str
    call_id: str = ""
    session_values: dict[str, Any] = field(default_factory=dict, repr=False)
    run: Any = field(default=None, repr=False)
    # An action for the agent runtime to attach to this call's result event (transfer, exit, …): the
    # Python form of Eino's SendToolGenAction, keyed by the call because the context is the call's own.
    action: Any = field(default=None, repr=False)
    # The calling agent's transcript up to this call, for tools that pass a conversation on (an agent tool).
    history: list[Any] = field(default_factory=list, repr=False)
    # Sends an event to the caller of the run while the tool runs (an agent tool's inner events); None when
    # nobody listens.
    emit: Callable[[Any], object] | None = field(default=None, repr=False)
    # Which model turn, of which run of the calling agent at its address, asked for this call ("<run>.<turn>"):
    # with the address, what tells this call from one with the same id in another turn (models reuse ids).
    step: str = field(default="", repr=False)
    # What this call found at its address on resume (state, resume context, interrupt id), taken once per call:
    # a later call at the same address (the same call id in a later turn) does not get it again.
    _entry: tuple[InterruptState, ResumeContext, str | None] | None = field(default=None, init=False, repr=False)

    @property
    def idempotency_key(self) -> str:
        """A key for this call's side effects: the same each time this call runs, different for every other call.

        The same in the call that interrupted and in its resume, and in a resume retried after a crash or an error
        (which runs again the tools whose results were not saved yet); different for another call, turn, agent or
        run. Give it to the service a side effect goes to (a payment API's idempotency key, a unique column) so that
        a call run twice takes effect once. Its length is fixed (65 characters in a run). Outside a Runner (no
        ``run``) it only tells calls apart by address and step.
        """
        where = f"{format_address(self.address)}|{self.step}".encode()
        digest = hashlib.blake2b(where, digest_size=16).hexdigest()
        run_id = getattr(self.run, "run_id", "") if self.run is not None else ""
        return f"{run_id}-{digest}" if run_id else digest

    def get_session_value(self, key: str, default: Any = None) -> Any:
        """The session value stored under ``key``, or ``default``."""
        return self.session_values.get(key, default)

    def get_session_values(self) -> dict[str, Any]:
        """A copy of all session values; changing it does not change the session."""
        return dict(self.session_values)

    def add_session_value(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key`` for the rest of the run."""
        self.session_values[key] = value

    def add_session_values(self, values: Mapping[str, Any]) -> None:
        """Store every item of ``values`` for the rest of the run."""
        self.session_values.update(values)

    # -- interrupts (Eino's tool.Interrupt & co.): the run context answers; without a run, nothing resumes ------

    @property
    def address(self) -> Address:
        """Where this call sits in the run: the agent's address plus ``tool:<name>:<call id>``."""
        base: Address = self.run.address if self.run is not None else ()
        return (*base, AddressSegment("tool", self.tool_name, self.call_id))

    def ask(self, info: Any, state: Any = None) -> Any:
        """Wait for an answer from the caller (a person's approval, say) and return it.

        The first time, this interrupts the run with ``info``, saving ``state``. On a resume that targets this call
        (``Runner.resume(checkpoint_id, targets={interrupt_id: answer})``) it returns ``answer``. On any other
        resume (another pending call was answered, or no targets were given) it interrupts again, under the same
        id and with the state saved the first time (``get_interrupt_state().state``), so that a question is never
        taken as answered when it was not. Written with the low-level calls, it is::

            saved = ctx.get_interrupt_state()
            if not saved.was_interrupted:
                ctx.interrupt(info, state)
            target = ctx.get_resume_context()
            if not (target.is_resume_target and target.has_data):
                ctx.interrupt(info, saved.state)
            return target.data
        """
        saved = self.get_interrupt_state()
        if not saved.was_interrupted:
            self.interrupt(info, state)
        target = self.get_resume_context()
        if not (target.is_resume_target and target.has_data):
            self.interrupt(info, saved.state)
        return target.data

    def interrupt(self, info: Any, state: Any = None) -> NoReturn:
        """Stop the run here and wait; ``info`` is shown to the caller, ``state`` comes back on resume.

        An interrupt raised again at the same place on resume keeps its id, so callers can keep targeting it. A
        tool that interrupts must, on a resume that does not target it, interrupt again (``ask`` does both).
        """
        raise InterruptSignal(info, address=self.address, state=state, id=self._entered()[2])

    def composite_interrupt(self, info: Any, state: Any, *subs: InterruptSignal) -> NoReturn:
        """An interrupt that wraps interrupts from below (an agent run inside this tool, say)."""
        raise InterruptSignal(info, address=self.address, state=state, subs=subs, id=self._entered()[2])

    def get_interrupt_state(self) -> InterruptState:
        """Whether this call was interrupted in the run being resumed, and the state it saved."""
        return self._entered()[0]

    def get_resume_context(self) -> ResumeContext:
        """Whether the resume targets this call, and the data given to it."""
        return self._entered()[1]

    def _entered(self) -> tuple[InterruptState, ResumeContext, str | None]:
        entry = self._entry
        if entry is None:
            entry = self._entry = self.run.enter(self.address) if self.run is not None else _OUTSIDE
        return entry


_OUTSIDE: tuple[InterruptState, ResumeContext, str | None] = (InterruptState(), ResumeContext(), None)

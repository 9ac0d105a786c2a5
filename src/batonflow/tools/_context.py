"""``ToolContext``: the seam through which a running tool reaches the run that called it.

A tool receives one per call (declare a parameter annotated ``ToolContext`` in a ``@tool`` function). Today it
carries the call's identity and the run's shared session values; the agent runtime fills in ``run`` (its run
context: interrupts, resume data, actions) so that tools never need globals to find their run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

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

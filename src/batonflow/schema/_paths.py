"""Where something happens in a run: the run path of agents an event came through, and the address of a component
that interrupted.

Both are plain values that events, trace events, checkpoints and tools all carry, so they live here with the
messages, below every package that uses them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Address", "AddressSegment", "RunStep", "format_address"]


@dataclass(frozen=True, slots=True)
class RunStep:
    """One agent on a run path. Read-only: the framework sets run paths, user code never rewrites them."""

    agent_name: str

    def __str__(self) -> str:
        return self.agent_name


@dataclass(frozen=True, slots=True)
class AddressSegment:
    """One step of an address: ``agent:<name>`` or ``tool:<name>:<call id>``."""

    kind: str
    id: str
    sub_id: str = ""

    def __str__(self) -> str:
        return f"{self.kind}:{self.id}:{self.sub_id}" if self.sub_id else f"{self.kind}:{self.id}"


Address = tuple[AddressSegment, ...]
"""Where an interrupt happened, outermost first: ``agent:router;agent:refund;tool:approve:call_1``."""


def format_address(address: Address) -> str:
    return ";".join(str(s) for s in address)

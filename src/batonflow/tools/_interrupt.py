"""Interrupt signals: how a tool or an agent stops a run to wait for someone (Eino's interrupt signals).

A signal is not an error: it carries a stable id, the address of the component that raised it
(``agent:router;agent:refund;tool:approve:call_1``), what it asks (``info``), the state it needs to continue,
and, for a composite, the signals of the components below it. The runtime saves the tree in a checkpoint; on
resume each component finds its saved state at its address, and learns whether the resume targets it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from ..schema import Address, format_address

__all__ = ["InterruptSignal", "InterruptState", "ResumeContext"]


class InterruptSignal(BaseException):
    """Raised inside a tool (``ToolContext.interrupt``) or carried by an agent's interrupt event.

    A ``BaseException``, like ``asyncio.CancelledError``: it is control flow, not an error, so an ordinary
    ``except Exception`` in a tool or a middleware lets it through to the loop, which waits for the person.
    """

    def __init__(
        self,
        info: Any,
        *,
        address: Address,
        state: Any = None,
        subs: tuple[InterruptSignal, ...] = (),
        id: str | None = None,
    ) -> None:
        super().__init__(f"interrupted at {format_address(address)}: {info!r}")
        self.id = id or uuid.uuid4().hex
        self.info = info
        self.address = address
        self.state = state
        self.subs = subs

    @property
    def is_root_cause(self) -> bool:
        return not self.subs

    def walk(self) -> list[InterruptSignal]:
        """This signal and every signal below it, parents before children."""
        found = [self]
        for sub in self.subs:
            found.extend(sub.walk())
        return found


@dataclass(frozen=True, slots=True)
class InterruptState:
    """What a resumed component finds at its address: was it interrupted, and the state it saved."""

    was_interrupted: bool = False
    state: Any = None


@dataclass(frozen=True, slots=True)
class ResumeContext:
    """Whether a resume targets this component (directly or as a conduit to a target below it), and the data
    given to it. With no targets at all, every interrupted component sees ``is_resume_target=False``."""

    is_resume_target: bool = False
    data: Any = None
    has_data: bool = field(default=False)

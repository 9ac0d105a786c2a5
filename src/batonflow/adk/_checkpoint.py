"""What a checkpoint holds, and how it is written and read (docs/architecture.md: how a checkpoint travels).

One checkpoint per run, replaced on each interrupt: the root input, the session (values and recorded events,
streams already joined), the streaming mode, and the interrupts with their saved states. Its size grows with
the conversation, linearly: there is no history of checkpoints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import UserError
from ..schema import Address, Message
from ..store import DecodeLimits, decode, encode_async, register_type
from ..tools import InterruptSignal
from ._context import RunContext, SessionEvent
from ._interrupt import InterruptRecord, flatten

__all__ = ["Checkpoint", "decode_checkpoint", "encode_checkpoint"]


@dataclass(slots=True, kw_only=True)
class Checkpoint:
    root_messages: list[Message]
    enable_streaming: bool = False
    values: dict[str, Any] = field(default_factory=dict)
    events: list[SessionEvent] = field(default_factory=list)
    interrupts: list[InterruptRecord] = field(default_factory=list)
    run_id: str = ""
    """The run's id, the same in all its checkpoints ("" in those of releases before it had one)."""
    visits: dict[Address, int] = field(default_factory=dict)
    """The run session's ``visits``."""


# Everything a checkpoint holds registers in its own module, under the name stored checkpoints use.
register_type(Checkpoint, name="Checkpoint")


def limits_of(store: object) -> DecodeLimits:
    """The decode limits a checkpoint store was given; the defaults for a store that has none (any object with
    the store's methods is a store)."""
    limits = getattr(store, "limits", None)
    return limits if isinstance(limits, DecodeLimits) else _DEFAULT_LIMITS


_DEFAULT_LIMITS = DecodeLimits()


async def encode_checkpoint(ctx: RunContext, signal: InterruptSignal, store: object = None) -> bytes:
    """The bytes of a checkpoint for a run stopped by ``signal``, to be saved in ``store`` (which decodes within
    its limits: a checkpoint past them fails now, not at the resume); streamed messages are joined first. Each
    message is written once, though the recorded events and the agents' saved states both hold it; a long
    checkpoint is compressed off the event loop."""
    assert ctx.root_input is not None
    events = []
    for recorded in ctx.session.history():
        await recorded.get_message()
        events.append(recorded)
    checkpoint = Checkpoint(
        root_messages=list(ctx.root_input.messages),
        enable_streaming=ctx.enable_streaming,
        values=dict(ctx.session.values),
        events=events,
        interrupts=flatten(signal),
        run_id=ctx.run_id,
        visits=dict(ctx.session.visits),
    )
    return await encode_async(checkpoint, limits=limits_of(store))


def decode_checkpoint(data: bytes, store: object = None) -> Checkpoint:
    """The checkpoint in ``data``, read from ``store`` and decoded within its limits."""
    checkpoint = decode(data, limits=limits_of(store))
    if not isinstance(checkpoint, Checkpoint):
        raise UserError(f"not a checkpoint: expected a Checkpoint, got {type(checkpoint).__name__}")
    return checkpoint

"""What a checkpoint holds, and how it is written and read (docs/architecture.md: how a checkpoint travels).

One checkpoint per run, replaced on each interrupt: the root input, the session (values and recorded events,
streams already joined), the streaming mode, and the interrupts with their saved states. Its size grows with
the conversation, linearly: there is no history of checkpoints. A long history is saved in parts that later
checkpoints of the run refer to (``_parts``), so that an interrupt writes what happened since the last one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..codec import DecodeLimits, encode_async, register_type
from ..errors import UserError
from ..schema import Address, Message
from ..tools import InterruptSignal
from ._context import RunContext, SessionEvent
from ._interrupt import InterruptRecord, flatten
from ._parts import HistoryChain

__all__ = ["Checkpoint", "PendingCheckpoint", "encode_checkpoint", "keeps_parts", "load_checkpoint", "read_pending"]


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


def keeps_parts(store: object) -> bool:
    """Whether a run's history goes to ``store`` in parts (``_parts``): yes, unless the store says
    ``history_parts = False`` (a conversation's session snapshot, which is written whole anyway)."""
    return getattr(store, "history_parts", True) is not False


async def encode_checkpoint(
    ctx: RunContext,
    signal: InterruptSignal,
    store: object = None,
    *,
    chain: HistoryChain | None = None,
    checkpoint_id: str = "",
    write: Callable[[str, bytes], Awaitable[None]] | None = None,
) -> bytes:
    """The bytes of a checkpoint for a run stopped by ``signal``, to be saved in ``store`` (which decodes within
    its limits: a checkpoint past them fails now, not at the resume); streamed messages are joined first. Each
    message is written once, though the recorded events and the agents' saved states both hold it; a long
    checkpoint is compressed off the event loop.

    With ``chain``, the history is saved in parts: the events since the last part become a new one once there are
    enough of them, written with ``write`` before the checkpoint that refers to them."""
    assert ctx.root_input is not None
    events = []
    for recorded in ctx.session.history():
        await recorded.get_message()
        events.append(recorded)

    def head(tail: list[SessionEvent]) -> Checkpoint:
        assert ctx.root_input is not None
        return Checkpoint(
            root_messages=list(ctx.root_input.messages),
            enable_streaming=ctx.enable_streaming,
            values=dict(ctx.session.values),
            events=tail,
            interrupts=flatten(signal),
            run_id=ctx.run_id,
            visits=dict(ctx.session.visits),
        )

    limits = limits_of(store)
    if chain is None or write is None:
        return await encode_async(head(events), limits=limits)
    return await chain.encode(checkpoint_id, head, events, write, limits)


async def load_checkpoint(
    data: bytes, store: Any, checkpoint_id: str, part_events: int
) -> tuple[Checkpoint, HistoryChain]:
    """The checkpoint in ``data``, with the parts of its history read from ``store``, and the chain of those parts
    (for the next checkpoint of the run to refer to, cutting a part every ``part_events`` events)."""
    where = f"checkpoint[{checkpoint_id}]"
    value, chain = await HistoryChain.load(data, store.get, where, limits_of(store), part_events)
    if not isinstance(value, Checkpoint):
        raise UserError(f"not a checkpoint: expected a Checkpoint, got {type(value).__name__}")
    checkpoint = value
    if chain.events:
        checkpoint.events = [*chain.events, *checkpoint.events]
    return checkpoint, chain


@dataclass(frozen=True, slots=True)
class PendingCheckpoint:
    """What a pending checkpoint says of its run: the run's id, and the ids of the interrupts that wait for an
    answer (the root causes, in the order the run reported them)."""

    run_id: str
    interrupt_ids: tuple[str, ...]


async def read_pending(store: Any, checkpoint_id: str) -> PendingCheckpoint | None:
    """The pending run ``store`` holds under ``checkpoint_id``, None when it holds none."""
    data = await store.get(checkpoint_id)
    if data is None:
        return None
    checkpoint, _ = await load_checkpoint(data, store, checkpoint_id, 0)
    parents = {record.parent_id for record in checkpoint.interrupts}
    roots = tuple(record.id for record in checkpoint.interrupts if record.id not in parents)
    return PendingCheckpoint(run_id=checkpoint.run_id, interrupt_ids=roots)

"""A run's history saved in parts: what an interrupt writes is proportional to what happened since the last one.

A checkpoint holds the run's whole recorded history, and the loops' saved states hold its messages again. Written
as one payload, every interrupt of a long run re-encodes and re-writes all of it. So once the events recorded
since the last part reach ``PART_EVENTS``, they are written as a part of their own, under a key named by its
digest, and never again: the checkpoint itself (the head) keeps only the events after the last part and refers
to the messages of the parts (a chain of payloads, ``batonflow.codec.SharedObjects``). The head starts with the
manifest of its parts, so that a resume reads them, checks each against its digest and decodes them in order,
before the head.

The parts of a run are the prefix of its history that they hold: the recorded history only grows, and a saved
part is checked to still be that prefix (by identity) before the next head refers to it. A history that changed
below a part starts a new chain.
"""

from __future__ import annotations

import asyncio
import struct
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..codec import DecodeLimits, SharedObjects, decode, encode, encode_async, register_type
from ..errors import CodecError
from ._context import SessionEvent
from ._journal import base_digest

__all__ = ["PART_EVENTS", "RECENT_EVENTS", "HistoryChain", "HistoryPart", "part_key"]

PART_EVENTS = 256
"""How many events a part holds at least, by default (``Runner(history_part_events=...)``). The head re-writes up
to this many events on each interrupt; a resume reads one part per this many events (concurrently)."""

_MAGIC = b"BFH"
_LENGTH = struct.Struct(">I")

RECENT_EVENTS = 20_000
"""How many events of recently written or read parts this process keeps decoded, so that resuming a run here again
checks its parts' bytes against their digests but decodes only what came after them."""


class _Recent:
    """The decoded events and shared objects of recent parts, by key (least recently used dropped first). A part's
    key names its bytes, and the objects of a saved history are not changed, so a part read again whose bytes
    match its digest is what is kept here."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0
        self.parts: OrderedDict[str, tuple[list[SessionEvent], list[Any]]] = OrderedDict()

    def get(self, key: str) -> tuple[list[SessionEvent], list[Any]] | None:
        found = self.parts.get(key)
        if found is not None:
            self.parts.move_to_end(key)
        return found

    def put(self, key: str, events: list[SessionEvent], objects: list[Any]) -> None:
        if key in self.parts or len(events) > self.limit:
            return
        self.parts[key] = (events, objects)
        self.held += len(events)
        while self.held > self.limit:
            _, (dropped, _) = self.parts.popitem(last=False)
            self.held -= len(dropped)


_recent = _Recent(RECENT_EVENTS)


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryPart:
    """One saved part of a run's history: where it is, how many events it holds, how many shared objects the chain
    has once it is decoded, and the digest of its bytes."""

    key: str
    events: int
    objects: int
    digest: str


register_type(HistoryPart, name="HistoryPart")


def part_key(checkpoint_id: str, digest: str) -> str:
    """Where a part of ``checkpoint_id``'s history is kept: named by the checkpoint and the part's digest, so that
    a part is never overwritten (a runner that lost its lease cannot spoil the parts of the one that has it)."""
    return f"batonflow-history:{base_digest(checkpoint_id.encode('utf-8'))}:{digest}"


class HistoryChain:
    """The parts of one run's history saved so far: their records, the events they hold (the history's prefix)
    and the shared objects they number. The Runner keeps one per run or resume; ``load`` reads a head's."""

    __slots__ = ("events", "part_events", "parts", "shared", "stale")

    def __init__(self, part_events: int = PART_EVENTS) -> None:
        self.part_events = part_events
        self.parts: list[HistoryPart] = []
        self.events: list[SessionEvent] = []
        self.shared = SharedObjects()
        self.stale: list[str] = []  # keys of parts no head refers to any more: deleted once the next head is saved

    def holds_prefix_of(self, history: Sequence[SessionEvent]) -> bool:
        events = self.events
        if len(history) < len(events):
            return False
        return all(a is b for a, b in zip(events, history, strict=False))

    def restart(self) -> None:
        self.stale.extend(part.key for part in self.parts)
        self.parts, self.events, self.shared = [], [], SharedObjects()

    async def encode(
        self,
        checkpoint_id: str,
        head: Callable[[list[SessionEvent]], Any],
        history: list[SessionEvent],
        write: Callable[[str, bytes], Awaitable[None]],
        limits: DecodeLimits,
    ) -> bytes:
        """The bytes of the head that ``head(tail)`` builds from the events after the parts; the events since the
        last part are written as a new part first (``write``) once there are ``part_events`` of them."""
        if not self.holds_prefix_of(history):
            self.restart()
        tail = history[len(self.events) :]
        if len(tail) >= self.part_events:
            data = await encode_async(tail, what="history part", limits=limits, shared=self.shared)
            digest = base_digest(data)
            part = HistoryPart(
                key=part_key(checkpoint_id, digest), events=len(tail), objects=len(self.shared), digest=digest
            )
            start = self.parts[-1].objects if self.parts else 0
            try:
                await write(part.key, data)
            except BaseException:
                self.shared.truncate(start)
                raise
            self.parts.append(part)
            self.events.extend(tail)
            _recent.put(part.key, tail, self.shared.objects[start:])
            tail = []
        if not self.parts:
            return await encode_async(head(tail), limits=limits)
        manifest = encode(self.parts, what="history manifest", limits=limits)
        body = await encode_async(head(tail), limits=limits, shared=self.shared, extend=False)
        return b"".join((_MAGIC, _LENGTH.pack(len(manifest)), manifest, body))

    @classmethod
    async def load(
        cls,
        data: bytes,
        read: Callable[[str], Awaitable[bytes | None]],
        where: str,
        limits: DecodeLimits,
        part_events: int = PART_EVENTS,
    ) -> tuple[Any, HistoryChain]:
        """The value of a head and the chain of parts it refers to, read with ``read`` and checked against the
        manifest; ``where`` names the checkpoint in errors. A head without parts is an ordinary payload."""
        chain = cls(part_events)
        if not data.startswith(_MAGIC):
            return decode(data, limits=limits), chain
        start = len(_MAGIC) + _LENGTH.size
        if len(data) < start:
            raise CodecError(f"cannot decode {where}: expected a history manifest, got {len(data)} bytes")
        (size,) = _LENGTH.unpack_from(data, len(_MAGIC))
        parts = decode(data[start : start + size], what=f"{where}'s history manifest", limits=limits)
        if not isinstance(parts, list) or not all(isinstance(p, HistoryPart) for p in parts):
            raise CodecError(f"cannot decode {where}: expected its history manifest as a list of parts, got {parts!r}")
        found = await asyncio.gather(*(read(part.key) for part in parts))
        for n, (part, part_data) in enumerate(zip(parts, found, strict=True), 1):
            what = f"{where}'s history part {n} of {len(parts)} ({part.key})"
            if part_data is None:
                raise CodecError(f"cannot decode {what}: expected it in the store, found nothing there")
            if base_digest(part_data) != part.digest:
                raise CodecError(f"cannot decode {what}: its bytes do not match the digest the checkpoint recorded")
            first = len(chain.shared)
            recent = _recent.get(part.key)
            if recent is not None and first + len(recent[1]) == part.objects:
                events = recent[0]
                chain.shared.objects.extend(recent[1])
                chain.shared.adopt(first)
            else:
                events = decode(part_data, what=what, limits=limits, shared=chain.shared)
            if (
                not isinstance(events, list)
                or len(events) != part.events
                or not all(isinstance(e, SessionEvent) for e in events)
                or len(chain.shared) != part.objects
            ):
                raise CodecError(f"cannot decode {what}: expected {part.events} recorded events, got {events!r:.200}")
            _recent.put(part.key, events, chain.shared.objects[first:])
            chain.events.extend(events)
        chain.parts = parts
        mark = len(chain.shared)
        value = decode(data[start + size :], what=where, limits=limits, shared=chain.shared)
        chain.shared.truncate(mark)  # the head's own objects are written again with the next head
        return value, chain

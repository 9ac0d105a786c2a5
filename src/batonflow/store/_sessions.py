"""Conversation sessions in a store: the ``SessionStore`` interface, what it holds, and the in-memory backend.

A conversation session (Solon's ``AgentSession``) outlives calls: its messages, and one state record
with the shared attributes, the pending flag and reason, and the snapshot an interrupted run resumes from. It is
not the per-run checkpoint (``CheckpointStore``): a pending session carries its run's checkpoint as the snapshot
(a pending conversation is an interrupted run), opaque bytes to the store.

Messages are an ordered list that grows by appending, so two workers adding to the same conversation both land;
the state is one record, replaced whole. Every backend writes values through the checkpoint codec (JSON trees for
the file backend), so what can be stored, and the errors for what cannot, are the same everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..codec import DEFAULT_LIMITS, DecodeLimits, decode, encode
from ..errors import CodecError, UserError
from ..schema import Message
from ._base import Lease, StoreBase, check_id, check_owner, check_ttl, closed_error
from ._lease import MemoryLeases

__all__ = ["MemorySessionStore", "SessionData", "SessionSaver", "SessionState", "SessionStore", "check_session_id"]


@dataclass(slots=True, kw_only=True)
class SessionState:
    """Everything a session holds besides its messages; a store writes it as one record."""

    attrs: dict[str, Any] = field(default_factory=dict)
    """Shared state of the conversation; values must be encodable by the codec (``register_type`` for your own)."""
    pending: bool = False
    pending_reason: str | None = None
    snapshot: bytes | None = None
    """What an interrupted run needs to continue (the runtime puts its checkpoint here); opaque to the store."""


@dataclass(slots=True, kw_only=True)
class SessionData:
    """What a store holds for one session."""

    messages: list[Message] = field(default_factory=list)
    state: SessionState = field(default_factory=SessionState)


@runtime_checkable
class SessionStore(Protocol):
    """Where conversation sessions live. Every method is a coroutine; driver failures raise ``StoreError``, data that
    cannot be encoded or decoded raises ``CodecError``.

    This is what the runtime requires of a store of your own. The built-in stores are also ``InspectableLeases``:
    ``holder(session_id)`` says who holds a session's lease and for how long, and ``break_lease(session_id,
    owner)`` ends it only if that owner still holds it.
    """

    async def get(self, session_id: str, *, last: int | None = None) -> SessionData | None:
        """The session's messages (only the ``last`` ones, when given) and state, read at one moment; None when the
        store holds neither messages nor state for ``session_id``."""
        ...

    async def append_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        """Add ``messages`` at the end, together: appends made at the same time never interleave or overwrite."""
        ...

    async def replace_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        """Make ``messages`` the session's whole message list, atomically."""
        ...

    async def set_state(self, session_id: str, state: SessionState) -> None:
        """Replace the session's state record, atomically."""
        ...

    async def delete(self, session_id: str) -> None:
        """Forget the session's messages and state; nothing happens when there are none. Its lease is left alone."""
        ...

    async def claim(self, session_id: str, owner: str, ttl: float) -> bool:
        """Take the lease on ``session_id`` for ``ttl`` seconds: what lets exactly one worker resume a pending run.

        True when the lease was free, had expired, or was already ``owner``'s (which renews it); False while
        another owner holds it. Every store object on the same backend and place sees the same leases.
        """
        ...

    async def release(self, session_id: str, owner: str) -> None:
        """Give the lease back, if ``owner`` holds it; another owner's lease is left alone."""
        ...

    async def close(self) -> None:
        """Release connections and threads. Idempotent."""
        ...


@runtime_checkable
class SessionSaver(Protocol):
    """A session store that writes a turn in one transaction: ``Session.save`` uses ``save_session`` when its store
    has it (the built-in SQLite, PostgreSQL and memory stores do), else ``append_messages`` then ``set_state``.

    One transaction is one wait for the disk where a commit waits for it (SQLite's ``synchronous=FULL``), and a
    reader never sees a turn's messages without the state saved with them.
    """

    async def save_session(
        self, session_id: str, state: SessionState, *, messages: Sequence[Message] = (), replace: bool = False
    ) -> None:
        """Append ``messages`` (with ``replace``: make them the whole list) and replace the state record, atomically."""
        ...


# -- what every backend shares -----------------------------------------------------------------------------------


def check_session_id(session_id: str) -> str:
    """``session_id`` if every session store takes it, else a ``UserError``: the rule of checkpoint ids
    (``check_id``), since a pending conversation's id is its run's checkpoint id."""
    return check_id(session_id, what="session id")


def check_last(last: int | None) -> int | None:
    if last is not None and (type(last) is not int or last < 1):
        raise UserError(f"last must be None (every message) or a count >= 1, got {last!r}")
    return last


def tail(items: list[Any], last: int | None) -> list[Any]:
    """The ``last`` items of ``items`` (all of them for None)."""
    return items if last is None else items[-last:]


def message_what(session_id: str) -> str:
    return f"message of session {session_id!r}"


def state_what(session_id: str) -> str:
    return f"state of session {session_id!r}"


def check_messages(messages: Sequence[Message]) -> list[Message]:
    if isinstance(messages, Message | str | bytes):
        raise UserError(f"expected a sequence of messages, got {type(messages).__qualname__}")
    out = list(messages)
    for i, message in enumerate(out):
        if not isinstance(message, Message):
            raise UserError(f"expected a Message at index {i}, got {type(message).__qualname__}")
    return out


def encode_messages(session_id: str, messages: Sequence[Message], limits: DecodeLimits = DEFAULT_LIMITS) -> list[bytes]:
    what = message_what(session_id)
    return [encode(m, what=what, limits=limits) for m in check_messages(messages)]


def decode_message(session_id: str, data: bytes, limits: DecodeLimits = DEFAULT_LIMITS) -> Message:
    what = message_what(session_id)
    value = decode(data, what=what, limits=limits)
    return expect_message(value, what)


def expect_message(value: Any, what: str) -> Message:
    if type(value) is not Message:
        raise CodecError(f"cannot decode {what}: expected a Message, got {type(value).__qualname__}", path="$")
    return value


def state_to_value(state: SessionState) -> dict[str, Any]:
    if not isinstance(state, SessionState):
        raise UserError(f"expected a SessionState, got {type(state).__qualname__}")
    return {
        "attrs": state.attrs,
        "pending": state.pending,
        "pending_reason": state.pending_reason,
        "snapshot": state.snapshot,
    }


_STATE_FIELDS: dict[str, tuple[type, ...]] = {
    "attrs": (dict,),
    "pending": (bool,),
    "pending_reason": (str, type(None)),
    "snapshot": (bytes, type(None)),
}


def state_from_value(value: Any, what: str) -> SessionState:
    """The state in a decoded record, checked field by field: a record that does not fit is a ``CodecError``."""
    if type(value) is not dict:
        raise CodecError(f"cannot decode {what}: expected an object, got {type(value).__qualname__}", path="$")
    if value.keys() != _STATE_FIELDS.keys():
        raise CodecError(
            f"cannot decode {what}: expected the fields {sorted(_STATE_FIELDS)}, got {sorted(map(str, value))}",
            path="$",
        )
    for name, types in _STATE_FIELDS.items():
        if type(value[name]) not in types:
            expected = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            raise CodecError(
                f"cannot decode {what}: expected {expected} at $.{name}, got {type(value[name]).__qualname__}",
                path=f"$.{name}",
            )
    return SessionState(**value)


def encode_state(session_id: str, state: SessionState, limits: DecodeLimits = DEFAULT_LIMITS) -> bytes:
    return encode(state_to_value(state), what=state_what(session_id), limits=limits)


def decode_state(session_id: str, data: bytes, limits: DecodeLimits = DEFAULT_LIMITS) -> SessionState:
    what = state_what(session_id)
    return state_from_value(decode(data, what=what, limits=limits), what)


def build_data(
    session_id: str, messages: list[bytes], state: bytes | None, limits: DecodeLimits = DEFAULT_LIMITS
) -> SessionData | None:
    """The ``SessionData`` of raw stored values, as the byte-storing backends read them."""
    if not messages and state is None:
        return None
    return SessionData(
        messages=[decode_message(session_id, m, limits) for m in messages],
        state=SessionState() if state is None else decode_state(session_id, state, limits),
    )


# -- the in-memory backend -------------------------------------------------------------------------------------------


class MemorySessionStore(StoreBase):
    """Sessions in this process's memory. Values still go through the codec, so what works here works on every
    backend, and a value read back is a copy, never the object that was saved. Every method finishes without
    awaiting, so each one is atomic with respect to the other tasks of the event loop. ``limits`` bound what
    decoding a stored value may cost (``DecodeLimits``)."""

    def __init__(self, *, limits: DecodeLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self._messages: dict[str, list[bytes]] = {}
        self._states: dict[str, bytes] = {}
        self._leases = MemoryLeases()

    async def get(self, session_id: str, *, last: int | None = None) -> SessionData | None:
        check_session_id(session_id)
        check_last(last)
        self._check_open()
        return build_data(
            session_id, tail(self._messages.get(session_id, []), last), self._states.get(session_id), self.limits
        )

    async def append_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        check_session_id(session_id)
        data = encode_messages(session_id, messages, self.limits)
        self._check_open()
        if data:
            self._messages.setdefault(session_id, []).extend(data)

    async def replace_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        check_session_id(session_id)
        data = encode_messages(session_id, messages, self.limits)
        self._check_open()
        if data:
            self._messages[session_id] = data
        else:
            self._messages.pop(session_id, None)

    async def set_state(self, session_id: str, state: SessionState) -> None:
        check_session_id(session_id)
        data = encode_state(session_id, state, self.limits)
        self._check_open()
        self._states[session_id] = data

    async def save_session(
        self, session_id: str, state: SessionState, *, messages: Sequence[Message] = (), replace: bool = False
    ) -> None:
        check_session_id(session_id)
        data = encode_messages(session_id, messages, self.limits)
        encoded = encode_state(session_id, state, self.limits)
        self._check_open()
        if replace and data:
            self._messages[session_id] = data
        elif replace:
            self._messages.pop(session_id, None)
        elif data:
            self._messages.setdefault(session_id, []).extend(data)
        self._states[session_id] = encoded

    async def delete(self, session_id: str) -> None:
        check_session_id(session_id)
        self._check_open()
        self._messages.pop(session_id, None)
        self._states.pop(session_id, None)

    async def claim(self, session_id: str, owner: str, ttl: float) -> bool:
        check_session_id(session_id)
        check_owner(owner)
        ttl = check_ttl(ttl)
        self._check_open()
        return self._leases.claim(session_id, owner, ttl)

    async def renew(self, session_id: str, owner: str, ttl: float) -> bool:
        """Extend ``owner``'s unexpired lease; False when it lapsed or is another's."""
        check_session_id(session_id)
        check_owner(owner)
        ttl = check_ttl(ttl)
        self._check_open()
        return self._leases.renew(session_id, owner, ttl)

    async def release(self, session_id: str, owner: str) -> None:
        check_session_id(session_id)
        check_owner(owner)
        self._check_open()
        self._leases.release(session_id, owner)

    async def holder(self, session_id: str) -> Lease | None:
        check_session_id(session_id)
        self._check_open()
        return self._leases.holder(session_id)

    async def break_lease(self, session_id: str, owner: str) -> bool:
        check_session_id(session_id)
        check_owner(owner)
        self._check_open()
        return self._leases.break_lease(session_id, owner)

    def _check_open(self) -> None:
        if self._closed:
            raise closed_error("memory session store", "memory")

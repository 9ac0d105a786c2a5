"""The checkpoint store interface, and what the backends share.

A store keeps opaque bytes under a checkpoint id (the codec makes them) and hands out leases, so that two workers
resuming the same checkpoint at once are told apart: exactly one claim succeeds. A lease lives beside
the data, not in it, and expires on its own, so a worker that dies holding one blocks nobody for longer than its
ttl. The built-in stores also say who holds a lease and for how long (``holder``), let an operator break the lease
of a worker seen stuck without ever breaking a newer holder's (``break_lease``), and fence writes: given an
``owner``, ``set`` and ``delete`` write only while that owner's lease lives, so a worker whose lease lapsed mid-work
cannot overwrite what the next holder wrote.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

from ..errors import StoreError, UserError

__all__ = [
    "MAX_ID_BYTES",
    "CheckpointStore",
    "FencedCheckpointStore",
    "InspectableLeases",
    "Lease",
    "check_checkpoint_id",
    "check_id",
]

MAX_ID_BYTES = 256
"""The longest checkpoint or session id, in UTF-8 bytes, that every store takes.

Room for a UUID, a tenant and a conversation name several times over, and far below the first backend limit (an
index entry in PostgreSQL holds about 2.7 KB; the file session store allows 200 bytes, the stricter rule of file
names). A cap also keeps a hostile id out of error messages, logs and every key written under it.
"""


@dataclass(frozen=True, slots=True)
class Lease:
    """Who holds a lease, as the store saw it at one moment (``holder``)."""

    owner: str
    held_for: float
    """Seconds since ``owner`` claimed the lease; renewing it keeps the start. 0 for a lease taken by the previous
    release of batonflow, which did not record when."""
    expires_in: float
    """Seconds until the lease lapses, unless its owner renews it."""


@runtime_checkable
class CheckpointStore(Protocol):
    """Where checkpoints live. Every method is a coroutine; driver failures raise ``StoreError``.

    This is what the runtime requires of a store of your own. The built-in stores are also
    ``FencedCheckpointStore``s: they say who holds a lease, break one safely, and fence writes with it.
    """

    async def get(self, checkpoint_id: str) -> bytes | None:
        """The bytes saved under ``checkpoint_id``, or None when there are none."""
        ...

    async def set(self, checkpoint_id: str, data: bytes) -> None:
        """Save ``data``, replacing what was there atomically: readers see the old bytes or the new, never a mix."""
        ...

    async def delete(self, checkpoint_id: str) -> None:
        """Forget ``checkpoint_id``; nothing happens when it is absent. Its lease, if any, is left alone."""
        ...

    async def claim(self, checkpoint_id: str, owner: str, ttl: float) -> bool:
        """Take the lease on ``checkpoint_id`` for ``ttl`` seconds.

        True when the lease was free, had expired, or was already ``owner``'s (which renews it); False while
        another owner holds it.
        """
        ...

    async def release(self, checkpoint_id: str, owner: str) -> None:
        """Give the lease back, if ``owner`` holds it; another owner's lease is left alone."""
        ...

    async def close(self) -> None:
        """Release connections and threads. Idempotent."""
        ...


@runtime_checkable
class InspectableLeases(Protocol):
    """A store whose leases can be looked at and broken: every built-in checkpoint and session store.

    Not part of ``CheckpointStore`` or ``SessionStore``, so that stores written before these methods existed still
    are those: check for this protocol (or the method) before calling them.
    """

    async def holder(self, lease_id: str, /) -> Lease | None:
        """Who holds the lease on ``lease_id`` (a checkpoint or session id) now; None when it is free or has lapsed."""
        ...

    async def break_lease(self, lease_id: str, owner: str, /) -> bool:
        """End the lease on ``lease_id`` only if ``owner`` holds it; True when it ended a live lease of ``owner``'s.

        What an operator uses on a worker seen stuck holding a lease (its owner is in ``holder`` and in the
        errors that name the lease): if that worker's lease lapsed meanwhile and another worker took the lease,
        the new holder's lease is left alone and this returns False. False too when ``owner``'s lease had
        already lapsed (a lapsed lease is deleted all the same where the backend still keeps it).
        """
        ...


@runtime_checkable
class FencedCheckpointStore(CheckpointStore, InspectableLeases, Protocol):
    """A ``CheckpointStore`` whose writes can be fenced by a lease, and whose leases can be inspected and broken:
    every built-in checkpoint store.

    A worker that claimed a lease passes its ``owner`` to ``set`` and ``delete``. The write then happens only if
    that owner holds an unexpired lease on the id, checked in the same atomic step as the write; otherwise nothing
    is written and it raises ``LeaseLostError``, naming who holds the lease now. So a worker that stalled past its
    ttl, while another resumed the checkpoint, cannot overwrite or delete what the other saved. Without an
    ``owner`` a write is not fenced, as in ``CheckpointStore``.
    """

    async def set(self, checkpoint_id: str, data: bytes, *, owner: str | None = None) -> None:
        """Save ``data`` atomically; with ``owner``, only while ``owner`` holds the lease (else ``LeaseLostError``)."""
        ...

    async def delete(self, checkpoint_id: str, *, owner: str | None = None) -> None:
        """Forget ``checkpoint_id``; with ``owner``, only while ``owner`` holds the lease (else ``LeaseLostError``,
        even when there is nothing to delete). The lease itself is left alone."""
        ...


class StoreBase:
    """Async context manager support and the checks every backend makes."""

    _closed = False

    async def close(self) -> None:
        self._closed = True

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


def check_id(value: str, *, what: str = "checkpoint id") -> str:
    """``value`` if every store takes it as an id, else a ``UserError`` that names ``what`` the id is for.

    An id is a non-empty string of at most ``MAX_ID_BYTES`` bytes of UTF-8, without NUL (PostgreSQL's text cannot
    hold it) and without lone surrogates (no driver can encode them). Checkpoint and session ids follow the same
    rule, checked where they enter: the Runner's methods and each store's; for a store of your own.
    """
    if not isinstance(value, str) or not value:
        raise UserError(f"a {what} must be a non-empty string, got {shown(value)}")
    if len(value) > MAX_ID_BYTES:  # before encoding: an id may be a megabyte long
        raise UserError(f"a {what} must be at most {MAX_ID_BYTES} bytes of UTF-8, got {shown(value)}")
    if not value.isascii():
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise UserError(
                f"a {what} must be valid Unicode text, got a lone surrogate at index {exc.start}: {shown(value)}"
            ) from None
        if size > MAX_ID_BYTES:
            raise UserError(f"a {what} must be at most {MAX_ID_BYTES} bytes of UTF-8, got {size}: {shown(value)}")
    if "\x00" in value:
        raise UserError(f"a {what} must not contain NUL characters, got {shown(value)}")
    return value


def check_checkpoint_id(checkpoint_id: str) -> str:
    """``checkpoint_id`` if every checkpoint store takes it, else a ``UserError`` (see ``check_id``)."""
    return check_id(checkpoint_id, what="checkpoint id")


def shown(value: object, limit: int = 60) -> str:
    """``repr(value)``, cut to about ``limit`` characters: what a message may echo of untrusted input."""
    text = repr(value[: limit + 1] if isinstance(value, str) else value)  # not the repr of a megabyte
    if len(text) <= limit:
        return text
    size = f" ({len(value)} characters)" if isinstance(value, str) else ""
    return f"{text[:limit]}…{size}"


def check_owner(owner: str) -> str:
    """``owner`` if it can name a lease holder: the rule of ids (``check_id``), since every backend stores it as
    text beside the id."""
    return check_id(owner, what="lease owner")


def check_ttl(ttl: float) -> float:
    if not ttl > 0:  # also refuses NaN
        raise UserError(f"a lease ttl must be a positive number of seconds, got {ttl!r}")
    return float(ttl)


_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,49}\Z")


def check_table_name(table: str) -> str:
    # Table names are spliced into SQL text (they cannot be bound parameters), so only plain identifiers pass.
    if not isinstance(table, str) or not _TABLE_NAME.match(table):
        raise UserError(f"a table name must be a plain SQL identifier of at most 50 characters, got {table!r}")
    return table


def closed_error(where: str, backend: str) -> StoreError:
    return StoreError(f"{where}: the store is closed", backend=backend)

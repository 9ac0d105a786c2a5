"""The checkpoint store interface, and what the backends share.

A store keeps opaque bytes under a checkpoint id (the codec makes them) and hands out leases, so that two workers
resuming the same checkpoint at once are told apart: exactly one claim succeeds. A lease lives beside
the data, not in it, and expires on its own, so a worker that dies holding one blocks nobody for longer than its
ttl.
"""

from __future__ import annotations

import re
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

from ..errors import StoreError, UserError

__all__ = ["CheckpointStore"]


@runtime_checkable
class CheckpointStore(Protocol):
    """Where checkpoints live. Every method is a coroutine; driver failures raise ``StoreError``."""

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

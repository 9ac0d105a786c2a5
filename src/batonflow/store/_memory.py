"""Checkpoints in a dict: for tests and for runs that need not outlive the process."""

from __future__ import annotations

from ..codec import DEFAULT_LIMITS, DecodeLimits
from ._base import Lease, StoreBase, check_checkpoint_id, check_owner, check_ttl, closed_error
from ._history import KeepsHistory
from ._lease import MemoryLeases, check_fence

__all__ = ["MemoryCheckpointStore"]


class MemoryCheckpointStore(KeepsHistory, StoreBase):
    """A checkpoint store in this process's memory. Every method finishes without awaiting, so each one is atomic
    with respect to the other tasks of the event loop, a fenced write's check included. ``limits`` bound what
    decoding a checkpoint read from it may cost (``DecodeLimits``): the Runner decodes with them."""

    def __init__(self, *, limits: DecodeLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self._data: dict[str, bytes] = {}
        self._leases = MemoryLeases()

    async def get(self, checkpoint_id: str) -> bytes | None:
        check_checkpoint_id(checkpoint_id)
        self._check_open()
        return self._data.get(checkpoint_id)

    async def set(self, checkpoint_id: str, data: bytes, *, owner: str | None = None) -> None:
        check_checkpoint_id(checkpoint_id)
        self._check_open()
        if owner is not None:
            check_fence(checkpoint_id, check_owner(owner), self._leases.holder(checkpoint_id))
        self._data[checkpoint_id] = bytes(data)

    async def delete(self, checkpoint_id: str, *, owner: str | None = None) -> None:
        check_checkpoint_id(checkpoint_id)
        self._check_open()
        if owner is not None:
            check_fence(checkpoint_id, check_owner(owner), self._leases.holder(checkpoint_id), deleting=True)
        self._data.pop(checkpoint_id, None)

    async def claim(self, checkpoint_id: str, owner: str, ttl: float) -> bool:
        check_checkpoint_id(checkpoint_id)
        check_owner(owner)
        ttl = check_ttl(ttl)
        self._check_open()
        return self._leases.claim(checkpoint_id, owner, ttl)

    async def renew(self, checkpoint_id: str, owner: str, ttl: float) -> bool:
        """Extend ``owner``'s unexpired lease; False when it lapsed or is another's (see ``_lease``)."""
        check_checkpoint_id(checkpoint_id)
        check_owner(owner)
        ttl = check_ttl(ttl)
        self._check_open()
        return self._leases.renew(checkpoint_id, owner, ttl)

    async def release(self, checkpoint_id: str, owner: str) -> None:
        check_checkpoint_id(checkpoint_id)
        check_owner(owner)
        self._check_open()
        self._leases.release(checkpoint_id, owner)

    async def holder(self, checkpoint_id: str) -> Lease | None:
        check_checkpoint_id(checkpoint_id)
        self._check_open()
        return self._leases.holder(checkpoint_id)

    async def break_lease(self, checkpoint_id: str, owner: str) -> bool:
        check_checkpoint_id(checkpoint_id)
        check_owner(owner)
        self._check_open()
        return self._leases.break_lease(checkpoint_id, owner)

    def _check_open(self) -> None:
        # Closed means closed on every backend, so code tested against memory behaves the same on SQLite.
        if self._closed:
            raise closed_error("memory checkpoint store", "memory")

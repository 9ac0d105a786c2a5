"""Checkpoints in a dict: for tests and for runs that need not outlive the process."""

from __future__ import annotations

from ._base import StoreBase, check_checkpoint_id, check_ttl, closed_error
from ._codec import DEFAULT_LIMITS, DecodeLimits
from ._lease import MemoryLeases

__all__ = ["MemoryCheckpointStore"]


class MemoryCheckpointStore(StoreBase):
    """A checkpoint store in this process's memory. Every method finishes without awaiting, so each one is atomic
    with respect to the other tasks of the event loop. ``limits`` bound what decoding a checkpoint read from it may
    cost (``DecodeLimits``): the Runner decodes with them."""

    def __init__(self, *, limits: DecodeLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self._data: dict[str, bytes] = {}
        self._leases = MemoryLeases()

    async def get(self, checkpoint_id: str) -> bytes | None:
        check_checkpoint_id(checkpoint_id)
        self._check_open()
        return self._data.get(checkpoint_id)

    async def set(self, checkpoint_id: str, data: bytes) -> None:
        check_checkpoint_id(checkpoint_id)
        self._check_open()
        self._data[checkpoint_id] = bytes(data)

    async def delete(self, checkpoint_id: str) -> None:
        check_checkpoint_id(checkpoint_id)
        self._check_open()
        self._data.pop(checkpoint_id, None)

    async def claim(self, checkpoint_id: str, owner: str, ttl: float) -> bool:
        check_checkpoint_id(checkpoint_id)
        ttl = check_ttl(ttl)
        self._check_open()
        return self._leases.claim(checkpoint_id, owner, ttl)

    async def release(self, checkpoint_id: str, owner: str) -> None:
        check_checkpoint_id(checkpoint_id)
        self._check_open()
        self._leases.release(checkpoint_id, owner)

    def _check_open(self) -> None:
        # Closed means closed on every backend, so code tested against memory behaves the same on SQLite.
        if self._closed:
            raise closed_error("memory checkpoint store", "memory")

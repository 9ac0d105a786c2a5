"""``LeaseHolder``: a lease held by a timer (a task only while a renewal talks to the store), renewed every third of
its ttl, retried after a renewal that failed, lost once it was not renewed for its ttl, given back at the end."""

from __future__ import annotations

import asyncio

import pytest

from batonflow.adk import LeaseHolder
from batonflow.errors import LeaseLostError
from batonflow.store import MemoryCheckpointStore


class CountingStore(MemoryCheckpointStore):
    """Counts claims and renewals; ``down`` makes them fail as an unreachable store's do."""

    def __init__(self) -> None:
        super().__init__()
        self.claims = 0
        self.down = False

    async def claim(self, checkpoint_id: str, owner: str, ttl: float) -> bool:
        self.claims += 1
        if self.down:
            raise ConnectionError("the store is down")
        return await super().claim(checkpoint_id, owner, ttl)

    async def renew(self, checkpoint_id: str, owner: str, ttl: float) -> bool:
        self.claims += 1
        if self.down:
            raise ConnectionError("the store is down")
        return await super().renew(checkpoint_id, owner, ttl)


def lease_tasks() -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t.get_name().startswith("lease ") and not t.done()]


async def wait_for(check: object, within: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not check():  # type: ignore[operator]
        assert asyncio.get_running_loop().time() < deadline, "the condition did not hold in time"
        await asyncio.sleep(0.005)


async def test_a_held_lease_runs_no_task_between_renewals_and_renews_every_third_of_its_ttl() -> None:
    store = CountingStore()
    lease = LeaseHolder(store, "c", "me", 0.3, "checkpoint[c]")
    await lease.claim("resumed")
    assert store.claims == 1 and lease_tasks() == []
    await wait_for(lambda: store.claims >= 3)  # renewed at 0.1 s and 0.2 s
    lease.check()  # still held
    await lease.release()
    claims = store.claims
    await asyncio.sleep(0.25)
    assert store.claims == claims and lease_tasks() == []  # no renewal once given back
    assert await store.holder("c") is None


async def test_a_renewal_that_fails_is_tried_again_and_the_lease_is_lost_once_its_ttl_passed() -> None:
    store = CountingStore()
    lease = LeaseHolder(store, "c", "me", 0.3, "checkpoint[c]")
    await lease.claim("resumed")
    store.down = True
    await wait_for(lambda: store.claims >= 3)  # a failed renewal, then another a third of the ttl later
    await wait_for(lambda: lease.lost)
    with pytest.raises(LeaseLostError, match=r"checkpoint\[c\]: this runner lost its lease"):
        lease.check()
    await lease.release()

"""The CheckpointStore contract, run against every backend (the ``store`` fixture is parametrized over them)."""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest

from batonflow.errors import LeaseLostError, ResumeConflictError, StoreError, UserError
from batonflow.store import MAX_ID_BYTES, CheckpointStore, FencedCheckpointStore, InspectableLeases, Lease

# -- data ------------------------------------------------------------------------------------------------------------


async def test_get_of_a_missing_checkpoint_returns_none(store: CheckpointStore) -> None:
    assert await store.get("never-saved") is None


async def test_set_then_get_returns_the_same_bytes(store: CheckpointStore) -> None:
    await store.set("run-1", b"\x00checkpoint\xff")
    assert await store.get("run-1") == b"\x00checkpoint\xff"


async def test_set_replaces_the_previous_value(store: CheckpointStore) -> None:
    await store.set("run-1", b"first")
    await store.set("run-1", b"second")
    assert await store.get("run-1") == b"second"


async def test_checkpoints_are_kept_apart_by_id(store: CheckpointStore) -> None:
    await store.set("a", b"A")
    await store.set("b", b"B")
    await store.set("r\u00e9sum\u00e9/1:2 \U0001f600", b"unicode id")
    assert await store.get("a") == b"A"
    assert await store.get("b") == b"B"
    assert await store.get("r\u00e9sum\u00e9/1:2 \U0001f600") == b"unicode id"


async def test_empty_bytes_are_a_value_not_an_absence(store: CheckpointStore) -> None:
    await store.set("empty", b"")
    assert await store.get("empty") == b""


async def test_delete_removes_the_checkpoint(store: CheckpointStore) -> None:
    await store.set("run-1", b"data")
    await store.delete("run-1")
    assert await store.get("run-1") is None


async def test_delete_of_a_missing_checkpoint_is_not_an_error(store: CheckpointStore) -> None:
    await store.delete("never-saved")
    assert await store.get("never-saved") is None


async def test_a_five_megabyte_checkpoint_round_trips(store: CheckpointStore) -> None:
    data = os.urandom(5 * 1024 * 1024)
    await store.set("big", data)
    assert await store.get("big") == data
    await store.set("big", data[::-1])
    assert await store.get("big") == data[::-1]


async def test_concurrent_readers_see_the_old_or_the_new_value_never_a_mix(store: CheckpointStore) -> None:
    values = [bytes([i]) * 300_000 for i in range(2)]
    await store.set("run-1", values[0])

    async def writer() -> None:
        for i in range(20):
            await store.set("run-1", values[i % 2])

    async def reader() -> None:
        for _ in range(20):
            assert await store.get("run-1") in values

    await asyncio.gather(writer(), reader(), reader())


# -- leases ----------------------------------------------------------------------------------------------------------


async def test_claim_of_a_free_checkpoint_succeeds(store: CheckpointStore) -> None:
    assert await store.claim("run-1", "worker-a", 30) is True


async def test_claim_held_by_another_owner_fails(store: CheckpointStore) -> None:
    assert await store.claim("run-1", "worker-a", 30)
    assert await store.claim("run-1", "worker-b", 30) is False


async def test_claim_by_the_holder_renews_the_lease(store: CheckpointStore) -> None:
    assert await store.claim("run-1", "worker-a", 0.5)
    await asyncio.sleep(0.3)
    assert await store.claim("run-1", "worker-a", 0.5)
    await asyncio.sleep(0.3)  # past the first lease's end, within the renewed one
    assert await store.claim("run-1", "worker-b", 30) is False


async def test_an_expired_lease_can_be_claimed_by_another_owner(store: CheckpointStore) -> None:
    assert await store.claim("run-1", "crashed-worker", 0.2)
    assert await store.claim("run-1", "worker-b", 30) is False
    await asyncio.sleep(0.4)
    assert await store.claim("run-1", "worker-b", 30) is True
    assert await store.claim("run-1", "crashed-worker", 30) is False


async def test_release_frees_the_lease_for_another_owner(store: CheckpointStore) -> None:
    assert await store.claim("run-1", "worker-a", 30)
    await store.release("run-1", "worker-a")
    assert await store.claim("run-1", "worker-b", 30) is True


async def test_release_by_another_owner_leaves_the_lease_alone(store: CheckpointStore) -> None:
    assert await store.claim("run-1", "worker-a", 30)
    await store.release("run-1", "worker-b")
    assert await store.claim("run-1", "worker-b", 30) is False
    assert await store.claim("run-1", "worker-a", 30) is True


async def test_release_of_a_free_lease_is_not_an_error(store: CheckpointStore) -> None:
    await store.release("run-1", "worker-a")
    assert await store.claim("run-1", "worker-a", 30)


async def test_leases_are_per_checkpoint(store: CheckpointStore) -> None:
    assert await store.claim("run-1", "worker-a", 30)
    assert await store.claim("run-2", "worker-b", 30)


async def test_concurrent_claims_let_exactly_one_owner_win(store: CheckpointStore) -> None:
    for round_ in range(5):
        owners = [f"worker-{i}" for i in range(8)]
        random.shuffle(owners)
        results = await asyncio.gather(*(store.claim(f"race-{round_}", owner, 30) for owner in owners))
        assert results.count(True) == 1, results


async def test_leases_live_apart_from_checkpoint_data(store: CheckpointStore) -> None:
    assert await store.claim("run-1", "worker-a", 30)
    assert await store.get("run-1") is None  # a lease is not data
    await store.set("run-1", b"data")
    await store.delete("run-1")  # deleting the data keeps the lease
    assert await store.claim("run-1", "worker-b", 30) is False
    await store.set("run-1", b"data")
    await store.release("run-1", "worker-a")  # releasing the lease keeps the data
    assert await store.get("run-1") == b"data"


@pytest.mark.parametrize("ttl", [0, -1, float("nan")])
async def test_claim_with_a_ttl_that_is_not_positive_is_a_user_error(store: CheckpointStore, ttl: float) -> None:
    with pytest.raises(UserError, match="a lease ttl must be a positive number of seconds"):
        await store.claim("run-1", "worker-a", ttl)


# -- who holds a lease, and breaking it ------------------------------------------------------------------------------


async def poll(check: Callable[[], Awaitable[bool]], what: str) -> None:
    """Wait until ``check()`` is true: a lease lapses on the store's clock, which a test can only watch. Ten seconds
    is far beyond any wait here; it only keeps a broken store from hanging the suite."""
    deadline = time.monotonic() + 10
    while not await check():
        if time.monotonic() > deadline:
            pytest.fail(f"still waiting, after 10 s, for {what}")
        await asyncio.sleep(0.02)


async def lapsed(store: Any, checkpoint_id: str) -> None:
    async def free() -> bool:
        return await store.holder(checkpoint_id) is None

    await poll(free, f"the lease on {checkpoint_id!r} to lapse")


async def held_longer_than(store: Any, checkpoint_id: str, seconds: float) -> Lease:
    lease: Lease | None = None

    async def long_enough() -> bool:
        nonlocal lease
        lease = await store.holder(checkpoint_id)
        return lease is not None and lease.held_for > seconds

    await poll(long_enough, f"the lease on {checkpoint_id!r} to be held for {seconds} s")
    assert lease is not None
    return lease


async def test_every_backend_fences_writes_and_shows_its_leases(store: FencedCheckpointStore) -> None:
    assert isinstance(store, FencedCheckpointStore)
    assert isinstance(store, InspectableLeases)


async def test_holder_of_a_free_checkpoint_is_none(store: FencedCheckpointStore) -> None:
    assert await store.holder("run-1") is None
    await store.set("run-1", b"data")  # data is not a lease
    assert await store.holder("run-1") is None


async def test_holder_names_the_owner_and_how_long_the_lease_has_run_and_has_left(
    store: FencedCheckpointStore,
) -> None:
    assert await store.claim("run-1", "worker-a", 30)
    lease = await store.holder("run-1")
    assert lease is not None
    assert lease.owner == "worker-a"
    assert lease.held_for >= 0
    assert 0 < lease.expires_in <= 30
    # Read at one moment, so the two add up to the ttl (to the backend's resolution).
    assert lease.held_for + lease.expires_in == pytest.approx(30, abs=0.01)
    assert await store.holder("run-2") is None  # per checkpoint


async def test_a_lease_is_a_frozen_value() -> None:
    lease = Lease(owner="worker-a", held_for=1.5, expires_in=3.0)
    assert lease == Lease(owner="worker-a", held_for=1.5, expires_in=3.0)
    with pytest.raises(AttributeError):
        lease.owner = "worker-b"  # type: ignore[misc]


async def test_an_expired_lease_has_no_holder(store: FencedCheckpointStore) -> None:
    assert await store.claim("run-1", "crashed-worker", 0.2)
    await lapsed(store, "run-1")
    assert await store.holder("run-1") is None


async def test_a_renewal_keeps_the_start_so_held_for_keeps_growing(store: FencedCheckpointStore) -> None:
    assert await store.claim("run-1", "worker-a", 30)
    before = await held_longer_than(store, "run-1", 0.1)
    assert await store.claim("run-1", "worker-a", 30)
    after = await store.holder("run-1")
    assert after is not None and after.owner == "worker-a"
    assert after.held_for >= before.held_for > 0.1
    assert after.held_for + after.expires_in > 30.1 - 0.01  # the start is older than the renewed ttl


async def test_a_new_holder_starts_its_own_count(store: FencedCheckpointStore) -> None:
    assert await store.claim("run-1", "worker-a", 0.3)
    await held_longer_than(store, "run-1", 0.1)
    await lapsed(store, "run-1")
    assert await store.claim("run-1", "worker-b", 30)
    lease = await store.holder("run-1")
    assert lease is not None and lease.owner == "worker-b"
    assert lease.held_for + lease.expires_in == pytest.approx(30, abs=0.01)


async def test_claiming_ones_own_lapsed_lease_starts_a_new_count(store: FencedCheckpointStore) -> None:
    # Every backend alike: a lapsed lease is gone (Redis forgets it), so what is claimed again is a new lease.
    assert await store.claim("run-1", "worker-a", 0.3)
    await held_longer_than(store, "run-1", 0.1)
    await lapsed(store, "run-1")
    assert await store.claim("run-1", "worker-a", 30)
    lease = await store.holder("run-1")
    assert lease is not None
    assert lease.held_for + lease.expires_in == pytest.approx(30, abs=0.01)


async def test_break_lease_by_the_holder_frees_it(store: FencedCheckpointStore) -> None:
    assert await store.claim("run-1", "worker-a", 30)
    assert await store.break_lease("run-1", "worker-a") is True
    assert await store.holder("run-1") is None
    assert await store.claim("run-1", "worker-b", 30)
    assert await store.break_lease("run-1", "worker-a") is False  # gone already


async def test_break_lease_naming_another_owner_leaves_the_lease_alone(store: FencedCheckpointStore) -> None:
    assert await store.claim("run-1", "worker-a", 30)
    assert await store.break_lease("run-1", "worker-b") is False
    lease = await store.holder("run-1")
    assert lease is not None and lease.owner == "worker-a"
    assert await store.claim("run-1", "worker-b", 30) is False


async def test_breaking_a_stuck_workers_lease_never_breaks_the_next_holders(store: FencedCheckpointStore) -> None:
    # An operator saw "stuck" holding the lease; meanwhile it lapsed and "next" took it.
    assert await store.claim("run-1", "stuck", 0.2)
    seen = await store.holder("run-1")
    assert seen is not None and seen.owner == "stuck"
    await lapsed(store, "run-1")
    assert await store.claim("run-1", "next", 30)
    assert await store.break_lease("run-1", seen.owner) is False
    lease = await store.holder("run-1")
    assert lease is not None and lease.owner == "next"


async def test_breaking_a_free_or_lapsed_lease_reports_nothing_broken(store: FencedCheckpointStore) -> None:
    assert await store.break_lease("run-1", "worker-a") is False
    assert await store.claim("run-1", "worker-a", 0.2)
    await lapsed(store, "run-1")
    assert await store.break_lease("run-1", "worker-a") is False
    assert await store.claim("run-1", "worker-b", 30)


async def test_breaking_a_lease_keeps_the_checkpoint(store: FencedCheckpointStore) -> None:
    assert await store.claim("run-1", "worker-a", 30)
    await store.set("run-1", b"data", owner="worker-a")
    assert await store.break_lease("run-1", "worker-a")
    assert await store.get("run-1") == b"data"


# -- fenced writes ---------------------------------------------------------------------------------------------------


async def test_the_holder_writes_and_deletes_through_the_fence(store: FencedCheckpointStore) -> None:
    assert await store.claim("run-1", "worker-a", 30)
    await store.set("run-1", b"first", owner="worker-a")
    await store.set("run-1", b"second", owner="worker-a")
    assert await store.get("run-1") == b"second"
    await store.delete("run-1", owner="worker-a")
    assert await store.get("run-1") is None
    await store.delete("run-1", owner="worker-a")  # nothing to delete: still not an error for the holder
    lease = await store.holder("run-1")
    assert lease is not None and lease.owner == "worker-a"  # writing leaves the lease as it was


async def test_a_stale_owners_fenced_set_loses_and_writes_nothing(store: FencedCheckpointStore) -> None:
    assert await store.claim("run-1", "slow", 0.2)
    await store.set("run-1", b"slow's first", owner="slow")
    await lapsed(store, "run-1")
    assert await store.claim("run-1", "fast", 30)
    await store.set("run-1", b"fast's", owner="fast")
    with pytest.raises(LeaseLostError) as caught:
        await store.set("run-1", b"slow's second", owner="slow")
    assert await store.get("run-1") == b"fast's"
    error = caught.value
    assert isinstance(error, ResumeConflictError)
    assert (error.checkpoint_id, error.owner, error.holder) == ("run-1", "slow", "fast")
    assert error.held_for is not None and error.held_for >= 0
    assert str(error).startswith(
        "cannot write checkpoint 'run-1' for 'slow': expected 'slow' to hold its lease, found it held by 'fast' for "
    )
    assert str(error).endswith(" s (the lease lapsed or was broken); nothing was written")


async def test_a_stale_owners_fenced_delete_loses_and_deletes_nothing(store: FencedCheckpointStore) -> None:
    assert await store.claim("run-1", "slow", 0.2)
    await lapsed(store, "run-1")
    assert await store.claim("run-1", "fast", 30)
    await store.set("run-1", b"fast's", owner="fast")
    with pytest.raises(LeaseLostError, match=r"^cannot delete checkpoint 'run-1' for 'slow': .* held by 'fast' "):
        await store.delete("run-1", owner="slow")
    assert await store.get("run-1") == b"fast's"


async def test_a_fenced_write_after_the_lease_lapsed_loses_even_when_nobody_took_it(
    store: FencedCheckpointStore,
) -> None:
    await store.set("run-1", b"saved")
    assert await store.claim("run-1", "slow", 0.2)
    await lapsed(store, "run-1")
    with pytest.raises(LeaseLostError) as caught:
        await store.set("run-1", b"late", owner="slow")
    assert str(caught.value) == (
        "cannot write checkpoint 'run-1' for 'slow': expected 'slow' to hold its lease, found it free (the lease "
        "lapsed or was broken); nothing was written"
    )
    assert (caught.value.holder, caught.value.held_for) == (None, None)
    with pytest.raises(LeaseLostError, match="found it free"):
        await store.delete("run-1", owner="slow")
    assert await store.get("run-1") == b"saved"


async def test_a_fenced_write_without_a_lease_or_after_a_break_loses(store: FencedCheckpointStore) -> None:
    with pytest.raises(LeaseLostError, match="found it free"):
        await store.set("run-1", b"data", owner="worker-a")
    assert await store.get("run-1") is None
    assert await store.claim("run-1", "worker-a", 30)
    assert await store.break_lease("run-1", "worker-a")
    with pytest.raises(LeaseLostError, match="found it free"):
        await store.set("run-1", b"data", owner="worker-a")
    assert await store.get("run-1") is None


async def test_writes_without_an_owner_ignore_the_lease(store: FencedCheckpointStore) -> None:
    assert await store.claim("run-1", "worker-a", 30)
    await store.set("run-1", b"unfenced")
    assert await store.get("run-1") == b"unfenced"
    await store.delete("run-1", owner=None)
    assert await store.get("run-1") is None


async def test_concurrent_fenced_writes_land_only_for_the_holder(store: FencedCheckpointStore) -> None:
    assert await store.claim("run-1", "worker-a", 30)
    owners = ["worker-a" if i % 2 else f"intruder-{i}" for i in range(10)]
    results = await asyncio.gather(
        *(store.set("run-1", owner.encode(), owner=owner) for owner in owners), return_exceptions=True
    )
    for owner, result in zip(owners, results, strict=True):
        assert (result is None) == (owner == "worker-a"), (owner, result)
        assert result is None or isinstance(result, LeaseLostError)
    assert await store.get("run-1") == b"worker-a"


BAD_OWNERS = {
    "empty": ("", "must be a non-empty string, got ''"),
    "not a string": (7, "must be a non-empty string, got 7"),
    "257 bytes": ("x" * 257, "must be at most 256 bytes of UTF-8"),
    "a lone surrogate": ("\ud800", "must be valid Unicode text"),
    "nul": ("a\x00b", "must not contain NUL characters"),
}

OWNER_OPERATIONS: dict[str, Callable[[Any, Any], Awaitable[object]]] = {
    "claim": lambda store, owner: store.claim("run-1", owner, 30),
    "release": lambda store, owner: store.release("run-1", owner),
    "break_lease": lambda store, owner: store.break_lease("run-1", owner),
    "fenced set": lambda store, owner: store.set("run-1", b"data", owner=owner),
    "fenced delete": lambda store, owner: store.delete("run-1", owner=owner),
}


@pytest.mark.parametrize("operation", OWNER_OPERATIONS)
@pytest.mark.parametrize("case", BAD_OWNERS)
async def test_a_bad_lease_owner_is_a_user_error(store: FencedCheckpointStore, case: str, operation: str) -> None:
    bad, message = BAD_OWNERS[case]
    with pytest.raises(UserError, match=f"^a lease owner {message}"):
        await OWNER_OPERATIONS[operation](store, bad)
    assert await store.get("run-1") is None


# -- ids -------------------------------------------------------------------------------------------------------------

# What no backend may turn into a driver's UnicodeEncodeError, a server error or a megabyte key: refused, typed, at
# the store's door, with a message that echoes only the start of the id.
BAD_IDS = {
    "empty": ("", "must be a non-empty string, got ''"),
    "none": (None, "must be a non-empty string, got None"),
    "not a string": (7, "must be a non-empty string, got 7"),
    "257 ascii bytes": ("x" * 257, "must be at most 256 bytes of UTF-8"),
    "258 utf-8 bytes in 129 characters": ("é" * 129, "must be at most 256 bytes of UTF-8, got 258"),
    "a megabyte": ("x" * 1_000_000, r"must be at most 256 bytes of UTF-8, got 'xxx.*…  ?\(1000000 characters\)"),
    "a lone surrogate": ("\ud800", "must be valid Unicode text, got a lone surrogate at index 0"),
    "a surrogate inside": ("order-\udfff-7", "must be valid Unicode text, got a lone surrogate at index 6"),
    "nul": ("a\x00b", "must not contain NUL characters"),
}

# Each operation with a bad id; every one of them is refused.
OPERATIONS = {
    "get": lambda store, id: store.get(id),
    "set": lambda store, id: store.set(id, b"data"),
    "delete": lambda store, id: store.delete(id),
    "claim": lambda store, id: store.claim(id, "worker-a", 30),
    "release": lambda store, id: store.release(id, "worker-a"),
    "holder": lambda store, id: store.holder(id),
    "break_lease": lambda store, id: store.break_lease(id, "worker-a"),
    "fenced set": lambda store, id: store.set(id, b"data", owner="worker-a"),
    "fenced delete": lambda store, id: store.delete(id, owner="worker-a"),
}


@pytest.mark.parametrize("operation", OPERATIONS)
@pytest.mark.parametrize("case", BAD_IDS)
async def test_a_bad_checkpoint_id_is_a_user_error_on_every_operation(
    store: CheckpointStore, case: str, operation: str
) -> None:
    bad, message = BAD_IDS[case]
    with pytest.raises(UserError, match=f"^a checkpoint id {message}") as caught:
        await OPERATIONS[operation](store, bad)
    assert len(str(caught.value)) < 200  # the id is not echoed whole


async def test_a_refused_id_leaves_the_store_usable(store: CheckpointStore) -> None:
    with pytest.raises(UserError):
        await store.set("\ud800", b"data")
    await store.set("run-1", b"data")
    assert await store.get("run-1") == b"data"


GOOD_IDS = [
    "x" * MAX_ID_BYTES,
    "é" * (MAX_ID_BYTES // 2),  # 256 bytes of UTF-8
    "订单/42 ✓ \U0001f600",
    "tab\tnew\nline",
    "'; DROP TABLE t; --",
    "lease:run-1",
    "run-1",
]


async def test_ids_up_to_the_limit_in_any_script_are_kept_apart(store: CheckpointStore) -> None:
    for i, checkpoint_id in enumerate(GOOD_IDS):
        await store.set(checkpoint_id, f"data {i}".encode())
    for i, checkpoint_id in enumerate(GOOD_IDS):
        assert await store.get(checkpoint_id) == f"data {i}".encode()
        assert await store.claim(checkpoint_id, "worker-a", 30)
        assert not await store.claim(checkpoint_id, "worker-b", 30)
    for checkpoint_id in GOOD_IDS:
        await store.release(checkpoint_id, "worker-a")
        await store.delete(checkpoint_id)
        assert await store.get(checkpoint_id) is None


# Ids that mean something to a file system, a URL, SQL's LIKE, Redis's patterns or a terminal.
DATA_IDS = ["..", "../x", "a/b", "x?y", "[/]", "%2e%2e", "%", "_", "*", "a:data:b", "'; --", ".hidden", "\x1b[2J"]


async def test_ids_that_look_like_paths_queries_or_patterns_are_only_data(store: CheckpointStore) -> None:
    for i, checkpoint_id in enumerate(DATA_IDS):
        await store.set(checkpoint_id, f"data {i}".encode())
    await store.delete("x")  # a pattern that would match others, were ids patterns
    for i, checkpoint_id in enumerate(DATA_IDS):
        assert await store.get(checkpoint_id) == f"data {i}".encode(), checkpoint_id


# -- lifecycle -------------------------------------------------------------------------------------------------------


async def test_every_backend_is_a_checkpoint_store(store: CheckpointStore) -> None:
    assert isinstance(store, CheckpointStore)


async def test_the_async_context_manager_closes_the_store(store: CheckpointStore) -> None:
    assert isinstance(store, AbstractAsyncContextManager)
    async with store as entered:
        assert entered is store
        await store.set("run-1", b"data")
    with pytest.raises(StoreError, match="the store is closed"):
        await store.get("run-1")


async def test_a_closed_store_refuses_the_lease_operations(store: FencedCheckpointStore) -> None:
    await store.close()
    for operation in ("holder", "break_lease", "fenced set", "fenced delete"):
        with pytest.raises(StoreError, match="the store is closed"):
            await OPERATIONS[operation](store, "run-1")


async def test_close_is_idempotent(store: CheckpointStore) -> None:
    await store.set("run-1", b"data")
    await store.close()
    await store.close()


async def test_close_before_first_use_is_fine(store: CheckpointStore) -> None:
    await store.close()


async def test_renew_extends_only_the_owners_unexpired_lease(store: Any) -> None:
    assert await store.claim("run-1", "worker-a", 0.5)
    assert await store.renew("run-1", "worker-a", 30)
    lease = await store.holder("run-1")
    assert lease is not None and lease.owner == "worker-a" and lease.expires_in > 1
    assert not await store.renew("run-1", "worker-b", 30)  # another's lease is not renewed for it
    assert (await store.holder("run-1")).owner == "worker-a"
    assert not await store.renew("run-2", "worker-a", 30)  # a free lease is not taken by a renewal
    assert await store.holder("run-2") is None


async def test_an_owner_never_renews_its_lapsed_lease_back(store: Any) -> None:
    # A holder paused past its ttl: nobody claimed the lease meanwhile, and still its renewal fails and takes nothing.
    assert await store.claim("run-1", "paused-worker", 0.2)
    await lapsed(store, "run-1")
    assert not await store.renew("run-1", "paused-worker", 30)
    assert await store.holder("run-1") is None
    with pytest.raises(LeaseLostError):
        await store.set("run-1", b"late", owner="paused-worker")
    assert await store.get("run-1") is None


async def test_an_owner_never_renews_a_lease_released_and_taken_again(store: Any) -> None:
    assert await store.claim("run-1", "old", 30)
    await store.release("run-1", "old")
    assert await store.claim("run-1", "new", 30)
    await store.release("run-1", "new")  # the new holder finished and let go: the row is gone
    assert not await store.renew("run-1", "old", 30)
    assert await store.holder("run-1") is None


@pytest.mark.parametrize("ttl", [0, -1])
async def test_renew_with_a_ttl_that_is_not_positive_is_a_user_error(store: Any, ttl: float) -> None:
    assert await store.claim("run-1", "worker-a", 30)
    with pytest.raises(UserError, match="ttl"):
        await store.renew("run-1", "worker-a", ttl)

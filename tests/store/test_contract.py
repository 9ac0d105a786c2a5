"""The CheckpointStore contract, run against every backend (the ``store`` fixture is parametrized over them)."""

from __future__ import annotations

import asyncio
import os
import random
from contextlib import AbstractAsyncContextManager

import pytest

from batonflow.errors import StoreError, UserError
from batonflow.store import MAX_ID_BYTES, CheckpointStore

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


async def test_close_is_idempotent(store: CheckpointStore) -> None:
    await store.set("run-1", b"data")
    await store.close()
    await store.close()


async def test_close_before_first_use_is_fine(store: CheckpointStore) -> None:
    await store.close()

"""The SessionStore contract on all five backends, then what each backend adds: layouts, durability, failures.

PostgreSQL and Redis are expected on 127.0.0.1 (``.ci/run`` starts them). A test that cannot reach them fails rather
than skips. Every test gets its own table or key prefix and removes it afterwards.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import sqlite3
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import redis.asyncio
from tests.services import POSTGRES_DSN, REDIS_URL

from batonflow.errors import CodecError, StoreError, UserError
from batonflow.schema import FunctionCall, ImagePart, Message, ResponseMeta, ToolCall, Usage, assistant, user
from batonflow.store import (
    FileSessionStore,
    InspectableLeases,
    Lease,
    MemorySessionStore,
    PostgresSessionStore,
    RedisSessionStore,
    SessionData,
    SessionState,
    SessionStore,
    SqliteSessionStore,
)

BACKENDS = ["memory", "sqlite", "postgres", "redis", "file"]
PERSISTENT = ["sqlite", "postgres", "redis", "file"]


@dataclass
class Backend:
    """How to open a store on one fresh place (file, table, prefix, directory), again and again."""

    kind: str
    args: dict[str, Any]

    def open(self) -> SessionStore:
        cls: Callable[..., SessionStore] = {
            "memory": MemorySessionStore,
            "sqlite": SqliteSessionStore,
            "postgres": PostgresSessionStore,
            "redis": RedisSessionStore,
            "file": FileSessionStore,
        }[self.kind]
        return cls(**self.args)

    async def drop(self) -> None:
        if self.kind == "postgres":
            conn = await asyncpg.connect(POSTGRES_DSN)
            try:
                table = self.args["table"]
                await conn.execute(f"DROP TABLE IF EXISTS {table}, {table}_messages, {table}_leases")
            finally:
                await conn.close()
        elif self.kind == "redis":
            client = redis.asyncio.Redis.from_url(REDIS_URL)
            try:
                keys = [key async for key in client.scan_iter(match=f"{self.args['prefix']}*")]
                if keys:
                    await client.delete(*keys)
            finally:
                await client.aclose()


@asynccontextmanager
async def opened(backend: Backend) -> AsyncIterator[SessionStore]:
    store = backend.open()
    try:
        yield store
    finally:
        await store.close()


def new_backend(kind: str, tmp_path: Path) -> Backend:
    token = uuid.uuid4().hex[:12]
    options: dict[str, dict[str, Any]] = {
        "memory": {},
        "sqlite": {"path": tmp_path / "nested" / "sessions.db"},
        "postgres": {"dsn": POSTGRES_DSN, "table": f"bf_sess_{token}"},
        "redis": {"url": REDIS_URL, "prefix": f"batonflow-test:{token}:"},
        "file": {"directory": tmp_path / "sessions"},
    }
    return Backend(kind, options[kind])


@pytest.fixture(params=BACKENDS)
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    backend = new_backend(request.param, tmp_path)
    yield backend
    await backend.drop()


@pytest.fixture
async def store(backend: Backend) -> AsyncIterator[SessionStore]:
    store = backend.open()
    yield store
    await store.close()


def turn(i: int) -> list[Message]:
    return [user(f"question {i}"), assistant(f"answer {i}")]


RICH = [
    user("multi\nline \u2028 separator \U0001f600 and a lone \ud800 surrogate", name="ann"),
    user([ImagePart(url="data:image/png;base64,AAAA", detail="low")]),
    Message(
        role="assistant",
        content="",
        reasoning_content="thinking",
        tool_calls=[ToolCall(index=0, id="call-1", function=FunctionCall(name="lookup", arguments='{"q": "x"}'))],
        response_meta=ResponseMeta(finish_reason="tool_calls", usage=Usage(prompt_tokens=3, total_tokens=5)),
        extra={"trace": [1, 2.5, None]},
    ),
    Message(role="tool", content="found", tool_call_id="call-1", tool_name="lookup"),
]


# -- messages --------------------------------------------------------------------------------------------------------


async def test_get_of_an_unknown_session_returns_none(store: SessionStore) -> None:
    assert await store.get("never-saved") is None


async def test_appended_messages_come_back_equal_and_in_order(store: SessionStore) -> None:
    await store.append_messages("s1", RICH)
    data = await store.get("s1")
    assert data is not None
    assert data.messages == RICH
    assert data.state == SessionState()


async def test_appends_accumulate_in_order(store: SessionStore) -> None:
    for i in range(3):
        await store.append_messages("s1", turn(i))
    data = await store.get("s1")
    assert data is not None
    assert data.messages == turn(0) + turn(1) + turn(2)


async def test_appending_no_messages_stores_nothing(store: SessionStore) -> None:
    await store.append_messages("s1", [])
    assert await store.get("s1") is None


async def test_replace_messages_makes_them_the_whole_list(store: SessionStore) -> None:
    await store.append_messages("s1", turn(0) + turn(1))
    await store.replace_messages("s1", turn(7))
    data = await store.get("s1")
    assert data is not None
    assert data.messages == turn(7)


async def test_replacing_with_no_messages_empties_the_list_and_keeps_the_state(store: SessionStore) -> None:
    await store.append_messages("s1", turn(0))
    await store.set_state("s1", SessionState(attrs={"k": 1}))
    await store.replace_messages("s1", [])
    assert await store.get("s1") == SessionData(messages=[], state=SessionState(attrs={"k": 1}))


async def test_replacing_the_only_thing_stored_with_nothing_leaves_no_session(store: SessionStore) -> None:
    await store.append_messages("s1", turn(0))
    await store.replace_messages("s1", [])
    assert await store.get("s1") is None


async def test_get_last_returns_only_the_latest_messages(store: SessionStore) -> None:
    everything = turn(0) + turn(1) + turn(2)
    await store.append_messages("s1", everything)
    for last, expected in [(3, everything[3:]), (1, everything[5:]), (6, everything), (99, everything)]:
        data = await store.get("s1", last=last)
        assert data is not None
        assert data.messages == expected, last


@pytest.mark.parametrize("last", [0, -1, 1.5, True])
async def test_get_with_a_bad_last_is_a_user_error(store: SessionStore, last: Any) -> None:
    with pytest.raises(UserError, match="last must be None"):
        await store.get("s1", last=last)


async def test_messages_that_are_not_messages_are_a_user_error(store: SessionStore) -> None:
    with pytest.raises(UserError, match="expected a Message at index 1, got dict"):
        await store.append_messages("s1", [user("hi"), {"role": "user"}])  # type: ignore[list-item]
    with pytest.raises(UserError, match="expected a sequence of messages, got Message"):
        await store.replace_messages("s1", user("hi"))  # type: ignore[arg-type]
    assert await store.get("s1") is None


@pytest.mark.parametrize("session_id", ["", None, 7])
async def test_a_session_id_must_be_a_non_empty_string(store: SessionStore, session_id: Any) -> None:
    with pytest.raises(UserError, match="a session id must be a non-empty string"):
        await store.get(session_id)


# The checkpoint ids' rule (a pending conversation's id is its run's checkpoint id), on every operation.
BAD_IDS = {
    "257 bytes": ("x" * 257, "must be at most 256 bytes of UTF-8"),
    "258 utf-8 bytes in 129 characters": ("é" * 129, "must be at most 256 bytes of UTF-8, got 258"),
    "a megabyte": ("x" * 1_000_000, r"must be at most 256 bytes of UTF-8, got 'xxx.*…  ?\(1000000 characters\)"),
    "a lone surrogate": ("\ud800", "must be valid Unicode text, got a lone surrogate at index 0"),
    "nul": ("a\x00b", "must not contain NUL characters"),
}

OPERATIONS: dict[str, Callable[[SessionStore, Any], Any]] = {
    "get": lambda store, id: store.get(id),
    "append_messages": lambda store, id: store.append_messages(id, turn(0)),
    "replace_messages": lambda store, id: store.replace_messages(id, turn(0)),
    "set_state": lambda store, id: store.set_state(id, SessionState(pending=True)),
    "delete": lambda store, id: store.delete(id),
    "claim": lambda store, id: store.claim(id, "worker-a", 30),
    "release": lambda store, id: store.release(id, "worker-a"),
    "holder": lambda store, id: store.holder(id),  # type: ignore[attr-defined]
    "break_lease": lambda store, id: store.break_lease(id, "worker-a"),  # type: ignore[attr-defined]
}


@pytest.mark.parametrize("operation", OPERATIONS)
@pytest.mark.parametrize("case", BAD_IDS)
async def test_a_bad_session_id_is_a_user_error_on_every_operation(
    store: SessionStore, case: str, operation: str
) -> None:
    bad, message = BAD_IDS[case]
    with pytest.raises(UserError, match=f"^a session id {message}") as caught:
        await OPERATIONS[operation](store, bad)
    assert len(str(caught.value)) < 200  # the id is not echoed whole


async def test_a_session_id_of_256_bytes_in_any_script_round_trips(store: SessionStore) -> None:
    ids = ["x" * 256, "é" * 128, "会话 ✓ \U0001f600"]
    for session_id in ids:
        await store.append_messages(session_id, turn(0))
        data = await store.get(session_id)
        assert data is not None and data.messages == turn(0)
        assert await store.claim(session_id, "worker-a", 30)
        await store.release(session_id, "worker-a")
        await store.delete(session_id)
        assert await store.get(session_id) is None


# -- state -----------------------------------------------------------------------------------------------------------


async def test_state_round_trips_with_codec_values_and_binary_snapshot(store: SessionStore) -> None:
    state = SessionState(
        attrs={
            "user": "ann",
            "seen": {1, 2},
            "when": datetime(2024, 5, 1, 12, 30, tzinfo=UTC),
            "pair": ("a", 1),
            "raw": b"\x00\xff",
            "nested": {"deep": [1.5, None, True]},
        },
        pending=True,
        pending_reason="waiting for approval",
        snapshot=bytes(range(256)) * 10,
    )
    await store.set_state("s1", state)
    data = await store.get("s1")
    assert data == SessionData(messages=[], state=state)


async def test_set_state_replaces_the_previous_state(store: SessionStore) -> None:
    await store.set_state("s1", SessionState(attrs={"a": 1}, pending=True, pending_reason="why", snapshot=b"x"))
    await store.set_state("s1", SessionState(attrs={"b": 2}))
    data = await store.get("s1")
    assert data is not None
    assert data.state == SessionState(attrs={"b": 2})


async def test_an_unencodable_attribute_is_a_codec_error_naming_it_and_keeps_the_old_state(
    store: SessionStore,
) -> None:
    class Unregistered:
        pass

    await store.set_state("s1", SessionState(attrs={"ok": 1}))
    with pytest.raises(CodecError, match=r"cannot encode state of session 's1': .*at \$\.attrs\.bad") as caught:
        await store.set_state("s1", SessionState(attrs={"bad": Unregistered()}))
    assert caught.value.path == "$.attrs.bad"
    data = await store.get("s1")
    assert data is not None
    assert data.state.attrs == {"ok": 1}


async def test_a_state_that_is_not_a_session_state_is_a_user_error(store: SessionStore) -> None:
    with pytest.raises(UserError, match="expected a SessionState, got dict"):
        await store.set_state("s1", {"attrs": {}})  # type: ignore[arg-type]


async def test_values_read_back_are_copies_of_what_was_saved(store: SessionStore) -> None:
    attrs: dict[str, Any] = {"items": [1]}
    message = user("original")
    await store.append_messages("s1", [message])
    await store.set_state("s1", SessionState(attrs=attrs))
    attrs["items"].append(2)
    message.content = "changed"
    first = await store.get("s1")
    assert first is not None
    first.state.attrs["items"].append(3)
    first.messages[0].content = "changed too"
    second = await store.get("s1")
    assert second == SessionData(messages=[user("original")], state=SessionState(attrs={"items": [1]}))


# -- sessions and lifecycle ------------------------------------------------------------------------------------------


async def test_delete_forgets_messages_and_state(store: SessionStore) -> None:
    await store.append_messages("s1", turn(0))
    await store.set_state("s1", SessionState(attrs={"a": 1}))
    await store.delete("s1")
    assert await store.get("s1") is None


async def test_delete_of_an_unknown_session_is_not_an_error(store: SessionStore) -> None:
    await store.delete("never-saved")
    assert await store.get("never-saved") is None


async def test_sessions_are_kept_apart_by_id(store: SessionStore) -> None:
    # Ids that end like another id's key or file suffix must not reach its data.
    ids = ["a", "a:messages", "a:snapshot", "a.messages", "a.snapshot", "r\u00e9sum\u00e9 \U0001f600"]
    for i, session_id in enumerate(ids):
        await store.append_messages(session_id, turn(i))
        await store.set_state(session_id, SessionState(attrs={"i": i}))
    for i, session_id in enumerate(ids):
        assert await store.get(session_id) == SessionData(messages=turn(i), state=SessionState(attrs={"i": i}))
    await store.delete("a")
    assert await store.get("a") is None
    assert await store.get("a:messages") is not None


async def test_ids_that_look_like_paths_queries_or_patterns_are_only_data(store: SessionStore) -> None:
    ids = ["..", "../x", "a/b", "x?y", "[/]", "%2e%2e", "%", "_", "*", "a:snapshot:b", "'; --", ".hidden", "\x1b[2J"]
    for i, session_id in enumerate(ids):
        await store.append_messages(session_id, turn(i))
    await store.delete("x")
    for i, session_id in enumerate(ids):
        data = await store.get(session_id)
        assert data is not None and data.messages == turn(i), session_id


async def test_every_backend_is_a_session_store(store: SessionStore) -> None:
    assert isinstance(store, SessionStore)


async def test_a_closed_store_refuses_work_and_close_is_idempotent(store: SessionStore) -> None:
    await store.append_messages("s1", turn(0))
    await store.close()
    await store.close()
    with pytest.raises(StoreError, match="the store is closed"):
        await store.get("s1")
    with pytest.raises(StoreError, match="the store is closed"):
        await store.append_messages("s1", turn(1))


async def test_close_before_first_use_is_fine(store: SessionStore) -> None:
    await store.close()
    with pytest.raises(StoreError, match="the store is closed"):
        await store.set_state("s1", SessionState())


# -- concurrency -----------------------------------------------------------------------------------------------------


async def test_parallel_appends_all_land_and_batches_never_interleave(store: SessionStore) -> None:
    batches = [[user(f"task {t} message {i}") for i in range(6)] for t in range(8)]
    await asyncio.gather(*(store.append_messages("s1", batch) for batch in batches))
    data = await store.get("s1")
    assert data is not None
    assert len(data.messages) == 48
    runs = [data.messages[i : i + 6] for i in range(0, 48, 6)]
    assert sorted(runs, key=lambda run: run[0].content) == batches


async def test_two_stores_appending_to_one_session_both_land(backend: Backend) -> None:
    if backend.kind == "memory":
        first = second = backend.open()  # a memory store is shared by sharing the object
    else:
        first, second = backend.open(), backend.open()
    try:
        await asyncio.gather(first.append_messages("s1", turn(1)), second.append_messages("s1", turn(2)))
        data = await first.get("s1")
        assert data is not None
        assert data.messages in (turn(1) + turn(2), turn(2) + turn(1))
    finally:
        await first.close()
        await second.close()


async def test_readers_see_a_whole_replacement_or_none_of_it(store: SessionStore) -> None:
    old, new = [user("old")] * 30, [user("new")] * 40
    await store.replace_messages("s1", old)

    async def writer() -> None:
        for i in range(10):
            await store.replace_messages("s1", new if i % 2 == 0 else old)

    async def reader() -> None:
        for _ in range(10):
            data = await store.get("s1")
            assert data is not None
            assert data.messages in (old, new)

    await asyncio.gather(writer(), reader(), reader())


# -- leases ----------------------------------------------------------------------------------------------------------


async def test_claim_of_a_free_session_succeeds_and_another_owner_is_refused(store: SessionStore) -> None:
    assert await store.claim("s1", "worker-a", 30) is True
    assert await store.claim("s1", "worker-b", 30) is False
    assert await store.claim("s2", "worker-b", 30) is True  # leases are per session


async def test_claim_by_the_holder_renews_the_lease(store: SessionStore) -> None:
    assert await store.claim("s1", "worker-a", 0.5)
    await asyncio.sleep(0.3)
    assert await store.claim("s1", "worker-a", 0.5)
    await asyncio.sleep(0.3)  # past the first lease's end, within the renewed one
    assert await store.claim("s1", "worker-b", 30) is False


async def test_an_expired_session_lease_can_be_claimed_by_another_owner(store: SessionStore) -> None:
    assert await store.claim("s1", "crashed-worker", 0.2)
    await asyncio.sleep(0.4)
    assert await store.claim("s1", "worker-b", 30) is True
    assert await store.claim("s1", "crashed-worker", 30) is False


async def test_only_the_holder_releases_a_session_lease(store: SessionStore) -> None:
    await store.release("s1", "worker-a")  # a free lease: nothing to do
    assert await store.claim("s1", "worker-a", 30)
    await store.release("s1", "worker-b")
    assert await store.claim("s1", "worker-b", 30) is False
    await store.release("s1", "worker-a")
    assert await store.claim("s1", "worker-b", 30) is True


async def test_concurrent_session_claims_let_exactly_one_owner_win(store: SessionStore) -> None:
    for round_ in range(5):
        owners = [f"worker-{i}" for i in range(8)]
        results = await asyncio.gather(*(store.claim(f"race-{round_}", owner, 30) for owner in owners))
        assert results.count(True) == 1, results


async def test_a_session_lease_lives_apart_from_the_session(store: SessionStore) -> None:
    assert await store.claim("s1", "worker-a", 30)
    assert await store.get("s1") is None  # a lease is not data
    await store.append_messages("s1", turn(0))
    await store.delete("s1")  # deleting the session keeps the lease
    assert await store.claim("s1", "worker-b", 30) is False
    await store.set_state("s1", SessionState(pending=True))
    await store.release("s1", "worker-a")  # releasing the lease keeps the session
    assert await store.get("s1") == SessionData(state=SessionState(pending=True))


async def poll(check: Callable[[], Awaitable[bool]], what: str) -> None:
    """Wait until ``check()`` is true: a lease lapses on the store's clock, which a test can only watch. Ten seconds
    is far beyond any wait here; it only keeps a broken store from hanging the suite."""
    deadline = time.monotonic() + 10
    while not await check():
        if time.monotonic() > deadline:
            pytest.fail(f"still waiting, after 10 s, for {what}")
        await asyncio.sleep(0.02)


async def lapsed(store: Any, session_id: str) -> None:
    async def free() -> bool:
        return await store.holder(session_id) is None

    await poll(free, f"the lease on {session_id!r} to lapse")


async def test_every_backend_shows_and_breaks_its_leases(store: SessionStore) -> None:
    assert isinstance(store, InspectableLeases)


async def test_holder_of_a_session_names_the_owner_and_the_times(store: Any) -> None:
    assert await store.holder("s1") is None
    await store.set_state("s1", SessionState(pending=True))  # a session is not a lease
    assert await store.holder("s1") is None
    assert await store.claim("s1", "worker-a", 30)
    lease = await store.holder("s1")
    assert isinstance(lease, Lease)
    assert lease.owner == "worker-a"
    assert lease.held_for >= 0 and 0 < lease.expires_in <= 30
    assert lease.held_for + lease.expires_in == pytest.approx(30, abs=0.01)
    assert await store.holder("s2") is None


async def test_an_expired_session_lease_has_no_holder(store: Any) -> None:
    assert await store.claim("s1", "crashed-worker", 0.2)
    await lapsed(store, "s1")
    assert await store.holder("s1") is None


async def test_renewing_a_session_lease_keeps_its_start(store: Any) -> None:
    assert await store.claim("s1", "worker-a", 30)
    before: Lease | None = None

    async def held_a_while() -> bool:
        nonlocal before
        before = await store.holder("s1")
        return before is not None and before.held_for > 0.1

    await poll(held_a_while, "the lease to be held for 0.1 s")
    assert await store.claim("s1", "worker-a", 30)
    after = await store.holder("s1")
    assert before is not None and after is not None
    assert after.held_for >= before.held_for > 0.1
    assert after.held_for + after.expires_in > 30.1 - 0.01


async def test_a_session_lease_is_broken_only_for_its_holder(store: Any) -> None:
    assert await store.break_lease("s1", "worker-a") is False  # free: nothing to break
    assert await store.claim("s1", "stuck", 0.2)
    await lapsed(store, "s1")
    assert await store.claim("s1", "next", 30)
    assert await store.break_lease("s1", "stuck") is False  # "stuck" was seen, but "next" holds it now
    lease = await store.holder("s1")
    assert lease is not None and lease.owner == "next"
    assert await store.break_lease("s1", "next") is True
    assert await store.holder("s1") is None
    assert await store.claim("s1", "worker-b", 30)


async def test_breaking_a_lapsed_session_lease_reports_nothing_broken(store: Any) -> None:
    assert await store.claim("s1", "worker-a", 0.2)
    await lapsed(store, "s1")
    assert await store.break_lease("s1", "worker-a") is False
    assert await store.claim("s1", "worker-b", 30)


@pytest.mark.parametrize(
    ("owner", "message"),
    [("", "must be a non-empty string, got ''"), (7, "got 7"), ("\ud800", "valid Unicode"), ("a\x00", "NUL")],
)
@pytest.mark.parametrize("operation", ["claim", "release", "break_lease"])
async def test_a_bad_session_lease_owner_is_a_user_error(store: Any, operation: str, owner: Any, message: str) -> None:
    call = {
        "claim": lambda: store.claim("s1", owner, 30),
        "release": lambda: store.release("s1", owner),
        "break_lease": lambda: store.break_lease("s1", owner),
    }[operation]
    with pytest.raises(UserError, match=f"^a lease owner .*{message}"):
        await call()
    assert await store.holder("s1") is None


@pytest.mark.parametrize("kind", PERSISTENT)
async def test_two_store_objects_on_one_place_share_the_leases(kind: str, tmp_path: Path) -> None:
    backend = new_backend(kind, tmp_path)
    first, second = backend.open(), backend.open()
    try:
        results = await asyncio.gather(first.claim("s1", "worker-a", 30), second.claim("s1", "worker-b", 30))
        assert sorted(results) == [False, True]
    finally:
        await first.close()
        await second.close()
        await backend.drop()


@pytest.mark.parametrize("ttl", [0, -1, float("nan")])
async def test_a_session_claim_with_a_ttl_that_is_not_positive_is_a_user_error(store: SessionStore, ttl: float) -> None:
    with pytest.raises(UserError, match="a lease ttl must be a positive number of seconds"):
        await store.claim("s1", "worker-a", ttl)


async def test_file_store_keeps_a_lease_in_a_json_file_until_it_is_released(tmp_path: Path) -> None:
    async with FileSessionStore(tmp_path / "sessions") as store:
        assert await store.claim("s1", "worker-a", 30)
        lease = json.loads((tmp_path / "sessions" / "s1.lease.json").read_text())
        assert lease["owner"] == "worker-a"
        assert lease["expires_at"] == pytest.approx(time.time() + 30, abs=5)
        await store.release("s1", "worker-a")
        assert not (tmp_path / "sessions" / "s1.lease.json").exists()


async def test_file_store_records_when_the_lease_was_claimed(tmp_path: Path) -> None:
    async with FileSessionStore(tmp_path / "sessions") as store:
        assert await store.claim("s1", "worker-a", 30)
        first = json.loads((tmp_path / "sessions" / "s1.lease.json").read_text())
        assert first["claimed_at"] == pytest.approx(first["expires_at"] - 30)
        assert await store.claim("s1", "worker-a", 60)  # a renewal keeps the start
        renewed = json.loads((tmp_path / "sessions" / "s1.lease.json").read_text())
        assert renewed["claimed_at"] == first["claimed_at"]
        assert renewed["expires_at"] > first["expires_at"]


async def test_file_store_reads_a_lease_file_of_the_previous_release(tmp_path: Path) -> None:
    (tmp_path / "sessions").mkdir()
    old = {"owner": "old-worker", "expires_at": time.time() + 30}  # no claimed_at
    (tmp_path / "sessions" / "s1.lease.json").write_text(json.dumps(old))
    async with FileSessionStore(tmp_path / "sessions") as store:
        assert await store.claim("s1", "worker-b", 30) is False
        lease = await store.holder("s1")
        assert lease is not None
        assert (lease.owner, lease.held_for) == ("old-worker", 0.0)  # its start is unknown
        assert await store.break_lease("s1", "old-worker") is True
        assert await store.claim("s1", "worker-b", 30)


async def test_file_store_looking_at_a_lease_creates_nothing(tmp_path: Path) -> None:
    async with FileSessionStore(tmp_path / "sessions") as store:
        assert await store.holder("s1") is None
        assert await store.break_lease("s1", "worker-a") is False
    assert not (tmp_path / "sessions").exists()


async def test_file_store_treats_an_unreadable_lease_as_free(tmp_path: Path) -> None:
    (tmp_path / "sessions").mkdir()
    (tmp_path / "sessions" / "s1.lease.json").write_text('{"owner": "torn')  # its writer died mid-write
    async with FileSessionStore(tmp_path / "sessions") as store:
        assert await store.claim("s1", "worker-a", 30)


# -- persistent backends ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", PERSISTENT)
async def test_a_reopened_store_sees_what_was_saved(kind: str, tmp_path: Path) -> None:
    backend = new_backend(kind, tmp_path)
    try:
        async with opened(backend) as store:
            await store.append_messages("s1", RICH)
            await store.set_state("s1", SessionState(attrs={"k": "v"}, snapshot=b"ckpt"))
        async with opened(backend) as store:
            assert await store.get("s1") == SessionData(
                messages=RICH, state=SessionState(attrs={"k": "v"}, snapshot=b"ckpt")
            )
    finally:
        await backend.drop()


async def test_sqlite_shares_a_database_file_with_the_checkpoint_store(tmp_path: Path) -> None:
    from batonflow.store import SqliteCheckpointStore

    path = tmp_path / "batonflow.db"
    async with SqliteCheckpointStore(path) as checkpoints, SqliteSessionStore(path) as sessions:
        await checkpoints.set("run-1", b"checkpoint")
        await sessions.append_messages("run-1", turn(0))
        assert await checkpoints.get("run-1") == b"checkpoint"
        assert await sessions.get("run-1") == SessionData(messages=turn(0))
    tables = {row[0] for row in sqlite3.connect(path).execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"batonflow_checkpoints", "batonflow_sessions", "batonflow_sessions_messages"} <= tables


async def test_sqlite_corrupt_message_data_is_a_codec_error_naming_the_session(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with SqliteSessionStore(path) as store:
        await store.append_messages("s1", turn(0))
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE batonflow_sessions_messages SET data = x'00010203' WHERE seq = 2")
    async with SqliteSessionStore(path) as store:
        with pytest.raises(CodecError, match=r"cannot decode message of session 's1': corrupt payload"):
            await store.get("s1")


@pytest.mark.parametrize("table", ["bad-name", "x; DROP TABLE y", "1abc", "a" * 51])
def test_sql_table_names_must_be_plain_identifiers(tmp_path: Path, table: str) -> None:
    with pytest.raises(UserError, match="a table name must be a plain SQL identifier"):
        SqliteSessionStore(tmp_path / "s.db", table=table)
    with pytest.raises(UserError, match="a table name must be a plain SQL identifier"):
        PostgresSessionStore(POSTGRES_DSN, table=table)


async def test_redis_keeps_the_originals_keys(tmp_path: Path) -> None:
    backend = new_backend("redis", tmp_path)
    prefix = backend.args["prefix"]
    client = redis.asyncio.Redis.from_url(REDIS_URL)
    try:
        async with opened(backend) as store:
            await store.append_messages("s1", turn(0))
            await store.set_state("s1", SessionState(pending=True))
        keys = sorted([key async for key in client.scan_iter(match=f"{prefix}*")])
        assert keys == [f"{prefix}s1:messages".encode(), f"{prefix}s1:snapshot".encode()]
        assert await client.type(f"{prefix}s1:messages") == b"list"
        assert await client.llen(f"{prefix}s1:messages") == 2
    finally:
        await client.aclose()
        await backend.drop()


async def test_postgres_keeps_messages_in_their_own_table(tmp_path: Path) -> None:
    backend = new_backend("postgres", tmp_path)
    table = backend.args["table"]
    try:
        async with opened(backend) as store:
            await store.append_messages("s1", turn(0) + turn(1))
            await store.set_state("s1", SessionState())
        conn = await asyncpg.connect(POSTGRES_DSN)
        try:
            assert await conn.fetchval(f"SELECT count(*) FROM {table}_messages WHERE session_id = 's1'") == 4
            assert await conn.fetchval(f"SELECT count(*) FROM {table}") == 1
        finally:
            await conn.close()
    finally:
        await backend.drop()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_unreachable_postgres_is_a_store_error_without_the_password() -> None:
    port = _closed_port()
    store = PostgresSessionStore(f"postgresql://postgres:secret@127.0.0.1:{port}/test")
    with pytest.raises(StoreError) as caught:
        await asyncio.wait_for(store.append_messages("s1", turn(0)), 60)  # a guard against a hang, not a measure
    assert str(caught.value).startswith(
        f"PostgreSQL session store at 127.0.0.1:{port}: cannot append to session 's1': could not connect ("
    )
    assert str(caught.value).endswith("): nothing was written")
    assert "secret" not in str(caught.value)
    assert caught.value.backend == "postgres"
    await store.close()


async def test_unreachable_redis_is_a_store_error_naming_the_operation() -> None:
    port = _closed_port()
    store = RedisSessionStore(f"redis://:secret@127.0.0.1:{port}/0")
    with pytest.raises(StoreError) as caught:
        await store.get("s1")
    message = str(caught.value)
    assert message.startswith(f"Redis session store at 127.0.0.1:{port}: cannot read session 's1': could not connect (")
    assert message.endswith(")")
    assert "secret" not in message
    assert caught.value.backend == "redis"
    await store.close()


def test_postgres_and_redis_without_their_drivers_say_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "asyncpg", None)
    monkeypatch.setitem(sys.modules, "redis", None)
    monkeypatch.setitem(sys.modules, "redis.asyncio", None)
    with pytest.raises(ImportError, match=r"PostgresSessionStore needs the asyncpg driver: .*batonflow\[postgres\]"):
        PostgresSessionStore(POSTGRES_DSN)
    with pytest.raises(ImportError, match=r"RedisSessionStore needs the redis driver: .*batonflow\[redis\]"):
        RedisSessionStore(REDIS_URL)


async def test_sqlite_failure_is_a_store_error_naming_the_file(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where a directory should be")
    async with SqliteSessionStore(blocker / "s.db") as store:
        with pytest.raises(
            StoreError, match=rf"^SQLite session store at {re.escape(str(blocker / 's.db'))}: cannot read session 's1'"
        ):
            await store.get("s1")


# -- the file backend ------------------------------------------------------------------------------------------------


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


async def test_file_store_appends_one_json_object_per_line(tmp_path: Path) -> None:
    async with FileSessionStore(tmp_path) as store:
        await store.append_messages("s1", turn(0))
        before = (tmp_path / "s1.messages.ndjson").read_bytes()
        await store.append_messages("s1", RICH)
        after = (tmp_path / "s1.messages.ndjson").read_bytes()
    assert after.startswith(before)  # appended, not rewritten
    lines = after.decode("utf-8").split("\n")
    assert lines[-1] == ""
    objects = [json.loads(line) for line in lines[:-1]]
    assert len(objects) == 2 + len(RICH)
    assert objects[0] == {"$c": "Message", "role": "user", "content": "question 0"}


async def test_file_store_replace_rewrites_the_whole_file(tmp_path: Path) -> None:
    async with FileSessionStore(tmp_path) as store:
        await store.append_messages("s1", turn(0) + turn(1))
        await store.replace_messages("s1", turn(0))
        text = (tmp_path / "s1.messages.ndjson").read_text("utf-8")
        assert [json.loads(line)["content"] for line in text.splitlines()] == ["question 0", "answer 0"]
        await store.replace_messages("s1", [])
        assert not (tmp_path / "s1.messages.ndjson").exists()
    assert _names(tmp_path) == []  # no temporary files left behind


async def test_file_store_writes_the_state_as_json(tmp_path: Path) -> None:
    async with FileSessionStore(tmp_path / "d") as store:
        await store.set_state("s1", SessionState(attrs={"k": [1]}, pending=True, pending_reason="r", snapshot=b"\x00"))
    saved = json.loads((tmp_path / "d" / "s1.snapshot.json").read_text("utf-8"))
    assert saved == {
        "attrs": {"k": [1]},
        "pending": True,
        "pending_reason": "r",
        "snapshot": {"$t": "bytes", "v": "AA=="},
    }
    assert _names(tmp_path / "d") == ["s1.snapshot.json"]


async def test_file_store_corrupt_line_is_a_codec_error_naming_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "s1.messages.ndjson"
    async with FileSessionStore(tmp_path) as store:
        await store.append_messages("s1", turn(0) + turn(1))
        await store.append_messages("s2", turn(2))
        lines = path.read_text("utf-8").splitlines()
        lines[2] = lines[2][:15]  # torn mid-object
        path.write_text("\n".join(lines) + "\n", "utf-8")
        with pytest.raises(CodecError) as caught:
            await store.get("s1")
        other = await store.get("s2")  # the other sessions are untouched
        assert other is not None and other.messages == turn(2)
    assert str(caught.value).startswith(f"cannot decode message of session 's1' ({path}, line 3): invalid JSON: ")


async def test_file_store_line_of_the_wrong_shape_is_a_codec_error_with_file_line_and_path(tmp_path: Path) -> None:
    path = tmp_path / "s1.messages.ndjson"
    path.write_text('{"$c": "Message", "role": "user"}\n\n{"$c": "Message", "role": "user", "colour": 1}\n', "utf-8")
    async with FileSessionStore(tmp_path) as store:
        with pytest.raises(CodecError, match=r"line 3\): unknown field 'colour' of type 'Message' at \$$"):
            await store.get("s1")
    path.write_text('["not", "a", "message"]\n', "utf-8")
    async with FileSessionStore(tmp_path) as store:
        with pytest.raises(CodecError, match=r"line 1\): expected a Message, got list"):
            await store.get("s1")


async def test_file_store_corrupt_snapshot_is_a_codec_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s1.snapshot.json"
    path.write_text('{"attrs": {}, "pending": "yes", "pending_reason": null, "snapshot": null}', "utf-8")
    async with FileSessionStore(tmp_path) as store:
        with pytest.raises(
            CodecError, match=rf"state of session 's1' \({re.escape(str(path))}\): expected bool at \$\.pending"
        ):
            await store.get("s1")
        path.write_text("{not json", "utf-8")
        with pytest.raises(CodecError, match=rf"state of session 's1' \({re.escape(str(path))}\): invalid JSON: "):
            await store.get("s1")


async def test_file_store_append_after_a_torn_last_line_keeps_the_damage_on_that_line(tmp_path: Path) -> None:
    path = tmp_path / "s1.messages.ndjson"
    async with FileSessionStore(tmp_path) as store:
        await store.append_messages("s1", turn(0))
        path.write_bytes(path.read_bytes() + b'{"$c": "Mess')  # a crash mid-append
        await store.append_messages("s1", turn(1))
        with pytest.raises(CodecError, match=r"line 3\): invalid JSON"):
            await store.get("s1")
        data = await store.get("s1", last=2)  # the lines after the damage are whole
        assert data is not None
        assert data.messages == turn(1)


HOSTILE_IDS = ["..", "../escape", "a/b", "a\\b", ".hidden", "%2e%2e", "%2F", "x" * 256, "é" * 128, "\n\x1b[2J", "."]


@pytest.mark.parametrize("session_id", HOSTILE_IDS)
async def test_file_store_encodes_any_id_as_one_file_name_in_its_folder(tmp_path: Path, session_id: str) -> None:
    folder = tmp_path / "d"
    async with FileSessionStore(folder) as store:
        await store.append_messages(session_id, turn(0))
        await store.set_state(session_id, SessionState(attrs={"id": session_id}))
        assert await store.claim(session_id, "w", 30)
        assert await store.get(session_id) == SessionData(
            messages=turn(0), state=SessionState(attrs={"id": session_id})
        )
        names = _names(folder)
        await store.release(session_id, "w")
        await store.delete(session_id)
        assert await store.get(session_id) is None
    assert [p for p in tmp_path.rglob("*") if p.is_file() and p.parent != folder] == []  # noqa: ASYNC240
    assert len(names) == 4  # the lock, and the three files of the id
    assert all(not n.startswith(".") and len(n.encode()) <= 255 for n in names if n != ".leases.lock")
    assert _names(folder) == [".leases.lock"]


async def test_file_store_keeps_ids_apart_that_encode_alike_in_part(tmp_path: Path) -> None:
    # "%2F" is stored escaped, so it cannot meet "/"; two long ids are hashed apart.
    ids = ["/", "%2F", "%252F", ".a", "%2Ea", "y" * 256, "y" * 255 + "z", "a"]
    async with FileSessionStore(tmp_path) as store:
        for i, session_id in enumerate(ids):
            await store.append_messages(session_id, turn(i))
        for i, session_id in enumerate(ids):
            data = await store.get(session_id)
            assert data is not None and data.messages == turn(i), session_id


async def test_file_store_keeps_the_file_names_of_plain_ids(tmp_path: Path) -> None:
    async with FileSessionStore(tmp_path) as store:
        await store.append_messages("chat-1 a:b é", turn(0))
    assert _names(tmp_path) == ["chat-1 a:b é.messages.ndjson"]


async def test_file_store_failure_is_a_store_error_naming_the_directory(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a directory should be")
    async with FileSessionStore(blocker) as store:
        with pytest.raises(
            StoreError, match=rf"^file session store at {re.escape(str(blocker))}: cannot append to session 's1'"
        ):
            await store.append_messages("s1", turn(0))


async def test_a_session_lease_is_renewed_only_unexpired_and_by_its_owner(store: Any) -> None:
    assert await store.claim("s1", "worker-a", 30)
    assert await store.renew("s1", "worker-a", 30)
    assert not await store.renew("s1", "worker-b", 30)
    assert not await store.renew("s2", "worker-a", 30)  # a free lease is not taken by a renewal
    assert await store.holder("s2") is None


async def test_an_owner_never_renews_its_lapsed_session_lease_back(store: Any) -> None:
    assert await store.claim("s1", "paused-worker", 0.2)
    await lapsed(store, "s1")
    assert not await store.renew("s1", "paused-worker", 30)
    assert await store.holder("s1") is None

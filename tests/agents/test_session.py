"""The conversation Session: Solon's AgentSession semantics, and what save() and load() write and read.

The persistence tests run on all five session store backends (PostgreSQL and Redis on 127.0.0.1, each test with its
own table or key prefix, removed afterwards).
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from batonflow.agents import Session
from batonflow.errors import CodecError, StoreError, UserError
from batonflow.schema import FunctionCall, Message, ToolCall, assistant, system, tool_message, user
from batonflow.store import (
    FileSessionStore,
    MemoryCheckpointStore,
    MemorySessionStore,
    SessionData,
    SessionState,
    SessionStore,
)


@pytest.fixture
def store(session_store: SessionStore) -> SessionStore:
    return session_store


def call(call_id: str, name: str = "lookup") -> Message:
    return assistant(tool_calls=[ToolCall(id=call_id, function=FunctionCall(name=name, arguments="{}"))])


def contents(messages: Sequence[Message]) -> list[str]:
    return [m.content or f"<{m.role}>" for m in messages]


# -- messages --------------------------------------------------------------------------------------------------------


def test_system_messages_are_never_kept() -> None:
    session = Session("s1")
    session.add(system("you are helpful"), user("hi"), assistant("hello"), system("again"))
    assert contents(session.messages) == ["hi", "hello"]


def test_a_new_session_is_empty_until_a_message_is_added() -> None:
    session = Session("s1")
    assert session.is_empty
    session.add(system("only a system message"))
    assert session.is_empty
    session.add(user("hi"))
    assert not session.is_empty


def test_messages_is_a_copy_that_cannot_change_the_session() -> None:
    session = Session("s1")
    session.add(user("hi"))
    session.messages.append(user("sneaked in"))
    assert contents(session.messages) == ["hi"]


def test_past_max_messages_the_oldest_are_dropped() -> None:
    session = Session("s1", max_messages=3)
    for i in range(5):
        session.add(user(f"m{i}"))
    assert contents(session.messages) == ["m2", "m3", "m4"]


def test_a_batch_past_max_messages_keeps_exactly_max_messages() -> None:
    # The original drops as many as the batch holds (here 3, leaving 1); we drop only what is over.
    session = Session("s1", max_messages=3)
    session.add(user("m0"))
    session.add(user("m1"), user("m2"), user("m3"))
    assert contents(session.messages) == ["m1", "m2", "m3"]


def test_trimming_drops_the_tool_results_of_a_dropped_call() -> None:
    session = Session("s1", max_messages=4)
    session.add(call("c1"), tool_message("r1", tool_call_id="c1"), tool_message("r2", tool_call_id="c1"))
    session.add(user("next"), assistant("done"))
    assert contents(session.messages) == ["next", "done"]


def test_add_refuses_what_is_not_a_message_and_hints_at_unpacking() -> None:
    session = Session("s1")
    with pytest.raises(UserError, match=re.escape("got list at position 0 (unpack a list with add(*messages))")):
        session.add([user("hi")])  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"Session\.add takes messages, got str at position 1"):
        session.add(user("hi"), "text")  # type: ignore[arg-type]
    assert session.is_empty  # nothing of a refused call is kept


# -- the window ------------------------------------------------------------------------------------------------------


def conversation() -> list[Message]:
    return [
        user("u1"),
        assistant("a1"),
        user("u2"),
        call("c1"),
        tool_message("r1", tool_call_id="c1"),
        assistant("a2"),
        user("u3"),
        assistant("a3"),
    ]


def test_latest_without_n_or_beyond_the_length_is_every_message() -> None:
    session = Session("s1")
    session.add(*conversation())
    assert session.latest() == conversation()
    assert session.latest(8) == conversation()
    assert session.latest(100) == conversation()


def test_latest_widens_back_to_the_user_message_that_opened_the_turn() -> None:
    session = Session("s1")
    session.add(*conversation())
    assert contents(session.latest(2)) == ["u3", "a3"]
    assert contents(session.latest(3)) == ["u2", "<assistant>", "r1", "a2", "u3", "a3"]  # cut fell on a2
    assert contents(session.latest(5)) == ["u2", "<assistant>", "r1", "a2", "u3", "a3"]  # cut fell on the call


def test_latest_with_no_user_message_before_the_cut_moves_forward_to_one() -> None:
    session = Session("s1")
    session.add(assistant("greeting"), assistant("more"), user("u1"), assistant("a1"))
    assert contents(session.latest(3)) == ["u1", "a1"]


def test_latest_never_opens_with_a_tool_result_whose_call_it_leaves_out() -> None:
    session = Session("s1")
    session.add(call("c1"), tool_message("r1", tool_call_id="c1"), tool_message("r2", tool_call_id="c1"))
    session.add(assistant("done"))
    assert contents(session.latest(2)) == ["<assistant>", "r1", "r2", "done"]
    orphans = Session("s2")
    orphans.add(tool_message("r0", tool_call_id="gone"), tool_message("r1", tool_call_id="gone"), assistant("a"))
    assert contents(orphans.latest(2)) == ["a"]


def test_latest_zero_is_no_message_and_a_negative_count_is_a_user_error() -> None:
    session = Session("s1")
    session.add(*conversation())
    assert session.latest(0) == []
    for bad in (-1, 2.5, True):
        with pytest.raises(UserError, match=r"latest\(n\) takes None \(every message\) or a count >= 0"):
            session.latest(bad)  # type: ignore[arg-type]


# -- removing --------------------------------------------------------------------------------------------------------


def test_remove_latest_removes_the_last_messages() -> None:
    session = Session("s1")
    session.add(*conversation())
    session.remove_latest(2)
    assert contents(session.messages) == ["u1", "a1", "u2", "<assistant>", "r1", "a2"]
    session.remove_latest(0)
    assert len(session.messages) == 6


def test_remove_latest_counts_a_call_and_its_results_as_one() -> None:
    session = Session("s1")
    session.add(user("u1"), call("c1"), tool_message("r1", tool_call_id="c1"), tool_message("r2", tool_call_id="c1"))
    session.remove_latest(1)
    assert contents(session.messages) == ["u1"]
    session.add(call("c2"))  # a call still waiting for its results goes alone
    session.remove_latest(1)
    assert contents(session.messages) == ["u1"]


def test_remove_latest_beyond_the_length_empties_the_session() -> None:
    session = Session("s1")
    session.add(user("u1"), assistant("a1"))
    session.remove_latest(10)
    assert session.is_empty


@pytest.mark.parametrize("n", [-1, 1.0, None])
def test_remove_latest_with_a_bad_count_is_a_user_error(n: Any) -> None:
    with pytest.raises(UserError, match=r"remove_latest\(n\) takes a count >= 0"):
        Session("s1").remove_latest(n)


def test_clear_makes_the_session_like_new() -> None:
    session = Session("s1")
    session.add(user("hi"))
    session.attrs["k"] = 1
    session.pending(True, "why")
    session.snapshot = b"ckpt"
    session.clear()
    assert session.is_empty
    assert session.attrs == {}
    assert (session.is_pending, session.pending_reason) == (False, None)
    assert session.snapshot is None


# -- state -----------------------------------------------------------------------------------------------------------


def test_pending_sets_the_flag_and_reason_and_pending_false_clears_both() -> None:
    session = Session("s1")
    assert (session.is_pending, session.pending_reason) == (False, None)
    session.pending(True, "needs approval")
    assert (session.is_pending, session.pending_reason) == (True, "needs approval")
    session.pending(True)
    assert (session.is_pending, session.pending_reason) == (True, None)
    session.pending(True, "again")
    session.pending(False)
    assert (session.is_pending, session.pending_reason) == (False, None)


def test_pending_refuses_a_flag_that_is_not_a_bool_and_a_reason_without_pending() -> None:
    session = Session("s1")
    with pytest.raises(UserError, match=r"pending\(flag\) takes True or False, got 'yes'"):
        session.pending("yes")  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"a pending reason goes with pending\(True\)"):
        session.pending(False, "why")
    with pytest.raises(UserError, match="a pending reason must be a string or None, got int"):
        session.pending(True, 42)  # type: ignore[arg-type]
    assert not session.is_pending


def test_snapshot_takes_bytes_like_values_and_none() -> None:
    session = Session("s1")
    session.snapshot = bytearray(b"\x00ckpt")
    assert session.snapshot == b"\x00ckpt"
    assert type(session.snapshot) is bytes
    session.snapshot = memoryview(b"view")
    assert session.snapshot == b"view"
    session.snapshot = None
    assert session.snapshot is None
    with pytest.raises(UserError, match="a session snapshot is bytes or None, got str"):
        session.snapshot = "text"  # type: ignore[assignment]


@pytest.mark.parametrize("max_messages", [0, -3, 2.5, True])
def test_max_messages_must_be_a_positive_count_or_none(max_messages: Any) -> None:
    with pytest.raises(UserError, match=r"max_messages must be None \(no limit\) or a count >= 1"):
        Session("s1", max_messages=max_messages)


def test_a_store_that_is_not_a_session_store_is_a_user_error() -> None:
    with pytest.raises(UserError, match=r"expected a SessionStore .*, got MemoryCheckpointStore"):
        Session("s1", MemoryCheckpointStore())  # type: ignore[arg-type]
    with pytest.raises(UserError, match="a session id must be a non-empty string"):
        Session("")


def test_repr_shows_the_id_the_size_and_the_pending_reason() -> None:
    session = Session("s1")
    session.add(user("hi"))
    assert repr(session) == "Session('s1', messages=1)"
    session.pending(True, "approval")
    assert repr(session) == "Session('s1', messages=1, pending='approval')"


async def test_sessions_without_a_store_each_get_their_own_memory() -> None:
    first, second = Session("same-id"), Session("same-id")
    first.add(user("first"))
    await first.save()
    await second.save()
    assert await first.store.get("same-id") == SessionData(messages=[user("first")])
    assert await second.store.get("same-id") == SessionData()


# -- persistence, on every backend -----------------------------------------------------------------------------------


async def test_attrs_pending_and_snapshot_persist_into_a_new_session_object(store: SessionStore) -> None:
    session = Session("s1", store)
    session.add(user("book a flight"), assistant("to where?"))
    session.attrs.update({"user": "ann", "tags": {"vip"}, "budget": 1200.5})
    session.pending(True, "waiting for the destination")
    session.snapshot = b"\x00checkpoint\xff"
    await session.save()

    loaded = await Session.load(store, "s1")
    assert loaded is not session
    assert loaded.messages == [user("book a flight"), assistant("to where?")]
    assert loaded.attrs == {"user": "ann", "tags": {"vip"}, "budget": 1200.5}
    assert (loaded.is_pending, loaded.pending_reason) == (True, "waiting for the destination")
    assert loaded.snapshot == b"\x00checkpoint\xff"


async def test_loading_an_unknown_session_gives_an_empty_one_bound_to_the_store(store: SessionStore) -> None:
    session = await Session.load(store, "new")
    assert (session.session_id, session.store, session.is_empty, session.attrs) == ("new", store, True, {})
    session.add(user("first"))
    await session.save()
    assert await store.get("new") == SessionData(messages=[user("first")])


async def test_save_appends_only_what_was_added_since_the_last_save(store: SessionStore) -> None:
    session = await Session.load(store, "s1")
    session.add(user("u1"))
    await session.save()
    session.add(assistant("a1"))
    await session.save()
    await session.save()  # nothing owed: nothing appended twice
    data = await store.get("s1")
    assert data is not None
    assert contents(data.messages) == ["u1", "a1"]


async def test_two_loaded_sessions_saving_in_parallel_both_land(store: SessionStore) -> None:
    await Session("s1", store).save()
    first, second = await Session.load(store, "s1"), await Session.load(store, "s1")
    first.add(user("from worker one"))
    second.add(user("from worker two"))
    await asyncio.gather(first.save(), second.save())
    reloaded = await Session.load(store, "s1")
    assert sorted(contents(reloaded.messages)) == ["from worker one", "from worker two"]


async def test_remove_latest_and_clear_rewrite_the_stored_messages(store: SessionStore) -> None:
    session = Session("s1", store)
    session.add(*conversation())
    await session.save()
    session.remove_latest(2)
    await session.save()
    assert contents((await Session.load(store, "s1")).messages) == ["u1", "a1", "u2", "<assistant>", "r1", "a2"]
    session.clear()
    await session.save()
    reloaded = await Session.load(store, "s1")
    assert (reloaded.messages, reloaded.attrs, reloaded.snapshot) == ([], {}, None)


async def test_a_session_made_with_the_constructor_replaces_what_was_stored(store: SessionStore) -> None:
    old = Session("s1", store)
    old.add(user("old conversation"))
    old.attrs["old"] = True
    await old.save()
    new = Session("s1", store)
    new.add(user("new conversation"))
    await new.save()
    reloaded = await Session.load(store, "s1")
    assert (contents(reloaded.messages), reloaded.attrs) == (["new conversation"], {})


async def test_load_with_max_messages_keeps_the_window_a_growing_session_would_have(store: SessionStore) -> None:
    history = [
        user("u1"),
        call("c1"),
        tool_message("r1", tool_call_id="c1"),
        tool_message("r2", tool_call_id="c1"),
        assistant("a1"),
        user("u2"),
    ]
    full = Session("s1", store)
    full.add(*history)
    await full.save()
    for max_messages in range(1, 8):
        growing = Session("x", max_messages=max_messages)
        for message in history:
            growing.add(message)
        loaded = await Session.load(store, "s1", max_messages=max_messages)
        assert loaded.messages == growing.messages, max_messages
    assert contents((await Session.load(store, "s1", max_messages=4)).messages) == ["a1", "u2"]


async def test_trimmed_messages_stay_in_the_store_until_a_rewrite(store: SessionStore) -> None:
    session = await Session.load(store, "s1", max_messages=2)
    for i in range(4):
        session.add(user(f"m{i}"))
    await session.save()
    assert contents(session.messages) == ["m2", "m3"]
    data = await store.get("s1")
    assert data is not None
    assert contents(data.messages) == ["m0", "m1", "m2", "m3"]
    session.remove_latest(1)
    await session.save()  # a rewrite stores what the session holds, as the original's file session does
    data = await store.get("s1")
    assert data is not None
    assert contents(data.messages) == ["m2"]


async def test_an_unencodable_attr_fails_save_with_a_codec_error_naming_it(store: SessionStore) -> None:
    class NotRegistered:
        pass

    session = Session("s1", store)
    session.add(user("hi"))
    session.attrs["widget"] = NotRegistered()
    with pytest.raises(
        CodecError, match=r"cannot encode state of session 's1': unsupported type .* at \$\.attrs\.widget"
    ):
        await session.save()
    del session.attrs["widget"]
    await session.save()
    data = await store.get("s1")
    assert data is not None
    assert contents(data.messages) == ["hi"]  # written once, before the state failed


# -- failures --------------------------------------------------------------------------------------------------------


class FlakyStore(MemorySessionStore):
    """Fails the next ``failures`` message writes, after the write would have been attempted."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    def _fail(self) -> None:
        if self.failures:
            self.failures -= 1
            raise StoreError("flaky store: cannot write", backend="memory")

    async def append_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        self._fail()
        await super().append_messages(session_id, messages)

    async def replace_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        self._fail()
        await super().replace_messages(session_id, messages)

    async def save_session(
        self, session_id: str, state: SessionState, *, messages: Sequence[Message] = (), replace: bool = False
    ) -> None:
        """What ``Session.save`` calls on a ``SessionSaver``: messages and state at once, failing as the others do."""
        if messages or replace:
            self._fail()
        await super().save_session(session_id, state, messages=messages, replace=replace)


async def test_a_failed_save_still_owes_its_messages_and_a_retry_writes_them_once() -> None:
    store = FlakyStore(failures=1)
    session = await Session.load(store, "s1")
    session.add(user("u1"))
    with pytest.raises(StoreError, match="flaky store"):
        await session.save()
    session.add(assistant("a1"))
    await session.save()
    assert await store.get("s1") == SessionData(messages=[user("u1"), assistant("a1")])


async def test_a_failed_rewrite_is_retried_by_the_next_save() -> None:
    store = FlakyStore(failures=0)
    session = await Session.load(store, "s1")
    session.add(user("u1"), assistant("a1"))
    await session.save()
    store.failures = 1
    session.remove_latest(1)
    with pytest.raises(StoreError):
        await session.save()
    await session.save()
    assert await store.get("s1") == SessionData(messages=[user("u1")])


async def test_a_closed_store_makes_save_a_store_error(store: SessionStore) -> None:
    session = Session("s1", store)
    session.add(user("hi"))
    await store.close()
    with pytest.raises(StoreError, match="the store is closed"):
        await session.save()


# -- the file backend ------------------------------------------------------------------------------------------------


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


async def test_adding_appends_to_the_ndjson_file_and_remove_latest_rewrites_it(tmp_path: Path) -> None:
    path = tmp_path / "chat-1.messages.ndjson"
    async with FileSessionStore(tmp_path) as store:
        session = Session("chat-1", store)
        session.add(user("u1"), assistant("a1"))
        await session.save()
        first_inode = path.stat().st_ino
        session.add(user("u2"), assistant("a2"))
        await session.save()
        assert path.stat().st_ino == first_inode  # appended in place
        assert [line["content"] for line in _lines(path)] == ["u1", "a1", "u2", "a2"]
        session.remove_latest(2)
        await session.save()
        assert path.stat().st_ino != first_inode  # a new file renamed over the old one
        assert [line["content"] for line in _lines(path)] == ["u1", "a1"]
        assert json.loads((tmp_path / "chat-1.snapshot.json").read_text("utf-8"))["pending"] is False


async def test_a_corrupt_ndjson_line_fails_load_with_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "chat-1.messages.ndjson"
    async with FileSessionStore(tmp_path) as store:
        session = Session("chat-1", store)
        session.add(user("u1"), assistant("a1"), user("u2"))
        await session.save()
        text = path.read_text("utf-8").splitlines()
        text[1] = '{"$c": "Message", "role": "robot"}'
        path.write_text("\n".join(text) + "\n", "utf-8")
        with pytest.raises(CodecError) as caught:
            await Session.load(store, "chat-1")
    message = str(caught.value)
    assert message == (
        f"cannot decode message of session 'chat-1' ({path}, line 2): wrong type for Message.role: expected "
        "Literal['system', 'user', 'assistant', 'tool'], got str 'robot' at $.role"
    )


async def test_a_corrupt_snapshot_file_fails_load_with_the_file(tmp_path: Path) -> None:
    path = tmp_path / "chat-1.snapshot.json"
    async with FileSessionStore(tmp_path) as store:
        session = Session("chat-1", store)
        session.snapshot = b"ckpt"
        await session.save()
        path.write_text(path.read_text("utf-8")[:-10], "utf-8")
        with pytest.raises(CodecError, match=rf"^cannot decode state of session 'chat-1' \({re.escape(str(path))}\)"):
            await Session.load(store, "chat-1")


# -- reading only the window ---------------------------------------------------------------------------------------


class CountingStore:
    """A session store that counts the messages its ``get`` hands back."""

    def __init__(self, inner: SessionStore) -> None:
        self.inner = inner
        self.read = 0  # by every get
        self.last = 0  # by the last one
        self.gets = 0

    async def get(self, session_id: str, *, last: int | None = None) -> SessionData | None:
        data = await self.inner.get(session_id, last=last)
        self.gets += 1
        self.last = 0 if data is None else len(data.messages)
        self.read += self.last
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def long_conversation(turns: int) -> list[Message]:
    """Turns of a question and an answer, every fifth one calling a tool with three results in between."""
    out: list[Message] = []
    for t in range(turns):
        out.append(user(f"q{t}"))
        if t % 5 == 4:
            out.append(call(f"c{t}"))
            out.extend(tool_message(f"r{t}.{i}", tool_call_id=f"c{t}") for i in range(3))
        out.append(assistant(f"a{t}"))
    return out


async def test_load_with_a_window_gives_the_window_a_full_load_gives(store: SessionStore) -> None:
    history = [system("s"), *long_conversation(12)]
    stored = Session("s1", store)
    stored.add(*history)
    await stored.save()
    full = await Session.load(store, "s1")
    for window in range(len(full.messages) + 2):
        counting = CountingStore(store)
        loaded = await Session.load(counting, "s1", window=window)  # type: ignore[arg-type]
        assert loaded.latest(window) == full.latest(window), window
        # What it read: the window, widened back to its turn's question, at most doubled by the last step; all the
        # steps together read at most twice that.
        needed = max(len(full.latest(window)), 1)
        assert counting.last <= 2 * needed and counting.read <= 4 * needed, (window, counting.last, counting.read)


async def test_a_window_reads_back_to_the_question_that_opens_its_turn(store: SessionStore) -> None:
    session = Session("s1", store)
    session.add(*long_conversation(3), user("q3"), call("c3"))
    session.add(*(tool_message(f"r3.{i}", tool_call_id="c3") for i in range(9)), assistant("a3"))
    await session.save()
    counting = CountingStore(store)
    loaded = await Session.load(counting, "s1", window=2)  # type: ignore[arg-type]
    assert contents(loaded.latest(2))[:2] == ["q3", "<assistant>"]
    assert (counting.gets, counting.last) == (4, 17)  # 2, 4, 8, then 16 (each and one more) reach q3; not 3 turns


async def test_a_bad_window_is_a_user_error() -> None:
    for window in (-1, 1.5, "8"):
        with pytest.raises(UserError, match=r"^window must be None \(every message\) or a count >= 0, got "):
            await Session.load(MemorySessionStore(), "s1", window=window)  # type: ignore[arg-type]


async def test_saving_a_windowed_session_appends_after_what_it_did_not_read(store: SessionStore) -> None:
    session = Session("s1", store)
    session.add(*long_conversation(10))
    await session.save()
    loaded = await Session.load(store, "s1", window=2)
    loaded.add(user("q10"), assistant("a10"))
    await loaded.save()
    assert (await Session.load(store, "s1")).messages == [*long_conversation(10), user("q10"), assistant("a10")]


async def test_the_file_store_reads_only_the_end_of_a_long_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import batonflow.store as store_package

    async with FileSessionStore(tmp_path) as store:
        session = Session("chat-1", store)
        session.add(*long_conversation(3000))
        await session.save()
        size = (tmp_path / "chat-1.messages.ndjson").stat().st_size
        read: list[int] = []
        real_open = open

        class Counted:
            def __init__(self, *args: Any) -> None:
                self.file = real_open(*args)

            def read(self, *args: Any) -> bytes:
                data: bytes = self.file.read(*args)
                read.append(len(data))
                return data

            def __getattr__(self, name: str) -> Any:
                return getattr(self.file, name)

            def __enter__(self) -> Counted:
                return self

            def __exit__(self, *exc: object) -> None:
                self.file.close()

        module = sys.modules[store_package.FileSessionStore.__module__]
        monkeypatch.setattr(module, "open", Counted, raising=False)
        data = await store.get("chat-1", last=8)
        assert data is not None and contents(data.messages) == contents(long_conversation(3000)[-8:])
        assert 0 < sum(read) < size / 20


async def test_a_corrupt_line_in_the_end_of_a_file_is_named_by_its_line_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "chat-1.messages.ndjson"
    async with FileSessionStore(tmp_path) as store:
        session = Session("chat-1", store)
        session.add(*long_conversation(300))
        await session.save()
        lines = path.read_bytes().split(b"\n")
        lines[-3] = b'{"$c": "Message", "role": "robot"}'
        path.write_bytes(b"\n".join(lines))
        with pytest.raises(CodecError) as caught:
            await store.get("chat-1", last=4)
    assert str(caught.value).startswith(f"cannot decode message of session 'chat-1' ({path}, line {len(lines) - 2}): ")

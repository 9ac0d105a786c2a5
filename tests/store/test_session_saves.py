"""A turn saved in one transaction (``SessionSaver.save_session``), and what an SQLite session store waits for.

``save_session`` on the memory, SQLite and PostgreSQL stores: the new messages (or, with ``replace``, the whole
list) and the state, written together or not at all. On SQLite with ``synchronous="FULL"`` the writes of a
conversation turn through ``batonflow.Runner`` commit once at FULL (the turn's save), and the lease taken and given
back around it at NORMAL (no wait for the disk: its holder does not outlive a power cut either).
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from tests.services import POSTGRES_DSN

from batonflow import ChatModelAgent, Runner
from batonflow.errors import CodecError, StoreError, UserError
from batonflow.schema import Message, assistant, user
from batonflow.store import (
    FileSessionStore,
    MemorySessionStore,
    PostgresSessionStore,
    SessionSaver,
    SessionState,
    SqliteSessionStore,
)
from batonflow.testing import FunctionModel


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def saver(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    table = f"bf_saves_{uuid.uuid4().hex[:12]}"
    store: Any = {
        "memory": lambda: MemorySessionStore(),
        "sqlite": lambda: SqliteSessionStore(tmp_path / "s.db"),
        "postgres": lambda: PostgresSessionStore(POSTGRES_DSN, table=table),
    }[request.param]()
    yield store
    await store.close()
    if request.param == "postgres":
        conn = await asyncpg.connect(POSTGRES_DSN)
        try:
            await conn.execute(f"DROP TABLE IF EXISTS {table}, {table}_messages, {table}_leases")
        finally:
            await conn.close()


def turn(i: int) -> list[Message]:
    return [user(f"question {i}"), assistant(f"answer {i}")]


async def test_the_built_in_sql_and_memory_stores_save_a_turn_at_once(saver: Any) -> None:
    assert isinstance(saver, SessionSaver)
    assert not isinstance(FileSessionStore(Path("unused")), SessionSaver)  # it saves in two steps, as before


async def test_save_session_appends_the_messages_and_replaces_the_state(saver: Any) -> None:
    await saver.save_session("s", SessionState(attrs={"n": 1}), messages=turn(0))
    await saver.save_session("s", SessionState(attrs={"n": 2}, pending=True, snapshot=b"\x00run"), messages=turn(1))
    data = await saver.get("s")
    assert data is not None
    assert [m.content for m in data.messages] == ["question 0", "answer 0", "question 1", "answer 1"]
    assert data.state == SessionState(attrs={"n": 2}, pending=True, snapshot=b"\x00run")


async def test_save_session_with_replace_makes_the_messages_the_whole_list(saver: Any) -> None:
    await saver.save_session("s", SessionState(), messages=turn(0) + turn(1))
    await saver.save_session("s", SessionState(attrs={"kept": True}), messages=turn(7), replace=True)
    data = await saver.get("s")
    assert data is not None
    assert [m.content for m in data.messages] == ["question 7", "answer 7"]
    await saver.save_session("s", SessionState(attrs={"empty": True}), replace=True)
    data = await saver.get("s")
    assert data is not None and data.messages == [] and data.state.attrs == {"empty": True}


async def test_save_session_with_no_messages_writes_the_state_alone(saver: Any) -> None:
    await saver.save_session("s", SessionState(), messages=turn(0))
    await saver.save_session("s", SessionState(pending_reason="why", pending=True))
    data = await saver.get("s")
    assert data is not None and len(data.messages) == 2 and data.state.pending_reason == "why"


async def test_a_state_that_cannot_be_encoded_saves_neither_it_nor_the_messages(saver: Any) -> None:
    await saver.save_session("s", SessionState(attrs={"n": 1}), messages=turn(0))
    with pytest.raises(CodecError, match="cannot encode state of session 's'"):
        await saver.save_session("s", SessionState(attrs={"bad": object()}), messages=turn(1))
    data = await saver.get("s")
    assert data is not None
    assert [m.content for m in data.messages] == ["question 0", "answer 0"] and data.state.attrs == {"n": 1}


@pytest.mark.parametrize(
    ("messages", "state", "expected"),
    [
        ([user("ok"), "not a message"], SessionState(), "expected a Message at index 1, got str"),
        (user("one message"), SessionState(), "expected a sequence of messages, got Message"),
        ([user("ok")], {"attrs": {}}, "expected a SessionState, got dict"),
    ],
)
async def test_bad_input_to_save_session_is_a_user_error_and_stores_nothing(
    saver: Any, messages: Any, state: Any, expected: str
) -> None:
    with pytest.raises(UserError, match=expected):
        await saver.save_session("s", state, messages=messages)
    assert await saver.get("s") is None


@pytest.fixture
def traced(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The statements of each SQLite connection opened from now on, in order, a list per connection."""
    connections: list[list[str]] = []
    connect = sqlite3.connect

    def tracing(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = connect(*args, **kwargs)
        statements: list[str] = []
        connections.append(statements)
        conn.set_trace_callback(statements.append)
        return conn

    monkeypatch.setattr(sqlite3, "connect", tracing)
    return connections


def commits_by_level(connections: list[list[str]]) -> list[tuple[str, str]]:
    """Each commit of data (a COMMIT, or a write outside a transaction), connection by connection, with the
    ``synchronous`` level it ran at and the table it wrote first: what the commit waited for."""
    return [commit for statements in connections for commit in _commits(statements)]


def _commits(statements: list[str]) -> list[tuple[str, str]]:
    level, table, in_transaction = "FULL", "", False
    commits: list[tuple[str, str]] = []
    for statement in (s.strip() for s in statements):
        words = statement.split()
        verb = words[0].upper()
        if statement.upper().startswith("PRAGMA SYNCHRONOUS="):
            level = statement.split("=", 1)[1].strip().upper()
        elif verb == "BEGIN":
            in_transaction, table = True, ""
        elif verb in ("INSERT", "UPDATE", "DELETE"):
            written = words[2] if verb in ("INSERT", "DELETE") else words[1]
            table = table or written
            if not in_transaction:
                commits.append((level, written))
        elif verb == "COMMIT":
            in_transaction = False
            if table:
                commits.append((level, table))
    return commits


async def test_a_conversation_turn_on_sqlite_waits_for_the_disk_once(tmp_path: Path, traced: list[list[str]]) -> None:
    answer = assistant("done")
    agent = ChatModelAgent(name="a", model=FunctionModel(lambda messages, tools: answer))
    store = SqliteSessionStore(tmp_path / "s.db")  # synchronous="FULL", the default
    runner = Runner(agent, session_store=store)
    try:
        await runner.call("warm up", session_id="other")  # the schema, the first connections
        before = len(commits_by_level(traced))
        result = await runner.call("question", session_id="s")
        assert result.text == "done"
        commits = commits_by_level(traced)[before:]
        # The lease taken, the turn saved (messages and state in one transaction), the lease given back: with the
        # save when the writer took both in one group, else in a commit of its own that does not wait.
        assert commits[0] == ("NORMAL", "batonflow_sessions_leases")
        assert commits[1] == ("FULL", "batonflow_sessions_messages")
        assert commits[2:] in ([], [("NORMAL", "batonflow_sessions_leases")])
        data = await store.get("s")
        assert data is not None and [m.content for m in data.messages] == ["question", "done"]
    finally:
        await store.close()


async def test_a_store_of_synchronous_normal_never_waits_for_the_disk(tmp_path: Path, traced: list[list[str]]) -> None:
    async with SqliteSessionStore(tmp_path / "s.db", synchronous="NORMAL") as store:
        assert await store.claim("s", "me", 30)
        await store.save_session("s", SessionState(), messages=turn(0))
        await store.release("s", "me")
    assert [level for level, _ in commits_by_level(traced)] == ["NORMAL"] * 3
    assert not any(s.upper().startswith("PRAGMA SYNCHRONOUS=FULL") for c in traced for s in c)


async def test_a_lease_claimed_lightly_is_still_seen_by_another_process_store(tmp_path: Path) -> None:
    # NORMAL still commits to the log: a second store on the file (its own connections) sees the lease at once.
    async with SqliteSessionStore(tmp_path / "s.db") as one, SqliteSessionStore(tmp_path / "s.db") as two:
        assert await one.claim("s", "worker-a", 30)
        assert not await two.claim("s", "worker-b", 30)
        holder = await two.holder("s")
        assert holder is not None and holder.owner == "worker-a"


class FailingSaves(MemorySessionStore):
    """Refuses to save a turn, as a store that is down does."""

    async def save_session(
        self, session_id: str, state: SessionState, *, messages: Sequence[Message] = (), replace: bool = False
    ) -> None:
        raise StoreError("the store is down", backend="memory")


async def test_a_turn_whose_save_fails_raises_it_and_still_gives_the_lease_back() -> None:
    # The save and the lease's release go to the store together: the failure of one leaves the other done.
    answer = assistant("done")
    store = FailingSaves()
    runner = Runner(ChatModelAgent(name="a", model=FunctionModel(lambda messages, tools: answer)), session_store=store)
    with pytest.raises(StoreError, match="the store is down"):
        await runner.call("question", session_id="s")
    assert await store.holder("s") is None
    assert await store.get("s") is None  # nothing of the turn was kept

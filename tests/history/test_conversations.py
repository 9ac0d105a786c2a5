"""A conversation's turns under keep_history: a turn named by ``history_id`` keeps its record in the Runner's
checkpoint store, with the window it was fed as its input; its resume adds to it; it replays and forks as a run."""

from __future__ import annotations

import pytest

from batonflow import Runner
from batonflow.adk import collect_events
from batonflow.errors import RunHistoryError, UserError
from batonflow.store import MemoryCheckpointStore, MemorySessionStore

from .agents import refund_agent


def runner(ledger: list[str], *, approval: bool = False) -> Runner:
    return Runner(
        refund_agent(ledger, approval=approval),
        checkpoint_store=MemoryCheckpointStore(),
        session_store=MemorySessionStore(),
        keep_history=True,
    )


async def test_a_named_turn_keeps_its_record_and_an_unnamed_one_none() -> None:
    talk = runner([])
    first = await talk.call("7", session_id="s1", history_id="s1/turn-1")
    second = await talk.call("8", session_id="s1")
    assert (first.text, second.text) == ("Refund done: order 7: 30", "Refund done: order 8: 30")

    kept = await talk.history("s1/turn-1")
    assert [(s.kind, s.summary) for s in kept][-1] == ("model", "Refund done: order 7: 30")
    assert [m.role for m in kept[1].state.messages] == ["user", "assistant", "tool"]
    with pytest.raises(RunHistoryError):
        await talk.history("s1")

    third = await talk.call("9", session_id="s1", history_id="s1/turn-3")
    fed = (await talk.history("s1/turn-3"))[0].state.messages
    # The turn's input is what it was fed: the conversation's window, then the new message.
    assert [m.content for m in fed if m.role == "user"] == ["7", "8", "9"]
    assert third.text == "Refund done: order 9: 30"


async def test_a_resumed_turn_adds_to_its_record_and_the_turn_replays_and_forks() -> None:
    ledger: list[str] = []
    talk = runner(ledger, approval=True)
    paused = await talk.call("7", session_id="s2", history_id="t-1")
    assert paused.interrupted
    done = await talk.call(session_id="s2", targets=dict.fromkeys(paused.interrupt_ids, "yes"), history_id="t-1")
    assert done.text == "Refund done: approved: yes"

    kept = await talk.history("t-1")
    assert kept.segments == 2
    assert [s.kind for s in kept] == ["model", "tool", "model", "interrupt", "answer", "tool", "model"]

    calls = list(ledger)
    replayed = await collect_events(talk.replay("t-1"))
    assert replayed[-1].message_output is not None
    assert replayed[-1].message_output.message.content == "Refund done: approved: yes"
    assert ledger == calls

    forked = await collect_events(talk.fork("t-1", at=1, checkpoint_id="t-1b"))
    assert forked[-1].action is not None and forked[-1].action.interrupted is not None


async def test_history_id_wants_a_session_and_a_store() -> None:
    talk = runner([])
    with pytest.raises(UserError, match="history_id: expected a session_id with it"):
        await talk.call("7", history_id="x")
    storeless = Runner(refund_agent([]), session_store=MemorySessionStore(), keep_history=True)
    with pytest.raises(
        UserError, match=r"expected Runner\(\.\.\., checkpoint_store=\.\.\.\) to keep the turn's record"
    ):
        await storeless.call("7", session_id="s", history_id="x")
    off = Runner(refund_agent([]), checkpoint_store=MemoryCheckpointStore(), session_store=MemorySessionStore())
    await off.call("7", session_id="s", history_id="x")  # without keep_history the id keeps nothing
    with pytest.raises(RunHistoryError):
        await off.history("x")


async def test_the_server_keeps_each_turn_of_a_conversation_under_its_run_id() -> None:
    from tests.server.conftest import asgi_client

    from batonflow.server import create_app

    app = create_app([refund_agent([])], checkpoint_store=MemoryCheckpointStore(), keep_history=True)
    async with asgi_client(app) as client:
        one = (await client.post("/runs", json={"agent": "support", "input": "7", "session_id": "chat"})).json()
        two = (await client.post("/runs", json={"agent": "support", "input": "8", "session_id": "chat"})).json()
        first = (await client.get(f"/runs/{one['run_id']}/history")).json()
        second = (await client.get(f"/runs/{two['run_id']}/history")).json()
        forked = await client.post(f"/runs/{two['run_id']}/fork", json={"at": 2, "input": "9"})

    assert one["run_id"] != two["run_id"]
    assert [s["summary"] for s in first["steps"]][-1] == "Refund done: order 7: 30"
    assert [s["summary"] for s in second["steps"]][-1] == "Refund done: order 8: 30"
    assert forked.json()["text"] == "Refund done: order 9: 30"

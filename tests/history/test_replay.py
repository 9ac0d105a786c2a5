"""Runner.replay and Runner.fork: a kept run run again from its record, and continued from a step as a new run."""

from __future__ import annotations

from typing import Any

import pytest

from batonflow.adk import AgentEvent, ChatModelAgent, Runner, collect_events, set_sub_agents
from batonflow.errors import ReplayMismatchError, RunHistoryError, UserError
from batonflow.schema import Message, ToolInfo, user
from batonflow.store import CheckpointStore, MemoryCheckpointStore
from batonflow.testing import FunctionModel, ScriptedModel, tool_calls

from .agents import refund_agent
from .test_history import paused_and_answered


def shape(events: list[AgentEvent]) -> list[tuple[Any, ...]]:
    """What a replay must give again: each event's agent, message text, tool calls, action kind and error."""
    out = []
    for event in events:
        message = event.message_output.message if event.message_output is not None else None
        calls = [(c.function.name, c.function.arguments) for c in message.tool_calls] if message else []
        action = event.action
        kind = None if action is None else ("interrupt" if action.interrupted is not None else "other")
        out.append((event.agent_name, message and message.content, calls, kind, repr(event.error)))
    return out


def failing(messages: list[Message], tools: list[ToolInfo]) -> Message:
    raise AssertionError("a model was called during a replay")


async def test_a_replay_yields_the_runs_events_without_calling_a_model_or_a_tool() -> None:
    store, ledger = MemoryCheckpointStore(), []
    original = await paused_and_answered(
        Runner(refund_agent(ledger, approval=True), checkpoint_store=store, keep_history=True), "run-1"
    )
    ledger.clear()
    agent = refund_agent(ledger, approval=True)
    agent.model = FunctionModel(failing)

    replayed = await collect_events(Runner(agent, checkpoint_store=store).replay("run-1"))

    assert shape(replayed) == shape(original)
    assert len(replayed) == 6
    # The approval tool interrupted: it runs again to ask again (as in a resume), then takes the recorded answer.
    assert ledger == []
    assert [e.seq for e in replayed] == [e.seq for e in original]


async def test_a_replay_after_a_tool_was_renamed_names_the_agent_and_the_step() -> None:
    store = MemoryCheckpointStore()
    await kept(refund_agent([]), store)

    changed = Runner(refund_agent([], lookup_name="find_order"), checkpoint_store=store)
    with pytest.raises(ReplayMismatchError) as raised:
        await collect_events(changed.replay("r"))
    assert (raised.value.agent_name, raised.value.step) == ("support", 1)
    assert "differs from its record at step 1: agent 'support' has no tool 'lookup'" in str(raised.value)


async def test_a_replay_after_the_agent_was_renamed_names_the_agent_and_the_step() -> None:
    store = MemoryCheckpointStore()
    await kept(refund_agent([]), store)
    renamed = ChatModelAgent(name="helpdesk", model=FunctionModel(failing))

    with pytest.raises(ReplayMismatchError) as raised:
        await collect_events(Runner(renamed, checkpoint_store=store).replay("r"))
    assert (raised.value.agent_name, raised.value.step) == ("support", 0)
    assert "agent 'support' is not in the agent tree" in str(raised.value)


async def kept(agent: ChatModelAgent, store: MemoryCheckpointStore) -> None:
    await collect_events(Runner(agent, checkpoint_store=store, keep_history=True).run([user("7")], checkpoint_id="r"))


async def test_a_replay_whose_agent_asks_for_a_step_the_record_has_not_names_it() -> None:
    store = MemoryCheckpointStore()
    await kept(refund_agent([], direct=True), store)  # the lookup was the answer: no second model call

    with pytest.raises(ReplayMismatchError) as raised:
        await collect_events(Runner(refund_agent([]), checkpoint_store=store).replay("r"))
    assert (raised.value.agent_name, raised.value.step) == ("support", 2)
    assert "agent 'support' asked for a step the record has not (model|agent:support|1)" in str(raised.value)


async def test_a_replay_that_leaves_recorded_steps_out_names_the_first() -> None:
    store = MemoryCheckpointStore()
    await kept(refund_agent([]), store)

    with pytest.raises(ReplayMismatchError) as raised:
        await collect_events(Runner(refund_agent([], direct=True), checkpoint_store=store).replay("r"))
    assert (raised.value.agent_name, raised.value.step) == ("support", 2)
    assert "agent 'support' did not reach the recorded model step" in str(raised.value)


async def test_a_fork_with_an_edit_comes_to_another_answer_and_leaves_the_original() -> None:
    store, ledger = MemoryCheckpointStore(), []
    runner = Runner(refund_agent(ledger), checkpoint_store=store, keep_history=True)
    await collect_events(runner.run([user("7")], checkpoint_id="run-1"))
    before = [(s.kind, s.summary) for s in await runner.history("run-1")]

    def edit(state: Any) -> Any:
        state.messages[-1] = Message(role="tool", content="order 7: 45", tool_call_id="call_1", tool_name="lookup")
        return state

    forked = await collect_events(runner.fork("run-1", at=1, edit=edit, checkpoint_id="run-1-fork"))

    assert forked[-1].message_output is not None
    assert forked[-1].message_output.message.content == "Refund done: order 7: 45"
    assert [(s.kind, s.summary) for s in await runner.history("run-1")] == before
    assert [s.kind for s in await runner.history("run-1-fork")] == ["model"]
    assert ledger == ["model", "lookup 7", "model", "model"]  # the fork asked the model once, ran no tool


async def test_a_fork_edits_session_values_with_a_mapping() -> None:
    store = MemoryCheckpointStore()
    runner = Runner(refund_agent([]), checkpoint_store=store, keep_history=True)
    await collect_events(runner.run([user("7")], checkpoint_id="run-1"))

    result = runner.fork("run-1", at=1, edit={"session_values": {"vip": True}}, checkpoint_id="f")
    await collect_events(result)

    history = await runner.history("f")
    assert history[-1].state.session_values == {"looked_up": 7, "vip": True}


async def test_a_fork_at_a_step_the_run_has_not_is_an_error() -> None:
    store = MemoryCheckpointStore()
    runner = Runner(refund_agent([]), checkpoint_store=store, keep_history=True)
    await collect_events(runner.run([user("7")], checkpoint_id="run-1"))

    with pytest.raises(RunHistoryError, match=r"expected a step from 0 to 2, got 3") as raised:
        await collect_events(runner.fork("run-1", at=3))
    assert raised.value.step == 3
    with pytest.raises(UserError, match="expected a new checkpoint_id, got the original's"):
        runner.fork("run-1", at=0, checkpoint_id="run-1")
    with pytest.raises(UserError, match="expected the keys 'messages' and 'session_values', got \\['values'\\]"):
        await collect_events(runner.fork("run-1", at=0, edit={"values": {}}))


async def test_a_replay_of_a_run_that_kept_no_history_is_an_error() -> None:
    runner = Runner(refund_agent([]), checkpoint_store=MemoryCheckpointStore())
    with pytest.raises(RunHistoryError, match="found none"):
        await collect_events(runner.replay("run-1"))


async def test_a_streamed_run_replays_its_joined_messages() -> None:
    store = MemoryCheckpointStore()
    runner = Runner(refund_agent([]), checkpoint_store=store, keep_history=True, enable_streaming=True)
    original = await collect_events(runner.run([user("7")], checkpoint_id="s"))
    agent = refund_agent([])
    agent.model = FunctionModel(failing)

    replayed = await collect_events(Runner(agent, checkpoint_store=store, enable_streaming=True).replay("s"))

    assert shape(replayed) == shape(original)
    assert replayed[-1].message_output is not None
    assert replayed[-1].message_output.message.content == "Refund done: order 7: 30"


def router() -> ChatModelAgent:
    return ChatModelAgent(
        name="router",
        model=ScriptedModel([tool_calls(("transfer_to_agent", {"agent_name": "support"}))]),
        description="Sends each request where it belongs.",
    )


async def test_a_transfer_is_a_step_and_a_tree_replays_without_its_models() -> None:
    store = MemoryCheckpointStore()
    tree = set_sub_agents(router(), [refund_agent([])])
    original = await collect_events(
        Runner(tree, checkpoint_store=store, keep_history=True, skip_transfer_messages=True).run(
            [user("7")], checkpoint_id="t"
        )
    )

    history = await Runner(tree, checkpoint_store=store).history("t")
    assert [(s.kind, s.agent_name) for s in history][:4] == [
        ("model", "router"),
        ("tool", "router"),
        ("transfer", "router"),
        ("model", "support"),
    ]
    assert history[2].summary == "transfers to support"
    assert history[3].address == "agent:router;agent:support"

    support = refund_agent([])
    support.model = FunctionModel(failing)
    silent = ChatModelAgent(name="router", model=FunctionModel(failing), description="Sends each request.")
    replayed = await collect_events(
        Runner(set_sub_agents(silent, [support]), checkpoint_store=store, skip_transfer_messages=True).replay("t")
    )
    assert shape(replayed) == shape(original)


@pytest.mark.parametrize("spec", ["memory", "sqlite", "postgres", "redis"], indirect=True)
async def test_a_paused_and_answered_run_replays_and_forks_on_every_store(store: CheckpointStore) -> None:
    ledger: list[str] = []
    runner = Runner(refund_agent(ledger, approval=True), checkpoint_store=store, keep_history=True)
    original = await paused_and_answered(runner, "run-1", answer="yes")
    calls = list(ledger)

    replayed = await collect_events(Runner(refund_agent(ledger, approval=True), checkpoint_store=store).replay("run-1"))
    assert shape(replayed) == shape(original)
    # The tool that asked a person runs again only to interrupt again (it notes nothing then); its answered
    # result comes from the record, as every model reply does.
    assert ledger == calls

    edit = {"session_values": {"note": "forked"}}
    forked = await collect_events(runner.fork("run-1", at=1, edit=edit, checkpoint_id="run-1b"))
    assert forked[-1].action is not None and forked[-1].action.interrupted is not None  # it asks again, as a new run
    kept = await runner.history("run-1b")
    assert [s.kind for s in kept] == ["model", "interrupt"]
    assert kept[0].state.session_values == {"looked_up": 7, "note": "forked"}
    assert [s.kind for s in await runner.history("run-1")][-1] == "model"  # the original as it was
    assert await store.get("run-1b") is not None  # the fork's own pending checkpoint, resumable


async def test_a_fork_with_replay_goes_on_inside_the_agent_that_was_running() -> None:
    store = MemoryCheckpointStore()
    ledger: list[str] = []
    tree = set_sub_agents(router(), [refund_agent(ledger)])
    kept = Runner(tree, checkpoint_store=store, keep_history=True, skip_transfer_messages=True)
    await collect_events(kept.run([user("7")], checkpoint_id="t"))
    assert [s.kind for s in await kept.history("t")][4] == "tool"  # support's lookup, after the transfer

    ledger.clear()
    support = refund_agent(ledger)
    silent = ChatModelAgent(name="router", model=FunctionModel(failing), description="Sends each request.")
    runner = Runner(set_sub_agents(silent, [support]), checkpoint_store=store, keep_history=True)
    edit = {"session_values": {"note": "b"}}
    events = await collect_events(runner.fork("t", at=4, edit=edit, checkpoint_id="t2", replay=True))

    # The router is not asked again (its model would fail); support answers from the recorded lookup, live.
    assert ledger == ["model"]
    assert events[-1].agent_name == "support"
    assert events[-1].message_output is not None
    assert events[-1].message_output.message.content == "Refund done: order 7: 30"
    forked = await runner.history("t2")
    assert [(s.kind, s.agent_name) for s in forked][-2:] == [("tool", "support"), ("model", "support")]
    assert forked[-1].state.session_values == {"looked_up": 7, "note": "b"}

    # Without replay the fork starts at the root, whose model is asked again.
    restarted = await collect_events(runner.fork("t", at=4, checkpoint_id="t3"))
    assert "a model was called during a replay" in str(restarted[-1].error)


async def test_a_fork_with_replay_crosses_the_runs_interrupt_with_its_answer() -> None:
    store = MemoryCheckpointStore()
    ledger: list[str] = []
    runner = Runner(refund_agent(ledger, approval=True), checkpoint_store=store, keep_history=True)
    await paused_and_answered(runner, "run-1", answer="yes")
    history = await runner.history("run-1")
    assert [s.kind for s in history] == ["model", "tool", "model", "interrupt", "answer", "tool", "model"]

    ledger.clear()
    events = await collect_events(runner.fork("run-1", at=5, checkpoint_id="run-1c", replay=True))
    assert ledger == ["model"]  # only the model after the answered approval runs
    assert events[-1].message_output is not None
    assert events[-1].message_output.message.content == "Refund done: approved: yes"
    assert [s.kind for s in await runner.history("run-1c")] == [s.kind for s in history]


async def test_a_fork_with_replay_takes_only_session_values_and_names_a_changed_tree() -> None:
    store = MemoryCheckpointStore()
    runner = Runner(refund_agent([]), checkpoint_store=store, keep_history=True)
    await collect_events(runner.run([user("7")], checkpoint_id="r"))
    with pytest.raises(UserError, match=r"expected edit=\{'session_values': \{...\}\} or none"):
        await collect_events(runner.fork("r", at=1, edit={"messages": []}, replay=True))
    renamed = Runner(refund_agent([], lookup_name="find_order"), checkpoint_store=store)
    with pytest.raises(ReplayMismatchError) as raised:
        await collect_events(renamed.fork("r", at=2, replay=True))
    assert (raised.value.agent_name, raised.value.step) == ("support", 1)
    with pytest.raises(RunHistoryError, match="expected a step from 0 to 2, got 3"):
        await collect_events(runner.fork("r", at=3, replay=True))

"""Conversations across runs: ``Runner.run(..., session_id=...)`` (Solon's ``AgentSession``)."""

from pathlib import Path

import pytest

from batonflow.adk import ChatModelAgent, InterruptInfo, Runner, collect_events
from batonflow.agents import Session
from batonflow.errors import UserError
from batonflow.schema import assistant
from batonflow.store import MemorySessionStore, SqliteSessionStore
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import ToolContext, tool


async def test_a_session_carries_the_conversation_into_the_next_run() -> None:
    model = ScriptedModel([assistant("Hi Ann."), assistant("Your name is Ann.")])
    runner = Runner(ChatModelAgent(name="a", instruction="Be kind.", model=model), session_store=MemorySessionStore())
    await collect_events(runner.query("I am Ann.", session_id="chat"))
    await collect_events(runner.query("What is my name?", session_id="chat"))
    assert [(m.role, m.content) for m in model.requests[1].messages] == [
        ("system", "Be kind."),
        ("user", "I am Ann."),
        ("assistant", "Hi Ann."),
        ("user", "What is my name?"),
    ]


async def test_the_session_keeps_the_prompt_and_the_final_answer_but_no_system_message(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "s.db")
    model = ScriptedModel([tool_calls(("noop", {})), assistant("done")])

    @tool(threaded=False)
    def noop() -> str:
        """Nothing."""
        return "ok"

    runner = Runner(ChatModelAgent(name="a", instruction="sys", model=model, tools=[noop]), session_store=store)
    await collect_events(runner.query("go", session_id="s1"))
    session = await Session.load(store, "s1")
    assert [(m.role, m.content) for m in session.messages] == [("user", "go"), ("assistant", "done")]
    await store.close()


async def test_the_window_limits_what_an_agent_is_fed() -> None:
    store = MemorySessionStore()
    model = ScriptedModel([assistant(f"answer {i}") for i in range(4)])
    runner = Runner(ChatModelAgent(name="a", model=model), session_store=store, session_window=2)
    for i in range(4):
        await collect_events(runner.query(f"question {i}", session_id="w"))
    assert [m.content for m in model.requests[3].messages] == ["question 2", "answer 2", "question 3"]


async def test_an_interrupted_run_leaves_the_session_pending_and_an_empty_prompt_resumes_it() -> None:
    refunds: list[int] = []

    @tool(threaded=False)
    def refund(order_id: int, ctx: ToolContext) -> str:
        """Refund once approved."""
        if not ctx.get_interrupt_state().was_interrupted:
            ctx.interrupt({"approve": order_id})
        refunds.append(order_id)
        return "refunded"

    store = MemorySessionStore()
    model = ScriptedModel([tool_calls(("refund", {"order_id": 3})), assistant("Refund done.")])
    runner = Runner(ChatModelAgent(name="a", model=model, tools=[refund]), session_store=store)
    events = await collect_events(runner.query("refund 3", session_id="p"))
    assert isinstance(events[-1].action.interrupted, InterruptInfo)  # type: ignore[union-attr]
    session = await Session.load(store, "p")
    assert session.is_pending
    assert session.pending_reason == "{'approve': 3}"
    assert session.snapshot is not None

    resumed = await collect_events(runner.run([], session_id="p"))
    assert resumed[-1].message_output.message.content == "Refund done."  # type: ignore[union-attr]
    assert refunds == [3]
    session = await Session.load(store, "p")
    assert not session.is_pending
    assert session.snapshot is None
    assert [(m.role, m.content) for m in session.messages] == [("user", "refund 3"), ("assistant", "Refund done.")]


async def test_an_empty_prompt_without_a_pending_run_is_a_user_error() -> None:
    runner = Runner(ChatModelAgent(name="a", model=ScriptedModel([])), session_store=MemorySessionStore())
    with pytest.raises(UserError, match="nothing to resume"):
        await runner.run([], session_id="idle").collect()


def test_a_session_id_needs_a_session_store() -> None:
    runner = Runner(ChatModelAgent(name="a", model=ScriptedModel([])))
    with pytest.raises(UserError, match="expected Runner\\(\\.\\.\\., session_store=\\.\\.\\.\\)"):
        runner.query("x", session_id="s")

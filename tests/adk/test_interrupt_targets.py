"""What a resume hands out, and to whom: each saved interrupt and each resume datum once, to a root cause."""

import re
from typing import Any

import pytest

from batonflow.adk import AgentEvent, ChatModelAgent, ChatModelAgentResumeData, InterruptInfo, Runner, collect_events
from batonflow.errors import UserError
from batonflow.schema import assistant
from batonflow.store import MemoryCheckpointStore
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import ToolContext, tool


def interrupt_of(events: list[AgentEvent]) -> InterruptInfo:
    action = events[-1].action
    assert action is not None
    assert isinstance(action.interrupted, InterruptInfo)
    return action.interrupted


def low_level_refund(refunds: list[int]) -> Any:
    """The approval written with the low-level calls, re-interrupting when it is not the target."""

    @tool(threaded=False)
    def refund(order_id: int, ctx: ToolContext) -> str:
        """Refund an order after a human approved it."""
        saved = ctx.get_interrupt_state()
        if not saved.was_interrupted:
            ctx.interrupt(f"refund order {order_id}?", state=order_id)
        target = ctx.get_resume_context()
        if not target.is_resume_target:
            ctx.interrupt(f"refund order {order_id}?", state=saved.state)
        if target.data != "yes":
            return f"order {order_id} not refunded"
        refunds.append(order_id)
        return f"order {order_id} refunded"

    return refund


async def test_a_later_turn_reusing_a_call_id_is_asked_again_not_approved_by_the_earlier_answer() -> None:
    # Models reuse call ids: both turns below call "refund" as call_1. The second call is a new question.
    refunds: list[int] = []
    model = ScriptedModel(
        [tool_calls(("refund", {"order_id": 1})), tool_calls(("refund", {"order_id": 2})), assistant("done")]
    )
    agent = ChatModelAgent(name="support", model=model, tools=[low_level_refund(refunds)])
    runner = Runner(agent, checkpoint_store=MemoryCheckpointStore())
    [first] = interrupt_of(await collect_events(runner.query("refund 1 and 2", checkpoint_id="c"))).interrupt_contexts
    again = interrupt_of(await collect_events(runner.resume("c", targets={first.id: "yes"})))
    assert refunds == [1]
    [second] = again.interrupt_contexts
    assert second.info == "refund order 2?"
    assert second.address == first.address  # the same place, but another interrupt
    assert second.id != first.id
    await collect_events(runner.resume("c", targets={second.id: "yes"}))
    assert refunds == [1, 2]


def asking_refund(refunds: list[int]) -> Any:
    """The approval as the README writes it, with ``ctx.ask``."""

    @tool(threaded=False)
    def refund(order_id: int, ctx: ToolContext) -> str:
        """Refund an order once a human approved it."""
        if ctx.ask({"approve_refund": order_id}) != "yes":
            return f"order {order_id} not refunded"
        refunds.append(order_id)
        return f"order {order_id} refunded"

    return refund


def two_refunds(refunds: list[int]) -> Runner:
    model = ScriptedModel([tool_calls(("refund", {"order_id": 1}), ("refund", {"order_id": 2})), assistant("done")])
    agent = ChatModelAgent(name="support", model=model, tools=[asking_refund(refunds)])
    return Runner(agent, checkpoint_store=MemoryCheckpointStore())


async def test_ask_returns_the_answer_to_its_target_and_asks_again_when_another_is_answered() -> None:
    refunds: list[int] = []
    runner = two_refunds(refunds)
    first = interrupt_of(await collect_events(runner.query("refund 1 and 2", checkpoint_id="c")))
    ids = {c.info["approve_refund"]: c.id for c in first.interrupt_contexts}
    assert sorted(ids) == [1, 2]
    # A partial resume: order 2 is still pending, not "not refunded", and the checkpoint is kept for it.
    second = interrupt_of(await collect_events(runner.resume("c", targets={ids[1]: "yes"})))
    assert [(c.id, c.info) for c in second.interrupt_contexts] == [(ids[2], {"approve_refund": 2})]
    assert refunds == [1]
    events = await collect_events(runner.resume("c", targets={ids[2]: "no"}))
    assert [e.message_output.message.content for e in events if e.message_output] == [  # type: ignore[union-attr]
        "order 2 not refunded",
        "done",
    ]
    assert refunds == [1]


async def test_ask_keeps_asking_on_a_resume_without_targets_and_keeps_its_state() -> None:
    states: list[Any] = []

    @tool(threaded=False)
    def pick(ctx: ToolContext) -> str:
        """Ask which colour."""
        answer = ctx.ask("which colour?", state={"asked": 1})
        states.append(ctx.get_interrupt_state().state)
        return str(answer)

    agent = ChatModelAgent(name="a", model=ScriptedModel([tool_calls(("pick", {})), assistant("ok")]), tools=[pick])
    runner = Runner(agent, checkpoint_store=MemoryCheckpointStore())
    [asked] = interrupt_of(await collect_events(runner.query("x", checkpoint_id="c"))).interrupt_contexts
    [again] = interrupt_of(await collect_events(runner.resume("c"))).interrupt_contexts
    assert (again.id, again.info) == (asked.id, "which colour?")
    events = await collect_events(runner.resume("c", targets={asked.id: "blue"}))
    assert events[0].message_output is not None
    assert events[0].message_output.message.content == "blue"
    assert states == [{"asked": 1}]  # the state saved the first time, kept through the re-interrupt


async def test_an_agent_level_id_alone_is_refused_naming_the_root_causes_and_the_run_stays_resumable() -> None:
    # The agent's interrupt only wraps the tools'; data given to it alone would answer neither refund.
    refunds: list[int] = []
    runner = two_refunds(refunds)
    info = interrupt_of(await collect_events(runner.query("refund 1 and 2", checkpoint_id="c")))
    one, two = info.interrupt_contexts
    assert one.parent is not None
    wrapper = one.parent.id
    expected = (
        f"resume targets: expected the ids of root causes (the interrupts that wait for an answer), got {wrapper!r} "
        f"of agent:support, which wraps the root causes ['{one.id}' at agent:support;tool:refund:call_1, "
        f"'{two.id}' at agent:support;tool:refund:call_2]: target those, and give the agent's own data "
        "(ChatModelAgentResumeData) alongside them"
    )
    with pytest.raises(UserError, match=re.escape(expected)):
        await runner.resume("c", targets={wrapper: "yes"}).collect()
    # Alongside a root cause below it, the agent's id is taken: its data is for the agent itself.
    keep = ChatModelAgentResumeData(history_modifier=lambda messages: messages)
    again = interrupt_of(await collect_events(runner.resume("c", targets={one.id: "yes", wrapper: keep})))
    assert [c.id for c in again.interrupt_contexts] == [two.id]
    assert refunds == [1]


async def test_unknown_targets_are_refused_naming_the_root_causes() -> None:
    runner = two_refunds([])
    info = interrupt_of(await collect_events(runner.query("refund 1 and 2", checkpoint_id="c")))
    roots = sorted(c.id for c in info.interrupt_contexts)
    with pytest.raises(UserError) as refused:
        await runner.resume("c", targets={"nope": "yes"}).collect()
    assert (
        str(refused.value)
        == f"resume targets: expected interrupt ids among the root causes {roots}, got unknown ['nope']"
    )

"""What a resume hands out, and to whom: each saved interrupt and each resume datum once, to a root cause."""

from typing import Any

from batonflow.adk import AgentEvent, ChatModelAgent, InterruptInfo, Runner, collect_events
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

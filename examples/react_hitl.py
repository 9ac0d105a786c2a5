"""A ReActAgent whose refunds wait for a person: ``human_approval`` (Solon's ``HITLInterceptor``) suspends the
round of tool calls before any of them runs, and the resume carries a decision per pending call.

The interrupt's info is a ``HITLPending`` (its ``tasks``, one per call that needs a decision; ``str()`` is Solon's
pending reason); the resume data maps each pending call id to ``HITL.approve()``, ``HITL.reject(comment)`` or
``HITL.skip()``. A rejected call does not run: its comment is its result.
"""

import asyncio

from batonflow import HITL, MemoryCheckpointStore, ReActAgent, Runner, tool
from batonflow.agents import HITLPending, human_approval
from batonflow.schema import assistant
from batonflow.testing import ScriptedModel, tool_calls


@tool
def refund(order_id: int) -> str:
    """Refund an order.

    Args:
        order_id: the order number
    """
    return f"order {order_id} refunded"


async def main() -> None:
    model = ScriptedModel(
        [
            tool_calls(("refund", {"order_id": 1}), ("refund", {"order_id": 2})),
            assistant("Order 1 is refunded; order 2 needs a manager."),
        ]
    )
    agent = ReActAgent(
        name="support", model=model, tools=[refund], middlewares=[human_approval(sensitive_tools=["refund"])]
    )
    runner = Runner(agent, checkpoint_store=MemoryCheckpointStore())

    result = await runner.call("Refund orders 1 and 2", checkpoint_id="support-1")
    [cause] = result.interrupt_contexts
    assert isinstance(cause.info, HITLPending)
    print("pending:", cause.info.summary)
    for task in cause.info.tasks:
        print(f"  {task.call_id}: {task.tool_name}({task.arguments})")

    decisions = {"call_1": HITL.approve(), "call_2": HITL.reject("A refund of order 2 needs a manager.")}
    result = await runner.call_resume("support-1", targets={cause.id: decisions})
    results = {}  # the calls' results, which arrive in the order the calls end
    for event in result.events:
        if event.message_output is not None and event.message_output.role == "tool":
            message = await event.message_output.get_message()
            results[message.tool_call_id] = message.content
    for call_id, content in sorted(results.items()):
        print(f"{call_id}: {content}")
    print("answer:", result.text)


asyncio.run(main())

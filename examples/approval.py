"""An approval: each refund asks a person with ``ctx.ask`` and the run resumes with the answers.

Two refunds are pending at once. The interrupt ids come from the event that stopped the run
(``event.action.interrupted.interrupt_contexts``, the root causes); resuming with one id answers that refund only,
and the other keeps waiting under its own id, so a second resume answers it.
"""

import asyncio

from batonflow import (
    AgentEvent,
    ChatModelAgent,
    InterruptInfo,
    MemoryCheckpointStore,
    Runner,
    Stream,
    ToolContext,
    tool,
)
from batonflow.schema import assistant
from batonflow.testing import ScriptedModel, tool_calls


@tool
def refund(order_id: int, ctx: ToolContext) -> str:
    """Refund an order once a human approved it.

    Args:
        order_id: the order number
    """
    return "refunded" if ctx.ask({"approve_refund": order_id}) == "yes" else "not refunded"


async def pending(events: Stream[AgentEvent]) -> dict[int, str]:
    """The interrupt id of each refund waiting for an answer, by order number."""
    waiting: dict[int, str] = {}
    async for event in events:
        if event.error is not None:
            raise event.error
        if event.action is not None and isinstance(event.action.interrupted, InterruptInfo):
            for cause in event.action.interrupted.interrupt_contexts:
                waiting[cause.info["approve_refund"]] = cause.id
        elif event.message_output is not None and event.message_output.role == "tool":
            message = await event.message_output.get_message()
            print(f"{message.tool_name}: {message.content}")
        elif event.message_output is not None:
            message = await event.message_output.get_message()
            if message.content:
                print(f"answer: {message.content}")
    return waiting


async def main() -> None:
    model = ScriptedModel(
        [
            tool_calls(("refund", {"order_id": 1}), ("refund", {"order_id": 2})),
            assistant("Order 1 is refunded; order 2 was not."),
        ]
    )
    agent = ChatModelAgent(name="refunds", model=model, tools=[refund])
    runner = Runner(agent, checkpoint_store=MemoryCheckpointStore())

    waiting = await pending(runner.query("Refund orders 1 and 2", checkpoint_id="run-1"))
    print("waiting for orders", sorted(waiting))
    # Approve order 1 only: order 2 asks again, under the same id.
    waiting = await pending(runner.resume("run-1", targets={waiting[1]: "yes"}))
    print("still waiting for orders", sorted(waiting))
    await pending(runner.resume("run-1", targets={waiting[2]: "no"}))


asyncio.run(main())

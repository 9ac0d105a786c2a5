"""A ChatModelAgent with a tool: the model calls ``lookup``, reads its result and answers.

The model is a ``ScriptedModel`` from ``batonflow.testing``, so this runs offline; put ``load_model("local:smollm2")``
or ``load_model("openai:gpt-4o-mini")`` in its place for a real one.
"""

import asyncio

from batonflow import ChatModelAgent, Runner, tool
from batonflow.schema import assistant
from batonflow.testing import ScriptedModel, tool_calls


@tool
def lookup(order_id: int) -> str:
    """Look an order up.

    Args:
        order_id: the order number
    """
    return f"order {order_id} shipped on Monday"


async def main() -> None:
    model = ScriptedModel([tool_calls(("lookup", {"order_id": 7})), assistant("Order 7 shipped on Monday.")])
    agent = ChatModelAgent(name="orders", description="Answers questions about orders.", model=model, tools=[lookup])
    runner = Runner(agent)
    async for event in runner.query("Where is order 7?"):
        if event.message_output is not None:
            message = await event.message_output.get_message()
            print(f"{event.agent_name} ({message.role}):", message.content or message.tool_calls[0].function.name)


asyncio.run(main())

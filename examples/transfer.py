"""A transfer between agents: the router hands the request to the refunds agent, which answers it.

``set_sub_agents`` gives the router the generated ``transfer_to_agent`` tool (``TRANSFER_TOOL_NAME``), whose
``agent_name`` is one of its sub-agents; each event's ``run_path`` says which agents the run went through.
"""

import asyncio

from batonflow import TRANSFER_TOOL_NAME, ChatModelAgent, Runner, set_sub_agents
from batonflow.schema import assistant
from batonflow.testing import ScriptedModel, tool_calls


async def main() -> None:
    router_model = ScriptedModel([tool_calls((TRANSFER_TOOL_NAME, {"agent_name": "refunds"}))])
    refunds_model = ScriptedModel([assistant("I have refunded order 42.")])
    refunds = ChatModelAgent(name="refunds", description="Refunds orders.", model=refunds_model)
    router = ChatModelAgent(name="router", description="Routes requests.", model=router_model)
    runner = Runner(set_sub_agents(router, [refunds]))
    async for event in runner.query("Refund order 42 please"):
        path = " → ".join(str(step) for step in event.run_path)
        if event.action is not None and event.action.transfer_to_agent is not None:
            print(f"[{path}] transfer to {event.action.transfer_to_agent.dest_agent_name}")
        elif event.message_output is not None and event.message_output.role == "assistant":
            message = await event.message_output.get_message()
            if message.content:
                print(f"[{path}] {event.agent_name}: {message.content}")


asyncio.run(main())

"""Agents for the history tests: a shop agent that looks an order up, asks for approval, and refunds it."""

from __future__ import annotations

from batonflow.adk import ChatModelAgent
from batonflow.schema import Message, ToolInfo, assistant
from batonflow.testing import FunctionModel, tool_calls
from batonflow.tools import ToolContext, tool


def refund_agent(
    ledger: list[str], *, approval: bool = False, lookup_name: str = "lookup", direct: bool = False
) -> ChatModelAgent:
    """Looks order N up (the user's message is N), then (with ``approval``) waits for a human, then answers (with
    ``direct``, the lookup's result is the answer).

    The answer depends on the lookup's result and on the session value ``currency``, so that a fork with an edit
    comes to another answer."""

    @tool(threaded=False, name=lookup_name)
    def lookup(order_id: int, ctx: ToolContext) -> str:
        """Look an order up."""
        ledger.append(f"lookup {order_id}")
        ctx.run.add_session_value("looked_up", order_id)
        return f"order {order_id}: 30"

    @tool(threaded=False)
    def approve(order_id: int, ctx: ToolContext) -> str:
        """Wait for a human to approve."""
        state = ctx.get_resume_context()
        if not ctx.get_interrupt_state().was_interrupted:
            ctx.interrupt(f"refund order {order_id}?")
        ledger.append(f"approve {order_id}: {state.data}")
        return f"approved: {state.data}"

    def reply(messages: list[Message], tools: list[ToolInfo]) -> Message:
        ledger.append("model")
        last = messages[-1]
        if last.role == "user":
            return tool_calls((lookup_name, {"order_id": int(str(last.content))}))
        if last.role == "tool" and last.tool_name == lookup_name and approval:
            return tool_calls(("approve", {"order_id": 7}))
        return assistant(f"Refund done: {last.content}")

    return ChatModelAgent(
        name="support",
        model=FunctionModel(reply),
        tools=[lookup, approve],
        return_directly=[lookup_name] if direct else [],
    )


def support() -> ChatModelAgent:
    """The shop agent as a command's target (``tests.history.agents:support``)."""
    return refund_agent([])

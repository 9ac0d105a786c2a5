"""The agents the MCP server tests serve (``batonflow mcp tests.interop.mcp_app:app``): an echo, a refund that
waits for a person's approval, one that asks a question,
and one whose model fails. Their models are functions of the conversation, so one server answers any number
of calls."""

from __future__ import annotations

from typing import Any

from batonflow import ChatModelAgent, ToolContext, tool
from batonflow.agents import human_approval
from batonflow.schema import Message, assistant
from batonflow.testing import FunctionModel, tool_calls


@tool
def refund(order_id: int) -> str:
    """Refund an order.

    Args:
        order_id: the order number
    """
    return f"refunded order {order_id}"


@tool
def order_status(order_id: int) -> str:
    """The status of an order.

    Args:
        order_id: the order number
    """
    return f"order {order_id} shipped"


@tool
def pick_colour(ctx: ToolContext) -> str:
    """Ask the user for a colour."""
    return f"you picked {ctx.ask('which colour?')}"


def asking(messages: list[Message], tools: Any) -> Message:
    if messages[-1].role == "tool":
        return assistant(messages[-1].content)
    return tool_calls(("pick_colour", {}))


def echo(messages: list[Message], tools: Any) -> Message:
    return assistant(f"echo: {messages[-1].content}")


def refunding(messages: list[Message], tools: Any) -> Message:
    results = [m.content for m in messages if m.role == "tool"]
    if results and messages[-1].role == "tool":
        return assistant(f"order 42: {results[-1]}")
    return tool_calls(("refund", {"order_id": 42}))


echoer = ChatModelAgent(
    name="echoer", description="Says back what it is told.", model=FunctionModel(echo), tools=[order_status]
)
refunds = ChatModelAgent(
    name="refunds",
    description="Refunds orders, once a person approved.",
    model=FunctionModel(refunding),
    tools=[refund],
    middlewares=[human_approval(sensitive_tools=["refund"])],
)
asker = ChatModelAgent(name="asker", description="Asks for a colour.", model=FunctionModel(asking), tools=[pick_colour])


def failing(messages: list[Message], tools: Any) -> Message:
    raise ConnectionError("the model is down")


broken = ChatModelAgent(name="broken", description="Its model always fails.", model=FunctionModel(failing))
app = [echoer, refunds, asker, broken]

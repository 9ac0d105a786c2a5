"""Agents the server tests serve (importable as ``tests.server.apps`` by ``batonflow serve`` in a subprocess)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence

from batonflow import TRANSFER_TOOL_NAME, ChatModelAgent, Message, ReActAgent, ToolContext, set_sub_agents, tool
from batonflow.agents import human_approval
from batonflow.graph import Graph
from batonflow.schema import assistant
from batonflow.testing import FunctionModel, tool_calls
from batonflow.tools import ToolInfo


def _last_user(messages: Sequence[Message]) -> str:
    return next((m.content for m in reversed(messages) if m.role == "user"), "")


def echo() -> ChatModelAgent:
    """Answers ``echo: <the last user text>``."""
    model = FunctionModel(lambda messages, tools: assistant(f"echo: {_last_user(messages)}"))
    return ChatModelAgent(name="echo", description="Says back what it was told.", model=model)


@tool
def refund(order_id: int, ctx: ToolContext) -> str:
    """Refund an order once a human approved it.

    Args:
        order_id: the order number
    """
    return "refunded" if ctx.ask({"approve_refund": order_id}) == "yes" else "not refunded"


def _refunds(messages: list[Message], tools: list[ToolInfo]) -> Message:
    result = next((m for m in reversed(messages) if m.role == "tool"), None)
    if result is None:
        return tool_calls(("refund", {"order_id": 42}))
    return assistant(f"order 42: {result.content}")


def refunds() -> ChatModelAgent:
    """Calls ``refund`` (which asks for an approval), then says what came of it."""
    return ChatModelAgent(name="refunds", description="Refunds orders.", model=FunctionModel(_refunds), tools=[refund])


def router() -> ChatModelAgent:
    """Transfers every request to ``refunds``."""

    def route(messages: list[Message], tools: list[ToolInfo]) -> Message:
        return tool_calls((TRANSFER_TOOL_NAME, {"agent_name": "refunds"}))

    root = ChatModelAgent(name="router", description="Routes requests.", model=FunctionModel(route))
    return set_sub_agents(root, [refunds()])  # type: ignore[return-value]


class Blocking:
    """A model that waits until released; ``cancelled`` counts the calls cancelled while waiting."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = 0
        self.cancelled = 0

    async def __call__(self, messages: list[Message], tools: list[ToolInfo]) -> Message:
        self.started += 1
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return assistant("released")


def blocking(model: Blocking) -> ChatModelAgent:
    return ChatModelAgent(name="slow", description="Waits.", model=FunctionModel(model))


def agents() -> dict[str, object]:
    """The factory ``batonflow serve tests.server.apps:agents`` calls: three agents and a graph."""
    hello = Graph.from_yaml("id: hello\nlayout:\n  - {id: start, type: start}\n  - {id: end, type: end}\n")
    return {"echo": echo(), "refunds": refunds(), "router": router(), "hello": hello}


def slow() -> ChatModelAgent:
    """A model that says on standard error that it was called, then waits for ever (for Ctrl-C)."""

    async def wait(messages: list[Message], tools: list[ToolInfo]) -> Message:
        print("model waiting", file=sys.stderr, flush=True)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    return ChatModelAgent(name="slow", description="Never answers.", model=FunctionModel(wait))


def approvals() -> ReActAgent:
    """A ReActAgent whose refunds a person approves (``human_approval``): refunds orders 1 and 2."""
    made: list[int] = []

    @tool
    def pay_back(order_id: int) -> str:
        """Refund an order.

        Args:
            order_id: the order number
        """
        made.append(order_id)
        return f"refunded {order_id}"

    def decide(messages: list[Message], tools: list[ToolInfo]) -> Message:
        results = [m.content for m in messages if m.role == "tool"]
        if not results:
            return tool_calls(("pay_back", {"order_id": 1}), ("pay_back", {"order_id": 2}))
        return assistant(" / ".join(results))

    hitl = human_approval(sensitive_tools=["pay_back"])
    return ReActAgent(
        name="support",
        description="Refunds with approval.",
        model=FunctionModel(decide),
        tools=[pay_back],
        middlewares=[hitl],
    )

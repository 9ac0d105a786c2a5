"""What the AG-UI tests share: the agents they serve, the events of an SSE answer parsed back with the
``ag-ui-protocol`` package's own models, and the order the protocol wants those events in."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from ag_ui.core import BaseEvent, Event, EventType
from pydantic import TypeAdapter

from batonflow import TRANSFER_TOOL_NAME, ChatModelAgent, Message, ReActAgent, ToolContext, set_sub_agents, tool
from batonflow.agents import human_approval
from batonflow.errors import ModelError
from batonflow.schema import assistant
from batonflow.testing import FunctionModel, tool_calls
from batonflow.tools import ToolInfo

EVENTS: TypeAdapter[Any] = TypeAdapter(Event)


def parsed(body: str) -> list[BaseEvent]:
    """Each ``data:`` line of an SSE body as the package's own event model (a line that is no AG-UI event fails)."""
    events = []
    for block in body.replace("\r\n", "\n").split("\n\n"):
        data = [line[len("data:") :].strip() for line in block.split("\n") if line.startswith("data:")]
        if data:
            event = EVENTS.validate_json("\n".join(data))
            assert json.loads(event.model_dump_json(by_alias=True)) == json.loads("\n".join(data))  # nothing lost
            events.append(event)
    return events


def types(events: Sequence[BaseEvent]) -> list[str]:
    return [event.type.value for event in events]


def check_order(events: Sequence[BaseEvent]) -> None:
    """The protocol's order: one RUN_STARTED first and one RUN_FINISHED or RUN_ERROR last; text and tool calls
    each started, then added to, then ended; steps started and finished in turn, none open at the end."""
    assert events[0].type == EventType.RUN_STARTED
    assert events[-1].type in (EventType.RUN_FINISHED, EventType.RUN_ERROR)
    assert [e.type for e in events].count(events[-1].type) == 1
    texts: set[str] = set()
    thoughts: set[str] = set()
    calls: set[str] = set()
    step: str | None = None
    for event in events[1:-1]:
        kind = event.type
        data = event.model_dump()
        if kind == EventType.TEXT_MESSAGE_START:
            assert data["message_id"] not in texts
            texts.add(data["message_id"])
        elif kind in (EventType.TEXT_MESSAGE_CONTENT, EventType.TEXT_MESSAGE_END):
            assert data["message_id"] in texts
            if kind == EventType.TEXT_MESSAGE_END:
                texts.remove(data["message_id"])
        elif kind == EventType.REASONING_START:
            assert data["message_id"] not in thoughts and not texts
            thoughts.add(data["message_id"])
        elif kind in (
            EventType.REASONING_MESSAGE_START,
            EventType.REASONING_MESSAGE_CONTENT,
            EventType.REASONING_MESSAGE_END,
            EventType.REASONING_END,
        ):
            assert data["message_id"] in thoughts
            if kind == EventType.REASONING_END:
                thoughts.remove(data["message_id"])
        elif kind == EventType.TOOL_CALL_START:
            calls.add(data["tool_call_id"])
        elif kind in (EventType.TOOL_CALL_ARGS, EventType.TOOL_CALL_END):
            assert data["tool_call_id"] in calls
            if kind == EventType.TOOL_CALL_END:
                calls.remove(data["tool_call_id"])
        elif kind == EventType.STEP_STARTED:
            assert step is None
            step = data["step_name"]
        elif kind == EventType.STEP_FINISHED:
            assert step == data["step_name"]
            step = None
        else:
            assert kind not in (EventType.RUN_STARTED, EventType.RUN_FINISHED, EventType.RUN_ERROR)
    assert (texts, thoughts, calls, step) == (set(), set(), set(), None)


def _last_user(messages: Sequence[Message]) -> str:
    return next((m.content for m in reversed(messages) if m.role == "user"), "")


def echo(model: FunctionModel | None = None) -> ChatModelAgent:
    """Answers ``echo: <the last user text>``."""
    model = model or FunctionModel(lambda messages, tools: assistant(f"echo: {_last_user(messages)}"))
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
        return tool_calls(("refund", {"order_id": 42}), id_prefix="refund_")
    return assistant(f"order 42: {result.content}")


def refunds() -> ChatModelAgent:
    """Calls ``refund`` (which asks for an approval), then says what came of it."""
    return ChatModelAgent(name="refunds", description="Refunds orders.", model=FunctionModel(_refunds), tools=[refund])


def router() -> ChatModelAgent:
    """Transfers every request to ``refunds``."""

    def route(messages: list[Message], tools: list[ToolInfo]) -> Message:
        return tool_calls((TRANSFER_TOOL_NAME, {"agent_name": "refunds"}), id_prefix="route_")

    root = ChatModelAgent(name="router", description="Routes requests.", model=FunctionModel(route))
    return set_sub_agents(root, [refunds()])  # type: ignore[return-value]


@tool
def add_to_cart(item: str, ctx: ToolContext) -> str:
    """Put an item in the cart (a session value), and count the items.

    Args:
        item: what to add
    """
    cart = [*ctx.get_session_value("cart", []), item]
    ctx.add_session_values({"cart": cart, "count": len(cart)})
    return f"{len(cart)} items"


def _shopper(messages: list[Message], tools: list[ToolInfo]) -> Message:
    if messages[-1].role == "tool":
        return assistant(f"cart: {messages[-1].content}")
    return tool_calls(("add_to_cart", {"item": "pear"}), id_prefix="cart_")


def shopper() -> ChatModelAgent:
    return ChatModelAgent(
        name="shopper", description="Fills a cart.", model=FunctionModel(_shopper), tools=[add_to_cart]
    )


def approvals() -> ReActAgent:
    """A ReActAgent whose refunds a person approves (``human_approval``): refunds orders 1 and 2."""

    @tool
    def pay_back(order_id: int) -> str:
        """Refund an order.

        Args:
            order_id: the order number
        """
        return f"refunded {order_id}"

    def decide(messages: list[Message], tools: list[ToolInfo]) -> Message:
        results = [m.content for m in messages if m.role == "tool"]
        if not results:
            return tool_calls(("pay_back", {"order_id": 1}), ("pay_back", {"order_id": 2}))
        return assistant(" / ".join(results))

    return ReActAgent(
        name="support",
        description="Refunds with approval.",
        model=FunctionModel(decide),
        tools=[pay_back],
        middlewares=[human_approval(sensitive_tools=["pay_back"])],
    )


def failing() -> ChatModelAgent:
    def fail(messages: Any, tools: Any) -> Any:
        raise ModelError("provider down: expected an answer, got a 503")

    return ChatModelAgent(name="broken", description="Fails.", model=FunctionModel(fail))


def run_input(thread: str, run: str, *texts: str, **extra: Any) -> dict[str, Any]:
    """An AG-UI ``RunAgentInput`` as a front end sends it (camelCase): the thread's messages, user texts here."""
    messages = [{"id": f"{run}-u{i}", "role": "user", "content": text} for i, text in enumerate(texts)]
    return {"threadId": thread, "runId": run, "messages": messages, **extra}


class Blocking:
    """A model that waits until it is cancelled; ``started`` and ``cancelled`` are set as it is called and let go."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()

    async def __call__(self, messages: list[Message], tools: list[ToolInfo]) -> Message:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        return assistant("never")


def blocking(model: Blocking) -> ChatModelAgent:
    return ChatModelAgent(name="slow", description="Waits.", model=FunctionModel(model))

"""Agents the distributed tests run (importable as ``tests.distributed.apps`` by ``batonflow worker``).

``shipper`` asks a human before it ships an order, then ships it: each shipment appends a line to the file named
by ``BATONFLOW_TEST_SIDE_EFFECTS`` (when set), so a test can count how often the side effect happened. ``stepper``
asks whether to begin, then does six steps; ``starter`` does them at once, in its first segment.
"""

from __future__ import annotations

import asyncio
import os

from batonflow import ChatModelAgent, Message, ToolContext, tool
from batonflow.schema import assistant
from batonflow.testing import FunctionModel, tool_calls
from batonflow.tools import ToolInfo


@tool
def ship(order_id: int, ctx: ToolContext) -> str:
    """Ship an order once a human approved it.

    Args:
        order_id: the order number
    """
    if ctx.ask({"approve_shipment": order_id}) != "yes":
        return "not shipped"
    _note(f"shipped {order_id}")
    return "shipped"


def _ships(messages: list[Message], tools: list[ToolInfo]) -> Message:
    result = next((m for m in reversed(messages) if m.role == "tool"), None)
    if result is None:
        return tool_calls(("ship", {"order_id": 7}))
    return assistant(f"order 7: {result.content}")


def shipper() -> ChatModelAgent:
    return ChatModelAgent(name="shipper", description="Ships orders.", model=FunctionModel(_ships), tools=[ship])


def echo() -> ChatModelAgent:
    last = lambda messages, tools: assistant(f"echo: {messages[-1].content}")  # noqa: E731
    return ChatModelAgent(name="echo", description="Says back what it was told.", model=FunctionModel(last))


async def _waits(messages: list[Message], tools: list[ToolInfo]) -> Message:
    """Says it waits (in the side-effect file), then waits until cancelled, and says so."""
    _note("waiting")
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        _note("cancelled")
        raise
    return assistant("woke up")


def _note(what: str) -> None:
    path = os.environ.get("BATONFLOW_TEST_SIDE_EFFECTS")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(f"{os.getpid()} {what}\n")


def waiter() -> ChatModelAgent:
    return ChatModelAgent(name="waiter", description="Waits for ever.", model=FunctionModel(_waits))


def agents() -> dict[str, ChatModelAgent]:
    return {"shipper": shipper(), "echo": echo(), "waiter": waiter(), "stepper": stepper(), "starter": starter()}


STEPS = 6


@tool
async def step(n: int, ctx: ToolContext) -> str:
    """Do step ``n`` of a long job, once: its effect is keyed by the call's idempotency key.

    Args:
        n: the step number
    """
    _note(f"attempt {n}")
    if _first(ctx.idempotency_key):
        _note(f"effect {n}")
    await asyncio.sleep(0.3)
    return f"step {n} done"


def _first(key: str) -> bool:
    """Whether ``key`` is seen for the first time (kept beside the side-effect file)."""
    path = os.environ.get("BATONFLOW_TEST_SIDE_EFFECTS")
    if not path:
        return True
    keys = f"{path}.keys"
    if os.path.exists(keys):
        with open(keys, encoding="utf-8") as known:
            if key in known.read().split():
                return False
    with open(keys, "a", encoding="utf-8") as out:
        out.write(f"{key}\n")
    return True


@tool
def begin(ctx: ToolContext) -> str:
    """Ask a human whether the long job may begin."""
    return "go" if ctx.ask({"begin": True}) == "yes" else "stop"


def _steps(messages: list[Message], tools: list[ToolInfo]) -> Message:
    done = sum(1 for m in messages if m.role == "tool" and m.content.startswith("step "))
    if not any(m.role == "tool" and m.content == "go" for m in messages):
        return tool_calls(("begin", {}))
    if done < STEPS:
        return tool_calls(("step", {"n": done + 1}))
    return assistant(f"{done} steps done")


def stepper() -> ChatModelAgent:
    return ChatModelAgent(
        name="stepper", description="A long job of steps.", model=FunctionModel(_steps), tools=[begin, step]
    )


def _starts(messages: list[Message], tools: list[ToolInfo]) -> Message:
    done = sum(1 for m in messages if m.role == "tool")
    return tool_calls(("step", {"n": done + 1})) if done < STEPS else assistant(f"{done} steps done")


def starter() -> ChatModelAgent:
    """The long job of ``stepper`` without asking first: its steps run in the run's first segment, before any
    checkpoint is saved."""
    return ChatModelAgent(
        name="starter", description="A long job, at once.", model=FunctionModel(_starts), tools=[step]
    )

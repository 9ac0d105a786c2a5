"""Agents the distributed tests run (importable as ``tests.distributed.apps`` by ``batonflow worker``).

``shipper`` asks a human before it ships an order, then ships it: each shipment appends a line to the file named
by ``BATONFLOW_TEST_SIDE_EFFECTS`` (when set), so a test can count how often the side effect happened. ``stepper``
asks whether to begin, then does six steps; ``starter`` does them at once, in its first segment. ``ticker`` does
as many steps of 0.3 s as its input says, and answers ``ticked N``; an input ``N/H`` holds step ``H`` until the
file named by ``BATONFLOW_TEST_TICK_GATE`` exists, so a test decides when a long run may end. ``poison``'s tool kills the worker process that runs it (``os._exit``), every time.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from batonflow import ChatModelAgent, Message, ParallelAgent, SequentialAgent, ToolContext, tool
from batonflow.graph import GraphAgent, GraphSpec
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


def agents() -> dict[str, Any]:
    return {
        "shipper": shipper(),
        "echo": echo(),
        "waiter": waiter(),
        "stepper": stepper(),
        "starter": starter(),
        "survey": survey(),
        "atlas": atlas(),
        "greeter": greeter(),
        "batcher": batcher(),
        "ticker": ticker(),
        "poison": poison(),
    }


@tool
async def tick(n: int, hold: bool = False) -> str:
    """Step ``n`` of a long run with nothing to keep.

    Args:
        n: the step number
        hold: wait for the test's gate file before the step ends
    """
    await asyncio.sleep(0.3)
    gate = os.environ.get("BATONFLOW_TEST_TICK_GATE")
    if hold and gate:
        await asyncio.to_thread(_wait_for, gate)
    return f"tick {n}"


def _wait_for(path: str) -> None:
    while not os.path.exists(path):
        time.sleep(0.05)


def _ticks(messages: list[Message], tools: list[ToolInfo]) -> Message:
    wanted, _, held = next(str(m.content) for m in messages if m.role == "user").partition("/")
    done = sum(1 for m in messages if m.role == "tool")
    if done >= int(wanted):
        return assistant(f"ticked {done}")
    return tool_calls(("tick", {"n": done + 1, "hold": str(done + 1) == held}))


def ticker() -> ChatModelAgent:
    return ChatModelAgent(name="ticker", description="Ticks.", model=FunctionModel(_ticks), tools=[tick])


@tool
def crash() -> str:
    """Take the process that runs this tool down at once, as a segfault or the OOM killer would."""
    _note("crash")
    os._exit(9)


def _crashes(messages: list[Message], tools: list[ToolInfo]) -> Message:
    return tool_calls(("crash", {}))


def poison() -> ChatModelAgent:
    return ChatModelAgent(name="poison", description="Kills its worker.", model=FunctionModel(_crashes), tools=[crash])


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


@tool
async def visit(city: str) -> str:
    """Visit a city (half a second), noting which process went there.

    Args:
        city: the city
    """
    _note(f"visited {city}")
    await asyncio.sleep(0.5)
    return f"{city} visited by {os.getpid()}"


def _visitor(city: str) -> ChatModelAgent:
    def answer(messages: list[Message], tools: list[ToolInfo]) -> Message:
        result = next((m for m in reversed(messages) if m.role == "tool"), None)
        return tool_calls(("visit", {"city": city})) if result is None else assistant(result.content)

    return ChatModelAgent(name=city, description=f"Visits {city}.", model=FunctionModel(answer), tools=[visit])


def _tally(messages: list[Message], tools: list[ToolInfo]) -> Message:
    visited = [m for m in messages if m.role == "user" and "said:" in m.content and "visited by" in m.content]
    return assistant(f"{len(visited)} cities visited")


def survey() -> SequentialAgent:
    """Four cities visited at once, each branch on the worker pool, then a tally of what the branches said."""
    cities = [_visitor(c) for c in ("oslo", "lima", "pune", "kobe")]
    fan = ParallelAgent(name="cities", sub_agents=cities, distribute=True)
    tally = ChatModelAgent(name="tally", description="Counts.", model=FunctionModel(_tally))
    return SequentialAgent(name="survey", sub_agents=[fan, tally])


def atlas() -> GraphAgent:
    """The same four visits as agent nodes of a graph's parallel gateway, each on the pool (meta ``distribute``)."""
    spec = GraphSpec("atlas")
    spec.add_start("s").link_add("fork")
    fork = spec.add_parallel("fork")
    for city in ("oslo", "lima", "pune", "kobe"):
        fork.link_add(city)
        spec.add_activity(city, task=_visitor(city), meta={"output": city, "distribute": True}).link_add("join")
    spec.add_parallel("join").link_add("tally")
    tally = ChatModelAgent(name="tally", description="Counts.", model=FunctionModel(_tally))
    spec.add_activity("tally", task=tally, meta={"output": "summary"}).link_add("e")
    spec.add_end("e")
    return GraphAgent(spec.build())


@tool
def greet(ctx: ToolContext) -> str:
    """Greet the user by the name in the session values."""
    return f"hello {ctx.session_values.get('name')}"


def _greets(messages: list[Message], tools: list[ToolInfo]) -> Message:
    result = next((m for m in reversed(messages) if m.role == "tool"), None)
    return tool_calls(("greet", {})) if result is None else assistant(result.content)


def greeter() -> ChatModelAgent:
    return ChatModelAgent(name="greeter", description="Greets.", model=FunctionModel(_greets), tools=[greet])


def _starts(messages: list[Message], tools: list[ToolInfo]) -> Message:
    done = sum(1 for m in messages if m.role == "tool")
    return tool_calls(("step", {"n": done + 1})) if done < STEPS else assistant(f"{done} steps done")


def starter() -> ChatModelAgent:
    """The long job of ``stepper`` without asking first: its steps run in the run's first segment, before any
    checkpoint is saved."""
    return ChatModelAgent(
        name="starter", description="A long job, at once.", model=FunctionModel(_starts), tools=[step]
    )


BATCH = {"fast": 0.05, "medium": 0.3, "slow": 2.5}
"""The batcher's three tools and how long each takes (seconds)."""


def _batch_tool(name: str):  # type: ignore[no-untyped-def]
    async def run(tag: str) -> str:
        _note(f"{tag} start {name}")
        await asyncio.sleep(BATCH[name])
        _note(f"{tag} done {name}")
        return f"{name} done"

    run.__name__ = name
    run.__doc__ = f"""The {name} part of the job.

    Args:
        tag: the run's tag
    """
    return tool(run)


def _batches(messages: list[Message], tools: list[ToolInfo]) -> Message:
    """Asks for the three tools at once, then answers with their results; says each call in the side-effect file
    (``<tag> model <results seen>``)."""
    tag = messages[0].content
    results = [m.content for m in messages if m.role == "tool"]
    _note(f"{tag} model {len(results)}")
    if not results:
        return tool_calls(*((name, {"tag": tag}) for name in BATCH))
    return assistant(", ".join(results))


def batcher() -> ChatModelAgent:
    return ChatModelAgent(
        name="batcher",
        description="Runs three tools in parallel.",
        model=FunctionModel(_batches),
        tools=[_batch_tool(name) for name in BATCH],
    )

"""What a model agent takes as its tools: tools, and plain functions made tools as ``@tool`` would make them."""

from __future__ import annotations

from typing import Any

import pytest

from batonflow.adk import ChatModelAgent, Runner, collect_events, new_executor
from batonflow.agents import ReActAgent, SimpleAgent
from batonflow.errors import UserError
from batonflow.schema import assistant
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import ToolContext


def lookup(order_id: int) -> str:
    """Look an order up.

    Args:
        order_id: the order number
    """
    return f"order {order_id} shipped"


async def remember(note: str, ctx: ToolContext) -> str:
    """Remember a note for the rest of the run."""
    ctx.add_session_value("note", note)
    return "noted"


@pytest.mark.parametrize("kind", [ChatModelAgent, ReActAgent])
async def test_a_plain_function_given_as_a_tool_is_called_as_a_tool(kind: Any) -> None:
    model = ScriptedModel(
        [tool_calls(("lookup", {"order_id": 7}), ("remember", {"note": "vip"})), assistant("Order 7 shipped.")]
    )
    agent = kind(name="a", model=model, tools=[lookup, remember])
    events = await collect_events(Runner(agent).query("where is order 7?"))
    assert [e.error for e in events if e.error is not None] == []
    results = [v.message.content for e in events if (v := e.message_output) and v.role == "tool" and v.message]
    assert sorted(results) == ["noted", "order 7 shipped"]
    [sent] = [t for t in model.requests[0].tools if t.name == "lookup"]
    assert sent.description == "Look an order up."
    assert sent.parameters["properties"]["order_id"] == {"type": "integer", "description": "the order number"}


async def test_a_simple_agent_offers_a_plain_function_as_a_tool() -> None:
    model = ScriptedModel([assistant("ok")])
    await collect_events(Runner(SimpleAgent(model=model, tools=[lookup])).query("hi"))
    assert [t.name for t in model.requests[0].tools] == ["lookup"]


def test_an_executor_takes_plain_functions() -> None:
    executor = new_executor(model=ScriptedModel([]), tools=[lookup])
    assert [t.info.name for t in executor.tools] == ["lookup"]


@pytest.mark.parametrize(
    ("make", "owner"),
    [
        (lambda tools: ChatModelAgent(name="a", model=ScriptedModel([]), tools=tools), "ChatModelAgent 'a'"),
        (lambda tools: ReActAgent(name="r", model=ScriptedModel([]), tools=tools), "ReActAgent 'r'"),
        (lambda tools: SimpleAgent(name="s", model=ScriptedModel([]), tools=tools), "SimpleAgent 's'"),
    ],
    ids=["ChatModelAgent", "ReActAgent", "SimpleAgent"],
)
def test_what_is_neither_a_tool_nor_a_function_is_refused_when_the_agent_is_made(make: Any, owner: str) -> None:
    with pytest.raises(UserError) as caught:
        make([lookup, {"name": "search"}])
    assert str(caught.value) == (
        f"{owner}: tools[1]: expected a Tool or a function (made a tool as @tool would), got dict {{'name': 'search'}}"
    )

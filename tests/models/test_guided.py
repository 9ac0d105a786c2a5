"""ToolThenAnswer: a small model is made to call a tool, then to answer in words, so an agent does not loop."""

from __future__ import annotations

from batonflow.adk import ChatModelAgent, Runner, collect_events
from batonflow.models import ANSWER_PROMPT, ForcedTool, ToolThenAnswer, answer_from_tool_results
from batonflow.schema import Message, assistant, user
from batonflow.testing import FunctionModel, tool_calls
from batonflow.tools import ToolInfo, tool


@tool(threaded=False)
def lookup_order(order_id: str) -> str:
    """Find an order."""
    return f"order {order_id} shipped"


@tool(threaded=False)
def cancel_order(order_id: str) -> str:
    """Cancel an order."""
    return f"order {order_id} cancelled"


def looping(messages: list[Message], tools: list[ToolInfo]) -> Message:
    """A model as SmolLM2 behaves: it calls a tool whenever it is offered one."""
    return tool_calls(("lookup_order", {"order_id": "7"})) if tools else assistant("Order 7 has shipped.")


async def test_an_agent_on_a_looping_model_calls_its_tool_once_then_answers() -> None:
    inner = FunctionModel(looping)
    agent = ChatModelAgent(
        name="a", description="d", model=ToolThenAnswer(inner), tools=[lookup_order, cancel_order], max_iterations=4
    )

    events = await collect_events(Runner(agent).query("Where is order 7?"))

    assert [e.error for e in events if e.error] == []
    assert (await events[-1].message_output.get_message()).text == "Order 7 has shipped."  # type: ignore[union-attr]
    assert [(r.tool_choice, [t.name for t in r.tools]) for r in inner.requests] == [
        (ForcedTool("lookup_order"), ["lookup_order"]),
        (None, []),
    ]


async def test_without_guidance_the_same_model_loops_until_the_iteration_limit() -> None:
    agent = ChatModelAgent(name="a", description="d", model=FunctionModel(looping), tools=[lookup_order])

    events = await collect_events(Runner(agent).query("Where is order 7?"))

    assert "iteration" in str(events[-1].error)


async def test_the_named_tool_and_a_caller_s_choice_win_over_the_first_tool() -> None:
    inner = FunctionModel(looping)
    infos = [lookup_order.info, cancel_order.info]

    await ToolThenAnswer(inner, "cancel_order").generate([user("x")], tools=infos)
    await ToolThenAnswer(inner).generate([user("x")], tools=infos, tool_choice=ForcedTool("cancel_order"))
    await ToolThenAnswer(inner).generate([user("x")], tools=infos, tool_choice="none")

    assert [r.tool_choice for r in inner.requests] == [ForcedTool("cancel_order"), ForcedTool("cancel_order"), "none"]


def test_answer_from_tool_results_turns_them_into_plain_text() -> None:
    call = tool_calls(("lookup_order", {"order_id": "7"}))
    result = Message(role="tool", content="shipped", tool_call_id=call.tool_calls[0].id)

    assert answer_from_tool_results([user("q"), call, result]) == [user("q"), assistant("shipped"), user(ANSWER_PROMPT)]
    assert answer_from_tool_results([user("q")]) == [user("q")]

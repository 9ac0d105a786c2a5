"""``check_arguments``: why a tool would refuse a call's arguments, found before the call is made (the tool step
asks it before an approval is asked)."""

from __future__ import annotations

import pytest

from batonflow.errors import ToolArgumentsError
from batonflow.tools import ToolContext, ToolInfo, check_arguments, tool


@tool
def refund(order_id: int, amount: float) -> str:
    """Refund an order.

    Args:
        order_id: the order number
        amount: how much
    """
    return "refunded"


class Echo:
    """A tool without a check of its own (as an MCP tool is): its arguments must be a JSON object."""

    info = ToolInfo(name="echo", description="Echo the arguments.")

    async def invoke(self, arguments: str, ctx: ToolContext | None = None) -> str:
        return arguments


@pytest.mark.parametrize("arguments", ['{"order_id": 7, "amount": 3.5}', '{"order_id": "7", "amount": 3}'])
def test_arguments_the_schema_accepts_pass(arguments: str) -> None:
    assert check_arguments(refund, arguments) is None


@pytest.mark.parametrize(
    ("arguments", "detail"),
    [
        ('{"order_id": 7, "amo', "expected a JSON object, got "),
        ('{"order_id": 7}', "amount"),
        ('{"order_id": 7, "amount": 1, "why": 2}', "why"),
        ("[1]", "expected a JSON object, got "),
    ],
)
def test_arguments_the_schema_refuses_are_the_calls_own_refusal(arguments: str, detail: str) -> None:
    refusal = check_arguments(refund, arguments)
    assert isinstance(refusal, ToolArgumentsError) and refusal.tool_name == "refund"
    assert str(refusal).startswith("Invalid arguments for tool [refund]: ") and detail in str(refusal)


@pytest.mark.parametrize("arguments", ['{"text": "hi"}', "", "  "])
def test_a_tool_without_a_check_takes_any_json_object(arguments: str) -> None:
    assert check_arguments(Echo(), arguments) is None


@pytest.mark.parametrize(
    ("arguments", "found"),
    [('{"text": "h', "Invalid arguments for tool [echo]: "), ("[1, 2]", "expected a JSON object, got "), ("3", "got ")],
)
def test_a_tool_without_a_check_refuses_what_is_no_json_object(arguments: str, found: str) -> None:
    refusal = check_arguments(Echo(), arguments)
    assert isinstance(refusal, ToolArgumentsError) and refusal.tool_name == "echo"
    assert str(refusal).startswith("Invalid arguments for tool [echo]: ") and found in str(refusal)

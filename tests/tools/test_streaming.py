from collections.abc import AsyncIterator

import pytest

from batonflow.errors import ToolArgumentsError, UserError
from batonflow.schema import Stream
from batonflow.tools import FunctionTool, StreamingFunctionTool, StreamingTool, Tool, ToolContext, tool


@tool
async def count(upto: int, ctx: ToolContext) -> AsyncIterator[str]:
    """Count aloud.

    Args:
        upto: Where to stop.
    """
    for i in range(1, upto + 1):
        yield f"{i}{ctx.call_id} "


def test_async_generator_function_becomes_a_streaming_tool() -> None:
    assert isinstance(count, StreamingFunctionTool)
    assert isinstance(count, StreamingTool)
    assert isinstance(count, Tool)
    assert count.info.description == "Count aloud."
    assert count.info.parameters == {
        "type": "object",
        "properties": {"upto": {"type": "integer", "description": "Where to stop."}},
        "required": ["upto"],
        "additionalProperties": False,
    }


async def test_stream_hands_out_the_chunks_in_order() -> None:
    stream = count.stream('{"upto": 3}', ToolContext(tool_name="count", call_id="!"))
    assert isinstance(stream, Stream)
    assert await stream.collect() == ["1! ", "2! ", "3! "]


async def test_invoke_of_a_streaming_tool_returns_the_joined_chunks() -> None:
    assert await count.invoke('{"upto": 2}') == "1 2 "


async def test_stream_with_invalid_arguments_raises_before_streaming() -> None:
    with pytest.raises(ToolArgumentsError, match=r"^Invalid arguments for tool \[count\]: expected 'upto'"):
        count.stream("{}")


async def test_closing_the_stream_early_closes_the_generator() -> None:
    events: list[str] = []

    @tool
    async def forever() -> AsyncIterator[str]:
        try:
            while True:
                yield "tick"
        finally:
            events.append("closed")

    stream = forever.stream("")
    assert await anext(stream) == "tick"
    await stream.aclose()
    assert events == ["closed"]


def test_streaming_tool_needs_an_async_generator_function() -> None:
    def f() -> str:
        return ""

    with pytest.raises(UserError, match=r"^Invalid function for StreamingFunctionTool: expected an async generator"):
        StreamingFunctionTool(f)  # type: ignore[arg-type]


def test_function_tool_refuses_an_async_generator_function() -> None:
    async def f() -> AsyncIterator[str]:
        yield ""

    with pytest.raises(UserError, match=r"\(use StreamingFunctionTool\)$"):
        FunctionTool(f)

"""Hostile model JSON, timed: what one bad tool call or answer costs the event loop.

    python -m benchmarks.hostile_input

- **32,000 unknown keys**: a tool call whose arguments are an object of 32,000 keys the tool does not have.
- **10 MB key name**: a tool call whose arguments are one key of ten million characters.
- **nested JSON**: ``"[" * 100000`` as a tool's arguments, as ``transfer_to_agent``'s, as an agent tool's and as
  SimpleAgent's structured answer.
- **open fence**: a structured answer that opens a Markdown fence, then 3,000 spaces and no closing fence.

Each row is the wall time of one call on the event loop (the best of three), the length of what the model reads back
(the observation, or the error's text), and the type of what came out. Run it on two checkouts with the same
interpreter (``PYTHONPATH=<checkout>/src``) to compare them; it uses only public names that both have.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable

from pydantic import BaseModel

from batonflow.adk import AgentTool, ChatModelAgent, TransferToAgentTool
from batonflow.agents import parse_output
from batonflow.testing import ScriptedModel
from batonflow.tools import ToolContext, tool

ROUNDS = 3


@tool(threaded=False)
def get_weather(city: str, days: int = 1) -> str:
    """The weather in a city."""
    return f"{city}:{days}"


class City(BaseModel):
    name: str
    population: int


async def outcome(call: Callable[[], Awaitable[object]]) -> tuple[float, int, str]:
    """The best wall time of ``call`` over the rounds, the length of what it gave back, and its type."""
    best = float("inf")
    length, kind = 0, ""
    for _ in range(ROUNDS):
        started = time.perf_counter()
        try:
            result = await call()
            length, kind = len(str(result)), "result"
        except Exception as error:  # what the run would see: the observation or the run's error
            length, kind = len(str(error)), type(error).__name__
        best = min(best, time.perf_counter() - started)
    return best, length, kind


def cases() -> dict[str, Callable[[], Awaitable[object]]]:
    unknown_keys = json.dumps({f"k{i}": i for i in range(32_000)})
    long_key = json.dumps({"x" * 10_000_000: 1})
    nested = "[" * 100_000
    transfer = TransferToAgentTool(["billing"])
    helper = AgentTool(ChatModelAgent(name="helper", description="Helps.", model=ScriptedModel([])))

    async def answer(text: str) -> object:
        return parse_output(text, City)

    return {
        "tool arguments, 32,000 unknown keys": lambda: get_weather.invoke(unknown_keys),
        "tool arguments, a 10 MB key name": lambda: get_weather.invoke(long_key),
        "tool arguments, nested 100,000 deep": lambda: get_weather.invoke(nested),
        "transfer_to_agent, nested 100,000 deep": lambda: transfer.invoke(
            nested, ToolContext(tool_name="transfer_to_agent")
        ),
        "agent tool, nested 100,000 deep": lambda: helper.invoke(nested, ToolContext(tool_name="helper")),
        "output schema answer, nested 100,000 deep": lambda: answer(nested),
        "output schema answer, open fence, 3,000 spaces": lambda: answer("```x" + " " * 3_000 + "x"),
    }


async def main() -> None:
    print(f"{'case':<48} {'seconds':>10} {'chars back':>12}  outcome")
    for name, call in cases().items():
        seconds, length, kind = await outcome(call)
        print(f"{name:<48} {seconds:>10.4f} {length:>12,}  {kind}")


if __name__ == "__main__":
    asyncio.run(main())

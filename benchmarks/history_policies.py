"""What each history policy sends the last agent of a long run: ``python -m benchmarks.history_policies``.

A router passes the user's request to five specialists in turn. Each specialist looks something up three times (each
result 400 characters) and hands back to the router; the fifth answers after its lookups. The table gives, for the
fifth specialist's final model call, the messages and characters it was sent (system prompt left out) under each
policy. The policy shapes the input the specialist starts from; its own three calls and results of this run come on
top of that in every row. Counts, not times: the run is scripted, so the figures are exact on every machine.
"""

from __future__ import annotations

import asyncio

from batonflow import ChatModelAgent, HistoryPolicy, Runner, collect_events, set_sub_agents
from batonflow.schema import Message, assistant, user
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import tool

SPECIALISTS = 5
LOOKUPS = 3


@tool(threaded=False)
def lookup(topic: str) -> str:
    """Look a topic up."""
    return (f"{topic}: " + "facts " * 80)[:400]


def _transfer(name: str) -> Message:
    return tool_calls(("transfer_to_agent", {"agent_name": name}))


def _specialist(i: int) -> ChatModelAgent:
    calls = [tool_calls(("lookup", {"topic": f"topic {i}.{k}"})) for k in range(LOOKUPS)]
    last = assistant("The answer.") if i == SPECIALISTS else _transfer("router")
    return ChatModelAgent(
        name=f"s{i}", description=f"specialist {i}", model=ScriptedModel([*calls, last]), tools=[lookup]
    )


async def measure(policy: HistoryPolicy | None) -> tuple[int, int]:
    """Messages and characters of the last specialist's final model request."""
    router = ChatModelAgent(
        name="router",
        description="routes",
        model=ScriptedModel([_transfer(f"s{i}") for i in range(1, SPECIALISTS + 1)]),
    )
    specialists = [_specialist(i) for i in range(1, SPECIALISTS + 1)]
    history = None if policy is None else {f"s{SPECIALISTS}": policy}
    tree = set_sub_agents(router, specialists, history=history)
    await collect_events(Runner(tree).run([user("Research this for me.")]))
    model = specialists[-1].model
    assert isinstance(model, ScriptedModel)
    sent = [m for m in model.requests[-1].messages if m.role != "system"]
    chars = sum(len(m.content) + sum(len(c.function.arguments) for c in m.tool_calls) for m in sent)
    return len(sent), chars


async def main() -> None:
    rows: list[tuple[str, HistoryPolicy | None]] = [
        ("default (Eino's)", None),
        ("full()", HistoryPolicy.full()),
        ("full(fenced=True)", HistoryPolicy.full(fenced=True)),
        ("current_turn()", HistoryPolicy.current_turn()),
        ("own()", HistoryPolicy.own()),
        ("last(8)", HistoryPolicy.last(8)),
    ]
    print(f"{'policy':<20} {'messages':>8} {'characters':>10}")
    for label, policy in rows:
        messages, chars = await measure(policy)
        print(f"{label:<20} {messages:>8} {chars:>10}")


if __name__ == "__main__":
    asyncio.run(main())

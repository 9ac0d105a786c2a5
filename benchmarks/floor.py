"""Where a single turn's time goes, against the floor of what any single turn must cost in CPython.

    python -m benchmarks.floor

- **floor**: one async generator that makes only the objects a turn must have (the user message, a run context,
  the input, the model call, the event with its output and variant, the history record) — no flow agent, no
  Runner, no loop. No framework built on events like batonflow's can run a turn in less.
- **runner + trivial agent**: the Runner and flow-agent path around an agent that yields one prebuilt event.
- **agent alone**: a ``ChatModelAgent`` run directly, without a Runner.
- **runner + ChatModelAgent**: W1 of ``make bench`` without the harness.

CPU time per run (``time.process_time``), the best of three rounds after a warm-up; compare rows of one run, not
runs of different days.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from batonflow.adk import (
    AgentEvent,
    AgentInput,
    ChatModelAgent,
    RunContext,
    Runner,
    RunSession,
    SessionEvent,
    event_from_message,
)
from batonflow.schema import Message, Stream, assistant, system, user

ANSWER = assistant("done")
INSTRUCTION = system("Be brief.")


class FakeModel:
    model_name = "fake"

    async def generate(self, messages: Any, **_: Any) -> Message:
        return ANSWER

    def stream(self, messages: Any, **_: Any) -> Stream[Message]:
        return Stream.from_list([ANSWER])


class OneEvent:
    name = "trivial"
    description = ""

    async def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        yield event_from_message(ANSWER)


_MODEL = FakeModel()


async def _essentials(text: str) -> AsyncIterator[AgentEvent]:
    message = user(text)
    ctx = RunContext(session=RunSession(values={}))
    input = AgentInput(messages=[message])
    answer = await _MODEL.generate([INSTRUCTION, *input.messages])
    event = event_from_message(answer)
    event.agent_name, event.seq = "a", 1
    ctx.session.events.append(SessionEvent(agent_name="a", run_path=(), message=answer))
    yield event


async def _drain(events: AsyncIterator[AgentEvent]) -> None:
    async for _ in events:
        pass


def cases() -> dict[str, Callable[[], Awaitable[None]]]:
    trivial = Runner(OneEvent())
    agent = ChatModelAgent(name="a", model=FakeModel(), instruction="Be brief.")
    runner = Runner(agent)
    return {
        "floor (essential objects, one generator)": lambda: _drain(Stream.from_async_iter(_essentials("hi"))),
        "runner + trivial agent": lambda: _drain(trivial.query("hi")),
        "agent alone": lambda: _drain(agent.run(AgentInput(messages=[user("hi")]), RunContext())),
        "runner + ChatModelAgent (W1)": lambda: _drain(runner.query("hi")),
    }


async def main(runs: int = 20_000, rounds: int = 3) -> None:
    best: dict[str, float] = {}
    for _ in range(rounds):  # rounds of every case in turn; the best of each is reported
        for name, case in cases().items():
            for _ in range(runs // 20):
                await case()
            started = time.process_time()
            for _ in range(runs):
                await case()
            took = (time.process_time() - started) / runs * 1e6
            best[name] = min(took, best.get(name, took))
    for name, took in best.items():
        print(f"{name:45} {took:7.2f} µs/run")


if __name__ == "__main__":
    asyncio.run(main())

"""A conversation across runs: ``Runner(..., session_store=...)`` keeps each conversation's messages, and every
``call(..., session_id=...)`` continues it.

Each run is fed the last ``session_window`` messages of its conversation (8 by default, widened back to the user
message that opened their turn) before the new prompt, so that a turn's cost does not grow with the conversation;
``result.windowed`` says whether earlier messages were left out, and ``session_window=None`` feeds them all.
"""

import asyncio

from batonflow import ChatModelAgent, MemorySessionStore, Runner
from batonflow.schema import assistant
from batonflow.testing import ScriptedModel


async def talk(session_window: int | None) -> None:
    model = ScriptedModel([assistant(f"Answer {n}.") for n in range(1, 5)])
    runner = Runner(
        ChatModelAgent(name="chat", model=model), session_store=MemorySessionStore(), session_window=session_window
    )
    for n in range(1, 5):
        result = await runner.call(f"Question {n}?", session_id="ann")
        fed = len(model.requests[-1].messages)
        print(
            f"window {session_window}: turn {n}: {result.text} (fed {fed} messages, some left out: {result.windowed})"
        )


async def main() -> None:
    await talk(session_window=2)
    await talk(session_window=None)


asyncio.run(main())

"""A worker resuming a pending conversation, in a process of its own (driven by test_conversation.py).

    python conversation_child.py <sqlite file> <session id> <ledger file>

It opens the session store, prints ``ready`` and waits for ``go`` on stdin, then resumes the conversation with an
approval. If it won the conversation's lease, the refund tool appends to the ledger, prints ``in tool`` and waits for
``finish`` on stdin before it returns, so the other worker tries while this one holds the lease; the worker then
prints ``done: <answer>``. A worker that lost prints ``conflict: <message>``.
"""

from __future__ import annotations

import asyncio
import sys

from batonflow import ResumeConflictError, Runner, SqliteSessionStore
from batonflow.adk import ChatModelAgent
from batonflow.schema import assistant
from batonflow.testing import ScriptedModel
from batonflow.tools import ToolContext, tool


async def read_line() -> str:
    return await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)


def record(ledger: str, line: str) -> None:
    with open(ledger, "a") as f:
        f.write(line)


async def main(path: str, session_id: str, ledger: str) -> None:
    @tool(threaded=False)
    async def refund(order_id: int, ctx: ToolContext) -> str:
        """Refund an order once a person approved it."""
        if not ctx.get_interrupt_state().was_interrupted:
            ctx.interrupt({"approve": order_id})
        record(ledger, f"refund {order_id}\n")
        print("in tool", flush=True)
        await read_line()  # "finish"
        return "refunded"

    # The agent that left the conversation pending (test_conversation.py's) is named "a".
    agent = ChatModelAgent(name="a", model=ScriptedModel([assistant("Refund done.")]), tools=[refund])
    async with SqliteSessionStore(path) as store:
        await store.get("warm-up")  # open the file and create the tables before the race, not during it
        print("ready", flush=True)
        await read_line()  # "go"
        runner = Runner(agent, session_store=store)
        try:
            events = await runner.run([], session_id=session_id).collect()
        except ResumeConflictError as error:
            print(f"conflict: {error}", flush=True)
            return
        last = events[-1]
        if last.error is not None:
            raise last.error
        assert last.message_output is not None and last.message_output.message is not None
        print(f"done: {last.message_output.message.content}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))

"""A checkpoint store, and resuming in another process: the run stops for an approval, its checkpoint is saved
in a SQLite file, and a second process (this script again, ``resume``) continues it with the approval.

    python checkpoint_process.py            # runs, then starts "python checkpoint_process.py resume <file> <id>"

The resuming process builds the same agent; the refund it runs is the one the first process asked about, and the
model is asked only for the final answer (the tool call came from the checkpoint).
"""

import asyncio
import subprocess
import sys
import tempfile
from pathlib import Path

from batonflow import ChatModelAgent, Runner, SqliteCheckpointStore, ToolContext, tool
from batonflow.schema import Message, assistant
from batonflow.testing import ScriptedModel, tool_calls


@tool
def refund(order_id: int, ctx: ToolContext) -> str:
    """Refund an order once a human approved it.

    Args:
        order_id: the order number
    """
    return "refunded" if ctx.ask({"approve_refund": order_id}) == "yes" else "not refunded"


def build(script: list[Message], store: SqliteCheckpointStore) -> Runner:
    agent = ChatModelAgent(name="refunds", model=ScriptedModel(script), tools=[refund])
    return Runner(agent, checkpoint_store=store)


async def first(path: str) -> str:
    async with SqliteCheckpointStore(path) as store:
        runner = build([tool_calls(("refund", {"order_id": 42}))], store)
        result = await runner.call("Refund order 42 please", checkpoint_id="refund-42")
    [interrupt_id] = result.interrupt_ids
    print(f"process 1: waiting for approval, checkpoint {result.checkpoint_id}, interrupt {interrupt_id}")
    return interrupt_id


async def resume(path: str, interrupt_id: str) -> None:
    async with SqliteCheckpointStore(path) as store:
        runner = build([assistant("Order 42 is refunded.")], store)
        result = await runner.call_resume("refund-42", targets={interrupt_id: "yes"})
    print(f"process 2: {result.text}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["resume"]:
        asyncio.run(resume(sys.argv[2], sys.argv[3]))
    else:
        with tempfile.TemporaryDirectory() as folder:
            path = str(Path(folder) / "checkpoints.db")
            interrupt_id = asyncio.run(first(path))
            subprocess.run([sys.executable, __file__, "resume", path, interrupt_id], check=True)

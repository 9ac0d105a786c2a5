"""A run that stops for a human, in a process of its own (driven by test_durable.py).

    python hitl_child.py run    <store> <checkpoint id> <ledger file>
    python hitl_child.py resume <store> <checkpoint id> <ledger file> <interrupt id> <decision>

``run`` prints the interrupt id as JSON once the checkpoint is saved, then waits to be killed. ``resume``
continues in a fresh process and prints the final answer. Every refund the tool really makes is appended to the
ledger file, so the test can count side effects across processes.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from batonflow.adk import ChatModelAgent, InterruptInfo, Runner
from batonflow.schema import assistant
from batonflow.store import PostgresCheckpointStore, RedisCheckpointStore, SqliteCheckpointStore
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import ToolContext, tool


def open_store(spec: str) -> Any:
    kind, _, where = spec.partition(":")
    if kind == "sqlite":
        return SqliteCheckpointStore(where)
    url, _, name = where.partition("|")  # a table or a key prefix of the test's own
    if kind == "postgres":
        return PostgresCheckpointStore(url, table=name)
    if kind == "redis":
        return RedisCheckpointStore(url, prefix=name)
    raise SystemExit(f"unknown store {spec!r}")


def build(ledger: str, phase: str) -> ChatModelAgent:
    @tool(threaded=False)
    def refund(order_id: int, ctx: ToolContext) -> str:
        """Refund an order once a human approved it."""
        saved = ctx.get_interrupt_state()
        if not saved.was_interrupted:
            ctx.interrupt({"approve_refund": order_id}, state={"order_id": order_id})
        decision = ctx.get_resume_context()
        if not decision.is_resume_target:
            ctx.interrupt({"approve_refund": order_id}, state=saved.state)
        if decision.data != "approve":
            return "rejected"
        with open(ledger, "a") as f:
            f.write(f"refund {saved.state['order_id']}\n")
        return f"order {saved.state['order_id']} refunded"

    script = [tool_calls(("refund", {"order_id": 42}))] if phase == "run" else [assistant("Refund done.")]
    return ChatModelAgent(name="support", model=ScriptedModel(script), tools=[refund])


async def main(argv: list[str]) -> None:
    phase, store_spec, checkpoint_id, ledger = argv[:4]
    store = open_store(store_spec)
    runner = Runner(build(ledger, phase), checkpoint_store=store)
    if phase == "run":
        async for event in runner.query("please refund order 42", checkpoint_id=checkpoint_id):
            if event.error is not None:
                raise event.error
            if event.action is not None and isinstance(event.action.interrupted, InterruptInfo):
                print(json.dumps({"interrupt_id": event.action.interrupted.interrupt_contexts[0].id}), flush=True)
                await asyncio.sleep(3600)  # the parent kills us here
    else:
        interrupt_id, decision = argv[4:6]
        async for event in runner.resume(checkpoint_id, targets={interrupt_id: decision}):
            if event.error is not None:
                raise event.error
            variant = event.message_output
            if variant is not None and variant.role == "assistant":
                print(json.dumps({"answer": (await variant.get_message()).content}), flush=True)
    await store.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))

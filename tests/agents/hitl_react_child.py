"""A ReActAgent whose refund waits for a person (HITLInterceptor), in a process of its own (driven by test_hitl.py).

    python hitl_react_child.py run    <sqlite file> <ledger file>
    python hitl_react_child.py resume <sqlite file> <ledger file> <interrupt id> <approve|reject>

``run`` prints the interrupt id and the pending tasks as JSON once the checkpoint is saved, then waits to be killed.
``resume`` continues in a fresh process with the decision and prints the answer. Each refund made is appended to
the ledger file. The resume's model has only the final answer scripted: asking it again before the tools would fail.
"""

from __future__ import annotations

import asyncio
import json
import sys

from batonflow import HITL, HITLInterceptor, ReActAgent, Runner, SqliteCheckpointStore, tool
from batonflow.adk import InterruptInfo
from batonflow.schema import assistant
from batonflow.testing import ScriptedModel, tool_calls


def build(ledger: str, phase: str) -> ReActAgent:
    @tool(threaded=False)
    def refund(order_id: int) -> str:
        """Refund an order."""
        with open(ledger, "a") as f:
            f.write(f"refund {order_id}\n")
        return f"order {order_id} refunded"

    script = [tool_calls(("refund", {"order_id": 42}))] if phase == "run" else [assistant("Refund done.")]
    hitl = HITLInterceptor(sensitive_tools=["refund"])
    return ReActAgent(name="support", model=ScriptedModel(script), tools=[refund], middlewares=[hitl], model_retry=None)


async def main(argv: list[str]) -> None:
    phase, path, ledger = argv[:3]
    store = SqliteCheckpointStore(path)
    runner = Runner(build(ledger, phase), checkpoint_store=store)
    if phase == "run":
        async for event in runner.query("please refund order 42", checkpoint_id="refund-42"):
            if event.error is not None:
                raise event.error
            if event.action is not None and isinstance(event.action.interrupted, InterruptInfo):
                [cause] = event.action.interrupted.interrupt_contexts
                tasks = [(t.call_id, t.tool_name) for t in cause.info.tasks]
                print(json.dumps({"interrupt_id": cause.id, "tasks": tasks}), flush=True)
                await asyncio.sleep(3600)  # the parent kills us here
    else:
        interrupt_id, decision = argv[3:5]
        chosen = HITL.approve() if decision == "approve" else HITL.reject()
        async for event in runner.resume("refund-42", targets={interrupt_id: {"call_1": chosen}}):
            if event.error is not None:
                raise event.error
            variant = event.message_output
            if variant is not None and variant.role == "assistant":
                message = await variant.get_message()
                if not message.tool_calls:
                    print(json.dumps({"answer": message.content}), flush=True)
    await store.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))

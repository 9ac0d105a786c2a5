"""One process of the team restart test: ``start DB`` runs a team until its payer's refund waits for approval
(the checkpoint in SQLite); ``resume DB CAUSE`` approves it in a new process. Each prints, as JSON, which models were
called, the refunds made and the answer."""

from __future__ import annotations

import asyncio
import json
import sys

from batonflow import HITL, ReActAgent, Runner, SqliteCheckpointStore, tool
from batonflow.agents import human_approval
from batonflow.schema import assistant
from batonflow.team import TeamAgent
from batonflow.testing import ScriptedModel, tool_calls


async def main(phase: str, db: str, cause: str) -> None:
    refunded: list[int] = []

    @tool
    def refund(order_id: int) -> str:
        """Refund an order.

        Args:
            order_id: the order number
        """
        refunded.append(order_id)
        return f"order {order_id} refunded"

    start = phase == "start"
    supervisor = ScriptedModel(
        [assistant("researcher"), assistant("payer")] if start else [assistant("[TEAM_AGENT_FINISH] Refund done.")]
    )
    researcher = ReActAgent(
        name="researcher",
        description="finds the order",
        model=ScriptedModel([assistant("order 7 is eligible")] if start else []),
    )
    payer = ReActAgent(
        name="payer",
        description="pays refunds",
        model=ScriptedModel([tool_calls(("refund", {"order_id": 7}))] if start else [assistant("refunded order 7")]),
        tools=[refund],
        middlewares=[human_approval(sensitive_tools=["refund"])],
    )
    team = TeamAgent(model=supervisor, members=[researcher, payer])
    runner = Runner(team, checkpoint_store=SqliteCheckpointStore(db))
    if start:
        result = await runner.call("Refund order 7", checkpoint_id="team-1")
    else:
        result = await runner.call_resume("team-1", targets={cause: {"call_1": HITL.approve()}})
    trace = result.session_values.get("__team_agent")
    print(
        json.dumps(
            {
                "interrupted": result.interrupt is not None,
                "causes": [cause.id for cause in result.interrupt_contexts],
                "supervisor_calls": len(supervisor.requests),
                "researcher_calls": len(researcher.model.requests),  # type: ignore[attr-defined]
                "payer_calls": len(payer.model.requests),  # type: ignore[attr-defined]
                "refunded": refunded,
                "text": result.text,
                "records": [r.source for r in trace.records] if trace is not None else None,
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else ""))

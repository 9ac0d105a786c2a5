"""One process of the restart test: ``start DB [FLOW]`` runs a flow (``approval``, or ``fan``, whose approval waits in
one of two concurrent branches) until it stops for approval and saves the context in SQLite; ``resume DB [FLOW]``
loads it in a new process, approves, and runs the flow to its end. Each prints the tasks it ran, as JSON."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys

from batonflow.graph import FlowContext, FlowEngine, Graph, Node

FLOW = """
id: approval
layout:
  - {id: start, type: start}
  - {id: draft, task: "@record"}
  - id: check
    type: exclusive
    link:
      - {nextId: approve, when: "amount > 100"}
      - {nextId: pay}
  - {id: approve, task: "@approve", link: pay}
  - {id: pay, task: "@record"}
  - {id: end, type: end}
"""

FAN = """
id: fan
layout:
  - {id: start, type: start, link: fork}
  - {id: fork, type: parallel, link: [check, note]}
  - {id: check, task: "@approve_later", link: join}
  - {id: note, task: "@record", link: join}
  - {id: join, type: parallel, link: pay}
  - {id: pay, task: "@record"}
  - {id: end, type: end}
"""


async def main(phase: str, db: str, flow: str) -> None:
    ran: list[str] = []

    def record(ctx: FlowContext, node: Node) -> None:
        ran.append(node.id)

    def approve(ctx: FlowContext, node: Node) -> None:
        ran.append(node.id)
        if not ctx.get("approved"):
            ctx.stop()  # wait for a person: the context is saved and the process may end

    async def approve_later(ctx: FlowContext, node: Node) -> None:
        await asyncio.sleep(0.01)  # the other branch finishes first
        approve(ctx, node)

    engine = FlowEngine()
    engine.register("record", record)
    engine.register("approve", approve)
    engine.register("approve_later", approve_later)
    engine.load(Graph.from_yaml(FLOW))
    engine.load(Graph.from_yaml(FAN))
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE IF NOT EXISTS flows (id TEXT PRIMARY KEY, context TEXT NOT NULL)")
    if phase == "start":
        ctx = await engine.eval(flow, FlowContext(flow, {"amount": 500}))
    else:
        (text,) = conn.execute("SELECT context FROM flows WHERE id = ?", (flow,)).fetchone()
        ctx = FlowContext.from_json(text)
        ctx.put("approved", True)
        await engine.eval(flow, ctx)
    with conn:
        conn.execute("INSERT OR REPLACE INTO flows VALUES (?, ?)", (ctx.instance_id, ctx.to_json()))
    conn.close()
    print(json.dumps({"ran": ran, "stopped": ctx.is_stopped, "last": ctx.last_node_id, "end": ctx.trace.is_end()}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "approval"))

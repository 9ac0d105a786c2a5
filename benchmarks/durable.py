"""The durable-run scenario the resume probes share, and the child process that runs it.

A router hands off to a worker, which looks an order up and then refunds it; the refund waits for a human's
approval. Both models are functions of the transcript (not scripts consumed in order), so an agent replayed from
a journal, or asked again after a crash, answers as it did the first time.

The refund is the side effect that must happen once. It goes to a ledger, an SQLite file standing for the payment
service: every refund the tool makes is a row of ``calls``, and the service applies it once per idempotency key
(``effects``, keyed by ``ToolContext.idempotency_key``). So ``calls`` counts how often the framework ran the refund
to its end, ``effects`` how often money moved.

``python -m benchmarks.durable STORE_SPEC LEDGER`` (the spec: ``{"kind": ..., "args": {...}, "lease": seconds,
"part_events": n}``, the last for ``Runner(history_part_events=...)``)
serves commands on stdin, one per line, and answers each with a
line of JSON: ``start ID`` runs to the approval (answer: the interrupt id), ``resume ID TARGET`` resumes with
approval (answer: ``done``, ``gone`` when the checkpoint no longer exists, ``conflict``, or the error), ``ready``
answers ``ready`` (used to line two children up before a race).
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
import uuid
from typing import Any

from batonflow.adk import ChatModelAgent, InterruptInfo, Runner, set_sub_agents
from batonflow.errors import CheckpointNotFoundError, ResumeConflictError
from batonflow.schema import Message, assistant
from batonflow.store import CheckpointStore, PostgresCheckpointStore, RedisCheckpointStore, SqliteCheckpointStore
from batonflow.testing import FunctionModel, tool_calls
from batonflow.tools import ToolContext, tool

STORES: dict[str, Any] = {
    "sqlite": SqliteCheckpointStore,
    "postgres": PostgresCheckpointStore,
    "redis": RedisCheckpointStore,
}


def build_store(spec: dict[str, Any]) -> CheckpointStore:
    store: CheckpointStore = STORES[spec["kind"]](**spec["args"])
    return store


def open_ledger(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE IF NOT EXISTS calls (run TEXT, key TEXT, pid INTEGER)")
    conn.execute("CREATE TABLE IF NOT EXISTS effects (key TEXT PRIMARY KEY, run TEXT)")
    return conn


def refunds(ledger: sqlite3.Connection, run: str) -> tuple[int, int]:
    """How often the refund of ``run`` ran to its end, and how often it took effect."""
    (calls,) = ledger.execute("SELECT count(*) FROM calls WHERE run = ?", (run,)).fetchone()
    (effects,) = ledger.execute("SELECT count(*) FROM effects WHERE run = ?", (run,)).fetchone()
    return int(calls), int(effects)


def _has_result(messages: list[Message], tool_name: str) -> bool:
    return any(m.role == "tool" and m.tool_name == tool_name for m in messages)


def build_runner(
    store: CheckpointStore, ledger: sqlite3.Connection, lease: float = 30.0, part_events: int | None = None
) -> Runner:
    @tool(threaded=False)
    def lookup(order_id: int) -> str:
        """Look an order up."""
        return f"order {order_id}: 30 EUR"

    @tool(threaded=False)
    def refund(order_id: int, ctx: ToolContext) -> str:
        """Refund an order once a human approved it."""
        if not ctx.get_interrupt_state().was_interrupted:
            ctx.interrupt(f"refund order {order_id}?")
        if ctx.get_resume_context().data != "approve":
            return f"refund of order {order_id} rejected"
        run = ctx.get_session_value("run")
        # Releases before the key existed: every call is a new request to the service.
        key = getattr(ctx, "idempotency_key", None) or uuid.uuid4().hex
        ledger.execute("BEGIN IMMEDIATE")  # the payment service: one transaction per refund request
        ledger.execute("INSERT INTO calls VALUES (?, ?, ?)", (run, key, os.getpid()))
        ledger.execute("INSERT OR IGNORE INTO effects VALUES (?, ?)", (key, run))
        ledger.execute("COMMIT")
        return f"order {order_id} refunded"

    def worker_model(messages: list[Message], tools: list[Any]) -> Message:
        if not _has_result(messages, "lookup"):
            return tool_calls(("lookup", {"order_id": 1042}), id_prefix="look_")
        if not _has_result(messages, "refund"):
            return tool_calls(("refund", {"order_id": 1042}), id_prefix="pay_")
        return assistant("order 1042 refunded")

    def router_model(messages: list[Message], tools: list[Any]) -> Message:
        return tool_calls(("transfer_to_agent", {"agent_name": "worker"}))

    worker = ChatModelAgent(
        name="worker", description="refunds orders", model=FunctionModel(worker_model), tools=[lookup, refund]
    )
    router = ChatModelAgent(name="router", description="routes", model=FunctionModel(router_model))
    root = set_sub_agents(router, [worker])
    if part_events is None:
        return Runner(root, checkpoint_store=store, resume_lease=lease)
    return Runner(root, checkpoint_store=store, resume_lease=lease, history_part_events=part_events)


async def start(runner: Runner, run: str) -> str:
    """Run ``run`` to its approval; the interrupt id to approve."""
    async for event in runner.query("refund order 1042", checkpoint_id=run, session_values={"run": run}):
        if event.error is not None:
            raise event.error
        if event.action is not None and isinstance(event.action.interrupted, InterruptInfo):
            return event.action.interrupted.interrupt_contexts[0].id
    raise RuntimeError(f"run {run} ended without asking for approval")


async def resume(runner: Runner, run: str, target: str) -> str:
    """Resume ``run`` with approval: ``done``, ``gone``, ``conflict``, or the error's text."""
    try:
        async for event in runner.resume(run, {target: "approve"}):
            if event.error is not None:
                return f"error: {type(event.error).__name__}: {event.error}"
    except CheckpointNotFoundError:
        return "gone"
    except ResumeConflictError:
        return "conflict"
    return "done"


async def serve(spec: dict[str, Any], ledger_path: str) -> None:
    ledger = open_ledger(ledger_path)
    async with build_store(spec) as store:
        runner = build_runner(store, ledger, spec.get("lease", 30.0), spec.get("part_events"))
        await store.get("warm-up")  # connect before the first command
        loop = asyncio.get_running_loop()
        while True:
            line = (await loop.run_in_executor(None, sys.stdin.readline)).split()
            if not line or line[0] == "quit":
                return
            if line[0] == "ready":
                answer = "ready"
            elif line[0] == "start":
                answer = await start(runner, line[1])
            else:
                answer = await resume(runner, line[1], line[2])
            print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    asyncio.run(serve(json.loads(sys.argv[1]), sys.argv[2]))

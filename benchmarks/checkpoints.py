"""Checkpoint size and resume latency, per store: ``python -m benchmarks.checkpoints``.

A conversation of N messages (realistic text, not repeated characters) stops at a tool that waits for approval;
we report the checkpoint's bytes, and the time from ``Runner.resume`` to the end of the resumed run for each
store (memory, SQLite, PostgreSQL and Redis on 127.0.0.1).
"""

from __future__ import annotations

import asyncio
import random
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from batonflow.adk import ChatModelAgent, Runner
from batonflow.schema import Message, assistant, user
from batonflow.store import (
    MemoryCheckpointStore,
    PostgresCheckpointStore,
    RedisCheckpointStore,
    SqliteCheckpointStore,
)
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import ToolContext, tool

from .leases import POSTGRES_DSN, REDIS_URL, drop

WORDS = [
    "order",
    "refund",
    "parcel",
    "delivery",
    "customer",
    "account",
    "invoice",
    "payment",
    "card",
    "address",
    "courier",
    "damaged",
    "replace",
    "return",
    "policy",
    "warranty",
    "support",
    "ticket",
    "status",
    "shipped",
    "week",
    "days",
    "receipt",
    "amount",
    "charged",
    "twice",
    "please",
    "thanks",
]


def conversation(n_messages: int, seed: int = 7) -> list[Message]:
    rng = random.Random(seed)
    messages = []
    for i in range(n_messages):
        text = " ".join(rng.choice(WORDS) for _ in range(16))
        messages.append(user(text) if i % 2 == 0 else assistant(text))
    return messages


@tool(threaded=False)
def approve(ctx: ToolContext) -> str:
    """Wait for a human to approve."""
    if not ctx.get_interrupt_state().was_interrupted:
        ctx.interrupt("approve?")
    return "approved"


def agent(*script: Message) -> ChatModelAgent:
    return ChatModelAgent(name="support", model=ScriptedModel(list(script)), tools=[approve])


async def interrupt(store: Any, history: list[Message], checkpoint_id: str) -> int:
    runner = Runner(agent(tool_calls(("approve", {}))), checkpoint_store=store)
    async for event in runner.run(history, checkpoint_id=checkpoint_id):
        if event.error is not None:
            raise event.error
    data = await store.get(checkpoint_id)
    assert data is not None
    return len(data)


async def resume_ms(store: Any, history: list[Message], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        checkpoint_id = f"bench-{uuid.uuid4().hex}"
        await interrupt(store, history, checkpoint_id)
        runner = Runner(agent(assistant("done")), checkpoint_store=store)
        started = time.perf_counter()
        async for event in runner.resume(checkpoint_id):
            if event.error is not None:
                raise event.error
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


async def main() -> None:
    print("checkpoint size (bytes) by conversation length")
    print("| messages | bytes | bytes/message |")
    print("|---|---|---|")
    for n in (20, 200, 2000):
        size = await interrupt(MemoryCheckpointStore(), conversation(n), "size")
        print(f"| {n} | {size:,} | {size / n:.0f} |")
    token = uuid.uuid4().hex[:12]
    table, prefix = f"bf_bench_{token}", f"batonflow-bench:{token}:"  # the settings' services, emptied afterwards
    with tempfile.TemporaryDirectory() as tmp:
        stores = {
            "memory": MemoryCheckpointStore(),
            "sqlite": SqliteCheckpointStore(Path(tmp) / "bench.db"),
            "postgres": PostgresCheckpointStore(POSTGRES_DSN, table=table),
            "redis": RedisCheckpointStore(REDIS_URL, prefix=prefix),
        }
        print("\nresume latency (ms, median of 20): Runner.resume to the end of the resumed run")
        print("| store | 20 messages | 200 messages | 2000 messages |")
        print("|---|---|---|---|")
        try:
            for name, store in stores.items():
                row = [f"{await resume_ms(store, conversation(n), 20):.2f}" for n in (20, 200, 2000)]
                print(f"| {name} | {' | '.join(row)} |")
                await store.close()
        finally:
            await drop(table, prefix)


if __name__ == "__main__":
    asyncio.run(main())

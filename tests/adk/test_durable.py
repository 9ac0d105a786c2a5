"""Runs that outlive their process: interrupt in one process, SIGKILL it, resume in another (each store)."""

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis.asyncio
from tests.services import POSTGRES_DSN as POSTGRES
from tests.services import REDIS_URL as REDIS
from tests.services import delete_keys, drop_tables

from batonflow.adk import ChatModelAgent, InterruptInfo, Runner, collect_events
from batonflow.schema import Message, ToolInfo, assistant, user
from batonflow.store import MemoryCheckpointStore, RedisCheckpointStore
from batonflow.testing import FunctionModel, ScriptedModel, tool_calls
from batonflow.tools import ToolContext, tool

CHILD = Path(__file__).with_name("hitl_child.py")


@pytest.fixture
def store_spec(tmp_path: Path) -> Iterator[Callable[[str], str]]:
    """The child's store of a kind: SQLite in the test's folder, or a table or key prefix of the test's own that
    is removed afterwards."""
    token = uuid.uuid4().hex[:12]
    table, prefix = f"bf_test_{token}", f"batonflow-test:{token}:"
    yield {
        "sqlite": f"sqlite:{tmp_path / 'runs.db'}",
        "postgres": f"postgres:{POSTGRES}|{table}",
        "redis": f"redis:{REDIS}|{prefix}",
    }.__getitem__
    drop_tables(table, f"{table}_leases")
    delete_keys(prefix)


def child(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CHILD), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.mark.parametrize("kind", ["sqlite", "postgres", "redis"])
def test_a_run_interrupted_in_a_killed_process_resumes_in_a_fresh_one(
    kind: str, tmp_path: Path, store_spec: Callable[[str], str]
) -> None:
    spec, checkpoint_id, ledger = store_spec(kind), f"hitl-{uuid.uuid4().hex}", tmp_path / "ledger"
    first = child("run", spec, checkpoint_id, str(ledger))
    try:
        assert first.stdout is not None
        line = first.stdout.readline()
        assert line, first.stderr.read() if first.stderr else "child printed nothing"
        interrupt_id = json.loads(line)["interrupt_id"]
    finally:
        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
    assert first.returncode == -signal.SIGKILL
    assert not ledger.exists()  # nothing was refunded before the approval

    second = child("resume", spec, checkpoint_id, str(ledger), interrupt_id, "approve")
    out, err = second.communicate(timeout=60)
    assert second.returncode == 0, err
    assert json.loads(out.splitlines()[-1]) == {"answer": "Refund done."}
    assert ledger.read_text() == "refund 42\n"

    # The finished run cannot be replayed: the refund happens once.
    third = child("resume", spec, checkpoint_id, str(ledger), interrupt_id, "approve")
    _, err = third.communicate(timeout=60)
    assert third.returncode != 0
    assert f"expected a pending checkpoint {checkpoint_id!r} in the" in err
    assert ledger.read_text() == "refund 42\n"


async def checkpoint_size(turns: int) -> int:
    """Bytes of the checkpoint of a conversation of ``turns`` user/assistant pairs stopped by a tool."""

    @tool(threaded=False)
    def wait(ctx: ToolContext) -> str:
        """Wait for a human."""
        ctx.interrupt("approve?")

    history = []
    for i in range(turns):
        history += [user(f"question {i}: " + "x" * 80), assistant(f"answer {i}: " + "y" * 80)]
    agent = ChatModelAgent(name="a", model=ScriptedModel([tool_calls(("wait", {}))]), tools=[wait])
    store = MemoryCheckpointStore()
    events = await collect_events(Runner(agent, checkpoint_store=store).run(history, checkpoint_id="c"))
    action = events[-1].action
    assert action is not None
    assert isinstance(action.interrupted, InterruptInfo)
    data = await store.get("c")
    assert data is not None
    return len(data)


async def test_checkpoint_size_grows_linearly_with_the_conversation() -> None:
    small, medium, large = [await checkpoint_size(n) for n in (10, 100, 1000)]
    per_message_small = (medium - small) / 180
    per_message_large = (large - medium) / 1800
    # Each added message costs the same: no history of checkpoints, no quadratic copies.
    assert per_message_large == pytest.approx(per_message_small, rel=0.25)
    assert per_message_large < 400  # about 90 characters of text per message, plus framing


def refund_agent(looked_up: list[int]) -> ChatModelAgent:
    """Looks the order up, then asks for approval; one agent for every run (its model answers by the last message)."""

    @tool(threaded=False)
    def lookup(order_id: int) -> str:
        """Look an order up."""
        looked_up.append(order_id)
        return "30 EUR"

    @tool(threaded=False)
    def approve(order_id: int, ctx: ToolContext) -> str:
        """Wait for a human to approve."""
        if not ctx.get_interrupt_state().was_interrupted:
            ctx.interrupt(f"refund order {order_id}?")
        return "approved"

    def reply(messages: list[Message], tools: list[ToolInfo]) -> Message:
        last = messages[-1]
        if last.role == "user":
            return tool_calls(("lookup", {"order_id": int(str(last.content))}))
        if last.tool_name == "lookup":
            return tool_calls(("approve", {"order_id": 0}))
        return assistant("Refund done.")

    return ChatModelAgent(name="support", model=FunctionModel(reply), tools=[lookup, approve])


@pytest.mark.parametrize("max_connections", [None, 4])
async def test_320_concurrent_runs_on_redis_all_save_their_checkpoint(max_connections: int | None) -> None:
    # redis-py's default pool failed past 100 commands in flight: 500 runs lost 400 checkpoints after their tools ran.
    prefix = f"batonflow-test:{uuid.uuid4().hex[:12]}:"
    options = {} if max_connections is None else {"max_connections": max_connections}
    looked_up: list[int] = []
    n = 320
    try:
        async with RedisCheckpointStore(REDIS, prefix=prefix, **options) as store:
            runner = Runner(refund_agent(looked_up), checkpoint_store=store)
            runs = await asyncio.gather(
                *(collect_events(runner.query(str(i), checkpoint_id=f"run-{i}")) for i in range(n))
            )
            assert [e.error for events in runs for e in events if e.error is not None] == []
            assert all(
                isinstance(events[-1].action and events[-1].action.interrupted, InterruptInfo) for events in runs
            )
            assert sorted(looked_up) == list(range(n))
        async with RedisCheckpointStore(REDIS, prefix=prefix) as fresh:  # what any other worker finds
            saved = [await fresh.get(f"run-{i}") for i in range(n)]
            assert sum(data is not None for data in saved) == n
            resumed = await collect_events(Runner(refund_agent([]), checkpoint_store=fresh).resume("run-7"))
            assert resumed[-1].message_output is not None and resumed[-1].message_output.message is not None
            assert resumed[-1].message_output.message.content == "Refund done."
    finally:
        client = redis.asyncio.Redis.from_url(REDIS)
        keys = [key async for key in client.scan_iter(match=f"{prefix}*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()

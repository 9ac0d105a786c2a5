"""Runner(keep_history=...) and Runner.history: a run's steps kept after it ends, on every checkpoint store."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from batonflow.adk import InterruptInfo, Runner, collect_events
from batonflow.errors import RunHistoryError, UserError
from batonflow.schema import user
from batonflow.store import CheckpointStore, HistoryRetention, MemoryCheckpointStore, SqliteCheckpointStore

from .agents import refund_agent

CHILD = Path(__file__).with_name("history_child.py")


async def paused_and_answered(runner: Runner, run_id: str, answer: str = "yes") -> list[Any]:
    """A run that asks for approval, then its resume with ``answer``: all events."""
    events = await collect_events(runner.run([user("7")], checkpoint_id=run_id))
    interrupted = events[-1].action.interrupted
    assert isinstance(interrupted, InterruptInfo)
    ids = [c.id for c in interrupted.interrupt_contexts if c.is_root_cause]
    return [*events, *await collect_events(runner.resume(run_id, {ids[0]: answer}))]


@pytest.mark.parametrize("spec", ["memory", "sqlite", "postgres", "redis"], indirect=True)
async def test_a_kept_run_lists_its_steps_with_the_state_after_each_on_every_store(store: CheckpointStore) -> None:
    runner = Runner(refund_agent([], approval=True), checkpoint_store=store, keep_history=True)
    await paused_and_answered(runner, "run-1")

    history = await Runner(refund_agent([]), checkpoint_store=store).history("run-1")

    assert [(s.index, s.kind, s.agent_name) for s in history] == [
        (0, "model", "support"),
        (1, "tool", "support"),
        (2, "model", "support"),
        (3, "interrupt", "support"),
        (4, "answer", "support"),
        (5, "tool", "support"),
        (6, "model", "support"),
    ]
    assert history[1].summary == 'lookup({"order_id": 7}) -> order 7: 30'
    assert history[1].address == "agent:support"
    assert history[0].state.session_values == {}
    assert history[1].state.session_values == {"looked_up": 7}
    assert [m.role for m in history[1].state.messages] == ["user", "assistant", "tool"]
    assert history[6].state.messages[-1].content == "Refund done: approved: yes"
    assert history.segments == 2
    assert await store.get("run-1") is None  # the checkpoint is gone; the history stays


@pytest.mark.parametrize("spec", ["memory", "sqlite", "postgres", "redis"], indirect=True)
async def test_retention_drops_the_oldest_histories_on_every_store(store: CheckpointStore) -> None:
    runner = Runner(refund_agent([]), checkpoint_store=store, keep_history=HistoryRetention(max_runs=2))
    for n in range(3):
        await collect_events(runner.run([user("7")], checkpoint_id=f"run-{n}"))

    with pytest.raises(RunHistoryError, match="found none"):
        await runner.history("run-0")
    assert [len(await runner.history(f"run-{n}")) for n in (1, 2)] == [3, 3]


def test_the_history_is_read_in_a_fresh_process(tmp_path: Path) -> None:
    async def keep() -> None:
        store = SqliteCheckpointStore(path=str(tmp_path / "runs.db"))
        runner = Runner(refund_agent([]), checkpoint_store=store, keep_history=True)
        await collect_events(runner.run([user("7")], checkpoint_id="run-1"))
        await store.close()

    asyncio.run(keep())
    out = subprocess.run(
        [sys.executable, str(CHILD), str(tmp_path / "runs.db"), "run-1"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [
        [0, "model", "support", "calls lookup"],
        [1, "tool", "support", 'lookup({"order_id": 7}) -> order 7: 30'],
        [2, "model", "support", "Refund done: order 7: 30"],
    ]


async def test_a_run_without_keep_history_keeps_none() -> None:
    store = MemoryCheckpointStore()
    runner = Runner(refund_agent([]), checkpoint_store=store)
    await collect_events(runner.run([user("7")], checkpoint_id="run-1"))

    with pytest.raises(RunHistoryError) as raised:
        await runner.history("run-1")
    assert "expected a run kept with Runner(..., keep_history=True) in the MemoryCheckpointStore, found none" in str(
        raised.value
    )
    assert raised.value.run_id == "run-1"


async def test_an_unknown_run_has_no_history() -> None:
    runner = Runner(refund_agent([]), checkpoint_store=MemoryCheckpointStore(), keep_history=True)
    with pytest.raises(RunHistoryError, match="'nobody'"):
        await runner.history("nobody")


def test_keep_history_takes_a_bool_or_a_retention() -> None:
    with pytest.raises(UserError, match="keep_history: expected True, False or a HistoryRetention, got 'yes'"):
        Runner(refund_agent([]), keep_history="yes")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="max_runs: expected an int of 1 or more or None, got 0"):
        HistoryRetention(max_runs=0)


async def test_history_without_a_store_is_a_user_error() -> None:
    with pytest.raises(UserError, match="expected Runner"):
        await Runner(refund_agent([])).history("run-1")


async def test_retention_by_age_drops_the_histories_saved_too_long_ago() -> None:
    store = MemoryCheckpointStore()
    runner = Runner(
        refund_agent([]), checkpoint_store=store, keep_history=HistoryRetention(max_runs=None, max_age=1e-6)
    )
    await collect_events(runner.run([user("7")], checkpoint_id="old"))
    await asyncio.sleep(0.01)  # "old" was saved more than a microsecond before "new" is
    await collect_events(runner.run([user("7")], checkpoint_id="new"))

    with pytest.raises(RunHistoryError):
        await runner.history("old")
    assert len(await runner.history("new")) == 3

"""A long run's history is saved in parts: each interrupt writes what happened since the last one (a new part now
and then, and a head of bounded size), a resume reads the parts back in any process, and a run that ends leaves
nothing behind."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from batonflow.adk import ChatModelAgent, InterruptInfo, Runner, SessionEvent
from batonflow.errors import CodecError, UserError
from batonflow.schema import FunctionCall, Message, Stream, ToolCall, assistant, user
from batonflow.store import MemoryCheckpointStore, SqliteCheckpointStore
from batonflow.tools import ToolContext, tool

PART = 8


class StepModel:
    """Asks for ``approve`` once per turn, and answers once ``turns`` steps are approved."""

    model_name = "steps"

    def __init__(self, turns: int) -> None:
        self.turns = turns

    async def generate(self, messages: Sequence[Message], **_: Any) -> Message:
        step = sum(1 for m in messages if m.role == "tool") + 1
        if step > self.turns:
            return assistant(f"all {self.turns} steps approved")
        arguments = json.dumps({"step": step, "note": f"note for step {step} " + "x" * 40})
        return assistant(
            "", tool_calls=[ToolCall(id=f"c{step}", function=FunctionCall(name="approve", arguments=arguments))]
        )

    def stream(self, messages: Sequence[Message], **_: Any) -> Stream[Message]:
        raise NotImplementedError


@tool(threaded=False)
def approve(ctx: ToolContext, step: int, note: str) -> str:
    """Approve one step; each waits for a person."""
    if not ctx.get_interrupt_state().was_interrupted:
        ctx.interrupt(f"approve step {step}?")
    return f"step {step} approved"


class CountingStore(MemoryCheckpointStore):
    """Counts the writes per key and the bytes written."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: dict[str, int] = {}
        self.written: list[int] = []

    async def set(self, checkpoint_id: str, data: bytes, *, owner: str | None = None) -> None:
        await super().set(checkpoint_id, data, owner=owner)
        self.writes[checkpoint_id] = self.writes.get(checkpoint_id, 0) + 1
        self.written.append(len(data))

    def held(self) -> set[str]:
        return set(self._data)


def _runner(store: Any, turns: int, tools: Sequence[Any] = (approve,), part_events: int = PART) -> Runner:
    agent = ChatModelAgent(name="clerk", model=StepModel(turns), tools=list(tools), max_iterations=turns + 5)
    return Runner(agent, checkpoint_store=store, history_part_events=part_events)


async def _interrupted(events: Stream[Any]) -> bool:
    interrupted = False
    async for event in events:
        assert event.error is None, event.error
        interrupted = interrupted or (event.action is not None and isinstance(event.action.interrupted, InterruptInfo))
    return interrupted


async def test_each_interrupt_writes_what_happened_since_the_last_one() -> None:
    store = CountingStore()
    runner = _runner(store, turns=60)
    assert await _interrupted(runner.run([user("approve my steps")], checkpoint_id="long"))
    per_cycle = []
    for _ in range(59):
        before = len(store.written)
        assert await _interrupted(runner.resume("long"))
        per_cycle.append(sum(store.written[before:]))
    history_parts = [k for k in store.held() if k.startswith("batonflow-history:")]
    assert len(history_parts) >= 60 * 2 // PART - 1
    assert all(store.writes[k] == 1 for k in history_parts)  # a part is written once
    # What a cycle writes does not grow with the run: the last ten cost what ten early ones did.
    assert sum(per_cycle[-10:]) < 1.5 * sum(per_cycle[10:20])
    assert not await _interrupted(runner.resume("long"))
    assert store.held() == set()  # the run ended: its checkpoint and every part are gone


_READER = """
import asyncio, sys
sys.path.insert(0, sys.argv[2])
from test_history_parts import _runner
from batonflow.store import SqliteCheckpointStore

async def main():
    store = SqliteCheckpointStore(sys.argv[1])
    try:
        runner = _runner(store, turns=30)
        for _ in range(10):
            result = await runner.call_resume("run")
        said = [e.message_output.message for e in result.events if e.message_output is not None]
        print(result.interrupt_ids, result.text, [m.content for m in said if m.role == "tool"])
        print(await store.get("run") is None)
    finally:
        await store.close()

asyncio.run(main())
"""


async def test_a_resume_in_another_process_reads_the_parts_back(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    writer = SqliteCheckpointStore(path)
    try:
        runner = _runner(writer, turns=30)
        assert await _interrupted(runner.run([user("approve my steps")], checkpoint_id="run"))
        for _ in range(20):
            assert await _interrupted(runner.resume("run"))
    finally:
        await writer.close()
    here = str(Path(__file__).parent)
    reader = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _READER, str(path), here, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(reader.communicate(), 60)
    assert reader.returncode == 0, err.decode()
    assert out.decode().splitlines() == ["[] all 30 steps approved ['step 30 approved']", "True"]


async def _stopped_twenty_times(store: CountingStore) -> Runner:
    runner = _runner(store, turns=40)
    assert await _interrupted(runner.run([user("approve my steps")], checkpoint_id="run"))
    for _ in range(20):
        assert await _interrupted(runner.resume("run"))
    return runner


async def test_a_missing_part_is_a_codec_error_naming_it_and_the_checkpoint_is_kept() -> None:
    store = CountingStore()
    runner = await _stopped_twenty_times(store)
    lost = sorted(k for k in store.held() if k.startswith("batonflow-history:"))[0]
    data = store._data.pop(lost)
    with pytest.raises(CodecError, match=r"checkpoint\[run\]'s history part \d+ of \d+ .*found nothing there"):
        await runner.call_resume("run")
    assert await store.get("run") is not None
    store._data[lost] = data
    assert await _interrupted(runner.resume("run"))  # nothing was lost


async def test_an_altered_part_is_refused() -> None:
    store = CountingStore()
    runner = await _stopped_twenty_times(store)
    key = next(k for k in store.held() if k.startswith("batonflow-history:"))
    held = store._data[key]
    store._data[key] = held[:-1] + bytes([held[-1] ^ 0xFF])  # its last byte changed (a flip, never the same byte)
    with pytest.raises(CodecError, match="do not match the digest the checkpoint recorded"):
        await runner.call_resume("run")


async def test_a_history_that_changed_below_its_parts_starts_a_new_chain() -> None:
    @tool(threaded=False)
    def approve(ctx: ToolContext, step: int, note: str) -> str:
        """Approve one step; at step 12, the history is rewritten with equal copies of its events."""
        if not ctx.get_interrupt_state().was_interrupted:
            ctx.interrupt(f"approve step {step}?")
        if step == 12:
            session = ctx.run.session
            session.events = [dataclasses.replace(event) for event in session.events]
        return f"step {step} approved"

    store = CountingStore()
    runner = _runner(store, turns=20, tools=[approve])
    assert await _interrupted(runner.run([user("approve my steps")], checkpoint_id="run"))
    for _ in range(11):
        assert await _interrupted(runner.resume("run"))
    before = {k for k in store.held() if k.startswith("batonflow-history:")}
    assert await _interrupted(runner.resume("run"))  # approves step 12, rewriting the history
    after = {k for k in store.held() if k.startswith("batonflow-history:")}
    assert before and after and not before & after  # new parts; the old ones deleted
    for _ in range(7):
        assert await _interrupted(runner.resume("run"))
    result = await runner.call_resume("run")
    assert result.text == "all 20 steps approved"
    assert store.held() == set()


async def test_parts_can_be_turned_off() -> None:
    store = CountingStore()
    runner = _runner(store, turns=30, part_events=0)
    assert await _interrupted(runner.run([user("approve my steps")], checkpoint_id="run"))
    for _ in range(20):
        assert await _interrupted(runner.resume("run"))
    assert store.held() == {"run"}
    with pytest.raises(UserError, match="history_part_events: expected an int of 0 or more, got -1"):
        _runner(store, turns=1, part_events=-1)


async def test_a_resume_in_the_same_process_decodes_only_what_came_after_the_parts() -> None:
    first_events: list[SessionEvent] = []

    @tool(threaded=False)
    def approve(ctx: ToolContext, step: int, note: str) -> str:
        """Approve one step, noting the first recorded event of the history it runs on."""
        if not ctx.get_interrupt_state().was_interrupted:
            ctx.interrupt(f"approve step {step}?")
        first_events.append(ctx.run.session.events[0])
        return f"step {step} approved"

    store = CountingStore()
    runner = _runner(store, turns=20, tools=[approve])
    assert await _interrupted(runner.run([user("approve my steps")], checkpoint_id="run"))
    for _ in range(12):
        assert await _interrupted(runner.resume("run"))
    # From the first part on, each resume got the very event objects saved in it, not a decoded copy.
    after_part = first_events[PART // 2 :]
    assert all(event is after_part[0] for event in after_part)
    assert first_events[0] is not after_part[0]

"""What one more turn costs at turn N: ``python -m benchmarks.growth [--quick] [--json]``.

Two curves, at turn 10, 100, 1,000 and 2,000 (``--points`` to choose others):

* **interrupt + resume**: a ``ChatModelAgent`` whose tool waits for approval on every turn, with a SQLite
  checkpoint store. Turn N is reached in one run (N-1 tools that go through, the N-th waits); one cycle is then a
  resume that approves it, one more model call asking for the next approval, and the new checkpoint saved. We
  report the cycle's wall time and, within it, decoding the checkpoint read and encoding the one written, and the
  bytes written.
* **conversation turn**: ``batonflow.Runner`` with a ``SqliteSessionStore`` holding N turns (a question and an
  answer each) and ``session_window=8``; one turn is a new question, its answer, and the session saved. We report
  the turn's wall time, the messages the store handed back and their stored bytes.

Each figure is the median of a few repetitions, fewer for the long histories; every cycle is checked (it must
interrupt again at the next turn, the conversation must grow by two messages). ``--json`` prints the figures as
one JSON object, as ``python -m benchmarks`` reads them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import batonflow.adk._runner as adk_runner
import batonflow.adk._segment as adk_segment
from batonflow import Runner as ConversationRunner
from batonflow.adk import ChatModelAgent, InterruptInfo, Runner
from batonflow.codec import encode
from batonflow.models import ModelSettings, ToolChoice
from batonflow.schema import FunctionCall, Message, Stream, ToolCall, ToolInfo, assistant, user
from batonflow.store import SessionData, SessionState, SqliteCheckpointStore, SqliteSessionStore
from batonflow.tools import ToolContext, tool

from .checkpoints import WORDS

POINTS = (10, 100, 1000, 2000)
WINDOW = 8


def sentence(rng: random.Random, words: int = 16) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


class TurnModel:
    """A model that asks for ``approve`` on every turn, with realistic arguments; it keeps no record of its calls
    (the fakes of batonflow.testing copy every request, which would make the build of turn N quadratic)."""

    model_name = "growth"

    def __init__(self, wait_from: int) -> None:
        self.wait_from = wait_from  # the first turn whose approval waits for a person
        self.calls = 0
        self._rng = random.Random(7)

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> Message:
        self.calls += 1
        turn = len(messages) // 2 + 1  # the user's question, then a call and its result per turn
        arguments = json.dumps({"step": turn, "note": sentence(self._rng), "wait": turn >= self.wait_from})
        return assistant(
            sentence(self._rng, 8),
            tool_calls=[
                ToolCall(index=0, id=f"call_{turn}", function=FunctionCall(name="approve", arguments=arguments))
            ],
        )

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> Stream[Message]:
        raise NotImplementedError("the growth probe does not stream")


class AnswerModel:
    """A model that answers every question in text."""

    model_name = "growth-answer"

    def __init__(self) -> None:
        self._rng = random.Random(11)

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> Message:
        return assistant(sentence(self._rng))

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> Stream[Message]:
        raise NotImplementedError("the growth probe does not stream")


@tool(threaded=False)
def approve(ctx: ToolContext, step: int, note: str, wait: bool) -> str:
    """Approve one step; a step marked ``wait`` waits for a person."""
    if wait and not ctx.get_interrupt_state().was_interrupted:
        ctx.interrupt(f"approve step {step}?")
    return f"step {step} approved: {note}"


class Timings:
    """What the runner spends in the codec: wraps its encode and decode functions while a cycle runs."""

    def __init__(self) -> None:
        self.encode_ms: list[float] = []
        self.decode_ms: list[float] = []
        self.written: list[int] = []

    def install(self) -> Callable[[], None]:
        encode_checkpoint, load_checkpoint = adk_segment.encode_checkpoint, adk_runner.load_checkpoint

        async def timed_encode(*args: Any, **kwargs: Any) -> bytes:
            # The checkpoint and any part of the history it writes first (kwargs["write"]).
            write = kwargs["write"]
            written = [0]

            async def counted(key: str, data: bytes) -> None:
                written[0] += len(data)
                await write(key, data)

            kwargs["write"] = counted
            started = time.perf_counter()
            data = await encode_checkpoint(*args, **kwargs)
            self.encode_ms.append((time.perf_counter() - started) * 1000)
            self.written.append(len(data) + written[0])
            return data

        async def timed_load(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            loaded = await load_checkpoint(*args, **kwargs)
            self.decode_ms.append((time.perf_counter() - started) * 1000)
            return loaded

        adk_segment.encode_checkpoint, adk_runner.load_checkpoint = timed_encode, timed_load  # type: ignore[assignment]

        def uninstall() -> None:
            adk_segment.encode_checkpoint, adk_runner.load_checkpoint = encode_checkpoint, load_checkpoint

        return uninstall


def _agent(model: Any, turns: int) -> ChatModelAgent:
    return ChatModelAgent(name="support", model=model, tools=[approve], max_iterations=turns + 100)


async def _expect_interrupt(events: Stream[Any], what: str) -> None:
    interrupted = False
    async for event in events:
        if event.error is not None:
            raise event.error
        interrupted = interrupted or (event.action is not None and isinstance(event.action.interrupted, InterruptInfo))
    if not interrupted:
        raise AssertionError(f"{what}: expected the run to stop for an approval, it ended")


async def resume_cycle(store: SqliteCheckpointStore, turn: int, reps: int) -> dict[str, float]:
    """One run to turn ``turn``, then ``reps`` cycles of resume + next interrupt; their medians."""
    checkpoint_id = f"growth-{uuid.uuid4().hex}"
    model = TurnModel(wait_from=turn)
    runner = Runner(_agent(model, turn + reps), checkpoint_store=store)
    await _expect_interrupt(runner.run([user("please approve my refund steps")], checkpoint_id=checkpoint_id), "build")
    timings = Timings()
    walls = []
    uninstall = timings.install()
    try:
        for rep in range(reps):
            calls = model.calls
            started = time.perf_counter()
            await _expect_interrupt(runner.resume(checkpoint_id), f"cycle {rep + 1} at turn {turn}")
            walls.append((time.perf_counter() - started) * 1000)
            if model.calls != calls + 1:
                raise AssertionError(f"a cycle makes one model call, this one made {model.calls - calls}")
    finally:
        uninstall()
    await store.delete(checkpoint_id)
    return {
        "cycle_ms": statistics.median(walls),
        "decode_ms": statistics.median(timings.decode_ms),
        "encode_ms": statistics.median(timings.encode_ms),
        "bytes_written": statistics.mean(timings.written),  # a part now and then: the mean, not the median
    }


class CountingSessionStore:
    """A session store that counts what ``get`` hands back: messages, and the bytes the store keeps for them."""

    def __init__(self, inner: SqliteSessionStore) -> None:
        self.inner = inner
        self.read: list[SessionData] = []

    async def get(self, session_id: str, *, last: int | None = None) -> SessionData | None:
        data = await self.inner.get(session_id, last=last)
        if data is not None:
            self.read.append(data)
        return data

    def counted(self) -> tuple[int, int]:
        """Messages read and their stored bytes (every backend but the file one stores ``encode(message)``)."""
        messages = [m for data in self.read for m in data.messages]
        return len(messages), sum(len(encode(m)) for m in messages)

    async def append_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        await self.inner.append_messages(session_id, messages)

    async def replace_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        await self.inner.replace_messages(session_id, messages)

    async def set_state(self, session_id: str, state: SessionState) -> None:
        await self.inner.set_state(session_id, state)

    async def delete(self, session_id: str) -> None:
        await self.inner.delete(session_id)

    async def claim(self, session_id: str, owner: str, ttl: float) -> bool:
        return await self.inner.claim(session_id, owner, ttl)

    async def release(self, session_id: str, owner: str) -> None:
        await self.inner.release(session_id, owner)

    async def close(self) -> None:
        await self.inner.close()


async def conversation_turn(inner: SqliteSessionStore, turn: int, reps: int) -> dict[str, float]:
    """A conversation of ``turn - 1`` stored turns, then ``reps`` more turns; their medians."""
    session_id = f"growth-{uuid.uuid4().hex}"
    rng = random.Random(3)
    history = [m for _ in range(turn - 1) for m in (user(sentence(rng)), assistant(sentence(rng)))]
    await inner.append_messages(session_id, history)
    runner = ConversationRunner(
        ChatModelAgent(name="support", model=AnswerModel()), session_store=inner, session_window=WINDOW
    )
    walls, loaded, read_bytes = [], [], []
    for rep in range(reps):
        counting = CountingSessionStore(inner)
        runner.session_store = counting  # type: ignore[assignment]
        started = time.perf_counter()
        async for event in runner.run([user(sentence(rng))], session_id=session_id):
            if event.error is not None:
                raise event.error
        walls.append((time.perf_counter() - started) * 1000)
        messages, size = counting.counted()
        loaded.append(messages)
        read_bytes.append(size)
        stored = await inner.get(session_id)
        if stored is None or len(stored.messages) != len(history) + 2 * (rep + 1):
            raise AssertionError(f"turn {turn}: expected the conversation to grow by a question and an answer")
    await inner.delete(session_id)
    return {
        "turn_ms": statistics.median(walls),
        "messages_read": statistics.median(loaded),
        "bytes_read": statistics.median(read_bytes),
    }


def repetitions(turn: int, quick: bool) -> int:
    if quick:
        return 2
    return 9 if turn <= 100 else 5 if turn <= 1000 else 3


async def measure(points: Sequence[int], quick: bool) -> dict[str, Any]:
    results: dict[str, Any] = {"points": list(points), "window": WINDOW, "resume": {}, "conversation": {}}
    with tempfile.TemporaryDirectory(prefix="batonflow-growth-") as tmp:
        checkpoints = SqliteCheckpointStore(Path(tmp) / "checkpoints.db")
        sessions = SqliteSessionStore(Path(tmp) / "sessions.db")
        try:
            await resume_cycle(checkpoints, 5, 1)  # warm-up: imports, the databases' first pages
            await conversation_turn(sessions, 5, 1)
            for turn in points:
                reps = repetitions(turn, quick)
                results["resume"][str(turn)] = await resume_cycle(checkpoints, turn, reps)
                results["conversation"][str(turn)] = await conversation_turn(sessions, turn, reps)
        finally:
            await checkpoints.close()
            await sessions.close()
    return results


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def render(results: dict[str, Any]) -> list[str]:
    """Two Markdown tables, one per curve."""
    points = [str(p) for p in results["points"]]
    resume, conversation = results["resume"], results["conversation"]
    lines = ["Interrupt + resume at turn N (SQLite checkpoint store; medians):", ""]
    lines += [_row(["turn N", *points]), _row(["---", *["---:"] * len(points)])]
    for label, key, digits in (
        ("cycle, resume to the next interrupt (ms)", "cycle_ms", 2),
        ("  decode the checkpoint read (ms)", "decode_ms", 2),
        ("  encode the checkpoint written (ms)", "encode_ms", 2),
        ("bytes written", "bytes_written", 0),
    ):
        lines.append(_row([label, *(f"{resume[p][key]:,.{digits}f}" for p in points)]))
    lines += ["", f"Conversation turn at turn N (SqliteSessionStore, session_window={results['window']}; medians):", ""]
    lines += [_row(["turn N", *points]), _row(["---", *["---:"] * len(points)])]
    for label, key, digits in (
        ("turn, question to saved answer (ms)", "turn_ms", 2),
        ("messages read from the store", "messages_read", 0),
        ("bytes of messages read", "bytes_read", 0),
    ):
        lines.append(_row([label, *(f"{conversation[p][key]:,.{digits}f}" for p in points)]))
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.growth", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two repetitions per point")
    parser.add_argument("--points", type=int, nargs="+", default=list(POINTS), help="the turns N to measure at")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args(argv)
    results = asyncio.run(measure(args.points, args.quick))
    print(json.dumps(results) if args.json else "\n".join(render(results)))


if __name__ == "__main__":
    main(sys.argv[1:])

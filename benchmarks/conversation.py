"""A persisted conversation of 20 turns, batonflow beside Microsoft Agent Framework: ``python -m benchmarks.conversation
[--quick] [--json] [--turns 20]``.

One conversation is ``--turns`` turns of one session, each a question and a zero-latency fake's answer, kept on
the disk between turns as each framework keeps a conversation there:

* batonflow: ``batonflow.Runner`` with a ``SqliteSessionStore`` (``synchronous="FULL"``, the default: each turn's
  save is on the disk, fsync'd, before the turn returns; a power cut loses no turn reported done), and
  ``session_window=8``, the default;
* MS Agent Framework: an ``Agent`` with a ``FileHistoryProvider`` (JSON Lines, one file per session, appended
  through a thread; it does not fsync, so a power cut can lose the turns the operating system had not written).

A new conversation (a fresh session id, on the same store or directory) is timed whole, its turns one after the
other; the median over the repetitions is given in ms per conversation, wall-clock and CPU. Every turn checks its
answer, and after the timing the last conversation's stored messages are counted (a question and an answer a
turn). Each side runs in a subprocess of its own, in two rounds (one with ``--quick``), keeping its better round,
as ``python -m benchmarks`` does for the peer table; it is a section of that report too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ._common import ANSWER, check

SIDES = {"bf": "batonflow (SqliteSessionStore, FULL)", "maf": "MS Agent Framework (FileHistoryProvider)"}

Turns = Callable[[str], Awaitable[None]]
"""Runs one whole conversation under a new session id."""


def batonflow_side(directory: Path, turns: int) -> tuple[Turns, Callable[[str], Awaitable[int]]]:
    from batonflow import ChatModelAgent, Runner
    from batonflow.schema import assistant
    from batonflow.store import SqliteSessionStore
    from batonflow.testing import FunctionModel

    answer = assistant(ANSWER)
    agent = ChatModelAgent(name="a", instruction="Be brief.", model=FunctionModel(lambda messages, tools: answer))
    store = SqliteSessionStore(directory / "sessions.db")
    runner = Runner(agent, session_store=store)

    async def conversation(session_id: str) -> None:
        for turn in range(turns):
            result = await runner.call(f"question {turn}", session_id=session_id, metrics=False)
            check(result.text == ANSWER, "turn {} answered {!r}", turn, result.text)

    async def stored(session_id: str) -> int:
        data = await store.get(session_id)
        return 0 if data is None else len(data.messages)

    return conversation, stored


def maf_side(directory: Path, turns: int) -> tuple[Turns, Callable[[str], Awaitable[int]]]:
    import logging

    from agent_framework import (
        Agent,
        BaseChatClient,
        ChatMiddlewareLayer,
        ChatResponse,
        Content,
        FileHistoryProvider,
        FunctionInvocationLayer,
        Message,
    )
    from agent_framework.observability import ChatTelemetryLayer, disable_instrumentation

    disable_instrumentation()  # as in the peer benchmark: the other side runs untraced too
    logging.getLogger("agent_framework").setLevel(logging.ERROR)

    class FakeChatClient(
        FunctionInvocationLayer[Any], ChatMiddlewareLayer[Any], ChatTelemetryLayer[Any], BaseChatClient[Any]
    ):
        """Always answers ``ANSWER``, as a fresh response (MAF changes the responses it is given)."""

        def _inner_get_response(self, *, messages: Any, stream: bool, options: Any, **kwargs: Any) -> Any:
            return self._respond(options)

        async def _respond(self, options: Any) -> ChatResponse:
            await self._validate_options(options)
            return ChatResponse(messages=[Message("assistant", [Content.from_text(ANSWER)])])

    history = FileHistoryProvider(directory / "history")
    agent = Agent(client=FakeChatClient(), name="a", instructions="Be brief.", context_providers=[history])

    async def conversation(session_id: str) -> None:
        session = agent.create_session(session_id=session_id)
        for turn in range(turns):
            response = await agent.run(f"question {turn}", session=session)
            check(response.text == ANSWER, "turn {} answered {!r}", turn, response.text)

    async def stored(session_id: str) -> int:
        return len(await history.get_messages(session_id))

    return conversation, stored


async def measure_side(side: str, turns: int, reps: int) -> dict[str, Any]:
    # In the temporary directory (TMPDIR): it must be on a disk, not a tmpfs, for what a save waits for to count.
    with tempfile.TemporaryDirectory(prefix="bf-conversation-") as tmp:
        build = batonflow_side if side == "bf" else maf_side
        conversation, stored = build(Path(tmp), turns)
        for _ in range(2):  # warm-up: imports, the database file, the first session
            await conversation(uuid.uuid4().hex)
        walls, cpus = [], []
        session_id = ""
        for _ in range(reps):
            session_id = uuid.uuid4().hex
            wall, cpu = time.perf_counter(), time.process_time()
            await conversation(session_id)
            walls.append((time.perf_counter() - wall) * 1e3)
            cpus.append((time.process_time() - cpu) * 1e3)
        kept = await stored(session_id)
        check(kept == 2 * turns, "the conversation kept {} messages, expected {}", kept, 2 * turns)
    return {
        "name": SIDES[side],
        "turns": turns,
        "reps": reps,
        "wall_ms": round(statistics.median(walls), 2),
        "cpu_ms": round(statistics.median(cpus), 2),
        "wall_min_ms": round(min(walls), 2),
    }


def render(figures: dict[str, Any]) -> list[str]:
    bf, maf = figures.get("bf", {}), figures.get("maf", {})
    lines = [
        f"A persisted conversation of {figures['turns']} turns, on the disk between turns (median of "
        f"{figures['reps']} conversations, ms per conversation):",
        "",
        "| | wall (ms) | CPU (ms) |",
        "|---|---:|---:|",
    ]
    for side in (bf, maf):
        if "wall_ms" in side:
            lines.append(f"| {side['name']} | {side['wall_ms']} | {side['cpu_ms']} |")
        else:
            lines.append(f"| {side.get('name', '?')} | {side.get('status', 'failed')}: {side.get('detail', '')} | |")
    if "wall_ms" in bf and "wall_ms" in maf:
        lines += ["", f"batonflow ÷ MS Agent Framework: {bf['wall_ms'] / maf['wall_ms']:.2f} (wall)."]
    return lines


def _in_subprocess(side: str, turns: int, reps: int) -> dict[str, Any]:
    import subprocess

    command = [sys.executable, "-m", "benchmarks.conversation", "--side", side, "--turns", str(turns)]
    done = subprocess.run([*command, "--reps", str(reps)], capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or [f"exit code {done.returncode}"]
        return {"name": SIDES[side], "status": "failed", "detail": tail[0]}
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a count >= 1, got {text}")
    return value


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.conversation", description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=_positive, default=20)
    parser.add_argument("--reps", type=_positive, help="conversations timed per round (default 15; --quick 5)")
    parser.add_argument("--quick", action="store_true", help="one round of fewer conversations")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    parser.add_argument("--side", choices=list(SIDES), help=argparse.SUPPRESS)  # one side, in this process
    args = parser.parse_args(argv)
    reps = args.reps if args.reps is not None else 5 if args.quick else 15
    if args.side:
        print(json.dumps(asyncio.run(measure_side(args.side, args.turns, reps))))
        return
    figures: dict[str, Any] = {"turns": args.turns, "reps": reps}
    for _ in range(1 if args.quick else 2):
        for side in SIDES:
            report = _in_subprocess(side, args.turns, reps)
            best = figures.get(side)
            if best is None or "wall_ms" not in best or report.get("wall_ms", float("inf")) < best["wall_ms"]:
                figures[side] = report
    print(json.dumps(figures) if args.json else "\n".join(render(figures)))


if __name__ == "__main__":
    main()

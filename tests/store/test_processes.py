"""Stores shared by several processes: resume exclusivity across processes, and crash safety of SQLite writes."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import random
import re
import signal
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from batonflow.codec import decode
from batonflow.store import PostgresCheckpointStore, RedisCheckpointStore, SqliteCheckpointStore

Spec = dict[str, Any]
SHARED_BACKENDS = ["sqlite", "postgres", "redis"]  # the ``spec`` fixture (conftest.py) builds fresh ones
CLASSES: dict[str, Any] = {
    "sqlite": SqliteCheckpointStore,
    "postgres": PostgresCheckpointStore,
    "redis": RedisCheckpointStore,
}


def build_store(spec: Spec) -> Any:
    return CLASSES[spec["kind"]](**spec["args"])


_BUILD = """
import asyncio, json, sys
from typing import Any
from batonflow.store import (
    FileSessionStore, PostgresCheckpointStore, PostgresSessionStore, RedisCheckpointStore, RedisSessionStore,
    SqliteCheckpointStore, SqliteSessionStore,
)

CLASSES = {"sqlite": SqliteCheckpointStore, "postgres": PostgresCheckpointStore, "redis": RedisCheckpointStore}
SESSION_CLASSES = {
    "sqlite": SqliteSessionStore, "postgres": PostgresSessionStore, "redis": RedisSessionStore, "file": FileSessionStore
}

def build(spec):
    classes = SESSION_CLASSES if spec.get("sessions") else CLASSES
    return classes[spec["kind"]](**spec["args"])
"""

# Each round: say "ready", wait for the parent's go (a line on stdin), claim, say who won.
_CLAIMER = (
    _BUILD
    + """
async def main(spec, owner, rounds):
    async with build(spec) as store:
        await store.get("warm-up")  # connect and create tables before the race, not during it
        for round_ in range(rounds):
            print("ready", flush=True)
            sys.stdin.readline()
            won = await store.claim(f"race-{round_}", owner, 30)
            print("won" if won else "lost", flush=True)

asyncio.run(main(json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])))
"""
)


async def _spawn(script: str, *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        script,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def _read_line(process: asyncio.subprocess.Process) -> str:
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), timeout=60)
    if not line:
        assert process.stderr is not None
        error = await process.stderr.read()
        pytest.fail(f"child process ended early:\n{error.decode(errors='replace')}")
    return line.decode().strip()


@pytest.mark.parametrize("spec", SHARED_BACKENDS, indirect=True)
async def test_two_processes_claiming_at_once_let_exactly_one_win(spec: Spec) -> None:
    rounds = 5
    children = [await _spawn(_CLAIMER, json.dumps(spec), f"process-{i}", str(rounds)) for i in range(2)]
    try:
        for _ in range(rounds):
            assert [await _read_line(child) for child in children] == ["ready", "ready"]
            for child in children:
                assert child.stdin is not None
                child.stdin.write(b"go\n")
            await asyncio.gather(*(child.stdin.drain() for child in children if child.stdin is not None))
            results = [await _read_line(child) for child in children]
            assert sorted(results) == ["lost", "won"]
        for child in children:
            assert await asyncio.wait_for(child.wait(), timeout=60) == 0
    finally:
        for child in children:
            if child.returncode is None:
                child.kill()
                await child.wait()


@pytest.mark.parametrize("spec", [*SHARED_BACKENDS, "file"], indirect=True)
async def test_two_processes_claiming_one_session_at_once_let_exactly_one_win(spec: Spec) -> None:
    sessions = {**spec, "sessions": True}
    rounds = 5
    children = [await _spawn(_CLAIMER, json.dumps(sessions), f"process-{i}", str(rounds)) for i in range(2)]
    try:
        for _ in range(rounds):
            assert [await _read_line(child) for child in children] == ["ready", "ready"]
            for child in children:
                assert child.stdin is not None
                child.stdin.write(b"go\n")
            await asyncio.gather(*(child.stdin.drain() for child in children if child.stdin is not None))
            results = [await _read_line(child) for child in children]
            assert sorted(results) == ["lost", "won"]
        for child in children:
            assert await asyncio.wait_for(child.wait(), timeout=60) == 0
    finally:
        for child in children:
            if child.returncode is None:
                child.kill()
                await child.wait()


# -- fenced writes across processes ------------------------------------------------------------------------------------

# The slow worker: claim for a short ttl, then save its progress through the fence as fast as it can, until a write
# loses; then, on the parent's word, try once more.
_SLOW_WRITER = (
    _BUILD
    + """
from batonflow.errors import LeaseLostError

async def main(spec):
    async with build(spec) as store:
        assert await store.claim("run-1", "slow", 0.5)
        print("claimed", flush=True)
        n = 0
        try:
            while True:
                await store.set("run-1", f"slow {n}".encode(), owner="slow")
                n += 1
        except LeaseLostError as error:
            print(f"lost after {n} writes", flush=True)
        sys.stdin.readline()
        try:
            await store.set("run-1", b"slow, too late", owner="slow")
            print("written", flush=True)
        except LeaseLostError as error:
            print(f"lost to {error.holder}", flush=True)

asyncio.run(main(json.loads(sys.argv[1])))
"""
)

# The next worker: claim as soon as the lease is free, then save through the fence.
_NEXT_WRITER = (
    _BUILD
    + """
async def main(spec):
    async with build(spec) as store:
        while not await store.claim("run-1", "next", 30):
            await asyncio.sleep(0.005)
        await store.set("run-1", b"next's", owner="next")
        print("won", flush=True)

asyncio.run(main(json.loads(sys.argv[1])))
"""
)


@pytest.mark.parametrize("spec", SHARED_BACKENDS, indirect=True)
async def test_a_lapsed_holders_fenced_writes_lose_to_the_process_that_reclaimed(spec: Spec) -> None:
    slow = await _spawn(_SLOW_WRITER, json.dumps(spec))
    children = [slow]
    try:
        assert await _read_line(slow) == "claimed"
        children.append(next_ := await _spawn(_NEXT_WRITER, json.dumps(spec)))  # races the slow one's writes
        assert await _read_line(next_) == "won"
        lost = await _read_line(slow)
        assert re.fullmatch(r"lost after [1-9]\d* writes", lost), lost
        assert slow.stdin is not None
        slow.stdin.write(b"go\n")
        await slow.stdin.drain()
        assert await _read_line(slow) == "lost to next"
        for child in children:
            assert await asyncio.wait_for(child.wait(), timeout=60) == 0
        store = build_store(spec)
        try:
            assert await store.get("run-1") == b"next's"  # no write of the slow one landed after the claim
        finally:
            await store.close()
    finally:
        for child in children:
            if child.returncode is None:
                child.kill()
                await child.wait()


# -- SIGKILL in the middle of SQLite writes ---------------------------------------------------------------------------


def make_value(i: int) -> dict[str, Any]:
    """A large checkpoint-like value that can be rebuilt from its index, so a torn write cannot pass for a real one."""
    rng = random.Random(i)
    return {"i": i, "blob": rng.randbytes(1_500_000), "text": f"message {i} " * 20_000}


_WRITER = (
    _BUILD
    + textwrap.dedent(inspect.getsource(make_value))
    + """
import random
from batonflow.codec import encode

async def main(spec):
    # Encoded up front, so that the child spends its time inside SQLite writes, where the kill should land.
    payloads = [encode(make_value(i)) for i in range(3)]
    async with build(spec) as store:
        n = 0
        while True:
            await store.set("run-1", payloads[n % 3])
            if n == 0:
                print("writing", flush=True)
            n += 1

asyncio.run(main(json.loads(sys.argv[1])))
"""
)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
async def test_sigkill_during_sqlite_writes_leaves_a_whole_checkpoint(tmp_path: Path) -> None:
    spec: Spec = {"kind": "sqlite", "args": {"path": str(tmp_path / "checkpoints.db")}}
    rng = random.Random()
    for _round in range(5):
        child = await _spawn(_WRITER, json.dumps(spec))
        try:
            assert await _read_line(child) == "writing"
            await asyncio.sleep(rng.uniform(0.05, 0.8))
        finally:
            os.kill(child.pid, signal.SIGKILL)
            await child.wait()
        assert child.returncode == -signal.SIGKILL

        async with SqliteCheckpointStore(spec["args"]["path"]) as store:
            data = await store.get("run-1")
        assert data is not None
        value = decode(data)  # a torn write would fail its checksum here
        assert value == make_value(value["i"])

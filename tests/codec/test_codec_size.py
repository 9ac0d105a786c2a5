"""How big checkpoints get: linear in the conversation, little framing per message, compressed when large.

The messages are ~100-character slices of English prose (the standard library's docstrings), so compression sees
text like a chat's, not a repeated sentence.
"""

from __future__ import annotations

import ast
import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from batonflow.adk import RunStep
from batonflow.codec import decode, encode, register_type
from batonflow.schema import Message, assistant, user


@dataclass(slots=True, kw_only=True)
class Event:
    """Shaped like the runtime's recorded session event."""

    agent_name: str
    run_path: tuple[RunStep, ...]
    message: Message | None = None


@dataclass(slots=True, kw_only=True)
class CheckpointLike:
    root_messages: list[Message]
    enable_streaming: bool = False
    values: dict[str, Any] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)


register_type(Event, "tests.store.size.Event")
register_type(CheckpointLike, "tests.store.size.CheckpointLike")


def _prose(at_least: int = 250_000) -> str:
    texts: list[str] = []
    total = 0
    for path in sorted(Path(ast.__file__).parent.glob("*.py")):  # the standard library's own modules
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = " ".join((ast.get_docstring(node) or "").split())
                texts.append(doc)
                total += len(doc) + 1
        if total > at_least:
            break
    return " ".join(texts)


PROSE = _prose()


def checkpoint(n: int) -> CheckpointLike:
    texts = (PROSE[i * 100 : (i + 1) * 100] for i in range(n + 1))
    path = (RunStep("router"), RunStep("billing"))
    events = [
        Event(agent_name="billing", run_path=path, message=(user if i % 2 == 0 else assistant)(next(texts)))
        for i in range(n)
    ]
    return CheckpointLike(root_messages=[user(next(texts))], values={"order_id": "A-1234"}, events=events)


def sizes(n: int) -> tuple[int, int]:
    """(uncompressed, compressed) payload sizes for a checkpoint of ``n`` messages."""
    value = checkpoint(n)
    compressed = encode(value)
    raw = len(json.dumps(json.loads(zlib.decompress(compressed[9:])), separators=(",", ":")).encode()) + 9
    assert decode(compressed) == value
    return raw, len(compressed)


def test_prose_is_long_enough_for_the_largest_checkpoint() -> None:
    assert len(PROSE) > 2001 * 100


@pytest.mark.parametrize("n", [20, 200, 2000])
def test_compression_at_least_halves_a_chat_checkpoint(n: int) -> None:
    raw, compressed = sizes(n)
    assert compressed < raw / 2


def test_checkpoints_grow_linearly_with_the_conversation() -> None:
    (raw_200, packed_200), (raw_2000, packed_2000) = sizes(200), sizes(2000)
    assert 9 < raw_2000 / raw_200 < 11
    assert 8 < packed_2000 / packed_200 < 12


def test_a_message_costs_little_more_than_its_text() -> None:
    messages = [user("x" * 100) for _ in range(100)]
    body = json.dumps(json.loads(zlib.decompress(encode(messages)[9:])), separators=(",", ":"))
    assert (len(body) - 100 * 100) / 100 < 50  # {"$c":"Message","role":"user","content":"…"} and a comma


def test_uncompressed_and_compressed_payloads_decode_alike() -> None:
    value = checkpoint(50)
    compressed = encode(value)
    # The same body without compression, in the envelope the codec documents (flags 0, CRC-32 of flags and body;
    # of the version too from version 2 on). Nothing in it is shared: it is a payload of version 1.
    body = zlib.decompress(compressed[9:])
    plain = b"BFC" + bytes((1, 0)) + zlib.crc32(body, zlib.crc32(b"\x00")).to_bytes(4, "big") + body
    assert compressed[3] == 1 and compressed[4] == 1 and plain[4] == 0
    assert decode(plain) == decode(compressed) == value

"""Decode limits: a payload that would decode to far more than it weighs is a ``CodecError`` naming the limit.

Issue 11, point 11: a 16 KB checkpoint decoded to hundreds of MB, a 65 KB one raised ``MemoryError``. The limits
are ``DecodeLimits`` (the inflated body in bytes, the values of the decoded tree), given to each store.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from batonflow import Runner
from batonflow.adk import ChatModelAgent, collect_events
from batonflow.codec import DecodeLimits, decode, encode
from batonflow.errors import CodecError, UserError
from batonflow.schema import Message, assistant, user
from batonflow.store import (
    FileSessionStore,
    MemoryCheckpointStore,
    MemorySessionStore,
    SessionState,
    SqliteCheckpointStore,
)
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import ToolContext, tool

MESSAGE = b'{"$c":"Message","role":"user"}'


def seal(body: bytes, flags: int = 0) -> bytes:
    return struct.pack(">3sBBI", b"BFC", 1, flags, zlib.crc32(body, zlib.crc32(bytes((flags,))))) + body


def messages_body(count: int) -> bytes:
    return b"[" + b",".join([MESSAGE] * count) + b"]"


@pytest.mark.parametrize(
    ("count", "refusal"),
    [
        # 16 KB of zlib, 6.6 MB of JSON: 640,000 values, under the limit, until 212,000 messages fill in defaults.
        (212_000, "the decoded value grows past the limit of 1,000,000 values"),
        # 65 KB of zlib: 27 MB of JSON.
        (864_000, "the body inflates to more than the limit of 16,777,216 bytes"),
    ],
)
def test_the_bombs_of_the_issue_are_refused_by_the_default_limits_inflating_no_more_than_the_limit(
    count: int, refusal: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = seal(zlib.compress(messages_body(count), 9), flags=1)
    assert len(data) < count / 10
    inflated: list[int] = []
    make = zlib.decompressobj

    class Counting:
        def __init__(self) -> None:
            self.inflater = make()

        def decompress(self, data: bytes, max_length: int = 0) -> bytes:
            out = self.inflater.decompress(data, max_length)
            inflated.append(len(out))
            return out

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inflater, name)

    monkeypatch.setattr(zlib, "decompressobj", Counting)
    with pytest.raises(CodecError, match=rf"^cannot decode checkpoint: {refusal} "):
        decode(data)
    assert 0 < sum(inflated) <= DecodeLimits().max_body  # the 27 MB bomb is never inflated whole


def test_a_body_that_inflates_past_max_body_names_the_limit() -> None:
    data = seal(zlib.compress(b"[" + b"0," * 5000 + b"0]"), flags=1)
    with pytest.raises(CodecError) as caught:
        decode(data, limits=DecodeLimits(max_body=1000))
    assert str(caught.value) == (
        "cannot decode checkpoint: the body inflates to more than the limit of 1,000 bytes (DecodeLimits.max_body) "
        f"from {len(data) - 9} compressed"
    )


def test_an_uncompressed_body_past_max_body_is_refused() -> None:
    data = seal(b"[" + b"0," * 600 + b"0]")
    with pytest.raises(CodecError) as caught:
        decode(data, limits=DecodeLimits(max_body=1000))
    assert str(caught.value) == (
        "cannot decode checkpoint: the body is 1,203 bytes, more than the limit of 1,000 (DecodeLimits.max_body)"
    )


def test_a_body_of_more_values_than_max_elements_is_refused_before_parsing() -> None:
    data = seal(b"[" + b"[]," * 2000 + b"0]")
    with pytest.raises(CodecError) as caught:
        decode(data, limits=DecodeLimits(max_elements=1000))
    assert str(caught.value) == (
        "cannot decode checkpoint: the body holds 4,002 values, more than the limit of 1,000 "
        "(DecodeLimits.max_elements)"
    )


def test_commas_and_brackets_inside_strings_do_not_count_as_values() -> None:
    text = 'a, "quoted", [bracketed] and {braced}, ' * 100
    assert decode(seal(json.dumps([text, text]).encode()), limits=DecodeLimits(max_elements=3)) == [text, text]


def test_defaults_filled_in_while_building_count_against_max_elements() -> None:
    # 1,501 values in the body, under the limit; each message fills in 9 fields from its defaults, which is not.
    data = seal(messages_body(500))
    assert len(decode(data, limits=DecodeLimits(max_elements=6001))) == 500
    with pytest.raises(CodecError) as caught:
        decode(data, limits=DecodeLimits(max_elements=6000))
    assert str(caught.value).startswith(
        "cannot decode checkpoint: the decoded value grows past the limit of 6,000 values "
        "(DecodeLimits.max_elements) as registered classes fill in their defaults at $["
    )


def test_encode_refuses_a_body_its_decode_limits_would_refuse() -> None:
    with pytest.raises(CodecError) as caught:
        encode(["x" * 2000], limits=DecodeLimits(max_body=1000))
    assert str(caught.value) == (
        "cannot encode checkpoint: its body is 2,004 bytes, more than the limit of 1,000 (DecodeLimits.max_body)"
    )


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "10"])
def test_limits_must_be_positive_ints(value: Any) -> None:
    with pytest.raises(UserError, match=r"^DecodeLimits.max_body must be a positive int, got "):
        DecodeLimits(max_body=value)


def test_the_defaults_are_16_mib_and_a_million_values() -> None:
    assert DecodeLimits() == DecodeLimits(max_body=16 << 20, max_elements=1_000_000)


# -- per store -------------------------------------------------------------------------------------------------------


@tool(threaded=False)
def approve(ctx: ToolContext) -> str:
    """Wait for a human to approve."""
    if not ctx.get_interrupt_state().was_interrupted:
        ctx.interrupt("approve?")
    return "approved"


def history(n: int) -> list[Message]:
    return [user(f"question {i}") if i % 2 == 0 else assistant(f"answer {i}") for i in range(n)]


async def test_a_checkpoint_store_decodes_with_its_own_limits(tmp_path: Path) -> None:
    roomy = SqliteCheckpointStore(tmp_path / "c.db")
    async with roomy:
        runner = Runner(
            ChatModelAgent(name="a", model=ScriptedModel([tool_calls(("approve", {}))]), tools=[approve]),
            checkpoint_store=roomy,
        )
        await collect_events(runner.run(history(40), checkpoint_id="c1"))
        data = await roomy.get("c1")
    assert data is not None
    tight = MemoryCheckpointStore(limits=DecodeLimits(max_elements=100))
    await tight.set("c1", data)
    resumer = Runner(ChatModelAgent(name="a", model=ScriptedModel([assistant("done")]), tools=[approve]))
    with pytest.raises(CodecError, match=r"more than the limit of 100 \(DecodeLimits.max_elements\)"):
        await collect_events(resumer.resume("c1", checkpoint_store=tight))
    default = MemoryCheckpointStore()
    await default.set("c1", data)
    events = await collect_events(resumer.resume("c1", checkpoint_store=default))
    assert [e.error for e in events if e.error is not None] == []


async def test_a_checkpoint_past_the_store_limits_fails_when_saved_not_when_resumed() -> None:
    store = MemoryCheckpointStore(limits=DecodeLimits(max_body=500))
    runner = Runner(
        ChatModelAgent(name="a", model=ScriptedModel([tool_calls(("approve", {}))]), tools=[approve]),
        checkpoint_store=store,
    )
    events = await collect_events(runner.run(history(40), checkpoint_id="c1"))
    errors = [e.error for e in events if e.error is not None]
    assert len(errors) == 1 and isinstance(errors[0], CodecError)
    assert "more than the limit of 500 (DecodeLimits.max_body)" in str(errors[0])
    assert await store.get("c1") is None


@pytest.mark.parametrize("kind", ["memory", "file"])
async def test_a_session_store_decodes_and_encodes_with_its_own_limits(kind: str, tmp_path: Path) -> None:
    limits = DecodeLimits(max_body=300)
    store = MemorySessionStore(limits=limits) if kind == "memory" else FileSessionStore(tmp_path, limits=limits)
    async with store:
        await store.append_messages("s", [user("short")])
        with pytest.raises(CodecError, match=r"more than the limit of 300 \(DecodeLimits.max_body\)"):
            await store.append_messages("s", [user("long " * 100)])
        with pytest.raises(CodecError, match=r"more than the limit of 300 \(DecodeLimits.max_body\)"):
            await store.set_state("s", SessionState(snapshot=b"x" * 400))
        data = await store.get("s")
        assert data is not None and [m.content for m in data.messages] == ["short"]

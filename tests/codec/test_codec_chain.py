"""A chain of payloads: each refers to the messages and recorded events of those before it instead of writing them
again, and a list of such objects is written as one run of references."""

import random
from typing import Any

import pytest

from batonflow.codec import DecodeLimits, SharedObjects, decode, encode
from batonflow.errors import CodecError
from batonflow.schema import Message, assistant, user


def _messages(n: int, start: int = 0) -> list[Message]:
    rng = random.Random(start)
    words = [f"{rng.getrandbits(40):x}" for _ in range(n)]
    return [
        user(f"question {i} {w}") if i % 2 == 0 else assistant(f"answer {i} {w}") for i, w in enumerate(words, start)
    ]


def test_a_payload_refers_to_the_objects_of_the_payloads_before_it() -> None:
    first, later = _messages(40), _messages(3, start=40)
    shared = SharedObjects()
    part = encode(first, shared=shared)
    assert len(shared) == 40
    head = encode({"transcript": [*first, *later], "last": first[-1]}, shared=shared, extend=False)
    assert len(shared) == 40  # extend=False: the head's own messages are not for the next payload
    alone = encode({"transcript": [*first, *later], "last": first[-1]})
    assert len(head) < len(alone) / 2  # 3 messages of 43 written out

    read = SharedObjects()
    messages = decode(part, shared=read)
    value = decode(head, shared=read)
    assert value["transcript"] == [*first, *later]
    assert all(a is b for a, b in zip(value["transcript"], messages, strict=False))  # the same objects
    assert value["last"] is messages[-1]
    assert len(read) == 43  # decoding adds the head's own


def test_a_list_of_objects_written_before_is_one_run_of_references() -> None:
    messages = _messages(1000)
    shared = SharedObjects()
    encode(messages, shared=shared)
    every_other = encode(messages[::2], shared=shared, extend=False)
    reversed_ = encode(messages[::-1], shared=shared, extend=False)
    assert len(every_other) < 60  # a run with a step of 2
    assert len(reversed_) > 1000  # no run backwards: one reference each
    read = SharedObjects()
    decoded = decode(encode(messages, shared=SharedObjects()), shared=read)
    assert decode(every_other, shared=read) == messages[::2]
    assert decode(reversed_, shared=read)[:3] == decoded[::-1][:3]


def test_a_continuing_payload_needs_the_chain_it_was_written_after() -> None:
    shared = SharedObjects()
    encode(_messages(5), shared=shared)
    head = encode(_messages(5), shared=shared)
    with pytest.raises(CodecError, match=r"continues a chain of payloads: expected the 5 shared objects .* got none"):
        decode(head)
    wrong = SharedObjects()
    decode(encode(_messages(3), shared=wrong), shared=(chain := SharedObjects()))
    with pytest.raises(CodecError, match=r"expected the 5 shared objects .* got 3"):
        decode(head, shared=chain)


def test_a_failed_encode_leaves_the_chain_as_it_was() -> None:
    shared = SharedObjects()
    encode(_messages(4), shared=shared)
    with pytest.raises(CodecError, match="cannot encode"):
        encode([*_messages(3, start=4), object()], shared=shared)
    assert len(shared) == 4
    assert len(shared.numbers) == 4


def test_a_failed_decode_leaves_the_chain_as_it_was() -> None:
    shared = SharedObjects()
    first = encode(_messages(4), shared=shared)
    second = encode(_messages(4, start=4), shared=shared)
    read = SharedObjects()
    decode(first, shared=read)
    damaged = second[:-3] + bytes(3)
    with pytest.raises(CodecError):
        decode(damaged, shared=read)
    assert len(read) == 4
    assert decode(second, shared=read) == _messages(4, start=4)


def _forged(body: bytes, count: int) -> bytes:
    """A continuing payload with ``body`` after a chain of ``count`` objects, sealed as encode seals one."""
    import struct
    import zlib

    flags, version = 0x02, 2
    inner = struct.pack(">I", count) + body
    crc = zlib.crc32(inner, zlib.crc32(bytes((version, flags))))
    return b"BFC" + bytes((version, flags)) + struct.pack(">I", crc) + inner


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        ([0, 10**9, 1], "malformed run value: expected a run over shared objects written before it"),
        ([3, 2, 1], "malformed run value"),
        ([0, 2, 0], "malformed run value"),
        ([0, 2], r"malformed run value: expected \[first, count, step\] of ints"),
        ("0,1,1", "malformed run value"),
    ],
)
def test_a_forged_run_is_refused(run: Any, expected: str) -> None:
    import json

    shared = SharedObjects()
    encode(_messages(4), shared=shared)
    body = json.dumps([{"$t": "run", "v": run}]).encode()
    with pytest.raises(CodecError, match=expected):
        decode(_forged(body, 4), shared=shared)
    assert len(shared) == 4


def test_a_run_counts_against_the_decode_limits() -> None:
    import json

    shared = SharedObjects()
    encode(_messages(1000), shared=shared)
    body = json.dumps([{"$t": "run", "v": [0, 1000, 1]}] * 50).encode()
    with pytest.raises(CodecError, match="max_elements"):
        decode(_forged(body, 1000), shared=shared, limits=DecodeLimits(max_elements=20_000))


def test_a_run_outside_a_chain_or_a_version_2_payload_is_an_unknown_tag() -> None:
    import struct
    import zlib

    body = b'[{"$t":"run","v":[0,1,1]}]'
    for version in (1, 2):
        crc = zlib.crc32(body, zlib.crc32(bytes((0,)) if version == 1 else bytes((version, 0))))
        payload = b"BFC" + bytes((version, 0)) + struct.pack(">I", crc) + body
        with pytest.raises(CodecError, match=r"malformed run value|unknown value tag 'run'"):
            decode(payload)

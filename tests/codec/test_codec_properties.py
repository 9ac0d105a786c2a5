"""Codec properties: every supported value round-trips, and nothing but a CodecError comes out of bad bytes; the
text of a shared object is re-used only when writing it afresh would give the same."""

from __future__ import annotations

import contextlib
import enum
import json
import math
import zlib
from dataclasses import dataclass
from datetime import timedelta, timezone
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from batonflow.adk import SessionEvent
from batonflow.codec import CACHE_SIZE, CODEC_VERSION, decode, encode, encode_cache, register_type
from batonflow.errors import CodecError
from batonflow.schema import Message


def seal(body: bytes, flags: int = 0, version: int = CODEC_VERSION) -> bytes:
    """The envelope around ``body`` as the codec documents it, written here independently of the codec's code:
    ``b"BFC"``, the version, the flags, the CRC-32 (4 bytes, big-endian) of flags and body (from version 2 on, of
    version, flags and body), then the body."""
    covered = bytes((flags,)) if version == 1 else bytes((version, flags))
    crc = zlib.crc32(body, zlib.crc32(covered))
    return b"BFC" + bytes((version, flags)) + crc.to_bytes(4, "big") + body


class Suit(enum.Enum):
    HEARTS = "h"
    SPADES = 2


@dataclass(slots=True, kw_only=True)
class Box:
    value: Any = None
    label: str = ""
    count: int = 0


@dataclass(frozen=True)
class Key:
    a: int
    b: str = ""


register_type(Suit, "tests.store.props.Suit")
register_type(Box, "tests.store.props.Box")
register_type(Key, "tests.store.props.Key")


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return len(a) == len(b) and all(
            same(ka, kb) and same(va, vb) for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True)
        )
    if isinstance(a, set | frozenset):
        return a == b and {type(x) for x in a} == {type(x) for x in b}
    if isinstance(a, Box):
        return same(a.value, b.value) and same(a.label, b.label) and same(a.count, b.count)
    if hasattr(a, "utcoffset") and hasattr(a, "hour"):  # datetimes: the same instant is not enough
        return bool(a == b and a.utcoffset() == b.utcoffset())
    return bool(a == b)


fixed_offsets = st.builds(
    timezone, st.timedeltas(min_value=timedelta(hours=-23, minutes=-59), max_value=timedelta(hours=23, minutes=59))
)

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text()
    | st.binary(max_size=40)
    | st.datetimes()
    | st.datetimes(timezones=fixed_offsets)
    | st.dates()
    | st.timedeltas()
    | st.sampled_from(Suit)
)

# Hashable values, each kind in its own set: a set cannot hold both 1 and True, so mixing would test Python.
hashables = st.one_of(
    st.none(),
    st.integers(),
    st.text(),
    st.tuples(st.integers(), st.text()),
    st.sampled_from(Suit),
    st.builds(Key, a=st.integers(), b=st.text()),
)
tag_like_keys = st.sampled_from(["$t", "$c", "v", "$", "", "a.b", "[0]"]) | st.text()


def containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=5),
        st.lists(children, max_size=5).map(tuple),
        st.dictionaries(tag_like_keys, children, max_size=5),
        st.dictionaries(st.integers() | st.tuples(st.integers()), children, max_size=5),
        st.sets(st.integers(), max_size=5),
        st.frozensets(st.text(), max_size=5),
        st.sets(st.builds(Key, a=st.integers()), max_size=3),
        st.builds(Box, value=children, label=st.text(), count=st.integers()),
    )


values = st.recursive(scalars | hashables, containers, max_leaves=30)


@settings(max_examples=300)
@given(values)
def test_any_supported_value_round_trips_with_its_types(value: Any) -> None:
    assert same(decode(encode(value)), value)


def carrying(value: Any) -> list[Any]:
    """A message holding ``value``, shared by a recorded event and a transcript, as in a checkpoint."""
    message = Message(role="assistant", content="x", extra={"v": value})
    return [SessionEvent(agent_name="a", run_path=(), message=message, ts=1), [message]]


def fresh(value: Any) -> bytes:
    """What an encoder that remembers nothing writes for ``value`` (the very object: a copy of a set may iterate in
    another order). It forgets what was remembered."""
    size = encode_cache.size
    encode_cache.clear()
    encode_cache.size = 0
    try:
        return encode(value)
    finally:
        encode_cache.size = size


@settings(max_examples=200)
@given(values, values)
def test_a_shared_message_is_written_as_a_fresh_encoder_would_whatever_it_holds(first: Any, second: Any) -> None:
    encode_cache.size = CACHE_SIZE
    try:
        shared_message_is_written_as_a_fresh_encoder_would(first, second)
    finally:
        encode_cache.clear()
        encode_cache.size = 0


def shared_message_is_written_as_a_fresh_encoder_would(first: Any, second: Any) -> None:
    payload = carrying(first)
    data = encode(payload)
    assert data == fresh(payload)
    # Decoded, remembered, written from what was remembered. (Not always ``data``: a set decoded may iterate in
    # another order, and is written in that order.)
    decoded = decode(data)
    written = encode(decoded)
    assert written == fresh(decoded)
    for key, value in (("v", second), ("w", first)):
        decoded = decode(data)
        decoded[1][0].extra[key] = value  # changed in place after decoding
        written = encode(decoded)
        assert written == fresh(decoded)


@given(st.binary())
def test_random_bytes_raise_codec_error(data: bytes) -> None:
    try:
        decode(data)
    except CodecError:
        return
    raise AssertionError(f"decoded random bytes {data!r}")


@given(st.binary(max_size=200))
def test_random_bytes_behind_the_magic_prefix_raise_codec_error(tail: bytes) -> None:
    data = b"BFC\x01" + tail
    try:
        decode(data)
    except CodecError:
        return
    raise AssertionError(f"decoded {data!r}")


@settings(max_examples=200)
@given(values, st.data())
def test_truncated_payloads_raise_codec_error(value: Any, data: st.DataObject) -> None:
    payload = encode(value)
    cut = data.draw(st.integers(min_value=0, max_value=len(payload) - 1))
    try:
        decode(payload[:cut])
    except CodecError:
        return
    raise AssertionError(f"decoded a payload cut at {cut} of {len(payload)} bytes")


@settings(max_examples=300)
@given(values, st.data())
def test_a_flipped_byte_raises_codec_error(value: Any, data: st.DataObject) -> None:
    payload = bytearray(encode(value))
    position = data.draw(st.integers(min_value=0, max_value=len(payload) - 1))
    payload[position] ^= data.draw(st.integers(min_value=1, max_value=255))
    try:
        decode(bytes(payload))
    except CodecError:
        return
    raise AssertionError(f"decoded a payload with byte {position} flipped")


json_trees = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["$t", "$c", "v", "x", "y", "value", "label"]) | st.text(max_size=3), children, max_size=4
        )
        | st.fixed_dictionaries(
            {
                "$t": st.sampled_from(
                    ["tuple", "dict", "bytes", "set", "frozenset", "float", "datetime", "date", "timedelta"]
                )
            },
            optional={"v": children},
        )
        | st.fixed_dictionaries(
            {
                "$c": st.sampled_from(
                    ["tests.store.props.Box", "tests.store.props.Key", "tests.store.props.Suit", "Message"]
                )
            },
            optional={"v": children, "value": children, "a": children, "role": children, "label": children},
        )
    ),
    max_leaves=20,
)


@settings(max_examples=500)
@given(json_trees)
def test_well_sealed_but_arbitrary_json_decodes_or_raises_codec_error(tree: Any) -> None:
    # The checksum stops corruption; this is the schema check's turn: crafted trees full of tags and class names.
    with contextlib.suppress(CodecError):
        decode(seal(json.dumps(tree).encode()))

"""encode_json / decode_json: the codec's value trees as plain JSON text, without the envelope."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from batonflow.codec import decode_json, encode_json
from batonflow.errors import CodecError
from batonflow.schema import Message


def test_registered_and_tagged_values_round_trip_as_readable_json() -> None:
    value = {"message": Message(role="user", content="hi"), "when": datetime(2026, 1, 2, tzinfo=UTC), "n": [1]}
    text = encode_json(value)
    assert json.loads(text)["n"] == [1]
    assert decode_json(text) == value
    assert decode_json(text.encode("utf-8")) == value


def test_what_cannot_be_written_or_read_is_a_codec_error_naming_what_and_where() -> None:
    with pytest.raises(CodecError, match=r"cannot encode snapshot: .* at \$\.bad"):
        encode_json({"bad": object()}, what="snapshot")
    with pytest.raises(CodecError, match="cannot decode snapshot: invalid JSON"):
        decode_json("{", what="snapshot")
    with pytest.raises(CodecError, match="NoSuchClass"):
        decode_json('{"$c": "NoSuchClass"}')

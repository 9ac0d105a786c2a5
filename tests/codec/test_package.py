"""The public face of batonflow.codec, and the names batonflow.store keeps re-exporting from it."""

from __future__ import annotations

import batonflow.codec
import batonflow.store


def test_public_api_is_pinned() -> None:
    assert sorted(batonflow.codec.__all__) == [
        "CACHE_SIZE",
        "CODEC_VERSION",
        "CodecError",
        "DEFAULT_LIMITS",
        "DecodeLimits",
        "EncodeCache",
        "SharedObjects",
        "decode",
        "decode_json",
        "encode",
        "encode_async",
        "encode_cache",
        "encode_json",
        "register_builtin_types",
        "register_type",
        "registered_types",
    ]
    for name in batonflow.codec.__all__:
        assert hasattr(batonflow.codec, name)


def test_the_store_re_exports_every_codec_name_as_the_same_object() -> None:
    # Code written when the codec lived in the store imports these names from batonflow.store.
    for name in set(batonflow.codec.__all__) - {"DEFAULT_LIMITS"}:
        assert name in batonflow.store.__all__
        assert getattr(batonflow.store, name) is getattr(batonflow.codec, name), name

"""The checkpoint codec: versioned, compact, checksummed, schema-checked JSON.

An encoded payload is a 9-byte header and a body::

    b"BFC" | version (1 byte) | flags (1 byte) | CRC-32 of flags + body (4 bytes, big-endian) | body

The body is UTF-8 JSON without whitespace (``_tree`` says how values map to it), zlib-compressed when flag bit 0 is
set. No pickle, eval or marshal: a payload can only build registered classes, through their constructors.

The checksum turns a truncated or altered payload into a loud ``CodecError`` instead of a plausible wrong value; a
well-formed payload that does not fit the registered classes (an unknown type or field, a wrong shape) is a
``CodecError`` naming the place, as a path such as ``$.session.values.order``.
"""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any

from ..errors import CodecError
from ._tree import from_tree, to_tree
from ._wire import PathError

__all__ = ["CODEC_VERSION", "decode", "encode"]

MAGIC = b"BFC"
CODEC_VERSION = 1
_HEADER = struct.Struct(">3sBBI")  # magic, version, flags, crc32
_FLAG_ZLIB = 0x01
_KNOWN_FLAGS = _FLAG_ZLIB
# Measured on chat-shaped checkpoints (tests/store/test_codec_size.py): zlib pays from about half a KiB (a
# one-message payload of 560 bytes shrinks to 324 in 12 µs). Level 4 is the knee: for 2,000 messages it writes
# 86 KB in 12 ms where level 1 writes 96 KB in 7 ms and level 6 84 KB in 22 ms. Encoding runs on the event loop,
# so the slower levels' last few percent are not worth their time.
COMPRESS_THRESHOLD = 512
_ZLIB_LEVEL = 4
# A body that inflates beyond 256 MiB is crafted or corrupt, not a checkpoint: untrusted input is size-limited.
_MAX_BODY = 1 << 28


def encode(obj: Any, *, what: str = "checkpoint") -> bytes:
    """The bytes of ``obj``. ``what`` names the value in error messages (``cannot encode checkpoint: …``)."""
    body = dump_json(obj, what)
    if len(body) > _MAX_BODY:  # decode would refuse it: fail now, while the caller still has the value
        raise CodecError(f"cannot encode {what}: its body is {len(body)} bytes, more than the limit of {_MAX_BODY}")
    flags = 0
    if len(body) >= COMPRESS_THRESHOLD:
        packed = zlib.compress(body, _ZLIB_LEVEL)
        if len(packed) < len(body):
            body, flags = packed, _FLAG_ZLIB
    return seal(body, flags)


def seal(body: bytes, flags: int = 0, version: int = CODEC_VERSION) -> bytes:
    """The envelope around ``body``, as ``encode`` writes it."""
    return _HEADER.pack(MAGIC, version, flags, zlib.crc32(body, zlib.crc32(bytes((flags,))))) + body


def decode(data: bytes | bytearray | memoryview, *, what: str = "checkpoint") -> Any:
    """The value in ``data``. Anything that is not a payload this version of batonflow wrote raises ``CodecError``."""
    return load_json(_open(data, what), what, invalid="corrupt payload: invalid JSON body")


def dump_json(obj: Any, what: str) -> bytes:
    """The UTF-8 JSON of ``obj``'s value tree, on one line (json.dumps escapes every line break)."""
    try:
        tree = to_tree(obj)
    except PathError as exc:
        raise exc.to_codec_error("encode", what) from None
    except RecursionError:
        raise CodecError(f"cannot encode {what}: the value is nested too deeply or contains itself") from None
    try:
        text = json.dumps(tree, ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False)
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: JSON escapes keep them, UTF-8 cannot
            return json.dumps(tree, separators=(",", ":"), allow_nan=False, check_circular=False).encode("ascii")
    except (ValueError, RecursionError) as exc:  # an int past Python's digit limit; a very deep value
        raise CodecError(f"cannot encode {what}: {exc}") from None


def load_json(data: bytes, what: str, *, invalid: str = "invalid JSON") -> Any:
    """The value whose value tree ``data`` holds as JSON; text that is not JSON is ``cannot decode <what>:
    <invalid>: …``."""
    try:
        tree = json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise CodecError(f"cannot decode {what}: {invalid}: {exc}") from None
    try:
        return from_tree(tree)
    except PathError as exc:
        raise exc.to_codec_error("decode", what) from None
    except RecursionError:
        raise CodecError(f"cannot decode {what}: the value is nested too deeply") from None


def _open(data: bytes | bytearray | memoryview, what: str) -> bytes:
    """The JSON text of ``data``, once the header, the checksum and the compression check out."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise CodecError(f"cannot decode {what}: expected bytes, got {type(data).__qualname__}")
    data = bytes(data)
    if data[: len(MAGIC)] != MAGIC[: len(data)]:
        raise _corrupt(what, "not a batonflow payload (bad magic prefix)")
    # The version comes before anything else: a later version may lay out the rest of the header differently.
    if len(data) > len(MAGIC) and data[len(MAGIC)] != CODEC_VERSION:
        raise CodecError(
            f"cannot decode {what}: unsupported codec version {data[len(MAGIC)]} "
            f"(this batonflow reads version {CODEC_VERSION})"
        )
    if len(data) < _HEADER.size:
        raise _corrupt(what, f"truncated header ({len(data)} bytes; a payload has at least {_HEADER.size})")
    _, _, flags, crc = _HEADER.unpack_from(data)
    body = data[_HEADER.size :]
    if zlib.crc32(body, zlib.crc32(bytes((flags,)))) != crc:
        raise _corrupt(what, "checksum mismatch (the data was truncated or altered)")
    if flags & ~_KNOWN_FLAGS:
        raise _corrupt(what, f"unknown flags 0x{flags:02x}")
    if flags & _FLAG_ZLIB:
        inflater = zlib.decompressobj()
        try:
            body = inflater.decompress(body, _MAX_BODY)
        except zlib.error as exc:
            raise _corrupt(what, f"cannot decompress the body: {exc}") from None
        if inflater.unconsumed_tail:
            raise _corrupt(what, f"the body inflates to more than {_MAX_BODY} bytes")
        if not inflater.eof or inflater.unused_data:
            raise _corrupt(what, "the compressed body is incomplete or followed by stray bytes")
    return body


def _corrupt(what: str, detail: str) -> CodecError:
    return CodecError(f"cannot decode {what}: corrupt payload: {detail}")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # json.loads accepts NaN and Infinity unless told otherwise

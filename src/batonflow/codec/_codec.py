"""The checkpoint codec: versioned, compact, checksummed, schema-checked JSON.

An encoded payload is a 9-byte header and a body::

    b"BFC" | version (1 byte) | flags (1 byte) | CRC-32 (4 bytes, big-endian) | body

The CRC-32 covers the flags and the body; from version 2 on, the version byte as well.

The body is UTF-8 JSON without whitespace (``_tree`` says how values map to it), zlib-compressed when flag bit 0 is
set. No pickle, eval or marshal: a payload can only build registered classes, through their constructors.

Version 2 adds references: the messages and recorded events of a payload are numbered, and one met a second time is
written as ``{"$t": "ref", "v": <number>}`` (``_share``). A payload that needs none is written as version 1, which
this version reads as it always did; references in a version 1 payload are refused.

The checksum turns a truncated or altered payload into a loud ``CodecError`` instead of a plausible wrong value; a
well-formed payload that does not fit the registered classes (an unknown type or field, a wrong shape) is a
``CodecError`` naming the place, as a path such as ``$.session.values.order``.
"""

from __future__ import annotations

import asyncio
import json
import re
import struct
import zlib
from dataclasses import dataclass
from typing import Any

from ..errors import CodecError, UserError
from ._fits import remember
from ._share import SharedObjects, ascii_text, dumps, write_body
from ._tree import build, to_tree
from ._wire import PathError, Refs

__all__ = [
    "CODEC_VERSION",
    "DEFAULT_LIMITS",
    "DecodeLimits",
    "decode",
    "decode_json",
    "encode",
    "encode_async",
    "encode_json",
]

MAGIC = b"BFC"
CODEC_VERSION = 2
"""The version this batonflow writes when a payload holds references; it reads every version up to it."""
_PLAIN_VERSION = 1  # what a payload without references is written as, so that release 0.1.0 can read it
_HEADER = struct.Struct(">3sBBI")  # magic, version, flags, crc32
_FLAG_ZLIB = 0x01
# The payload continues a chain (``SharedObjects``): its body starts with the count of the chain's objects it was
# written after (4 bytes, big-endian), and it may refer to them. Releases before chains refuse such a payload as
# having unknown flags, rather than misreading it.
_FLAG_CONTINUES = 0x02
_KNOWN_FLAGS = _FLAG_ZLIB | _FLAG_CONTINUES
_COUNT = struct.Struct(">I")
# Measured on chat-shaped checkpoints (tests/codec/test_codec_size.py): zlib pays from about half a KiB (a
# one-message payload of 560 bytes shrinks to 324 in 12 µs). Level 4 is the knee: for 2,000 messages it writes
# 86 KB in 12 ms where level 1 writes 96 KB in 7 ms and level 6 84 KB in 22 ms. Encoding runs on the event loop,
# so the slower levels' last few percent are not worth their time.
COMPRESS_THRESHOLD = 512
_ZLIB_LEVEL = 4
# From here on encode_async compresses on a worker thread: about half a millisecond of zlib, ten times what handing
# the work over costs.
_THREAD_BODY = 64 << 10


@dataclass(frozen=True, slots=True, kw_only=True)
class DecodeLimits:
    """How large a payload may grow while it is decoded; anything larger is a ``CodecError``, never a
    ``MemoryError``. Each store takes one (``limits=``) and decodes what it reads with it.

    ``max_body`` bounds the JSON body in bytes, after inflating. ``max_elements`` bounds the values the decoded
    tree holds: every JSON value, plus every field a registered class fills in from its defaults, so that a body
    under the byte limit (``{"$c":"Message","role":"user"}`` repeated) still cannot expand into gigabytes.

    The defaults leave room for checkpoints far larger than real runs make (KB to a few MB): in
    benchmarks/checkpoints.py a conversation of 2,000 messages has a body of 0.37 MB counting 30,000 values
    (14,000 in the body, 16,000 filled in from defaults), one of 20,000 messages 3.7 MB and 300,000 values (0.57 MB
    compressed); both limits admit some 60,000 such messages. Decompression bombs now stop in under a second
    having taken at most tens of MB (benchmarks/codec_hostile.py), where they took 109 MB and 454 MB.
    """

    max_body: int = 16 << 20
    max_elements: int = 1_000_000

    def __post_init__(self) -> None:
        for name in ("max_body", "max_elements"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise UserError(f"DecodeLimits.{name} must be a positive int, got {value!r}")


DEFAULT_LIMITS = DecodeLimits()
# Every JSON value but the first follows a comma or opens a container: counting those bytes bounds the values
# from above, at C speed, before json.loads builds them. Only when strings hold commas and brackets can the bound
# exceed the limit while the values do not: then the strings are taken out and the bytes counted again.
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)


def encode(
    obj: Any,
    *,
    what: str = "checkpoint",
    limits: DecodeLimits = DEFAULT_LIMITS,
    shared: SharedObjects | None = None,
    extend: bool = True,
) -> bytes:
    """The bytes of ``obj``. ``what`` names the value in error messages (``cannot encode checkpoint: …``);
    ``limits`` are those the payload will be decoded with (its body must fit them).

    With ``shared``, the payload continues a chain: it refers to the messages and recorded events of the payloads
    before it instead of writing them again, and (when ``extend``) its own are added to ``shared`` for the next
    one. It can then only be decoded with the chain's objects as they were when it was written."""
    body, version, flags = encode_body(obj, what, limits, shared, extend)
    return pack(body, version, flags)


async def encode_async(
    obj: Any,
    *,
    what: str = "checkpoint",
    limits: DecodeLimits = DEFAULT_LIMITS,
    shared: SharedObjects | None = None,
    extend: bool = True,
) -> bytes:
    """``encode``, compressing a large body on a worker thread so that the event loop goes on meanwhile: zlib
    leaves the GIL while it works, some 15 ms for the 1.9 MB body of a checkpoint at turn 2,000
    (benchmarks/growth.py). The value itself is read on the loop, where nothing changes it in the meantime."""
    body, version, flags = encode_body(obj, what, limits, shared, extend)
    if len(body) < _THREAD_BODY:
        return pack(body, version, flags)
    return await asyncio.to_thread(pack, body, version, flags)


def encode_body(
    obj: Any,
    what: str,
    limits: DecodeLimits = DEFAULT_LIMITS,
    shared: SharedObjects | None = None,
    extend: bool = True,
) -> tuple[bytes, int, int]:
    """The body of ``obj``'s payload, its version and its flags, before compression (``pack`` does the rest)."""
    count = len(shared) if shared is not None else 0
    try:
        text, refers = write_body(obj, shared, extend=extend)
    except PathError as exc:
        raise exc.to_codec_error("encode", what) from None
    except RecursionError:
        raise CodecError(f"cannot encode {what}: the value is nested too deeply or contains itself") from None
    except ValueError as exc:  # an int past Python's digit limit
        raise CodecError(f"cannot encode {what}: {exc}") from None
    try:
        body = text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: JSON escapes keep them, UTF-8 cannot
        body = ascii_text(text).encode("ascii")
    _check_size(body, what, limits)
    if shared is None:
        return body, CODEC_VERSION if refers else _PLAIN_VERSION, 0
    return _COUNT.pack(count) + body, CODEC_VERSION, _FLAG_CONTINUES


def pack(body: bytes, version: int = CODEC_VERSION, flags: int = 0) -> bytes:
    """The payload of ``body``: compressed when that pays, then sealed."""
    if len(body) >= COMPRESS_THRESHOLD:
        packed = zlib.compress(body, _ZLIB_LEVEL)
        if len(packed) < len(body):
            body, flags = packed, flags | _FLAG_ZLIB
    return seal(body, flags, version)


def seal(body: bytes, flags: int = 0, version: int = CODEC_VERSION) -> bytes:
    """The envelope around ``body``, as ``encode`` writes it."""
    return _HEADER.pack(MAGIC, version, flags, _checksum(body, flags, version)) + body


def _checksum(body: bytes, flags: int, version: int) -> int:
    # Version 1 left its version byte out, so a flipped byte there could pass for version 2; version 2 covers it.
    covered = bytes((flags,)) if version == 1 else bytes((version, flags))
    return zlib.crc32(body, zlib.crc32(covered))


def decode(
    data: bytes | bytearray | memoryview,
    *,
    what: str = "checkpoint",
    limits: DecodeLimits = DEFAULT_LIMITS,
    shared: SharedObjects | None = None,
) -> Any:
    """The value in ``data``. Anything that is not a payload this version of batonflow (or an earlier one) wrote,
    or that does not fit ``limits``, raises ``CodecError``. The messages and recorded events it holds are remembered
    by ``encode_cache`` when it has a size, so that encoding them again unchanged re-uses their trees.

    A payload that continues a chain (``encode(..., shared=...)``) needs ``shared`` holding the chain's objects as
    they were when it was written (the payloads before it decoded into it, in order); its own are added there."""
    body, version, flags = _open(data, what, limits)
    if not flags & _FLAG_CONTINUES:
        refs = Refs(references=version > 1)
        value = load_json(body, what, invalid="corrupt payload: invalid JSON body", limits=limits, refs=refs)
        remember(refs.objects, refs.trees, value)
        return value
    if len(body) < _COUNT.size:
        raise _corrupt(what, f"truncated body ({len(body)} bytes; a continuing payload has at least {_COUNT.size})")
    (count,) = _COUNT.unpack_from(body)
    if shared is None or len(shared) != count:
        found = "none" if shared is None else f"{len(shared):,}"
        raise CodecError(
            f"cannot decode {what}: it continues a chain of payloads: expected the {count:,} shared objects of the "
            f"payloads before it (decode(..., shared=...)), got {found}"
        )
    refs = Refs(references=True, objects=shared.objects)
    try:
        value = load_json(
            body[_COUNT.size :], what, invalid="corrupt payload: invalid JSON body", limits=limits, refs=refs
        )
    except BaseException:
        shared.truncate(count)
        raise
    shared.adopt(count)
    remember(shared.objects[count:], refs.trees, value)
    return value


def encode_json(obj: Any, *, what: str = "value", limits: DecodeLimits = DEFAULT_LIMITS) -> str:
    """The plain JSON text of ``obj``'s value tree: what ``encode`` seals, without the envelope, for documents a
    person may read or another program may store as text (a flow context's snapshot). Same types, same errors."""
    return dump_json(obj, what, limits).decode("utf-8")


def decode_json(text: str | bytes, *, what: str = "value", limits: DecodeLimits = DEFAULT_LIMITS) -> Any:
    """The value ``encode_json`` wrote; anything else (not JSON, an unknown class, a wrong shape) is a
    ``CodecError`` naming ``what`` and the place."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    return load_json(data, what, limits=limits)


def dump_json(obj: Any, what: str, limits: DecodeLimits = DEFAULT_LIMITS) -> bytes:
    """The UTF-8 JSON of ``obj``'s value tree, on one line (json.dumps escapes every line break), refused when it
    is longer than ``limits`` let decode read: better now, while the caller still has the value. Plain JSON: shared
    objects are written out wherever they occur."""
    body = _dump_json(obj, what)
    _check_size(body, what, limits)
    return body


def _check_size(body: bytes, what: str, limits: DecodeLimits) -> None:
    if len(body) > limits.max_body:
        raise CodecError(
            f"cannot encode {what}: its body is {len(body):,} bytes, more than the limit of {limits.max_body:,} "
            "(DecodeLimits.max_body)"
        )


def _dump_json(obj: Any, what: str) -> bytes:
    try:
        tree = to_tree(obj)
    except PathError as exc:
        raise exc.to_codec_error("encode", what) from None
    except RecursionError:
        raise CodecError(f"cannot encode {what}: the value is nested too deeply or contains itself") from None
    try:
        text = dumps(tree)
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: JSON escapes keep them, UTF-8 cannot
            return json.dumps(tree, separators=(",", ":"), allow_nan=False, check_circular=False).encode("ascii")
    except (ValueError, RecursionError) as exc:  # an int past Python's digit limit; a very deep value
        raise CodecError(f"cannot encode {what}: {exc}") from None


def load_json(
    data: bytes,
    what: str,
    *,
    invalid: str = "invalid JSON",
    limits: DecodeLimits = DEFAULT_LIMITS,
    refs: Refs | None = None,
) -> Any:
    """The value whose value tree ``data`` holds as JSON; text that is not JSON is ``cannot decode <what>:
    <invalid>: …``, and a body past ``limits`` is refused before it is parsed. ``refs`` collects the shared objects
    built (and says whether the tree may refer to them)."""
    if len(data) > limits.max_body:
        raise CodecError(
            f"cannot decode {what}: the body is {len(data):,} bytes, more than the limit of {limits.max_body:,} "
            "(DecodeLimits.max_body)"
        )
    elements = _count_values(data, limits.max_elements)
    if elements > limits.max_elements:
        raise CodecError(
            f"cannot decode {what}: the body holds {elements:,} values, more than the limit of "
            f"{limits.max_elements:,} (DecodeLimits.max_elements)"
        )
    try:
        tree = json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise CodecError(f"cannot decode {what}: {invalid}: {exc}") from None
    except MemoryError:  # the limits keep a body far from this; a process already short of memory may not be
        raise CodecError(f"cannot decode {what}: out of memory parsing a body of {len(data):,} bytes") from None
    try:
        return build(tree, limits.max_elements - elements, limits.max_elements, refs)
    except PathError as exc:
        raise exc.to_codec_error("decode", what) from None
    except RecursionError:
        raise CodecError(f"cannot decode {what}: the value is nested too deeply") from None
    except MemoryError:
        raise CodecError(f"cannot decode {what}: out of memory building a value of {elements:,} values") from None


def _count_values(body: bytes, limit: int) -> int:
    """An upper bound of the JSON values in ``body``, exact enough to compare with ``limit``."""
    if len(body) <= limit:
        # Each value takes a byte and so does the comma or bracket before it: half the length bounds the values
        # of bodies this short, leaving at least half the limit for defaults, without reading them.
        return (len(body) + 1) // 2
    count = body.count(b",") + body.count(b"[") + body.count(b"{") + 1
    if count > limit:
        stripped = _STRING.sub(b"", body)
        count = stripped.count(b",") + stripped.count(b"[") + stripped.count(b"{") + 1
    return count


def _open(data: bytes | bytearray | memoryview, what: str, limits: DecodeLimits) -> tuple[bytes, int, int]:
    """The body of ``data``, its version and its flags, once the header, the checksum and the compression check
    out."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise CodecError(f"cannot decode {what}: expected bytes, got {type(data).__qualname__}")
    data = bytes(data)
    if data[: len(MAGIC)] != MAGIC[: len(data)]:
        raise _corrupt(what, "not a batonflow payload (bad magic prefix)")
    # The version comes before anything else: a later version may lay out the rest of the header differently.
    if len(data) > len(MAGIC) and not 1 <= data[len(MAGIC)] <= CODEC_VERSION:
        raise CodecError(
            f"cannot decode {what}: unsupported codec version {data[len(MAGIC)]} "
            f"(this batonflow reads versions 1 to {CODEC_VERSION})"
        )
    if len(data) < _HEADER.size:
        raise _corrupt(what, f"truncated header ({len(data)} bytes; a payload has at least {_HEADER.size})")
    _, version, flags, crc = _HEADER.unpack_from(data)
    body = data[_HEADER.size :]
    if _checksum(body, flags, version) != crc:
        raise _corrupt(what, "checksum mismatch (the data was truncated or altered)")
    if flags & ~_KNOWN_FLAGS:
        raise _corrupt(what, f"unknown flags 0x{flags:02x}")
    if flags & _FLAG_ZLIB:
        inflater = zlib.decompressobj()
        try:
            body = inflater.decompress(body, limits.max_body)
        except zlib.error as exc:
            raise _corrupt(what, f"cannot decompress the body: {exc}") from None
        if inflater.unconsumed_tail:
            raise CodecError(
                f"cannot decode {what}: the body inflates to more than the limit of {limits.max_body:,} bytes "
                f"(DecodeLimits.max_body) from {len(data) - _HEADER.size:,} compressed"
            )
        if not inflater.eof or inflater.unused_data:
            raise _corrupt(what, "the compressed body is incomplete or followed by stray bytes")
    return body, version, flags


def _corrupt(what: str, detail: str) -> CodecError:
    return CodecError(f"cannot decode {what}: corrupt payload: {detail}")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # json.loads accepts NaN and Infinity unless told otherwise

"""The codec's vocabulary, shared by the value tree and the type registry: tag keys and path-carrying failures."""

from __future__ import annotations

import json
import re
from contextvars import ContextVar
from typing import Any, Protocol

from ..errors import CodecError

TAG = "$t"  # a built-in tagged value: {"$t": "tuple", "v": [...]}
CLS = "$c"  # a registered class: {"$c": "OrderInfo", field: value, ...}
HINT_REGISTER = " (register it with batonflow.codec.register_type)"
REF = "ref"  # a later occurrence of a shared object: {"$t": "ref", "v": its number}
RUN = "run"  # list items that are shared objects written before, by number: {"$t": "run", "v": [first, count, step]}
SHARED = frozenset({"Message", "SessionEvent"})
"""The wire names of the classes whose objects a version 2 payload numbers, so that it can refer to them: the
messages of a conversation and the recorded events that carry them. Part of the format: changing it takes a new
codec version. Their constructors keep the values they are given (decoding remembers each object with the tree it
was built from, as what it would be written as)."""

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class PathError(Exception):
    """A failure deep inside a value. Each container on the way out adds its path segment, so paths cost nothing
    unless something fails (a try block is free in CPython 3.11 until it catches)."""

    def __init__(self, reason: str, hint: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.hint = hint
        self.segments: list[str] = []  # innermost first

    def at(self, segment: str) -> PathError:
        self.segments.append(segment)
        return self

    def to_codec_error(self, verb: str, what: str) -> CodecError:
        path = "$" + "".join(reversed(self.segments))
        return CodecError(f"cannot {verb} {what}: {self.reason} at {path}{self.hint}", path=path)


def key_segment(key: str) -> str:
    """``.name`` for identifier keys, ``["odd key"]`` for the rest."""
    return f".{key}" if _IDENTIFIER.match(key) else f"[{json.dumps(key, ensure_ascii=False)}]"


class Budget:
    """What is left of ``DecodeLimits.max_elements`` while a tree is built: the JSON values are counted before
    parsing, so building spends only on the fields a registered class fills in from its defaults."""

    __slots__ = ("left", "limit")

    def __init__(self, left: int, limit: int) -> None:
        self.left = left
        self.limit = limit

    def exceeded(self) -> PathError:
        return PathError(
            f"the decoded value grows past the limit of {self.limit:,} values (DecodeLimits.max_elements) "
            "as registered classes fill in their defaults"
        )


# A context variable, not a global: decoding is synchronous, but threads (and nested decodes) each get their own.
BUDGET: ContextVar[Budget | None] = ContextVar("batonflow_decode_budget", default=None)


class Refs:
    """The shared objects decoded so far in one payload, by number, and the value tree each was read from;
    ``references``: whether the payload may refer to them (version 2 and later)."""

    __slots__ = ("objects", "references", "trees")

    def __init__(self, *, references: bool, objects: list[Any] | None = None) -> None:
        # ``objects`` may start with those of the payloads before this one (a chain): ``trees`` holds only this
        # payload's.
        self.objects: list[Any] = [] if objects is None else objects
        self.trees: list[Any] = []
        self.references = references


# Set while ``decode`` reads a payload; None for the plain value trees of the file store.
REFS: ContextVar[Refs | None] = ContextVar("batonflow_decode_refs", default=None)


class SharedWriter(Protocol):
    """What ``to_tree`` asks about a shared object while a payload is encoded (``_share.Writer``)."""

    def shared_tree(self, obj: Any, entry: Any) -> Any: ...


# Set while ``encode`` writes a payload; None for the plain value trees of the file store.
WRITER: ContextVar[SharedWriter | None] = ContextVar("batonflow_encode_writer", default=None)

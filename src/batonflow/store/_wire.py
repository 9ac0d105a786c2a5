"""The codec's vocabulary, shared by the value tree and the type registry: tag keys and path-carrying failures."""

from __future__ import annotations

import json
import re
from contextvars import ContextVar

from ..errors import CodecError

TAG = "$t"  # a built-in tagged value: {"$t": "tuple", "v": [...]}
CLS = "$c"  # a registered class: {"$c": "OrderInfo", field: value, ...}
HINT_REGISTER = " (register it with batonflow.store.register_type)"

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

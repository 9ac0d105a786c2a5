"""Values to JSON trees and back: the codec's body, before serialisation and after parsing.

JSON keeps None, bool, int, float, str, list and str-keyed dicts as they are. Everything else becomes a tagged
object: ``{"$t": tag, "v": payload}`` for the built-in types below, ``{"$c": name, ...}`` for registered classes.
Type checks are exact: a subclass of a builtin (a ``defaultdict``, a ``namedtuple``) is refused rather than
written as its base class and silently read back as something else.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import enum
import math
from collections.abc import Callable, Iterable
from datetime import date, datetime, timedelta, timezone
from typing import Any, TypeVar

from pydantic import BaseModel

from ..schema import Stream
from ._registry import BY_TYPE, entry_named
from ._wire import BUDGET, CLS, HINT_REGISTER, REF, REFS, RUN, TAG, WRITER, Budget, PathError, Refs, key_segment

__all__ = ["build", "from_tree", "to_tree"]

T = TypeVar("T")


# -- encoding --------------------------------------------------------------------------------------------------------


def to_tree(obj: Any) -> Any:
    t = type(obj)
    if t is str or t is int or t is bool or obj is None:
        return obj
    if t is float:
        return obj if math.isfinite(obj) else {TAG: "float", "v": repr(obj)}  # JSON has no NaN or Infinity
    if t is list:
        return _items_to_tree(obj)
    if t is dict:
        return _dict_to_tree(obj)
    encoder = _TAG_ENCODERS.get(t)
    if encoder is not None:
        return encoder(obj)
    entry = BY_TYPE.get(t)
    if entry is not None:
        if entry.shared:
            writer = WRITER.get()
            if writer is not None:  # numbered, written once, and perhaps written before
                return writer.shared_tree(obj, entry)
        return entry.encode(obj, to_tree)
    raise _unsupported(obj)


def _items_to_tree(items: Iterable[Any]) -> list[Any]:
    out = []
    i = 0
    try:
        for i, item in enumerate(items):  # noqa: B007 - i names a failing element
            out.append(to_tree(item))
    except PathError as exc:
        raise exc.at(f"[{i}]") from None
    return out


def _dict_to_tree(d: dict[Any, Any]) -> dict[str, Any]:
    if TAG in d or CLS in d or not all(type(k) is str for k in d):
        # Keys JSON cannot hold, or that would read as a tag, go as a list of [key, value] pairs.
        return {TAG: "dict", "v": _pairs_to_tree(d)}
    out = {}
    key = ""
    try:
        for key, value in d.items():
            out[key] = to_tree(value)
    except PathError as exc:
        raise exc.at(key_segment(key)) from None
    return out


def _pairs_to_tree(d: dict[Any, Any]) -> list[list[Any]]:
    out = []
    for key, value in d.items():
        try:
            tree_key = to_tree(key)
        except PathError as exc:
            raise exc.at(f"[key {key!r}]") from None
        try:
            out.append([tree_key, to_tree(value)])
        except PathError as exc:
            raise exc.at(f"[{key!r}]") from None
    return out


def _unsupported(obj: Any) -> PathError:
    cls = type(obj)
    if isinstance(obj, Stream):
        return PathError(
            "a stream cannot be encoded",
            "; read it to the end first (e.g. concat_message_stream): the runtime joins streamed messages before it "
            "saves a checkpoint",
        )
    if dataclasses.is_dataclass(cls) or issubclass(cls, BaseModel | enum.Enum):
        return PathError(f"unregistered type {cls.__qualname__!r}", HINT_REGISTER)
    return PathError(
        f"unsupported type {cls.__qualname__!r}",
        " (the codec writes None, bool, int, float, str, bytes, list, tuple, dict, set, frozenset, datetime, date, "
        "timedelta, and registered dataclasses, pydantic models and enums)",
    )


def _datetime_to_tree(value: datetime) -> Any:
    """An ISO string; an aware datetime also carries its UTC offset as [days, seconds, microseconds], because
    ``fromisoformat`` drops the sub-second part of an offset."""
    offset = value.utcoffset()
    if offset is None:
        return value.isoformat()
    return [value.replace(tzinfo=None).isoformat(), offset.days, offset.seconds, offset.microseconds]


_TAG_ENCODERS: dict[type, Callable[[Any], Any]] = {
    tuple: lambda v: {TAG: "tuple", "v": _items_to_tree(v)},
    bytes: lambda v: {TAG: "bytes", "v": base64.b64encode(v).decode("ascii")},
    set: lambda v: {TAG: "set", "v": _items_to_tree(v)},
    frozenset: lambda v: {TAG: "frozenset", "v": _items_to_tree(v)},
    datetime: lambda v: {TAG: "datetime", "v": _datetime_to_tree(v)},
    date: lambda v: {TAG: "date", "v": v.isoformat()},
    timedelta: lambda v: {TAG: "timedelta", "v": [v.days, v.seconds, v.microseconds]},
}


# -- decoding --------------------------------------------------------------------------------------------------------


def build(tree: Any, left: int, limit: int, refs: Refs | None = None) -> Any:
    """``from_tree(tree)``, refused once the fields filled in from defaults exceed ``left`` of ``limit`` values.
    With ``refs``, every shared object built is numbered there, with its tree, and the tree may refer to those
    built before it if ``refs.references``."""
    token = BUDGET.set(Budget(left, limit))
    refs_token = REFS.set(refs)
    try:
        return from_tree(tree)
    finally:
        REFS.reset(refs_token)
        BUDGET.reset(token)


def from_tree(obj: Any) -> Any:
    t = type(obj)
    if t is dict:
        if CLS in obj:
            return _class_from_tree(obj)
        if TAG in obj:
            return _tagged_from_tree(obj)
        out = {}
        key = ""
        try:
            for key, value in obj.items():
                out[key] = from_tree(value)
        except PathError as exc:
            raise exc.at(key_segment(key)) from None
        return out
    if t is list:
        return _items_from_tree(obj)
    return obj  # str, int, float, bool or None: json.loads gives nothing else


def _items_from_tree(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    i = 0
    try:
        for i, item in enumerate(items):  # noqa: B007 - i names a failing element
            if type(item) is dict and item.get(TAG) == RUN and len(item) == 2:
                out.extend(_run_from_tree(item.get("v")))
            else:
                out.append(from_tree(item))
    except PathError as exc:
        raise exc.at(f"[{i}]") from None
    return out


def _run_from_tree(value: Any) -> list[Any]:
    """The objects a run of references names (``_share``: ``[first, count, step]``), each built before it; the
    items count against the decode budget, so that a run cannot ask for more than the limits allow."""
    refs = REFS.get()
    if refs is None or not refs.references:
        raise PathError(f"unknown value tag {RUN!r}")
    if type(value) is not list or len(value) != 3 or any(type(v) is not int for v in value):
        raise PathError(f"malformed run value: expected [first, count, step] of ints, got {value!r}")
    first, count, step = value
    last = first + (count - 1) * step
    if count < 1 or step < 1 or first < 0 or last >= len(refs.objects):
        before = f"0 to {len(refs.objects) - 1}" if refs.objects else "there is none"
        raise PathError(
            f"malformed run value: expected a run over shared objects written before it ({before}), got {value!r}"
        )
    budget = BUDGET.get()
    if budget is not None:
        budget.left -= count
        if budget.left < 0:
            raise budget.exceeded()
    return refs.objects[first : last + 1 : step]


def _class_from_tree(obj: dict[str, Any]) -> Any:
    name = obj[CLS]
    entry = entry_named(name) if type(name) is str else None
    if entry is None:
        if type(name) is not str:
            raise PathError(f"malformed class tag: expected a type name, got {_json_type(name)}")
        raise PathError(f"unknown type {name!r}", HINT_REGISTER)
    value = entry.decode(obj, from_tree)
    if entry.shared:
        refs = REFS.get()
        if refs is not None:  # numbered as the encoder numbered it: once its fields are built
            refs.objects.append(value)
            refs.trees.append(obj)
    return value


def _tagged_from_tree(obj: dict[str, Any]) -> Any:
    tag = obj[TAG]
    decoder = _TAG_DECODERS.get(tag) if type(tag) is str else None
    if decoder is None or (tag == REF and not _references()):
        raise PathError(f"unknown value tag {tag!r}")
    if obj.keys() != {TAG, "v"}:
        raise PathError(f"malformed {tag} value: expected the keys '$t' and 'v', got {sorted(obj)}")
    return decoder(obj["v"])


_JSON_TYPES = {list: "array", str: "string", dict: "object", int: "integer", float: "number", bool: "boolean"}


def _json_type(value: Any) -> str:
    return "null" if value is None else _JSON_TYPES.get(type(value), type(value).__name__)


def _expect(value: Any, kind: type, tag: str) -> Any:
    if type(value) is not kind:
        raise PathError(f"malformed {tag} value: expected a JSON {_JSON_TYPES[kind]}, got {_json_type(value)}")
    return value


def _hashable(items: list[Any], tag: str) -> list[Any]:
    for i, item in enumerate(items):
        try:
            hash(item)
        except TypeError:
            raise PathError(f"{tag} element of unhashable type {type(item).__qualname__!r}").at(f"[{i}]") from None
    return items


def _dict_from_pairs(pairs: Any) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for i, pair in enumerate(_expect(pairs, list, "dict")):
        try:
            if type(pair) is not list or len(pair) != 2:
                raise PathError(f"malformed dict entry: expected a [key, value] array, got {_json_type(pair)}")
            key = from_tree(pair[0])
            try:
                hash(key)
            except TypeError:
                raise PathError(f"dict key of unhashable type {type(key).__qualname__!r}") from None
        except PathError as exc:
            raise exc.at(f"[key {i}]") from None
        try:
            out[key] = from_tree(pair[1])
        except PathError as exc:
            raise exc.at(f"[{key!r}]") from None
    return out


def _float_from_tree(value: Any) -> float:
    if value not in ("nan", "inf", "-inf"):
        raise PathError(f"malformed float value: expected 'nan', 'inf' or '-inf', got {value!r}")
    return float(value)


def _bytes_from_tree(value: Any) -> bytes:
    try:
        return base64.b64decode(_expect(value, str, "bytes"), validate=True)
    except (binascii.Error, ValueError):
        raise PathError("malformed bytes value: not base64") from None


def _iso_from_tree(parse: Callable[[str], T], tag: str) -> Callable[[Any], T]:
    def from_iso(value: Any) -> T:
        try:
            return parse(_expect(value, str, tag))
        except ValueError:
            raise PathError(f"malformed {tag} value: {value!r} is not an ISO 8601 {tag}") from None

    return from_iso


def _datetime_from_tree(value: Any) -> datetime:
    if type(value) is str:
        return _naive_datetime(value)
    parts = _expect(value, list, "datetime")
    if len(parts) != 4 or type(parts[0]) is not str:
        raise PathError(f"malformed datetime value: expected an ISO string and its UTC offset, got {value!r}")
    moment = _naive_datetime(parts[0])
    try:
        return moment.replace(tzinfo=timezone(_timedelta_from_tree(parts[1:])))
    except ValueError:
        raise PathError(f"malformed datetime value: {value!r} has an impossible UTC offset") from None


_naive_datetime = _iso_from_tree(datetime.fromisoformat, "datetime")


def _timedelta_from_tree(value: Any) -> timedelta:
    parts = _expect(value, list, "timedelta")
    if len(parts) != 3 or any(type(p) is not int for p in parts):
        raise PathError(f"malformed timedelta value: expected [days, seconds, microseconds], got {value!r}")
    try:
        return timedelta(days=parts[0], seconds=parts[1], microseconds=parts[2])
    except OverflowError:
        raise PathError(f"malformed timedelta value: {value!r} is out of range") from None


def _references() -> bool:
    refs = REFS.get()
    return refs is not None and refs.references


def _ref_from_tree(value: Any) -> Any:
    refs = REFS.get()
    assert refs is not None  # _tagged_from_tree refuses the tag otherwise
    count = len(refs.objects)
    if type(value) is not int or not 0 <= value < count:
        before = f"0 to {count - 1}" if count else "there is none"
        raise PathError(
            f"malformed ref value: expected the number of a shared object written before it ({before}), got {value!r}"
        )
    return refs.objects[value]


_TAG_DECODERS: dict[str, Callable[[Any], Any]] = {
    "tuple": lambda v: tuple(_items_from_tree(_expect(v, list, "tuple"))),
    "dict": _dict_from_pairs,
    "bytes": _bytes_from_tree,
    "set": lambda v: set(_hashable(_items_from_tree(_expect(v, list, "set")), "set")),
    "frozenset": lambda v: frozenset(_hashable(_items_from_tree(_expect(v, list, "frozenset")), "frozenset")),
    "float": _float_from_tree,
    "datetime": _datetime_from_tree,
    "date": _iso_from_tree(date.fromisoformat, "date"),
    "timedelta": _timedelta_from_tree,
    REF: _ref_from_tree,
}

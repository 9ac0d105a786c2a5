"""Decoding checks field types against the annotations: a payload that does not fit is a ``CodecError`` naming
the path, what was expected and what was found, never an object that breaks later."""

from __future__ import annotations

import collections.abc
import dataclasses
import json
import struct
import types
import typing
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import batonflow.agents  # noqa: F401 - registers every checkpointed type
from batonflow.adk import SessionEvent
from batonflow.codec import decode, encode, register_type
from batonflow.errors import CodecError
from batonflow.schema import ToolCall, user

FIXTURES = Path(__file__).parents[1] / "store" / "fixtures" / "release-0.1.0"  # the pinned checkpoints


def seal(body: bytes, flags: int = 0) -> bytes:
    return struct.pack(">3sBBI", b"BFC", 1, flags, zlib.crc32(body, zlib.crc32(bytes((flags,))))) + body


def sealed(tree: Any) -> bytes:
    return seal(json.dumps(tree).encode())


def body_of(data: bytes) -> Any:
    return json.loads(zlib.decompress(data[9:]) if data[4] & 1 else data[9:])


@register_type
@dataclass(slots=True, kw_only=True)
class Kinds:
    text: str = ""
    count: int = 0
    ratio: float = 0.0
    flag: bool = False
    maybe: str | None = None
    items: list[ToolCall] = field(default_factory=list)
    table: dict[str, int] = field(default_factory=dict)
    steps: tuple[int, ...] = ()
    pair: tuple[str, int] = ("", 0)
    mode: Literal["a", "b"] = "a"
    either: int | str = 0
    call: ToolCall | None = None
    tags: set[str] = field(default_factory=set)
    mapping: Mapping[str, Any] = field(default_factory=dict)
    anything: Any = None


def kinds(**fields: Any) -> bytes:
    return sealed({"$c": "Kinds", **fields})


GOOD = [
    {"text": "x", "count": 3, "ratio": 1.5, "flag": True, "maybe": "y"},
    {"ratio": 2, "count": True, "maybe": None},  # an int is a float, a bool an int (PEP 484)
    {"items": [{"$c": "ToolCall", "id": "c1"}], "table": {"a": 1}, "steps": {"$t": "tuple", "v": [1, 2]}},
    {"pair": {"$t": "tuple", "v": ["a", 1]}, "mode": "b", "either": "s", "call": {"$c": "ToolCall"}},
    {"tags": {"$t": "set", "v": ["a"]}, "mapping": {"k": [1, {"$t": "bytes", "v": "AA=="}]}, "anything": [7]},
]


@pytest.mark.parametrize("fields", GOOD)
def test_values_of_the_annotated_types_decode(fields: dict[str, Any]) -> None:
    assert type(decode(kinds(**fields))) is Kinds


WRONG = [
    ({"text": 7}, "Kinds.text: expected str, got int 7 at $.text"),
    ({"count": "3"}, "Kinds.count: expected int, got str '3' at $.count"),
    ({"ratio": "x"}, "Kinds.ratio: expected float, got str 'x' at $.ratio"),
    ({"flag": 1}, "Kinds.flag: expected bool, got int 1 at $.flag"),
    ({"maybe": []}, "Kinds.maybe: expected str | None, got list of 0 at $.maybe"),
    ({"items": 7}, "Kinds.items: expected list[ToolCall], got int 7 at $.items"),
    ({"items": [{"$c": "ToolCall"}, "x"]}, "Kinds.items: expected ToolCall, got str 'x' at $.items[1]"),
    ({"items": {"$t": "tuple", "v": []}}, "Kinds.items: expected list[ToolCall], got tuple of 0 at $.items"),
    ({"table": {"a": "1"}}, "Kinds.table: expected int, got str '1' at $.table['a']"),
    ({"table": {"$t": "dict", "v": [[1, 1]]}}, "Kinds.table: expected str, got int 1 at $.table[key 1]"),
    ({"steps": [1]}, "Kinds.steps: expected tuple[int, ...], got list of 1 at $.steps"),
    ({"steps": {"$t": "tuple", "v": [1, None]}}, "Kinds.steps: expected int, got None at $.steps[1]"),
    ({"pair": {"$t": "tuple", "v": ["a"]}}, "Kinds.pair: expected tuple[str, int], got tuple of 1 at $.pair"),
    ({"pair": {"$t": "tuple", "v": ["a", "b"]}}, "Kinds.pair: expected int, got str 'b' at $.pair[1]"),
    ({"mode": "c"}, "Kinds.mode: expected Literal['a', 'b'], got str 'c' at $.mode"),
    ({"either": 1.5}, "Kinds.either: expected int | str, got float 1.5 at $.either"),
    ({"call": {"$c": "Usage"}}, "Kinds.call: expected ToolCall | None, got Usage at $.call"),
    ({"tags": {"$t": "set", "v": [1]}}, "Kinds.tags: expected str, got int 1 at $.tags[0]"),
    ({"mapping": [1]}, "Kinds.mapping: expected Mapping[str, Any], got list of 1 at $.mapping"),
]


@pytest.mark.parametrize(("fields", "message"), WRONG)
def test_a_value_of_another_type_names_the_field_the_path_and_what_was_found(
    fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(CodecError) as caught:
        decode(kinds(**fields))
    assert str(caught.value) == f"cannot decode checkpoint: wrong type for {message}"
    assert caught.value.path == message.rpartition(" at ")[2]


def test_the_example_of_the_issue_a_tool_calls_of_7_deep_in_a_checkpoint() -> None:
    tree = body_of((FIXTURES / "supervisor.checkpoint").read_bytes())
    tree["events"][3]["message"]["tool_calls"] = 7
    with pytest.raises(CodecError) as caught:
        decode(seal(json.dumps(tree).encode()))
    assert str(caught.value) == (
        "cannot decode checkpoint: wrong type for Message.tool_calls: expected list[ToolCall], got int 7 "
        "at $.events[3].message.tool_calls"
    )
    assert caught.value.path == "$.events[3].message.tool_calls"


@register_type
@dataclass(slots=True, kw_only=True)
class Early:
    later: Later | None = None  # a class defined below: its annotation resolves at the first decode


@register_type
@dataclass(slots=True, kw_only=True)
class Later:
    n: int = 0


def test_annotations_naming_a_class_defined_later_are_checked_too() -> None:
    assert decode(encode(Early(later=Later(n=2)))) == Early(later=Later(n=2))
    with pytest.raises(CodecError, match=r"wrong type for Early.later: expected Later \| None, got int 7 at \$.later$"):
        decode(sealed({"$c": "Early", "later": 7}))


class Speaker(typing.Protocol):
    def speak(self) -> str: ...


@register_type
@dataclass(slots=True, kw_only=True)
class WithProtocol:
    speaker: Speaker | None = None


def test_a_protocol_isinstance_cannot_check_is_left_unchecked() -> None:
    assert decode(sealed({"$c": "WithProtocol", "speaker": 7})) == WithProtocol(speaker=7)  # type: ignore[arg-type]


def test_fields_the_payload_leaves_out_take_their_defaults_unchecked() -> None:
    event = decode(encode(SessionEvent(agent_name="a", run_path=(), message=user("hi"))))
    assert event.message == user("hi")


# -- fuzz: real checkpoints, one field set to a hostile value --------------------------------------------------------


def fits(value: Any, hint: Any) -> bool:
    """The oracle, written apart from the codec's checkers: does ``value`` fit the annotation ``hint``?"""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any or isinstance(hint, typing.TypeVar):
        return well_typed(value)  # interrupt states, session values: registered objects inside are checked too
    if origin is Literal:
        return any(type(value) is type(a) and value == a for a in args)
    if origin is typing.Union or origin is types.UnionType:
        return any(fits(value, a) for a in args)
    if origin in (list, set, frozenset):
        return type(value) is origin and all(fits(v, args[0]) for v in value)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return type(value) is tuple and all(fits(v, args[0]) for v in value)
        return type(value) is tuple and len(value) == len(args) and all(map(fits, value, args))
    if origin in (dict, collections.abc.Mapping):
        return isinstance(value, origin) and all(fits(k, args[0]) and fits(v, args[1]) for k, v in value.items())
    if hint is float:
        return isinstance(value, int | float)
    if isinstance(hint, type):
        return isinstance(value, hint) and well_typed(value)
    return hint is None and value is None


def well_typed(value: Any) -> bool:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        hints = typing.get_type_hints(type(value))
        return all(
            fits(getattr(value, f.name), hints[f.name])
            for f in dataclasses.fields(value)
            if f.init and not f.name.startswith("_")
        )
    if isinstance(value, list | tuple | set | frozenset):
        return all(well_typed(v) for v in value)
    if isinstance(value, dict):
        return all(well_typed(v) for v in value.values())
    return True


def objects(tree: Any) -> list[dict[str, Any]]:
    if isinstance(tree, dict):
        own = [tree] if "$c" in tree and "v" not in tree and len(tree) > 1 else []
        return own + [o for v in tree.values() for o in objects(v)]
    if isinstance(tree, list):
        return [o for v in tree for o in objects(v)]
    return []


TREES = [body_of(p.read_bytes()) for p in sorted(FIXTURES.glob("*.checkpoint"))]
SCALARS = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2) | st.sampled_from(["", "x", "user"])
TAGGED = st.sampled_from(
    [
        {"$t": "tuple", "v": [1]},
        {"$t": "set", "v": ["a"]},
        {"$t": "bytes", "v": "AA=="},
        {"$t": "dict", "v": [[1, 2]]},
        {"$c": "Usage"},
        {"$c": "RunStep", "agent_name": "a"},
        {"$c": "Message", "role": "tool"},
        {"$c": "ToolCall", "id": "c"},
    ]
)


def containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "role"]), inner, max_size=2))


HOSTILE = st.recursive(SCALARS | TAGGED, containers, max_leaves=6)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_mutated_checkpoint_decodes_well_typed_or_raises_codec_error(data: st.DataObject) -> None:
    tree = json.loads(json.dumps(data.draw(st.sampled_from(TREES))))
    target = data.draw(st.sampled_from(objects(tree)))
    key = data.draw(st.sampled_from(sorted(k for k in target if k != "$c")))
    target[key] = data.draw(HOSTILE)
    payload = seal(zlib.compress(json.dumps(tree).encode()), 1)
    try:
        value = decode(payload)
    except CodecError:
        return
    assert well_typed(value), f"decoded an ill-typed value for {target['$c']}.{key} = {target[key]!r}"

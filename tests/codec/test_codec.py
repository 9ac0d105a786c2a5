"""The checkpoint codec: what round-trips, what the payload looks like, and the exact texts of its errors."""

from __future__ import annotations

import ast
import enum
import json
import math
import time
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from batonflow.adk import AgentAction, BreakLoopAction, RunStep, TransferToAgentAction
from batonflow.codec import CODEC_VERSION, decode, encode, register_builtin_types, register_type
from batonflow.errors import BatonflowError, CodecError, UserError
from batonflow.schema import (
    AudioPart,
    FunctionCall,
    ImagePart,
    Message,
    ResponseMeta,
    Stream,
    TextPart,
    ToolCall,
    Usage,
    user,
)


@register_type
@dataclass(slots=True, kw_only=True)
class OrderInfo:
    order_id: str
    quantity: int = 1
    express: bool = False
    tags: list[str] = field(default_factory=list)
    created: int = field(default_factory=time.monotonic_ns)  # a new value per call: always written
    _cache: dict[str, Any] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Point:
    x: int
    y: int = 0


register_type(Point, "tests.store.Point")


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Perm(enum.Flag):
    R = 4
    W = 2


register_type(Color, "tests.store.Color")
register_type(Perm, "tests.store.Perm")


class Address(BaseModel):
    city: str
    zip_code: str = Field(default="", alias="zipCode")


class Customer(BaseModel):
    name: str
    address: Address | None = None
    scores: list[int] = []
    joined: datetime | None = None


class Loose(BaseModel):
    model_config = ConfigDict(extra="allow")
    kind: str


for _model in (Address, Customer, Loose):
    register_type(_model, f"tests.store.{_model.__name__}")


def body_of(data: bytes) -> Any:
    """The JSON tree inside a payload."""
    body = data[9:]
    if data[4] & 1:
        body = zlib.decompress(body)
    return json.loads(body)


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down (1 == 1.0 == True would hide a codec bug)."""
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
    if isinstance(a, datetime):
        return bool(a == b and a.utcoffset() == b.utcoffset())
    return bool(a == b)


# -- round trips -----------------------------------------------------------------------------------------------------

VALUES: list[Any] = [
    None,
    True,
    0,
    -(2**80),
    1.5,
    -0.0,
    float("inf"),
    float("-inf"),
    "",
    "h\u00e9llo \u4e16\u754c \U0001f600",
    "lone \ud800 surrogate",
    b"",
    b"\x00\xff bytes",
    [],
    [1, "two", [3.0]],
    (),
    (1, (2, (3,)), [4]),
    {},
    {"a": 1, "b": {"c": [None]}},
    {1: "int key", 2.5: "float key", None: "none key", (1, 2): "tuple key"},
    {True: "bool key", 2: "int key"},
    {"$t": "a user key that looks like a tag", "$c": 1, "v": 2},
    {"plain": {"$t": "nested"}},
    {1, 2, 3},
    frozenset({"a", "b"}),
    set(),
    datetime(2024, 5, 17, 12, 30, 45, 123456),
    datetime(2024, 5, 17, 12, 30, tzinfo=timezone(timedelta(hours=5, minutes=30))),
    date(1999, 12, 31),
    timedelta(days=-3, seconds=5, microseconds=7),
    Color.GREEN,
    Perm.R | Perm.W,
    Point(1, 2),
    {Point(1): "a frozen dataclass as a key"},
    OrderInfo(order_id="A-1", quantity=0, tags=["x"]),
    Customer(name="Ada", address=Address(city="London", zipCode="N1"), scores=[1, 2]),
    Customer(name="Bob", joined=datetime(2020, 1, 1, tzinfo=UTC)),
    Loose.model_validate({"kind": "k", "anything": [1, (2,)]}),
]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_supported_values_round_trip_with_their_types(value: Any) -> None:
    assert same(decode(encode(value)), value)


def test_nan_round_trips() -> None:
    assert math.isnan(decode(encode(float("nan"))))


def test_batonflow_schema_types_round_trip() -> None:
    message = Message(
        role="assistant",
        content="hi",
        reasoning_content="because",
        parts=[TextPart(text="t"), ImagePart(url="https://x/y.png", detail="low"), AudioPart(data="AAA=")],
        tool_calls=[ToolCall(index=0, id="call-1", function=FunctionCall(name="f", arguments='{"a": 1}'))],
        response_meta=ResponseMeta(finish_reason="stop", usage=Usage(prompt_tokens=3, total_tokens=5)),
        extra={"provider": {"raw": [1, 2]}},
    )
    assert decode(encode(message)) == message


def test_runtime_types_round_trip() -> None:
    action = AgentAction(
        exit=True,
        transfer_to_agent=TransferToAgentAction(dest_agent_name="billing"),
        break_loop=BreakLoopAction(from_agent="loop", done=True, current_iterations=3),
        customized_action={"k": "v"},
    )
    value = {"run_path": (RunStep("router"), RunStep("billing")), "action": action}
    assert decode(encode(value)) == value


def test_register_builtin_types_is_idempotent() -> None:
    register_builtin_types()
    register_builtin_types()
    assert decode(encode(RunStep("a"))) == RunStep("a")


# -- what a payload looks like ---------------------------------------------------------------------------------------


def test_payload_starts_with_magic_and_version() -> None:
    data = encode({"a": 1})
    assert data[:4] == b"BFC" + bytes([1])  # nothing shared: the version release 0.1.0 reads
    assert body_of(data) == {"a": 1}
    assert data[9:] == b'{"a":1}'  # no whitespace
    message = user("hi")
    shared = encode([message, message])
    assert shared[:4] == b"BFC" + bytes([CODEC_VERSION]) and CODEC_VERSION == 2
    assert body_of(shared) == [{"$c": "Message", "role": "user", "content": "hi"}, {"$t": "ref", "v": 0}]


def test_fields_equal_to_their_defaults_are_left_out() -> None:
    assert body_of(encode(user("hi"))) == {"$c": "Message", "role": "user", "content": "hi"}
    assert body_of(encode(Point(3))) == {"$c": "tests.store.Point", "x": 3}


def test_a_default_is_left_out_only_when_the_type_matches_too() -> None:
    info = OrderInfo(order_id="A", quantity=True, express=0)  # type: ignore[arg-type]
    tree = body_of(encode(info))
    assert tree["quantity"] is True and tree["express"] == 0
    # A bool is an int (to type checkers too), so it reads back; an int where a bool belongs does not fit the field.
    decoded = decode(encode(OrderInfo(order_id="A", quantity=True)))
    assert decoded.quantity is True
    with pytest.raises(CodecError, match=r"^cannot decode checkpoint: wrong type for OrderInfo.express: expected bool"):
        decode(encode(info))


def test_fields_with_nondeterministic_default_factories_are_always_written() -> None:
    info = OrderInfo(order_id="A")
    tree = body_of(encode(info))
    assert tree == {"$c": "OrderInfo", "order_id": "A", "created": info.created}
    assert decode(encode(info)).created == info.created


def test_private_fields_are_not_written_and_come_back_as_their_defaults() -> None:
    info = OrderInfo(order_id="A", _cache={"big": "x" * 100})
    assert "_cache" not in body_of(encode(info))
    assert decode(encode(info))._cache is None


def test_pydantic_fields_are_written_by_name_and_read_through_their_alias() -> None:
    customer = Customer(name="Ada", address=Address(city="Paris", zipCode="75001"))
    tree = body_of(encode(customer))
    assert tree["address"] == {"$c": "tests.store.Address", "city": "Paris", "zip_code": "75001"}
    assert decode(encode(customer)) == customer


def test_large_payloads_are_compressed_and_small_ones_are_not() -> None:
    small = encode("x")
    large = encode(["a chat message of about a hundred characters " * 2] * 50)
    assert small[4] == 0
    assert large[4] == 1
    assert len(large) < len(json.dumps(["a chat message of about a hundred characters " * 2] * 50))
    assert decode(large) == ["a chat message of about a hundred characters " * 2] * 50


def test_the_codec_and_store_modules_never_use_pickle_eval_or_marshal() -> None:
    import batonflow.codec
    import batonflow.store

    paths = [*Path(batonflow.codec.__file__).parent.glob("*.py"), *Path(batonflow.store.__file__).parent.glob("*.py")]
    assert any(path.name == "_codec.py" for path in paths)
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import | ast.ImportFrom):
                modules = [alias.name for alias in node.names] + [getattr(node, "module", None) or ""]
                assert not {"pickle", "marshal", "shelve", "dill", "cloudpickle"} & set(modules), path.name
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in ("eval", "exec", "__import__"), path.name


# -- registration ----------------------------------------------------------------------------------------------------


def test_register_type_returns_the_class_and_is_idempotent() -> None:
    assert register_type(Point, "tests.store.Point") is Point
    assert register_type(Point) is Point


def test_a_taken_name_is_refused() -> None:
    @dataclass
    class Other:
        x: int

    with pytest.raises(UserError, match=r"^cannot register .*Other as 'tests.store.Point': the name is taken by "):
        register_type(Other, "tests.store.Point")


def test_a_second_name_for_a_registered_class_is_refused() -> None:
    with pytest.raises(
        UserError,
        match=r"^cannot register Point as 'tests.store.P2': it is already registered as 'tests.store.Point'$",
    ):
        register_type(Point, "tests.store.P2")


@pytest.mark.parametrize("cls", [int, dict, object, type("Plain", (), {})])
def test_only_dataclasses_models_and_enums_can_be_registered(cls: type) -> None:
    with pytest.raises(UserError, match="register_type expects a dataclass, a pydantic BaseModel or an Enum"):
        register_type(cls)


def test_a_private_field_without_default_cannot_be_registered() -> None:
    @dataclass
    class Broken:
        _secret: int

    with pytest.raises(UserError, match="private field '_secret' has no default"):
        register_type(Broken, "tests.store.Broken")


# -- errors: encoding --------------------------------------------------------------------------------------------------


def test_encoding_an_unregistered_dataclass_names_it_and_the_path() -> None:
    @dataclass
    class Unregistered:
        x: int = 0

    with pytest.raises(CodecError) as caught:
        encode({"session": {"values": {"order": Unregistered()}}})
    assert str(caught.value) == (
        "cannot encode checkpoint: unregistered type 'test_encoding_an_unregistered_dataclass_names_it_and_the_path."
        "<locals>.Unregistered' at $.session.values.order (register it with batonflow.codec.register_type)"
    )
    assert caught.value.path == "$.session.values.order"


def test_encoding_an_unsupported_type_names_the_path_through_every_container() -> None:
    value = {"a": [0, (1, {2: {"odd key": [defaultdict(list)]}})]}
    with pytest.raises(CodecError, match=r"^cannot encode checkpoint: unsupported type 'defaultdict' at ") as caught:
        encode(value)
    assert caught.value.path == '$.a[1][1][2]["odd key"][0]'


def test_encoding_a_stream_asks_for_it_to_be_materialised() -> None:
    with pytest.raises(CodecError) as caught:
        encode({"output": Stream.from_list([user("a")])})
    assert str(caught.value) == (
        "cannot encode checkpoint: a stream cannot be encoded at $.output; read it to the end first (e.g. "
        "concat_message_stream): the runtime joins streamed messages before it saves a checkpoint"
    )


def test_encoding_an_unregistered_enum_member_asks_for_registration() -> None:
    class Mood(enum.Enum):
        OK = 1

    with pytest.raises(CodecError, match=r"unregistered type '.*Mood' at \$\[0\] \(register it with"):
        encode([Mood.OK])


def test_encoding_a_value_that_contains_itself_fails_cleanly() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(
        CodecError, match=r"^cannot encode checkpoint: the value is nested too deeply or contains itself$"
    ):
        encode(loop)


def test_encoding_an_int_too_long_for_json_is_a_codec_error() -> None:
    with pytest.raises(CodecError, match=r"^cannot encode checkpoint: Exceeds the limit \(4300 digits\)"):
        encode({"n": 10**5000})


def test_what_names_the_value_in_messages() -> None:
    with pytest.raises(CodecError, match=r"^cannot encode session: unsupported type 'object' at \$"):
        encode(object(), what="session")
    with pytest.raises(CodecError, match=r"^cannot decode session: corrupt payload: "):
        decode(b"nonsense", what="session")


def test_codec_error_is_a_batonflow_error() -> None:
    assert issubclass(CodecError, BatonflowError)


# -- errors: decoding --------------------------------------------------------------------------------------------------


def seal(body: bytes, flags: int = 0, version: int = CODEC_VERSION) -> bytes:
    """The envelope around ``body`` as the codec documents it, written here independently of the codec's code:
    ``b"BFC"``, the version, the flags, the CRC-32 (4 bytes, big-endian) of flags and body (from version 2 on, of
    version, flags and body), then the body."""
    covered = bytes((flags,)) if version == 1 else bytes((version, flags))
    crc = zlib.crc32(body, zlib.crc32(covered))
    return b"BFC" + bytes((version, flags)) + crc.to_bytes(4, "big") + body


def sealed(tree: Any) -> bytes:
    return seal(json.dumps(tree).encode())


def test_decoding_an_unknown_type_names_it_and_the_path() -> None:
    data = sealed({"session": {"values": {"order": {"$c": "NoSuchOrderInfo", "order_id": "A"}}}})
    with pytest.raises(CodecError) as caught:
        decode(data)
    assert str(caught.value) == (
        "cannot decode checkpoint: unknown type 'NoSuchOrderInfo' at $.session.values.order "
        "(register it with batonflow.codec.register_type)"
    )
    assert caught.value.path == "$.session.values.order"


def test_decoding_an_unknown_codec_version_says_which_versions_are_read() -> None:
    with pytest.raises(CodecError) as caught:
        decode(seal(b"{}", version=7))
    assert str(caught.value) == (
        "cannot decode checkpoint: unsupported codec version 7 (this batonflow reads versions 1 to 2)"
    )


def test_decoding_an_unknown_field_names_it_the_type_and_the_path() -> None:
    data = sealed({"points": [{"$c": "tests.store.Point", "x": 1, "z": 2}]})
    with pytest.raises(CodecError) as caught:
        decode(data)
    assert str(caught.value) == "cannot decode checkpoint: unknown field 'z' of type 'tests.store.Point' at $.points[0]"


def test_decoding_a_missing_required_field_names_it() -> None:
    with pytest.raises(CodecError) as caught:
        decode(sealed([{"$c": "tests.store.Point", "y": 1}]))
    assert str(caught.value) == "cannot decode checkpoint: missing field 'x' of type 'tests.store.Point' at $[0]"


def test_decoding_an_unknown_field_of_a_pydantic_model_is_refused_unless_it_allows_extras() -> None:
    with pytest.raises(CodecError, match=r"unknown field 'age' of type 'tests.store.Customer' at \$$"):
        decode(sealed({"$c": "tests.store.Customer", "name": "Ada", "age": 3}))
    assert decode(sealed({"$c": "tests.store.Loose", "kind": "k", "age": 3})) == Loose.model_validate(
        {"kind": "k", "age": 3}
    )


def test_decoding_data_a_pydantic_model_rejects_names_the_field() -> None:
    with pytest.raises(CodecError) as caught:
        decode(sealed({"customers": [{"$c": "tests.store.Customer", "name": "Ada", "scores": ["x"]}]}))
    assert str(caught.value) == (
        "cannot decode checkpoint: type 'tests.store.Customer' rejected the data: scores.0: Input should be a valid "
        "integer, unable to parse string as an integer at $.customers[0]"
    )


@dataclass(slots=True, kw_only=True)
class Positive:
    n: int

    def __post_init__(self) -> None:
        if self.n < 1:
            raise UserError(f"expected a positive n, got {self.n}")


register_type(Positive, "tests.store.Positive")


def test_decoding_data_a_dataclass_rejects_names_the_type() -> None:
    with pytest.raises(CodecError) as caught:
        decode(sealed({"m": {"$c": "tests.store.Positive", "n": 0}}))
    assert str(caught.value) == (
        "cannot decode checkpoint: type 'tests.store.Positive' rejected the data: UserError: expected a positive n, "
        "got 0 at $.m"
    )


def test_a_value_outside_a_literal_field_is_a_wrong_type_before_the_class_sees_it() -> None:
    with pytest.raises(CodecError) as caught:
        decode(sealed({"m": {"$c": "Message", "role": "robot"}}))
    assert str(caught.value) == (
        "cannot decode checkpoint: wrong type for Message.role: expected Literal['system', 'user', 'assistant', "
        "'tool'], got str 'robot' at $.m.role"
    )


@pytest.mark.parametrize(
    ("tree", "message"),
    [
        ({"x": {"$t": "tuple", "v": "abc"}}, "malformed tuple value: expected a JSON array, got string at $.x"),
        ({"$t": "tuple"}, "malformed tuple value: expected the keys '$t' and 'v', got ['$t'] at $"),
        ([{"$t": "complex", "v": 1}], "unknown value tag 'complex' at $[0]"),
        ([{"$t": 5, "v": 1}], "unknown value tag 5 at $[0]"),
        ([{"$c": 5}], "malformed class tag: expected a type name, got integer at $[0]"),
        ({"b": {"$t": "bytes", "v": "***"}}, "malformed bytes value: not base64 at $.b"),
        (
            {"d": {"$t": "datetime", "v": "yesterday"}},
            "malformed datetime value: 'yesterday' is not an ISO 8601 datetime at $.d",
        ),
        (
            {"f": {"$t": "float", "v": "1.5"}},
            "malformed float value: expected 'nan', 'inf' or '-inf', got '1.5' at $.f",
        ),
        (
            {"t": {"$t": "timedelta", "v": [1, 2]}},
            "malformed timedelta value: expected [days, seconds, microseconds], got [1, 2] at $.t",
        ),
        ({"s": {"$t": "set", "v": [1, [2]]}}, "set element of unhashable type 'list' at $.s[1]"),
        ({"k": {"$t": "dict", "v": [[[1], 2]]}}, "dict key of unhashable type 'list' at $.k[key 0]"),
        (
            {"k": {"$t": "dict", "v": [[1, 2, 3]]}},
            "malformed dict entry: expected a [key, value] array, got array at $.k[key 0]",
        ),
        (
            {"k": {"$t": "dict", "v": [[1, {"$c": "Nope"}]]}},
            "unknown type 'Nope' at $.k[1] (register it with batonflow.codec.register_type)",
        ),
        ({"e": {"$c": "tests.store.Color", "v": "blue"}}, "'blue' is not a member of enum 'tests.store.Color' at $.e"),
        (
            {"e": {"$c": "tests.store.Color"}},
            "malformed member of enum 'tests.store.Color': expected the keys '$c' and 'v', got ['$c'] at $.e",
        ),
        (
            {"p": {"$c": "tests.store.Point", "x": {"$t": "tuple", "v": 1}}},
            "malformed tuple value: expected a JSON array, got integer at $.p.x",
        ),
    ],
)
def test_decoding_a_wrong_shape_names_the_problem_and_the_path(tree: Any, message: str) -> None:
    with pytest.raises(CodecError) as caught:
        decode(sealed(tree))
    assert str(caught.value) == f"cannot decode checkpoint: {message}"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "corrupt payload: truncated header (0 bytes; a payload has at least 9)"),
        (b"BFC\x01\x00", "corrupt payload: truncated header (5 bytes; a payload has at least 9)"),
        (b"PK\x03\x04 a zip file", "corrupt payload: not a batonflow payload (bad magic prefix)"),
        (b'{"a": 1}', "corrupt payload: not a batonflow payload (bad magic prefix)"),
        (seal(b"{}")[:-1], "corrupt payload: checksum mismatch (the data was truncated or altered)"),
        (seal(b"{}") + b" ", "corrupt payload: checksum mismatch (the data was truncated or altered)"),
        (seal(b"{}", flags=0x80), "corrupt payload: unknown flags 0x80"),
        (seal(b"not json"), "corrupt payload: invalid JSON body: Expecting value: line 1 column 1 (char 0)"),
        (seal(b"[NaN]"), "corrupt payload: invalid JSON body: NaN is not JSON"),
        (
            seal(b"\xff\xfe"),
            "corrupt payload: invalid JSON body: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte",
        ),
        (
            seal(b"not zlib", flags=1),
            "corrupt payload: cannot decompress the body: Error -3 while decompressing data: incorrect header check",
        ),
        (
            seal(zlib.compress(b"{}")[:-2], flags=1),
            "corrupt payload: the compressed body is incomplete or followed by stray bytes",
        ),
        (
            seal(zlib.compress(b"{}") + b"x", flags=1),
            "corrupt payload: the compressed body is incomplete or followed by stray bytes",
        ),
    ],
)
def test_decoding_corrupt_bytes_says_so(data: bytes, message: str) -> None:
    with pytest.raises(CodecError) as caught:
        decode(data)
    assert str(caught.value) == f"cannot decode checkpoint: {message}"


def test_decoding_something_that_is_not_bytes_is_a_codec_error() -> None:
    with pytest.raises(CodecError, match=r"^cannot decode checkpoint: expected bytes, got str$"):
        decode("BFC")  # type: ignore[arg-type]


def test_decoding_very_deep_nesting_fails_cleanly() -> None:
    with pytest.raises(CodecError, match=r"^cannot decode checkpoint: "):
        decode(seal(b"[" * 100_000 + b"]" * 100_000))


def test_memoryview_and_bytearray_payloads_decode() -> None:
    data = encode({"a": (1,)})
    assert decode(bytearray(data)) == {"a": (1,)}
    assert decode(memoryview(data)) == {"a": (1,)}


def test_a_datetime_with_a_sub_second_utc_offset_keeps_its_offset() -> None:
    moment = datetime(2000, 1, 1, tzinfo=timezone(timedelta(microseconds=1)))
    back = decode(encode(moment))
    assert back == moment
    assert back.utcoffset() == timedelta(microseconds=1)

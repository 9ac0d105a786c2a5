"""Shared objects: a message is written once per payload, and an unchanged one is not encoded again.

Version 2 payloads number messages and recorded events and refer back to one met again; the encoder re-uses the
text of a shared object it remembers when the object still fits the tree it was written as or read from. These
tests pin both, the refusals of references that do not fit, and that nothing changed in place is ever written as
it was.
"""

from __future__ import annotations

import copy
import json
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from batonflow.adk import ChatModelAgent, ReactState, Runner, RunStep, SessionEvent
from batonflow.codec import CACHE_SIZE, CODEC_VERSION, decode, encode, encode_async, encode_cache, register_type
from batonflow.errors import CodecError
from batonflow.schema import FunctionCall, Message, ResponseMeta, TextPart, ToolCall, Usage, assistant, user
from batonflow.store import MemoryCheckpointStore
from batonflow.testing import FunctionModel
from batonflow.tools import ToolContext, tool

cache = encode_cache


@dataclass(slots=True, kw_only=True)
class Saved:
    """Shaped like the runtime's checkpoint: the root messages, the recorded events, the loop state."""

    root_messages: list[Message]
    events: list[SessionEvent] = field(default_factory=list)
    state: ReactState | None = None


register_type(Saved, "tests.store.share.Saved")


def plain(message: Message) -> bytes:
    """The JSON a message is written as on its own."""
    return body_of(encode(message))


def body_of(data: bytes) -> bytes:
    return zlib.decompress(data[9:]) if data[4] & 1 else data[9:]


def seal(body: bytes, version: int = CODEC_VERSION) -> bytes:
    """The envelope as the codec documents it: from version 2 on, the CRC-32 covers version, flags and body."""
    covered = b"\x00" if version == 1 else bytes((version, 0))
    return b"BFC" + bytes((version, 0)) + zlib.crc32(body, zlib.crc32(covered)).to_bytes(4, "big") + body


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    size = cache.size
    cache.clear()
    cache.size = CACHE_SIZE
    yield
    cache.clear()
    cache.size = size


def calling(n: int) -> Message:
    return assistant(
        f"step {n}",
        tool_calls=[ToolCall(index=0, id=f"call_{n}", function=FunctionCall(name="look", arguments=f'{{"n": {n}}}'))],
    )


def checkpoint(turns: int) -> Saved:
    """Shaped as the runtime saves one: every message in the recorded events and in the loop state's transcript."""
    question = user("where is my parcel?")
    transcript = [question]
    events = []
    path = (RunStep("support"),)
    for n in range(turns):
        for message in (calling(n), Message(role="tool", content=f"result {n}", tool_call_id=f"call_{n}")):
            transcript.append(message)
            events.append(SessionEvent(agent_name="support", run_path=path, message=message, ts=n))
    state = ReactState(messages=list(transcript), remaining=5, pending=transcript[-2] if turns else None, turn=turns)
    return Saved(root_messages=[question], events=events, state=state)


# -- written once --------------------------------------------------------------------------------------------------


def test_a_message_met_again_is_a_reference_and_decodes_to_the_same_object() -> None:
    message = user("hi")
    data = encode([message, {"again": message}])
    assert data[3] == CODEC_VERSION == 2
    assert json.loads(body_of(data)) == [
        {"$c": "Message", "role": "user", "content": "hi"},
        {"again": {"$t": "ref", "v": 0}},
    ]
    decoded = decode(data)
    assert decoded == [message, {"again": message}]
    assert decoded[0] is decoded[1]["again"]


def test_a_checkpoint_holds_each_message_once() -> None:
    value = checkpoint(30)
    text = body_of(encode(value)).decode()
    for n in range(30):
        assert text.count(f'"step {n}"') == 1 and text.count(f'"result {n}"') == 1
    decoded = decode(encode(value))
    assert decoded == value
    state = decoded.state
    assert all(a is b.message for a, b in zip(state.messages[1:], decoded.events, strict=True))
    assert state.messages[0] is decoded.root_messages[0] and state.pending is state.messages[-2]


def test_the_loop_states_transcript_adds_references_not_copies() -> None:
    value = checkpoint(100)
    with_transcript = len(body_of(encode(value)))
    state = value.state
    assert state is not None
    messages = state.messages
    state.messages, state.pending = [], None
    without = len(body_of(encode(value)))
    once = sum(len(plain(m)) for m in messages)
    # A copy of each message would cost ``once``; a reference is some 20 bytes.
    assert with_transcript - without < once / 4


async def test_a_run_of_the_runtime_saves_each_message_once() -> None:
    @tool(threaded=False)
    def approve(ctx: ToolContext, step: int) -> str:
        """Approve a step; the last one waits for a person."""
        if step == 20 and not ctx.get_interrupt_state().was_interrupted:
            ctx.interrupt("approve?")
        return f"approved {step}"

    def model(messages: list[Message], tools: Any) -> Message:
        step = len(messages) // 2 + 1
        call = FunctionCall(name="approve", arguments=json.dumps({"step": step}))
        return assistant(f"asking {step}", tool_calls=[ToolCall(index=0, id=f"c{step}", function=call)])

    store = MemoryCheckpointStore()
    agent = ChatModelAgent(name="support", model=FunctionModel(model), tools=[approve], max_iterations=50)
    async for event in Runner(agent, checkpoint_store=store).run([user("go")], checkpoint_id="c"):
        assert event.error is None
    data = await store.get("c")
    assert data is not None and data[3] == 2
    text = body_of(data).decode()
    for step in range(1, 20):
        assert text.count(f'"asking {step}"') == 1 and text.count(f'"approved {step}"') == 1


def test_a_payload_without_references_is_version_1_byte_for_byte() -> None:
    value = {"messages": [user("a"), assistant("b")], "n": 1.5, "t": (1, "x"), "s": {2}}
    data = encode(value)
    assert data[3] == 1
    assert body_of(data) == (  # the value tree, as release 0.1.0 wrote it
        b'{"messages":[{"$c":"Message","role":"user","content":"a"},{"$c":"Message","role":"assistant",'
        b'"content":"b"}],"n":1.5,"t":{"$t":"tuple","v":[1,"x"]},"s":{"$t":"set","v":[2]}}'
    )


# -- references that do not fit ----------------------------------------------------------------------------------


def test_a_reference_in_a_version_1_payload_is_refused() -> None:
    body = b'[{"$c":"Message","role":"user"},{"$t":"ref","v":0}]'
    with pytest.raises(CodecError) as caught:
        decode(seal(body, version=1))
    assert str(caught.value) == "cannot decode checkpoint: unknown value tag 'ref' at $[1]"
    assert decode(seal(body))[1] == user("")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            b'[{"$t":"ref","v":0}]',
            "malformed ref value: expected the number of a shared object written before it (there is none), got 0 "
            "at $[0]",
        ),
        (
            b'[{"$c":"Message","role":"user"},{"$t":"ref","v":1}]',
            "malformed ref value: expected the number of a shared object written before it (0 to 0), got 1 at $[1]",
        ),
        (
            b'[{"$c":"Message","role":"user"},{"$t":"ref","v":true}]',
            "malformed ref value: expected the number of a shared object written before it (0 to 0), got True at $[1]",
        ),
        (
            b'[{"$c":"Message","role":"user"},{"$t":"ref","v":0,"w":1}]',
            "malformed ref value: expected the keys '$t' and 'v', got ['$t', 'v', 'w'] at $[1]",
        ),
        (
            b'[{"$c":"SessionEvent","agent_name":"a","run_path":{"$t":"tuple","v":[]},"ts":1},'
            b'{"$c":"SessionEvent","agent_name":"b","run_path":{"$t":"tuple","v":[]},"ts":2,'
            b'"message":{"$t":"ref","v":0}}]',
            "wrong type for SessionEvent.message: expected Message | None, got SessionEvent at $[1].message",
        ),
    ],
)
def test_a_reference_that_does_not_fit_is_a_codec_error_naming_the_place(body: bytes, message: str) -> None:
    with pytest.raises(CodecError) as caught:
        decode(seal(body))
    assert str(caught.value) == f"cannot decode checkpoint: {message}"


def test_the_version_byte_is_covered_by_the_checksum_from_version_2_on() -> None:
    data = bytearray(encode([user("x"), user("y")] * 2))
    assert data[3] == 2
    data[3] = 1
    with pytest.raises(CodecError, match="checksum mismatch"):
        decode(bytes(data))


# -- not encoded again -------------------------------------------------------------------------------------------


def test_encoding_a_checkpoint_again_encodes_only_its_new_messages() -> None:
    value = checkpoint(40)
    first = encode(value)
    assert cache.misses == 81 + 80  # every message, and the event around each
    misses, hits = cache.misses, cache.hits
    assert encode(value) == first
    assert (cache.misses, cache.hits) == (misses, hits + 81 + 80)
    question = user("and now?")
    value.events.append(SessionEvent(agent_name="support", run_path=(RunStep("support"),), message=question, ts=99))
    assert value.state is not None
    value.state.messages.append(question)
    grown = encode(value)
    assert cache.misses == misses + 2  # the new message and its event
    assert decode(grown) == value


def test_a_decoded_checkpoint_is_encoded_again_without_encoding_its_messages() -> None:
    data = encode(checkpoint(40))
    decoded = decode(data)
    misses = cache.misses
    assert encode(decoded) == data
    assert cache.misses == misses


def test_decoded_shared_objects_fit_the_trees_they_were_built_from() -> None:
    # What lets decoding remember them: the constructors keep what they are given, scalars as they are; an object
    # that did not fit would be written afresh, a miss.
    messages = [
        user("plain"),
        user([TextPart(text="a part")], name="ann"),
        calling(3),
        Message(
            role="assistant", content="x", response_meta=ResponseMeta(finish_reason="stop", usage=Usage(total_tokens=3))
        ),
        Message(role="tool", content="r", tool_call_id="c", tool_name="t", extra={"k": [1, 2.5, None, {"d": True}]}),
    ]
    events = [
        SessionEvent(agent_name="a", run_path=(RunStep("a"), RunStep("b")), message=m, ts=i)
        for i, m in enumerate(messages)
    ]
    data = encode([events, messages])
    decoded = decode(data)
    misses = cache.misses
    assert encode(decoded) == data
    assert cache.misses == misses


MUTATIONS: list[tuple[str, Callable[[Message], None]]] = [
    ("content reassigned", lambda m: setattr(m, "content", "changed")),
    ("an equal content of another type", lambda m: m.extra.__setitem__("k", True)),
    ("a number of another type in extra", lambda m: m.extra.__setitem__("n", 1.0)),
    ("minus zero", lambda m: m.extra.__setitem__("z", -0.0)),
    ("a key added to extra", lambda m: m.extra.__setitem__("new", "v")),
    ("extra emptied", lambda m: m.extra.clear()),
    ("keys of extra reordered", lambda m: m.extra.update({"n": m.extra.pop("n")})),
    ("a part appended", lambda m: m.parts.append(TextPart(text="more"))),
    ("a tool call's arguments", lambda m: setattr(m.tool_calls[0].function, "arguments", '{"n": 2}')),
    ("a tool call's index to a bool", lambda m: setattr(m.tool_calls[0], "index", False)),
    ("a tool call removed", lambda m: m.tool_calls.clear()),
    ("usage changed deep inside", lambda m: setattr(m.response_meta.usage, "total_tokens", 9)),  # type: ignore[union-attr]
    ("a tuple in extra", lambda m: m.extra.__setitem__("t", (1, 2))),
    ("a default written out", lambda m: setattr(m, "name", "")),
    ("the role", lambda m: setattr(m, "role", "user")),
]


def mutable_message() -> Message:
    message = calling(1)
    message.extra = {"k": 1, "n": 1, "z": 0.0}
    message.name = "bot"
    message.response_meta = ResponseMeta(finish_reason="tool_calls", usage=Usage(total_tokens=4))
    return message


@pytest.mark.parametrize(("what", "change"), MUTATIONS, ids=[m[0] for m in MUTATIONS])
@pytest.mark.parametrize("remembered", ["written", "decoded"])
def test_a_message_changed_in_place_is_written_afresh(
    what: str, change: Callable[[Message], None], remembered: str
) -> None:
    message = mutable_message()
    value = [SessionEvent(agent_name="a", run_path=(), message=message, ts=1), message]
    if remembered == "decoded":
        value = decode(encode(value))
        message = value[1]
    else:
        encode(value)
    change(message)
    expected = copy.deepcopy(value)
    data = encode(value)
    cache.clear()
    assert data == encode(expected), what  # what a fresh encoder writes for the changed value
    assert decode(data) == value


def test_an_object_that_contains_itself_through_a_message_fails_cleanly() -> None:
    message = user("loop")
    message.extra["self"] = [message]
    with pytest.raises(CodecError, match="nested too deeply or contains itself"):
        encode({"m": message})


def test_lone_surrogates_in_a_shared_message_survive() -> None:
    message = user("a \udc80 b")
    data = encode([message, message])
    assert decode(data) == [message, message]


def test_the_cache_is_off_until_given_a_size() -> None:
    cache.size = 0
    value = checkpoint(5)
    decode(encode(value))
    assert len(cache) == 0 and cache.hits == 0


def test_the_cache_keeps_at_most_its_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache, "size", 50)
    for n in range(10):
        encode(checkpoint(20 + n))
        decode(encode(checkpoint(10)))
        assert len(cache) <= 50


async def test_encode_async_writes_what_encode_writes_compressing_a_large_body_on_a_worker_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    threads: list[int] = []
    compress = zlib.compress

    def recorded(data: bytes, level: int = -1) -> bytes:
        threads.append(threading.get_ident())
        return compress(data, level)

    monkeypatch.setattr(zlib, "compress", recorded)
    small, large = checkpoint(2), checkpoint(400)
    assert await encode_async(small) == encode(small)
    assert await encode_async(large) == encode(large)
    here = threading.get_ident()
    assert threads[0] == here and threads[2] != here  # encode_async's small and large bodies
    assert threads[1] == threads[3] == here  # encode's, on the caller's thread

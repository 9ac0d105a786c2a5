import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batonflow.errors import ConcatError, UserError
from batonflow.schema import (
    FunctionCall,
    Message,
    ResponseMeta,
    Stream,
    ToolCall,
    Usage,
    concat_message_stream,
    concat_messages,
)


def chunk(content: str = "", **kw: object) -> Message:
    return Message(role="assistant", content=content, **kw)  # type: ignore[arg-type]


def test_content_and_reasoning_are_concatenated() -> None:
    msg = concat_messages([chunk("Hel", reasoning_content="th"), chunk("lo", reasoning_content="ink"), chunk("!")])
    assert msg.content == "Hello!"
    assert msg.reasoning_content == "think"


def test_tool_calls_are_merged_by_index_with_arguments_concatenated() -> None:
    msg = concat_messages(
        [
            chunk(tool_calls=[ToolCall(index=1, id="b", function=FunctionCall(name="g", arguments='{"y"'))]),
            chunk(tool_calls=[ToolCall(index=0, id="a", function=FunctionCall(name="f", arguments='{"x":'))]),
            chunk(tool_calls=[ToolCall(index=0, function=FunctionCall(arguments="1}"))]),
            chunk(tool_calls=[ToolCall(index=1, function=FunctionCall(arguments=":2}"))]),
        ]
    )
    assert msg.tool_calls == [
        ToolCall(index=0, id="a", function=FunctionCall(name="f", arguments='{"x":1}')),
        ToolCall(index=1, id="b", function=FunctionCall(name="g", arguments='{"y":2}')),
    ]


def test_tool_calls_without_index_are_kept_unchanged_and_come_first() -> None:
    loose = ToolCall(id="z", function=FunctionCall(name="h", arguments="{}"))
    msg = concat_messages(
        [
            chunk(tool_calls=[ToolCall(index=0, id="a", function=FunctionCall(name="f", arguments="{}"))]),
            chunk(tool_calls=[loose]),
        ]
    )
    assert [c.id for c in msg.tool_calls] == ["z", "a"]


def test_last_non_empty_finish_reason_wins_and_usage_is_max_per_counter() -> None:
    msg = concat_messages(
        [
            chunk("a", response_meta=ResponseMeta(finish_reason="length", usage=Usage(prompt_tokens=5))),
            chunk("b", response_meta=ResponseMeta(finish_reason="stop", usage=Usage(completion_tokens=3))),
            chunk("c", response_meta=ResponseMeta(usage=Usage(prompt_tokens=4, total_tokens=9, cached_tokens=2))),
        ]
    )
    assert msg.response_meta == ResponseMeta(
        finish_reason="stop", usage=Usage(prompt_tokens=5, completion_tokens=3, total_tokens=9, cached_tokens=2)
    )


def test_logprobs_are_appended_and_extra_merged() -> None:
    msg = concat_messages(
        [
            chunk("a", response_meta=ResponseMeta(logprobs=[1]), extra={"t": "ab", "n": 1, "d": {"x": [1]}}),
            chunk("b", response_meta=ResponseMeta(logprobs=[2]), extra={"t": "cd", "n": 2, "d": {"x": [2]}}),
        ]
    )
    assert msg.response_meta is not None
    assert msg.response_meta.logprobs == [1, 2]
    assert msg.extra == {"t": "abcd", "n": 2, "d": {"x": [1, 2]}}


def test_empty_fields_take_the_value_of_later_chunks() -> None:
    msg = concat_messages([Message(role="tool", content="4"), Message(role="tool", content="2", tool_call_id="c")])
    assert (msg.content, msg.tool_call_id) == ("42", "c")


def test_different_roles_are_a_concat_error() -> None:
    with pytest.raises(ConcatError, match="cannot concat messages with different roles: 'assistant' and 'tool'"):
        concat_messages([chunk("a"), Message(role="tool", content="b")])


@pytest.mark.parametrize(
    ("field", "what"), [("name", "names"), ("tool_call_id", "tool call ids"), ("tool_name", "tool names")]
)
def test_mismatched_names_and_ids_are_concat_errors(field: str, what: str) -> None:
    with pytest.raises(ConcatError, match=f"different {what}: 'x' and 'y'"):
        concat_messages([chunk(**{field: "x"}), chunk(**{field: "y"})])


def test_tool_call_chunks_with_different_ids_at_one_index_are_a_concat_error() -> None:
    with pytest.raises(ConcatError, match="tool calls at index 0 with different ids: 'a' and 'b'"):
        concat_messages([chunk(tool_calls=[ToolCall(index=0, id="a")]), chunk(tool_calls=[ToolCall(index=0, id="b")])])


def test_concat_of_nothing_is_a_user_error() -> None:
    with pytest.raises(UserError, match="expected at least one message, got none"):
        concat_messages([])


async def test_concat_message_stream_drains_and_closes_the_stream() -> None:
    stream = Stream.from_list([chunk("a"), chunk("b")])
    assert (await concat_message_stream(stream)).content == "ab"
    assert stream.closed


# -- property: any split of a message into chunks concatenates back to it --------------------------------------

_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)


@st.composite
def messages(draw: st.DrawFn) -> Message:
    calls = [
        ToolCall(
            index=i,
            id=f"call_{i}",
            function=FunctionCall(name=draw(st.from_regex(r"[a-z_]{1,12}", fullmatch=True)), arguments=draw(_text)),
        )
        for i in range(draw(st.integers(0, 3)))
    ]
    usage = Usage(
        prompt_tokens=draw(st.integers(0, 10_000)),
        completion_tokens=draw(st.integers(0, 10_000)),
        total_tokens=draw(st.integers(0, 20_000)),
    )
    return Message(
        role="assistant",
        content=draw(_text),
        reasoning_content=draw(_text),
        tool_calls=calls,
        response_meta=ResponseMeta(finish_reason=draw(st.sampled_from(["stop", "tool_calls", "length"])), usage=usage),
    )


def _cut(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points)]


@st.composite
def splits(draw: st.DrawFn) -> tuple[Message, list[Message]]:
    """A message and one arbitrary way to stream it: every field cut at random points, spread over chunks."""
    msg = draw(messages())
    n = draw(st.integers(1, 8))
    chunks = [Message(role="assistant") for _ in range(n)]

    def spread(pieces: list[str], put: object) -> None:
        slots = sorted(draw(st.lists(st.integers(0, n - 1), min_size=len(pieces), max_size=len(pieces))))
        for slot, piece in zip(slots, pieces, strict=True):
            put(chunks[slot], piece)  # type: ignore[operator]

    cuts = st.lists(st.integers(0, 1000), max_size=6)
    spread(_cut(msg.content, draw(cuts)), lambda c, p: setattr(c, "content", c.content + p))
    spread(
        _cut(msg.reasoning_content, draw(cuts)), lambda c, p: setattr(c, "reasoning_content", c.reasoning_content + p)
    )
    for call in msg.tool_calls:
        pieces = _cut(call.function.arguments, draw(cuts)) or [""]
        head = draw(st.integers(0, n - 1))
        chunks[head].tool_calls.append(
            ToolCall(index=call.index, id=call.id, function=FunctionCall(name=call.function.name))
        )
        spread(
            pieces,
            lambda c, p, i=call.index: c.tool_calls.append(ToolCall(index=i, function=FunctionCall(arguments=p))),
        )
    meta = msg.response_meta
    assert meta is not None and meta.usage is not None
    chunks[-1].response_meta = ResponseMeta(finish_reason=meta.finish_reason, usage=meta.usage)
    # Providers may report running usage totals on earlier chunks too: always lower, never higher.
    chunks[0].response_meta = chunks[0].response_meta or ResponseMeta(
        usage=Usage(prompt_tokens=meta.usage.prompt_tokens)
    )
    return msg, chunks


@given(splits())
def test_any_split_of_a_message_concatenates_back_to_it(case: tuple[Message, list[Message]]) -> None:
    original, chunks = case
    assert concat_messages(chunks) == original

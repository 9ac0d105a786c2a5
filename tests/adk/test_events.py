"""Events: a streamed message can be read as chunks and then still be had whole."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from batonflow.adk import (
    AgentEvent,
    AgentInput,
    ChatModelAgent,
    MessageVariant,
    RunContext,
    Runner,
    collect_events,
    event_from_message,
)
from batonflow.adk.loop import ModelStep
from batonflow.errors import StreamClosedError
from batonflow.schema import Message, Stream, assistant, user
from batonflow.testing import ScriptedModel


def agent(name: str, *answers: Message) -> ChatModelAgent:
    return ChatModelAgent(name=name, model=ScriptedModel(list(answers)))


def streamed(events: list[AgentEvent]) -> list[MessageVariant]:
    return [v for e in events if (v := e.message_output) is not None and v.is_streaming]


async def read_then_join(runner: Runner, prompt: str, *, read: int | None = None) -> list[tuple[list[str], str]]:
    """Each streamed message of a run: the chunks its caller read (all of them, or the first ``read``), then what
    ``get_message()`` gave, asked while the event was the caller's."""
    seen = []
    async for event in runner.query(prompt):
        variant = event.message_output
        if variant is None or not variant.is_streaming:
            continue
        assert variant.message_stream is not None
        chunks = []
        async for chunk in variant.message_stream:
            chunks.append(chunk.content)
            if read is not None and len(chunks) == read:
                break
        seen.append((chunks, (await variant.get_message()).content))
    return seen


async def test_a_streamed_answer_read_to_its_end_can_be_had_whole() -> None:
    runner = Runner(agent("a", assistant("Hello there")), enable_streaming=True)
    [(chunks, whole)] = await read_then_join(runner, "hi")
    assert "".join(chunks) == whole == "Hello there"


async def test_a_streamed_answer_read_in_part_is_had_whole_from_its_first_chunk() -> None:
    runner = Runner(agent("a", assistant("Hello there")), enable_streaming=True)
    [(chunks, whole)] = await read_then_join(runner, "hi", read=2)
    assert len(chunks) == 2 and whole == "Hello there"


class Streams:
    """An agent that streams a message of its own making (not a model's): the flow agent keeps its chunks."""

    name = "streams"
    description = "Streams."

    async def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        yield event_from_message(stream=Stream.from_list([assistant("one "), assistant("two")]))


async def test_a_stream_of_an_agents_own_making_read_to_its_end_can_be_had_whole() -> None:
    [(chunks, whole)] = await read_then_join(Runner(Streams()), "hi")
    assert chunks == ["one ", "two"] and whole == "one two"


async def test_collect_events_joins_streams_the_caller_already_read() -> None:
    runner = Runner(agent("a", assistant("Hello there")), enable_streaming=True)
    events = [event async for event in runner.query("hi")]
    [variant] = streamed(events)
    assert variant.message_stream is not None
    assert "".join([chunk.content async for chunk in variant.message_stream]) == "Hello there"
    joined = await collect_events(Stream.from_list(events))
    assert [v.message for v in streamed(joined)] == [await variant.get_message()]
    assert all(e.error is None for e in joined)


async def test_a_converted_stream_is_had_whole_as_its_reader_saw_it() -> None:
    step = ModelStep(ScriptedModel([assistant("Hello")]))
    reply = await step.stream([user("hi")], None, RunContext(), show=lambda m: assistant(m.content.upper()))
    assert reply is not None
    variant = reply.event.message_output
    assert variant is not None and variant.message_stream is not None
    assert "".join([chunk.content async for chunk in variant.message_stream]) == "HELLO"
    assert (await variant.get_message()).content == "HELLO"  # what the reader saw
    assert (await reply.message()).content == "Hello"  # the agent's own copy


async def test_a_stream_closed_before_its_end_cannot_be_had_whole_and_says_why() -> None:
    runner = Runner(agent("a", assistant("Hello there")), enable_streaming=True)
    async for event in runner.query("hi"):
        variant = event.message_output
        if variant is None or not variant.is_streaming:
            continue
        assert variant.message_stream is not None
        await anext(variant.message_stream)
        await variant.message_stream.aclose()
        with pytest.raises(StreamClosedError) as caught:
            await variant.get_message()
        assert str(caught.value) == (
            "cannot join a streamed message: expected a stream read to its end, got one its reader closed before "
            "the end (call get_message() instead of closing it)"
        )


async def test_a_stream_nobody_kept_that_was_read_cannot_be_joined_and_says_why() -> None:
    variant = MessageVariant(is_streaming=True, message_stream=Stream.from_list([assistant("a"), assistant("b")]))
    assert variant.message_stream is not None
    read: list[Message] = [chunk async for chunk in variant.message_stream]
    assert len(read) == 2
    with pytest.raises(StreamClosedError) as caught:
        await variant.get_message()
    assert str(caught.value) == (
        "cannot join a streamed message: expected its chunks, got none (its stream was read already, by a reader "
        "nobody kept the chunks for, or was empty)"
    )

import asyncio
import gc
import weakref
from collections.abc import AsyncIterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batonflow.errors import StreamClosedError
from batonflow.schema import Stream


class Boom(Exception):
    pass


async def test_from_list_yields_items_in_order_then_ends() -> None:
    stream = Stream.from_list([1, 2, 3])
    assert [x async for x in stream] == [1, 2, 3]
    with pytest.raises(StopAsyncIteration):
        await stream.__anext__()


async def test_close_is_idempotent_and_a_closed_stream_cannot_be_read() -> None:
    stream = Stream.from_list([1, 2])
    await stream.aclose()
    await stream.close()
    assert stream.closed
    with pytest.raises(StreamClosedError, match="cannot read a stream that was closed"):
        await stream.__anext__()


async def test_closing_closes_the_source_generator() -> None:
    finished: list[str] = []

    async def gen() -> AsyncIterator[int]:
        try:
            yield 1
            yield 2
        finally:
            finished.append("closed")

    stream = Stream.from_async_iter(gen())
    assert await stream.__anext__() == 1
    await stream.aclose()
    assert finished == ["closed"]


async def test_pipe_delivers_chunks_then_ends_when_writer_closes() -> None:
    stream, writer = Stream.pipe()

    async def produce() -> None:
        for i in range(3):
            assert writer.send(i)
            await asyncio.sleep(0)
        writer.close()

    task = asyncio.create_task(produce())
    assert [x async for x in stream] == [0, 1, 2]
    await task


async def test_pipe_writer_learns_that_the_reader_closed() -> None:
    stream, writer = Stream.pipe()
    await stream.aclose()
    assert writer.closed
    assert writer.send(1) is False


async def test_errors_are_carried_in_stream_after_the_chunks_before_them() -> None:
    stream, writer = Stream.pipe()
    writer.send("a")
    writer.send_error(Boom("mid-stream"))
    assert await stream.__anext__() == "a"
    with pytest.raises(Boom, match="mid-stream"):
        await stream.__anext__()
    with pytest.raises(StopAsyncIteration):
        await stream.__anext__()


async def test_generator_errors_reach_the_reader() -> None:
    async def gen() -> AsyncIterator[int]:
        yield 1
        raise Boom("from producer")

    stream = Stream.from_async_iter(gen())
    assert await stream.__anext__() == 1
    with pytest.raises(Boom):
        await stream.__anext__()


async def test_convert_maps_chunks_and_skips_those_mapped_to_none() -> None:
    stream = Stream.from_list(range(6)).convert(lambda x: x * 10 if x % 2 == 0 else None)
    assert await stream.collect() == [0, 20, 40]


async def test_converted_stream_takes_over_the_source() -> None:
    original = Stream.from_list([1])
    converted = original.convert(str)
    with pytest.raises(StreamClosedError, match="was converted"):
        await original.__anext__()
    assert await converted.collect() == ["1"]


async def test_copy_gives_independent_readers_and_spends_the_original() -> None:
    original = Stream.from_list("abc")
    a, b = original.copy(2)
    with pytest.raises(StreamClosedError, match="cannot read a stream that was copied"):
        await original.__anext__()
    with pytest.raises(StreamClosedError, match="cannot copy a stream that was copied"):
        original.copy(2)
    assert await a.collect() == ["a", "b", "c"]
    assert await b.collect() == ["a", "b", "c"]


async def test_copy_of_fewer_than_two_is_the_stream_itself() -> None:
    stream = Stream.from_list([1])
    assert stream.copy(1) == [stream]


async def test_copy_delivers_a_producer_error_to_every_reader_at_the_same_position() -> None:
    async def gen() -> AsyncIterator[int]:
        yield 1
        raise Boom

    readers = Stream.from_async_iter(gen()).copy(3)
    for reader in readers:
        assert await reader.__anext__() == 1
        with pytest.raises(Boom):
            await reader.__anext__()


async def test_copy_closes_the_source_only_when_every_copy_closed() -> None:
    closed: list[bool] = []

    async def gen() -> AsyncIterator[int]:
        try:
            while True:
                yield 1
        finally:
            closed.append(True)

    a, b = Stream.from_async_iter(gen()).copy(2)
    await a.__anext__()
    await b.__anext__()
    await a.aclose()
    assert closed == []
    assert await b.__anext__() == 1
    await b.aclose()
    assert closed == [True]


@settings(max_examples=60, deadline=None)
@given(
    items=st.lists(st.integers(), max_size=30),
    n=st.integers(2, 5),
    paces=st.lists(st.integers(0, 3), min_size=5, max_size=5),
)
def test_copies_read_at_different_paces_all_see_the_same_sequence(items: list[int], n: int, paces: list[int]) -> None:
    async def scenario() -> list[list[int]]:
        stream, writer = Stream.pipe()

        async def produce() -> None:
            for item in items:
                writer.send(item)
                await asyncio.sleep(0)
            writer.close()

        async def read(reader: Stream[int], pace: int) -> list[int]:
            seen = []
            async for item in reader:
                seen.append(item)
                for _ in range(pace):
                    await asyncio.sleep(0)
            return seen

        readers = stream.copy(n)
        producer = asyncio.create_task(produce())
        results = await asyncio.gather(*(read(r, paces[i]) for i, r in enumerate(readers)))
        await producer
        return list(results)

    assert asyncio.run(scenario()) == [items] * n


async def test_merge_yields_chunks_in_arrival_order() -> None:
    (s1, w1), (s2, w2) = Stream.pipe(), Stream.pipe()
    merged = Stream.merge([s1, s2])
    w1.send("a1")
    assert await merged.__anext__() == "a1"
    w2.send("b1")
    assert await merged.__anext__() == "b1"
    w1.send("a2")
    w1.close()
    assert await merged.__anext__() == "a2"
    w2.send("b2")
    w2.close()
    assert [x async for x in merged] == ["b2"]


async def test_merge_of_nothing_is_empty() -> None:
    assert await Stream.merge([]).collect() == []


async def test_merge_surfaces_a_source_error() -> None:
    s1, w1 = Stream.pipe()
    w1.send_error(Boom("left"))
    merged = Stream.merge([s1, Stream.from_list([])])
    with pytest.raises(Boom, match="left"):
        await merged.collect()


async def test_merge_close_cancels_its_tasks_and_closes_sources() -> None:
    (s1, w1), (s2, w2) = Stream.pipe(), Stream.pipe()
    merged = Stream.merge([s1, s2])
    w1.send(1)
    assert await merged.__anext__() == 1
    before = len(asyncio.all_tasks())
    await merged.aclose()
    assert len(asyncio.all_tasks()) == before - 2
    assert w1.closed and w2.closed


async def test_abandoned_pipe_stream_tells_the_writer() -> None:
    stream, writer = Stream.pipe()
    writer.send(1)
    del stream
    gc.collect()
    assert writer.closed
    assert writer.send(2) is False


async def test_abandoned_copies_tell_the_writer_once_all_are_gone() -> None:
    stream, writer = Stream.pipe()
    a, b = stream.copy(2)
    del stream, a
    gc.collect()
    assert not writer.closed
    del b
    gc.collect()
    assert writer.closed


async def test_abandoned_generator_stream_is_finalised() -> None:
    finished = asyncio.Event()

    async def gen() -> AsyncIterator[int]:
        try:
            while True:
                yield 1
        finally:
            finished.set()

    stream = Stream.from_async_iter(gen())
    await stream.__anext__()
    del stream
    gc.collect()
    await asyncio.wait_for(finished.wait(), 1)


async def test_tap_gives_a_reader_every_chunk_and_the_whole_to_the_tap() -> None:
    reader, tap = Stream.from_list([1, 2, 3]).tap()
    assert [x async for x in reader] == [1, 2, 3]
    assert await tap.chunks() == [1, 2, 3]


async def test_tap_whole_can_be_taken_before_the_reader_reads() -> None:
    reader, tap = Stream.from_list("abc").tap()
    assert await tap.chunks() == ["a", "b", "c"]
    assert await reader.collect() == ["a", "b", "c"]


async def test_a_reader_closing_early_does_not_stop_the_tap_and_the_source_closes_after_both() -> None:
    closed: list[bool] = []

    async def gen() -> AsyncIterator[int]:
        try:
            for i in range(4):
                yield i
        finally:
            closed.append(True)

    reader, tap = Stream.from_async_iter(gen()).tap()
    assert await reader.__anext__() == 0
    await reader.aclose()
    assert closed == []
    assert await tap.chunks() == [0, 1, 2, 3]
    assert closed == [True]


async def test_a_source_failure_reaches_the_tap_and_the_reader_at_its_position() -> None:
    async def gen() -> AsyncIterator[str]:
        yield "partial"
        raise Boom("cut")

    reader, tap = Stream.from_async_iter(gen()).tap()
    assert await reader.__anext__() == "partial"
    with pytest.raises(Boom, match="cut"):
        await tap.chunks()
    with pytest.raises(Boom, match="cut"):
        await reader.__anext__()


async def test_keep_gives_every_chunk_read_once_the_reader_reached_the_end() -> None:
    reader, kept = Stream.from_list([1, 2, 3]).keep()
    assert kept.kept() is None  # nothing read yet
    assert await reader.__anext__() == 1
    assert kept.kept() is None  # not at the end
    assert [x async for x in reader] == [2, 3]
    assert kept.kept() == [1, 2, 3]


async def test_keep_closes_the_source_with_its_reader() -> None:
    closed: list[bool] = []

    async def gen() -> AsyncIterator[int]:
        try:
            for i in range(4):
                yield i
        finally:
            closed.append(True)

    reader, kept = Stream.from_async_iter(gen()).keep()
    assert await reader.__anext__() == 0
    await reader.aclose()
    assert closed == [True] and kept.kept() is None


async def test_kept_raises_the_failure_the_reader_saw() -> None:
    async def gen() -> AsyncIterator[str]:
        yield "partial"
        raise Boom("cut")

    reader, kept = Stream.from_async_iter(gen()).keep()
    with pytest.raises(Boom, match="cut"):
        await reader.collect()
    with pytest.raises(Boom, match="cut"):
        kept.kept()


async def test_abandoned_tap_reader_and_taken_whole_close_a_pipe() -> None:
    stream, writer = Stream.pipe()
    reader, tap = stream.tap()
    del reader
    gc.collect()
    assert not writer.closed  # the tap still wants the rest
    writer.send(1)
    writer.close()
    assert await tap.chunks() == [1]


class _Chunk:
    """A chunk that can be watched (a weak reference says when it is gone)."""

    __slots__ = ("__weakref__", "n")

    def __init__(self, n: int) -> None:
        self.n = n


@pytest.mark.parametrize("how", ["tap", "keep"])
async def test_the_chunks_of_a_tapped_or_kept_stream_go_with_it_without_the_garbage_collector(how: str) -> None:
    # A reader that referred to itself (a cycle) kept its chunks until the collector ran: with a thousand streams
    # going at once, a full collection every few hundred runs.
    chunks = [_Chunk(i) for i in range(3)]
    watched = [weakref.ref(c) for c in chunks]
    gc.disable()
    try:
        reader, tap = getattr(Stream.from_list(chunks), how)()
        del chunks
        assert [c.n async for c in reader] == [0, 1, 2]
        if how == "tap":
            assert [c.n for c in await tap.chunks()] == [0, 1, 2]
        else:
            assert [c.n for c in tap.kept()] == [0, 1, 2]
        del reader, tap
        assert [w() for w in watched] == [None, None, None]
    finally:
        gc.enable()


async def test_a_kept_stream_taken_over_part_way_reads_on_from_where_its_reader_stood() -> None:
    reader, tap = Stream.from_list([1, 2, 3, 4]).keep()
    assert await anext(reader) == 1
    doubled = reader.convert(lambda n: n * 2)
    assert [n async for n in doubled] == [4, 6, 8]
    assert tap.kept() == [1, 2, 3, 4]

import asyncio

import pytest

from batonflow.errors import UserError
from batonflow.models import ChatModel, ForcedTool, ModelSettings
from batonflow.schema import FunctionCall, Message, ResponseMeta, ToolCall, Usage, assistant, concat_messages, user
from batonflow.testing import BlackholeProxy, FunctionModel, ScriptedModel, split_message
from batonflow.tools import ToolInfo

WEATHER = ToolInfo(name="weather", description="Weather for a city.", parameters={"type": "object"})


class Boom(Exception):
    pass


def test_fakes_are_chat_models() -> None:
    assert isinstance(ScriptedModel([]), ChatModel)
    assert isinstance(FunctionModel(lambda m, t: assistant("x")), ChatModel)


async def test_scripted_model_answers_in_order_and_records_each_request() -> None:
    model = ScriptedModel([assistant("one"), assistant("two")])
    settings = ModelSettings(temperature=0)
    first = await model.generate([user("a")], tools=[WEATHER], tool_choice=ForcedTool("weather"), settings=settings)
    second = await model.generate([user("a"), first, user("b")])
    assert (first.content, second.content) == ("one", "two")
    assert [m.content for m in model.requests[1].messages] == ["a", "one", "b"]
    assert model.requests[0].tools == [WEATHER]
    assert model.requests[0].tool_choice == ForcedTool("weather")
    assert model.requests[0].settings is settings
    assert model.requests[1].tools == []
    model.assert_complete()


async def test_scripted_model_raises_scripted_exceptions() -> None:
    model = ScriptedModel([Boom("provider down"), assistant("ok")])
    with pytest.raises(Boom, match="provider down"):
        await model.generate([user("a")])
    assert (await model.generate([user("a")])).content == "ok"


async def test_scripted_model_beyond_its_script_is_a_user_error() -> None:
    model = ScriptedModel([assistant("only")])
    await model.generate([])
    with pytest.raises(UserError, match="expected at most 1 calls, got call 2"):
        await model.generate([])


def test_assert_complete_fails_while_responses_are_left() -> None:
    with pytest.raises(AssertionError, match="1 of 1 responses left"):
        ScriptedModel([assistant("unused")]).assert_complete()


async def test_scripted_stream_splits_the_answer_into_chunks_that_concat_back() -> None:
    answer = Message(
        role="assistant",
        content="It is sunny in Paris today.",
        tool_calls=[ToolCall(index=0, id="c1", function=FunctionCall(name="weather", arguments='{"city": "Paris"}'))],
        response_meta=ResponseMeta(finish_reason="tool_calls", usage=Usage(prompt_tokens=3, total_tokens=5)),
    )
    model = ScriptedModel([answer])
    chunks = await model.stream([user("weather?")], tools=[WEATHER]).collect()
    assert len(chunks) > 6
    assert concat_messages(chunks) == answer
    assert model.requests[0].streaming is True


async def test_scripted_stream_with_explicit_chunks_can_fail_mid_stream() -> None:
    model = ScriptedModel([[assistant("par"), assistant("tial"), Boom("cut off")]])
    stream = model.stream([user("a")])
    assert (await stream.__anext__()).content == "par"
    assert (await stream.__anext__()).content == "tial"
    with pytest.raises(Boom, match="cut off"):
        await stream.__anext__()


async def test_scripted_stream_requests_nothing_until_read() -> None:
    model = ScriptedModel([assistant("a")])
    stream = model.stream([user("x")])
    assert model.remaining == 1
    await stream.collect()
    assert model.remaining == 0


async def test_fakes_refuse_a_forced_tool_they_were_not_given() -> None:
    with pytest.raises(UserError, match="expected one of \\['weather'\\], got 'search'"):
        await ScriptedModel([assistant("x")]).generate([], tools=[WEATHER], tool_choice=ForcedTool("search"))


async def test_function_model_calls_sync_and_async_functions() -> None:
    def echo(messages: list[Message], tools: list[ToolInfo]) -> Message:
        return assistant(f"{messages[-1].content} ({len(tools)} tools)")

    async def aecho(messages: list[Message], tools: list[ToolInfo]) -> Message:
        return assistant(messages[-1].content.upper())

    assert (await FunctionModel(echo).generate([user("hi")], tools=[WEATHER])).content == "hi (1 tools)"
    model = FunctionModel(aecho)
    assert concat_messages(await model.stream([user("hey you")]).collect()).content == "HEY YOU"
    assert model.requests[0].messages == [user("hey you")]


async def test_function_model_that_returns_no_message_is_a_user_error() -> None:
    with pytest.raises(UserError, match="must return a Message, got str"):
        await FunctionModel(lambda m, t: "text").generate([])  # type: ignore[arg-type,return-value]


def test_split_message_keeps_words_whole() -> None:
    assert [c.content for c in split_message(assistant("a bb  ccc"))[1:]] == ["a", " bb", "  ccc"]


async def test_push_model_streams_what_the_test_pushes_and_refuses_misuse() -> None:
    from batonflow.testing import PushModel

    model = PushModel()
    stream = model.stream([user("hi")])
    model.push(assistant("a"))
    assert (await stream.__anext__()).content == "a"
    model.fail(Boom("gone"))
    with pytest.raises(Boom, match="gone"):
        await stream.__anext__()
    with pytest.raises(UserError, match="expected one stream\\(\\) call, got call 2"):
        model.stream([user("again")])
    with pytest.raises(UserError, match="only streams"):
        await model.generate([user("x")])
    assert isinstance(model, ChatModel)


# -- BlackholeProxy ------------------------------------------------------------------------------------------------------


async def _echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(1024):
        writer.write(data)
        await writer.drain()
    writer.close()


async def test_blackhole_proxy_forwards_holds_everything_while_blackholed_and_delivers_it_late() -> None:
    server = await asyncio.start_server(_echo, "127.0.0.1", 0)
    async with server, BlackholeProxy("127.0.0.1", server.sockets[0].getsockname()[1]) as proxy:
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        writer.write(b"ping")
        assert await reader.readexactly(4) == b"ping"
        proxy.blackhole()
        assert proxy.blackholed
        writer.write(b"lost?")
        late = asyncio.create_task(reader.readexactly(5))
        # A new connection is accepted as well, and gets nothing either.
        reader2, writer2 = await asyncio.open_connection("127.0.0.1", proxy.port)
        writer2.write(b"hello")
        late2 = asyncio.create_task(reader2.readexactly(5))
        await asyncio.sleep(0.2)
        assert not late.done() and not late2.done()
        assert not writer.is_closing()
        proxy.heal()
        assert await late == b"lost?"  # held, not dropped: what TCP's retransmissions would deliver
        assert await late2 == b"hello"
        assert proxy.accepted == 2
        writer.close()
        writer2.close()


async def test_blackhole_proxy_closing_closes_its_connections() -> None:
    server = await asyncio.start_server(_echo, "127.0.0.1", 0)
    async with server:
        proxy = BlackholeProxy("127.0.0.1", server.sockets[0].getsockname()[1])
        with pytest.raises(UserError, match=r"not started; call start\(\) first"):
            _ = proxy.port
        await proxy.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        proxy.blackhole()
        await proxy.close()
        assert await reader.read() == b""  # the client sees the connection end
        writer.close()

"""Fakes for tests: models that answer from a script or a function, and record what they were asked.

``ScriptedModel`` and ``FunctionModel`` are full ``ChatModel``\\s: they stream (each answer split into word-sized
chunks), validate ``tool_choice`` like a provider and raise scripted exceptions where a provider would.
``BlackholeProxy`` stands between a client and a server on loopback and can cut the network silently, to test what
a store (or anything else) does when a partition leaves its connections open and unanswered.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Self, TypeAlias

from .adk import Agent, Branch, BranchResult, run_branch
from .codec import decode_json, encode_json
from .errors import UserError
from .models import ModelSettings, ToolChoice, check_tool_choice
from .schema import FunctionCall, Message, MessageStream, ResponseMeta, Stream, ToolCall, concat_messages
from .tools import ToolInfo

__all__ = [
    "BlackholeProxy",
    "CodecDispatcher",
    "FunctionModel",
    "ModelRequest",
    "PushModel",
    "ScriptStep",
    "ScriptedModel",
    "split_message",
    "tool_calls",
]

ScriptStep: TypeAlias = Message | BaseException | Sequence[Message | BaseException]
"""One scripted answer: a message, an exception to raise, or explicit stream chunks (an exception among them is
raised at that point of the stream)."""


@dataclass(slots=True, kw_only=True)
class ModelRequest:
    """What a fake model was asked, one per call."""

    messages: list[Message]
    tools: list[ToolInfo] = field(default_factory=list)
    tool_choice: ToolChoice | None = None
    settings: ModelSettings | None = None
    streaming: bool = False


class _RecordingModel:
    model_name: str

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    def _record(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolInfo] | None,
        tool_choice: ToolChoice | None,
        settings: ModelSettings | None,
        streaming: bool,
    ) -> ModelRequest:
        check_tool_choice(tools, tool_choice)
        request = ModelRequest(
            messages=list(messages),
            tools=list(tools or ()),
            tool_choice=tool_choice,
            settings=settings,
            streaming=streaming,
        )
        self.requests.append(request)
        return request


class ScriptedModel(_RecordingModel):
    """Answers each call with the next step of ``responses``; a call beyond the script is a ``UserError``."""

    def __init__(self, responses: Sequence[ScriptStep], *, model_name: str = "scripted") -> None:
        super().__init__()
        self.model_name = model_name
        self._script = list(responses)
        self._next = 0

    def _step(self) -> ScriptStep:
        if self._next >= len(self._script):
            raise UserError(
                f"ScriptedModel has no response left: expected at most {len(self._script)} calls, "
                f"got call {self._next + 1}"
            )
        step = self._script[self._next]
        self._next += 1
        return step

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> Message:
        self._record(messages, tools, tool_choice, settings, streaming=False)
        step = self._step()
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, Message):
            return step
        for item in step:
            if isinstance(item, BaseException):
                raise item
        return concat_messages([m for m in step if isinstance(m, Message)])

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> MessageStream:
        self._record(messages, tools, tool_choice, settings, streaming=True)
        return Stream.from_async_iter(self._stream_step())

    async def _stream_step(self) -> AsyncIterator[Message]:
        step = self._step()
        if isinstance(step, BaseException):
            raise step
        chunks = split_message(step) if isinstance(step, Message) else step
        for chunk in chunks:
            if isinstance(chunk, BaseException):
                raise chunk
            yield chunk

    @property
    def remaining(self) -> int:
        return len(self._script) - self._next

    def assert_complete(self) -> None:
        """Fail unless every scripted response was used."""
        if self.remaining:
            raise AssertionError(
                f"ScriptedModel was not used up: {self.remaining} of {len(self._script)} responses left"
            )


class PushModel(_RecordingModel):
    """A model with one streamed answer that the test writes chunk by chunk (``push``, then ``finish`` or ``fail``),
    to see what reaches a caller before the model is done."""

    def __init__(self, *, model_name: str = "push") -> None:
        super().__init__()
        self.model_name = model_name
        self._stream, self._writer = Stream.pipe()

    def push(self, chunk: Message) -> None:
        self._writer.send(chunk)

    def finish(self) -> None:
        self._writer.close()

    def fail(self, error: BaseException) -> None:
        self._writer.send_error(error)

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> Message:
        raise UserError("PushModel only streams: expected a stream() call, got generate()")

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> MessageStream:
        if self.requests:
            raise UserError(f"PushModel has one answer: expected one stream() call, got call {len(self.requests) + 1}")
        self._record(messages, tools, tool_choice, settings, streaming=True)
        return self._stream


ModelFunction: TypeAlias = Callable[[list[Message], list[ToolInfo]], Message | Awaitable[Message]]


class FunctionModel(_RecordingModel):
    """Answers each call with ``fn(messages, tools)`` (sync or async)."""

    def __init__(self, fn: ModelFunction, *, model_name: str = "function") -> None:
        super().__init__()
        self.model_name = model_name
        self._fn = fn

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> Message:
        request = self._record(messages, tools, tool_choice, settings, streaming=False)
        return await self._call(request)

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> MessageStream:
        request = self._record(messages, tools, tool_choice, settings, streaming=True)
        return Stream.from_async_iter(self._stream(request))

    async def _call(self, request: ModelRequest) -> Message:
        result = self._fn(list(request.messages), list(request.tools))
        if inspect.isawaitable(result):
            result = await result
        if not isinstance(result, Message):
            raise UserError(f"FunctionModel function must return a Message, got {type(result).__name__}")
        return result

    async def _stream(self, request: ModelRequest) -> AsyncIterator[Message]:
        for chunk in split_message(await self._call(request)):
            yield chunk


_WORD = re.compile(r"\s*\S+|\s+")


def split_message(message: Message) -> list[Message]:
    """Split a message into stream chunks as a provider would send them: a word of text per chunk, each tool
    call's name first and its arguments in pieces, response meta on the last chunk.
    ``concat_messages(split_message(m)) == m`` for any message whose tool calls have indexes.
    """
    head = Message(
        role=message.role,
        name=message.name,
        tool_call_id=message.tool_call_id,
        tool_name=message.tool_name,
        parts=list(message.parts),
        extra=dict(message.extra),
    )
    chunks = [head]
    chunks.extend(Message(role=message.role, reasoning_content=w) for w in _WORD.findall(message.reasoning_content))
    chunks.extend(Message(role=message.role, content=w) for w in _WORD.findall(message.content))
    for i, call in enumerate(message.tool_calls):
        index = call.index if call.index is not None else i
        chunks.append(
            Message(
                role=message.role,
                tool_calls=[
                    ToolCall(index=index, id=call.id, type=call.type, function=FunctionCall(name=call.function.name))
                ],
            )
        )
        args = call.function.arguments
        chunks.extend(
            Message(
                role=message.role,
                tool_calls=[ToolCall(index=index, function=FunctionCall(arguments=args[pos : pos + 16]))],
            )
            for pos in range(0, len(args), 16)
        )
    if message.response_meta is not None:
        meta = message.response_meta
        chunks.append(
            Message(
                role=message.role,
                response_meta=ResponseMeta(finish_reason=meta.finish_reason, usage=meta.usage, logprobs=meta.logprobs),
            )
        )
    return chunks


def tool_calls(*calls: tuple[str, Mapping[str, Any] | str], id_prefix: str = "call_") -> Message:
    """An assistant message calling tools: ``tool_calls(("lookup", {"order_id": 7}))``; ids are call_1, call_2…"""
    return Message(
        role="assistant",
        tool_calls=[
            ToolCall(
                index=i,
                id=f"{id_prefix}{i + 1}",
                function=FunctionCall(name=name, arguments=args if isinstance(args, str) else json.dumps(args)),
            )
            for i, (name, args) in enumerate(calls)
        ],
    )


class BlackholeProxy:
    """A TCP proxy on 127.0.0.1 to ``host:port`` that can stop forwarding without closing anything.

    That is what a network partition looks like to a client: its connections stay open, what it sends goes
    nowhere, no answer comes back, and nothing tells it so. ``blackhole()`` holds every byte in both directions
    on every connection, old and new (new ones are still accepted, as the far end of a half-dead route would);
    ``heal()`` lets the held bytes through, late, as TCP's retransmissions would deliver them, so a client that
    reuses a connection it gave up on reads a stale answer. ``start()`` picks a free port (``port``)::

        async with BlackholeProxy("127.0.0.1", 5432) as proxy:
            store = PostgresCheckpointStore(f"postgresql://postgres@127.0.0.1:{proxy.port}/test")
            proxy.blackhole()
    """

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.target_port = port
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._accepted = 0

    @property
    def port(self) -> int:
        if self._server is None:
            raise UserError("BlackholeProxy.port: the proxy is not started; call start() first")
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def blackholed(self) -> bool:
        return not self._flowing.is_set()

    @property
    def accepted(self) -> int:
        """How many connections the proxy has accepted: a client that retries or reconnects shows up here."""
        return self._accepted

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)

    def blackhole(self) -> None:
        self._flowing.clear()

    def heal(self) -> None:
        self._flowing.set()

    async def close(self) -> None:
        """Stop listening and close every connection, in both directions."""
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for writer in list(self._writers):
            writer.close()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _accept(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        self._accepted += 1
        self._writers.add(client_writer)
        try:
            server_reader, server_writer = await asyncio.open_connection(self.host, self.target_port)
        except OSError:
            client_writer.close()
            return
        self._writers.add(server_writer)
        for reader, writer in ((client_reader, server_writer), (server_reader, client_writer)):
            task = asyncio.create_task(self._pump(reader, writer))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                await self._flowing.wait()
                data = await reader.read(65536)
                await self._flowing.wait()  # bytes read just before the switch are held too
                if not data:
                    break
                writer.write(data)
                await writer.drain()
        except OSError:
            pass  # the other side went away: closing ours passes that on
        finally:
            writer.close()
            self._writers.discard(writer)


class CodecDispatcher:
    """A ``BranchDispatcher`` that runs each branch here, from only what survives the codec, as a worker gets it:
    test a ``ParallelAgent(distribute=True)`` or a graph's ``distribute: true`` nodes without a pool, with
    ``dispatching(CodecDispatcher(agent))`` around the run (``agent`` is the run's agent). ``branches`` are the
    branches it ran, as they travelled."""

    def __init__(self, root: Agent) -> None:
        self.root = root
        self.branches: list[Branch] = []

    async def run_branch(self, branch: Branch) -> BranchResult:
        travelled = decode_json(encode_json(branch, what="branch"), what="branch")
        self.branches.append(travelled)
        result = await run_branch(self.root, travelled)
        back = decode_json(encode_json(result, what="branch result"), what="branch result")
        if not isinstance(back, BranchResult):
            raise UserError(f"branch result: expected a BranchResult after the codec, got {type(back).__name__}")
        return back

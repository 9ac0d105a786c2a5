"""Microsoft Agent Framework: ``Agent`` on a ``BaseChatClient`` fake that has the layers of MAF's own provider
clients (function invocation, chat middleware, telemetry), with MAF's instrumentation switched off.

Transfer is MAF's handoff: a ``HandoffBuilder`` workflow in which each agent hands over with its
``handoff_to_<agent>`` tool. The parallel workload is a ``ConcurrentBuilder`` workflow of three agents, each with
an inner agent as its tool (``Agent.as_tool``). Both builders come from ``agent-framework-orchestrations``, MAF's
orchestration package. A workflow instance holds one conversation and refuses a second run while one is going,
so every run builds its workflow from a builder configured once, as a server would for each new conversation.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from ._common import (
    ANSWER,
    CHUNK,
    N_BRANCHES,
    N_CHUNKS,
    N_STEPS,
    QUESTION,
    REQUEST,
    TOOL_RESULT,
    Counter,
    Workloads,
    branch_answer,
    branch_name,
    call_id,
    check,
    check_branches,
    inner_answer,
    inner_name,
)

NAME = "MS Agent Framework"
DISTRIBUTION = "agent-framework-core"


def build() -> Workloads:
    from importlib.metadata import version

    from agent_framework import (
        Agent,
        BaseChatClient,
        ChatMiddlewareLayer,
        ChatResponse,
        ChatResponseUpdate,
        Content,
        FunctionInvocationLayer,
        Message,
        ResponseStream,
        tool,
    )
    from agent_framework.observability import ChatTelemetryLayer, disable_instrumentation
    from agent_framework.orchestrations import ConcurrentBuilder, HandoffBuilder

    # MAF instruments itself by default (OpenTelemetry spans, no-ops with no provider configured); the other
    # frameworks here run untraced, so this one does too.
    disable_instrumentation()

    # A handoff workflow warns, on every build, that its last agent cannot hand off to anyone: that is the point.
    logging.getLogger("agent_framework_orchestrations").setLevel(logging.ERROR)

    Reply = Callable[[], ChatResponse]
    """Builds one answer. MAF appends the tool results to the response it is given and stamps its function calls
    with ids, so no response can be handed out twice: each call builds its own, as a provider client would."""

    def says(text: str) -> Reply:
        return lambda: ChatResponse(messages=[Message("assistant", [Content.from_text(text)])])

    def calling(step: int, name: str, arguments: str) -> Reply:
        def reply() -> ChatResponse:
            call = Content.from_function_call(call_id(step), name, arguments=arguments)
            return ChatResponse(messages=[Message("assistant", [call])])

        return reply

    class FakeChatClient(
        FunctionInvocationLayer[Any], ChatMiddlewareLayer[Any], ChatTelemetryLayer[Any], BaseChatClient[Any]
    ):
        """Answers by the call id of the last function result it was given (``""`` for none); streams fixed chunks
        when it has them, and otherwise its answer as one update (an agent used as a tool is always streamed).

        Counts its calls when given a ``Counter``: the inner agents' model, so that W6 sees each of them run.
        """

        def __init__(
            self,
            answers: Mapping[str, Reply],
            chunks: Sequence[ChatResponseUpdate] = (),
            counter: Counter | None = None,
        ) -> None:
            super().__init__()
            self._answers = answers
            self._chunks = chunks
            self._counter = counter

        def _inner_get_response(
            self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
        ) -> Any:
            if self._counter is not None:
                self._counter.n += 1
            if stream:
                return self._build_response_stream(self._updates(messages, options))
            return self._respond(messages, options)

        def _reply(self, messages: Sequence[Message]) -> ChatResponse:
            last = messages[-1]
            return self._answers[last.contents[-1].call_id or "" if last.role == "tool" else ""]()

        async def _respond(self, messages: Sequence[Message], options: Mapping[str, Any]) -> ChatResponse:
            await self._validate_options(options)  # what MAF asks of every client
            return self._reply(messages)

        async def _updates(self, messages: Sequence[Message], options: Mapping[str, Any]) -> AsyncIterator[Any]:
            await self._validate_options(options)
            if self._chunks:
                for chunk in self._chunks:
                    yield chunk
                return
            for message in self._reply(messages).messages:
                yield ChatResponseUpdate(contents=message.contents, role="assistant")

    def agent(name: str, client: FakeChatClient, **options: Any) -> Agent[Any]:
        return Agent(client=client, name=name, description=f"agent {name}", instructions="Be brief.", **options)

    answer = says(ANSWER)
    counter = Counter()

    @tool
    async def noop(x: int) -> str:
        """Does nothing."""
        counter.n += 1
        return TOOL_RESULT

    single_client = FakeChatClient({"": answer})
    single = agent("a", single_client)

    loop_answers = {"": calling(0, "noop", '{"x": 0}')}
    for step in range(1, N_STEPS):
        loop_answers[call_id(step - 1)] = calling(step, "noop", f'{{"x": {step}}}')
    loop_answers[call_id(N_STEPS - 1)] = answer
    looping = agent("a", FakeChatClient(loop_answers), tools=[noop])

    # The handoff workflow takes the function calls out of the conversation it passes on: each next agent sees the
    # question alone. It ends when an agent answers in text (by default it would ask the user for more).
    def handing_over(name: str, to: str | None, step: int) -> Agent[Any]:
        reply = calling(step, f"handoff_to_{to}", "{}") if to else answer
        return agent(name, FakeChatClient({"": reply}), require_per_service_call_history_persistence=True)

    root, a, b = handing_over("root", "A", 0), handing_over("A", "B", 1), handing_over("B", None, 2)
    chain = (
        HandoffBuilder(participants=[root, a, b])
        .add_handoff(root, [a])
        .add_handoff(a, [b])
        .with_start_agent(root)
        .with_termination_condition(lambda conversation: conversation[-1].role == "assistant" and conversation[-1].text)
    )

    chunks = [ChatResponseUpdate(contents=[Content.from_text(CHUNK)], role="assistant") for _ in range(N_CHUNKS)]
    stream_client = FakeChatClient({}, chunks)
    streaming = agent("a", stream_client)

    # Each branch sees the question, calls its inner agent (which sees only the request), then answers. The
    # aggregator hands on each branch's whole response, tool results included, for the check.
    inner_runs = [Counter() for _ in range(N_BRANCHES)]
    branches = []
    for i in range(N_BRANCHES):
        inner = agent(inner_name(i), FakeChatClient({"": says(inner_answer(i))}, counter=inner_runs[i]))
        ask = inner.as_tool(name=inner_name(i), description=f"agent {inner_name(i)}", arg_name="request")
        replies = {"": calling(i, inner_name(i), f'{{"request": "{REQUEST}"}}'), call_id(i): says(branch_answer(i))}
        branches.append(agent(branch_name(i), FakeChatClient(replies), tools=[ask]))
    fan = ConcurrentBuilder(participants=branches).with_aggregator(lambda results: results)

    async def single_turn() -> None:
        response = await single.run(QUESTION)
        check(response.text == ANSWER, "single turn answered {!r}", response.text)

    async def tool_loop() -> None:
        before = counter.n
        response = await looping.run(QUESTION)
        check(counter.n - before == N_STEPS, "tool ran {} times", counter.n - before)
        check(response.text == ANSWER, "tool loop answered {!r}", response.text)

    async def transfer_chain() -> None:
        result = await chain.build().run(QUESTION)
        handoffs = [(e.data.source, e.data.target) for e in result if e.type == "handoff_sent"]
        last = result.get_outputs()[-1].messages[-1]
        check(handoffs == [("root", "A"), ("A", "B")], "handed off {}", handoffs)
        check(
            last.author_name == "B" and last.text == ANSWER, "transfer chain ended with {}: {}", last.author_name, last
        )

    async def stream() -> None:
        n = 0
        async for update in streaming.run(QUESTION, stream=True):
            n += update.text == CHUNK
        check(n == N_CHUNKS, "streamed {} chunks", n)

    async def parallel_agent_tool() -> None:
        answers, tool_results = {}, {}
        (responses,) = (await fan.build().run(QUESTION)).get_outputs()
        for response in responses:
            for message in response.agent_response.messages:
                for content in message.contents:
                    if content.type == "function_result":
                        tool_results[content.call_id] = content.result
                    elif content.type == "text" and content.text:
                        answers[message.author_name] = content.text
        check_branches(answers, tool_results, inner_runs)

    # The fake alone, through the method a MAF client implements, given the instructions and the question.
    prompt = [Message("system", [Content.from_text("Be brief.")]), Message("user", [Content.from_text(QUESTION)])]

    async def fake_single_turn() -> None:
        response = await single_client._inner_get_response(messages=prompt, stream=False, options={})
        check(response.text == ANSWER, "fake answered {!r}", response.text)

    async def fake_stream() -> None:
        n = 0
        updates: ResponseStream[Any, Any] = stream_client._inner_get_response(messages=prompt, stream=True, options={})
        async for update in updates:
            n += update.text == CHUNK
        check(n == N_CHUNKS, "fake streamed {} chunks", n)

    return Workloads(
        version=version(DISTRIBUTION),
        single_turn=single_turn,
        tool_loop=tool_loop,
        transfer_chain=transfer_chain,
        stream=stream,
        parallel_agent_tool=parallel_agent_tool,
        fake_single_turn=fake_single_turn,
        fake_stream=fake_stream,
    )

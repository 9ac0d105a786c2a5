"""Pydantic AI: ``Agent`` on pydantic-ai's own fake, ``FunctionModel``; streamed with ``run_stream``.

Transfer is pydantic-ai's documented agent hand-off through output functions: the root agent's only output is a
function that runs agent A on the conversation so far, and A's runs agent B, whose text is the answer. Pydantic
AI has no parallel agent: the parallel workload gathers three ``Agent.run`` calls with ``asyncio.gather``, each
of an agent whose tool runs an inner agent (agent delegation).
"""

# No ``from __future__ import annotations``: pydantic-ai reads the tools' and output functions' annotations at run
# time, and they name classes imported inside ``build``.
import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
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

NAME = "Pydantic AI"
DISTRIBUTION = "pydantic-ai-slim"


def build() -> Workloads:
    from importlib.metadata import version

    from pydantic_ai import Agent, RunContext, ToolOutput
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        PartDeltaEvent,
        PartStartEvent,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.models import ModelRequestParameters
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import RequestUsage

    Reply = Callable[[], ModelResponse]
    """Builds one answer. Pydantic AI stamps the response it is given with the run's ids and the model's name and
    keeps it in the run's history, so no response can be handed out twice (runs slow down tenfold on recycled
    ones): each call builds its own, as a provider model would."""

    def responding(*parts: TextPart | ToolCallPart) -> ModelResponse:
        # With usage given, FunctionModel does not estimate it by walking the whole history on every call.
        return ModelResponse(parts=list(parts), usage=RequestUsage(input_tokens=1, output_tokens=1))

    def says(text: str) -> Reply:
        return lambda: responding(TextPart(text))

    def calling(step: int, name: str, arguments: str) -> Reply:
        return lambda: responding(ToolCallPart(name, arguments, tool_call_id=call_id(step)))

    def fake(answers: Mapping[str, Reply], counter: Counter | None = None) -> FunctionModel:
        """A ``FunctionModel`` answering by the call id of the last tool result it was given (``""`` for none);
        it counts its calls when given a ``Counter`` (the inner agents' and the transfer chain's models)."""

        async def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            if counter is not None:
                counter.n += 1
            last = messages[-1].parts[-1]
            return answers[last.tool_call_id if isinstance(last, ToolReturnPart) else ""]()

        return FunctionModel(answer)

    async def chunks(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        for _ in range(N_CHUNKS):
            yield CHUNK

    def agent(name: str, model: FunctionModel, **options: Any) -> Agent[None, Any]:
        return Agent(model, name=name, instructions="Be brief.", **options)

    answer = says(ANSWER)
    counter = Counter()

    async def noop(x: int) -> str:
        """Does nothing."""
        counter.n += 1
        return TOOL_RESULT

    single_model = fake({"": answer})
    single = agent("a", single_model)

    loop_answers = {"": calling(0, "noop", '{"x": 0}')}
    for step in range(1, N_STEPS):
        loop_answers[call_id(step - 1)] = calling(step, "noop", f'{{"x": {step}}}')
    loop_answers[call_id(N_STEPS - 1)] = answer
    looping = agent("a", fake(loop_answers), tools=[noop])

    # Each next agent gets the conversation so far, without the output call that handed it over: it ends with the
    # question. Root and A can only hand over (their one output is the hand-off); B answers in text.
    hops = [Counter() for _ in range(3)]
    b = agent("B", fake({"": answer}, hops[2]))

    async def transfer_to_b(ctx: RunContext[None]) -> str:
        """Hand the question to agent B."""
        return (await b.run(message_history=ctx.messages[:-1])).output

    a = agent(
        "A",
        fake({"": calling(1, "transfer_to_B", "{}")}, hops[1]),
        output_type=ToolOutput(transfer_to_b, name="transfer_to_B"),
    )

    async def transfer_to_a(ctx: RunContext[None]) -> str:
        """Hand the question to agent A."""
        return (await a.run(message_history=ctx.messages[:-1])).output

    root = agent(
        "root",
        fake({"": calling(0, "transfer_to_A", "{}")}, hops[0]),
        output_type=ToolOutput(transfer_to_a, name="transfer_to_A"),
    )

    stream_model = FunctionModel(stream_function=chunks)
    streaming = agent("a", stream_model)

    # Each branch sees the question, calls its inner agent (which sees only the request), then answers.
    inner_runs = [Counter() for _ in range(N_BRANCHES)]
    branches = []
    for i in range(N_BRANCHES):
        inner = agent(inner_name(i), fake({"": says(inner_answer(i))}, inner_runs[i]))

        def asking(inner: Agent[None, Any]) -> Callable[..., Any]:
            async def ask(ctx: RunContext[None], request: str) -> str:
                return (await inner.run(request, usage=ctx.usage)).output

            ask.__name__ = inner.name or ""
            ask.__doc__ = f"agent {inner.name}"
            return ask

        replies = {"": calling(i, inner_name(i), f'{{"request": "{REQUEST}"}}'), call_id(i): says(branch_answer(i))}
        branches.append(agent(branch_name(i), fake(replies), tools=[asking(inner)]))

    async def single_turn() -> None:
        result = await single.run(QUESTION)
        check(result.output == ANSWER, "single turn answered {!r}", result.output)

    async def tool_loop() -> None:
        before = counter.n
        result = await looping.run(QUESTION)
        check(counter.n - before == N_STEPS, "tool ran {} times", counter.n - before)
        check(result.output == ANSWER, "tool loop answered {!r}", result.output)

    async def transfer_chain() -> None:
        result = await root.run(QUESTION)
        calls = [hop.take() for hop in hops]
        check(calls == [1, 1, 1] and result.output == ANSWER, "models called {}, answered {!r}", calls, result.output)

    async def stream() -> None:
        n = 0
        async with streaming.run_stream(QUESTION) as response:
            async for delta in response.stream_text(delta=True, debounce_by=None):
                n += delta == CHUNK
        check(n == N_CHUNKS, "streamed {} chunks", n)

    async def parallel_agent_tool() -> None:
        answers, tool_results = {}, {}
        results = await asyncio.gather(*(branch.run(QUESTION) for branch in branches))
        for branch, result in zip(branches, results, strict=True):
            answers[branch.name] = result.output
            for message in result.new_messages():
                for part in message.parts:
                    if isinstance(part, ToolReturnPart):
                        tool_results[part.tool_call_id] = part.content
        check_branches(answers, tool_results, inner_runs)

    # The fake alone, through the methods a pydantic-ai model implements, given the instructions and the question.
    prompt: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart(QUESTION)], instructions="Be brief.")]

    async def fake_single_turn() -> None:
        response = await single_model.request(prompt, None, ModelRequestParameters())
        part = response.parts[0]
        check(isinstance(part, TextPart) and part.content == ANSWER, "fake answered {}", response)

    async def fake_stream() -> None:
        n = 0
        async with stream_model.request_stream(prompt, None, ModelRequestParameters()) as response:
            async for event in response:
                if isinstance(event, PartStartEvent):
                    n += isinstance(event.part, TextPart) and event.part.content == CHUNK
                elif isinstance(event, PartDeltaEvent):
                    n += getattr(event.delta, "content_delta", None) == CHUNK
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

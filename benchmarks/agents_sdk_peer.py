"""OpenAI Agents SDK: ``Agent`` run by ``Runner.run`` / ``Runner.run_streamed`` on a ``Model`` fake, tracing
disabled; transfer through ``handoffs``.

The SDK has no parallel agent: the parallel workload gathers three ``Runner.run`` calls with ``asyncio.gather``,
each of an agent whose tool is an inner agent (``Agent.as_tool``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
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

NAME = "Agents SDK"
DISTRIBUTION = "openai-agents"


def build() -> Workloads:
    from importlib.metadata import version

    from agents import Agent, ModelResponse, Runner, ToolCallOutputItem, Usage, function_tool, set_tracing_disabled
    from agents.models.interface import Model
    from openai.types.responses import (
        Response,
        ResponseCompletedEvent,
        ResponseFunctionToolCall,
        ResponseOutputItem,
        ResponseOutputMessage,
        ResponseOutputText,
        ResponseTextDeltaEvent,
    )

    set_tracing_disabled(True)

    class FakeModel(Model):
        """Answers by the call id of the last function result it was given (``""`` for none); streams fixed text
        deltas, then the completed response."""

        def __init__(self, answers: dict[str, ModelResponse], events: list[Any] | None = None) -> None:
            self._answers = answers
            self._events = events or []

        async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
            last = input[-1] if isinstance(input, list) else {}
            key = last.get("call_id", "") if last.get("type") == "function_call_output" else ""
            return self._answers[key]

        async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            for event in self._events:
                yield event

    class CountingModel(FakeModel):
        """A ``FakeModel`` that counts its calls: the inner agents' model, so that W6 sees each of them run."""

        def __init__(self, answers: dict[str, ModelResponse], counter: Counter) -> None:
            super().__init__(answers)
            self._counter = counter

        async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
            self._counter.n += 1
            return await super().get_response(system_instructions, input, *args, **kwargs)

    def responding(item: ResponseOutputItem) -> ModelResponse:
        return ModelResponse(output=[item], usage=Usage(requests=1), response_id=None)

    def calling(step: int, name: str, arguments: str) -> ModelResponse:
        call = ResponseFunctionToolCall(
            id=f"fc-{step}", call_id=call_id(step), name=name, arguments=arguments, type="function_call"
        )
        return responding(call)

    def text_message(text: str) -> ResponseOutputMessage:
        content = ResponseOutputText(text=text, annotations=[], type="output_text")
        return ResponseOutputMessage(id="msg", content=[content], role="assistant", status="completed", type="message")

    answer = responding(text_message(ANSWER))
    counter = Counter()

    @function_tool
    async def noop(x: int) -> str:
        """Does nothing."""
        counter.n += 1
        return TOOL_RESULT

    def agent(name: str, model: FakeModel, **options: Any) -> Agent[Any]:
        return Agent(name=name, handoff_description=f"agent {name}", instructions="Be brief.", model=model, **options)

    single_model = FakeModel({"": answer})
    single = agent("a", single_model)

    loop_answers = {"": calling(0, "noop", '{"x": 0}')}
    for step in range(1, N_STEPS):
        loop_answers[call_id(step - 1)] = calling(step, "noop", f'{{"x": {step}}}')
    loop_answers[call_id(N_STEPS - 1)] = answer
    looping = agent("a", FakeModel(loop_answers), tools=[noop])

    # Each next agent sees the whole history, ending with the result of the handoff to it.
    b = agent("B", FakeModel({call_id(1): answer}))
    a = agent("A", FakeModel({call_id(0): calling(1, "transfer_to_b", "{}")}), handoffs=[b])
    chain = agent("root", FakeModel({"": calling(0, "transfer_to_a", "{}")}), handoffs=[a])

    deltas: list[Any] = [
        ResponseTextDeltaEvent(
            content_index=0,
            delta=CHUNK,
            item_id="msg",
            logprobs=[],
            output_index=0,
            sequence_number=i,
            type="response.output_text.delta",
        )
        for i in range(N_CHUNKS)
    ]
    whole = Response(
        id="resp",
        created_at=0,
        model="fake",
        object="response",
        output=[text_message(CHUNK * N_CHUNKS)],
        parallel_tool_calls=False,
        tool_choice="auto",
        tools=[],
    )
    deltas.append(ResponseCompletedEvent(response=whole, sequence_number=N_CHUNKS, type="response.completed"))
    stream_model = FakeModel({}, deltas)
    streaming = agent("a", stream_model)

    # Each branch sees the question, calls its inner agent (which sees only the request), then answers.
    inner_runs = [Counter() for _ in range(N_BRANCHES)]
    branches = []
    for i in range(N_BRANCHES):
        inner = agent(inner_name(i), CountingModel({"": responding(text_message(inner_answer(i)))}, inner_runs[i]))
        tool = inner.as_tool(tool_name=inner_name(i), tool_description=f"agent {inner_name(i)}")
        asking = calling(i, inner_name(i), f'{{"input": "{REQUEST}"}}')
        model = FakeModel({"": asking, call_id(i): responding(text_message(branch_answer(i)))})
        branches.append(agent(branch_name(i), model, tools=[tool]))

    async def single_turn() -> None:
        result = await Runner.run(single, QUESTION)
        check(result.final_output == ANSWER, "single turn answered {!r}", result.final_output)

    async def tool_loop() -> None:
        before = counter.n
        result = await Runner.run(looping, QUESTION, max_turns=N_STEPS + 1)
        check(counter.n - before == N_STEPS, "tool ran {} times", counter.n - before)
        check(result.final_output == ANSWER, "tool loop answered {!r}", result.final_output)

    async def transfer_chain() -> None:
        result = await Runner.run(chain, QUESTION)
        last = result.last_agent.name
        check(
            last == "B" and result.final_output == ANSWER, "transfer chain ended with {}: {}", last, result.final_output
        )

    async def stream() -> None:
        n = 0
        result = Runner.run_streamed(streaming, QUESTION)
        async for event in result.stream_events():
            if event.type == "raw_response_event" and event.data.type == "response.output_text.delta":
                n += event.data.delta == CHUNK
        check(n == N_CHUNKS, "streamed {} chunks", n)

    # The fake alone, through the methods an Agents SDK model implements, given the instructions and the question.
    prompt = [{"role": "user", "content": QUESTION}]

    async def fake_single_turn() -> None:
        response = await single_model.get_response("Be brief.", prompt)
        check(response is answer, "fake answered {}", response)

    async def fake_stream() -> None:
        n = 0
        async for event in stream_model.stream_response("Be brief.", prompt):
            n += event.type == "response.output_text.delta" and event.delta == CHUNK
        check(n == N_CHUNKS, "fake streamed {} chunks", n)

    async def parallel_agent_tool() -> None:
        answers, tool_results = {}, {}
        for result in await asyncio.gather(*(Runner.run(branch, QUESTION) for branch in branches)):
            answers[result.last_agent.name] = result.final_output
            for item in result.new_items:
                if isinstance(item, ToolCallOutputItem):
                    tool_results[item.raw_item["call_id"]] = item.output
        check_branches(answers, tool_results, inner_runs)

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

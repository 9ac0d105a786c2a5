"""batonflow: ``ChatModelAgent`` run by a ``Runner``; transfer through ``set_sub_agents``; a ``ParallelAgent`` of
agents that call an ``AgentTool``."""

from __future__ import annotations

from collections.abc import Sequence
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

NAME = "batonflow"
DISTRIBUTION = "batonflow"


def build() -> Workloads:
    from importlib.metadata import version

    from batonflow.adk import AgentTool, ChatModelAgent, ParallelAgent, Runner, set_sub_agents
    from batonflow.schema import FunctionCall, Message, Stream, ToolCall, assistant, system, user
    from batonflow.tools import tool

    class FakeModel:
        """A ``ChatModel`` answering by the id of the last tool result it was given (``""`` for none)."""

        model_name = "fake"

        def __init__(self, answers: dict[str, Message], chunks: Sequence[Message] = ()) -> None:
            self._answers = answers
            self._chunks = chunks

        async def generate(self, messages: Sequence[Message], **_: Any) -> Message:
            return self._answers[messages[-1].tool_call_id]

        def stream(self, messages: Sequence[Message], **_: Any) -> Stream[Message]:
            return Stream.from_list(self._chunks)

    class CountingModel(FakeModel):
        """A ``FakeModel`` that counts its calls: the inner agents' model, so that W6 sees each of them run."""

        def __init__(self, answers: dict[str, Message], counter: Counter) -> None:
            super().__init__(answers)
            self._counter = counter

        async def generate(self, messages: Sequence[Message], **_: Any) -> Message:
            self._counter.n += 1
            return await super().generate(messages)

    def calling(step: int, name: str, arguments: str) -> Message:
        function = FunctionCall(name=name, arguments=arguments)
        return assistant(tool_calls=[ToolCall(index=0, id=call_id(step), function=function)])

    def transfer(to: str) -> Message:
        return calling(0, "transfer_to_agent", f'{{"agent_name": "{to}"}}')

    answer = assistant(ANSWER)
    counter = Counter()

    @tool
    async def noop(x: int) -> str:
        """Does nothing."""
        counter.n += 1
        return TOOL_RESULT

    def agent(name: str, model: FakeModel, **options: Any) -> ChatModelAgent:
        return ChatModelAgent(name=name, description=f"agent {name}", instruction="Be brief.", model=model, **options)

    single_model = FakeModel({"": answer})
    single = Runner(agent("a", single_model))

    loop_answers = {"": calling(0, "noop", '{"x": 0}')}
    for step in range(1, N_STEPS):
        loop_answers[call_id(step - 1)] = calling(step, "noop", f'{{"x": {step}}}')
    loop_answers[call_id(N_STEPS - 1)] = answer
    looping = Runner(agent("a", FakeModel(loop_answers), tools=[noop]))

    # Each agent's input ends with the user's question (other agents' turns are rewritten as context before it).
    b = agent("B", FakeModel({"": answer}))
    a = agent("A", FakeModel({"": transfer("B")}))
    root = agent("root", FakeModel({"": transfer("A")}))
    chain = Runner(set_sub_agents(root, [set_sub_agents(a, [b])]))

    chunks = [assistant(CHUNK) for _ in range(N_CHUNKS)]
    stream_model = FakeModel({}, chunks)
    streaming = Runner(agent("a", stream_model), enable_streaming=True)

    # Each branch sees the question, calls its inner agent (which sees only the request), then answers.
    inner_runs = [Counter() for _ in range(N_BRANCHES)]
    branches = []
    for i in range(N_BRANCHES):
        inner = agent(inner_name(i), CountingModel({"": assistant(inner_answer(i))}, inner_runs[i]))
        asking = calling(i, inner_name(i), f'{{"request": "{REQUEST}"}}')
        model = FakeModel({"": asking, call_id(i): assistant(branch_answer(i))})
        branches.append(agent(branch_name(i), model, tools=[AgentTool(inner)]))
    parallel = Runner(ParallelAgent(name="par", sub_agents=branches))

    async def final_message(runner: Runner) -> tuple[str, Message | None]:
        agent_name, message = "", None
        async for event in runner.query(QUESTION):
            if event.error is not None:
                raise event.error
            if event.message_output is not None:
                agent_name, message = event.agent_name, event.message_output.message
        return agent_name, message

    async def single_turn() -> None:
        _, message = await final_message(single)
        check(message is not None and message.content == ANSWER, "single turn answered {}", message)

    async def tool_loop() -> None:
        before = counter.n
        _, message = await final_message(looping)
        check(counter.n - before == N_STEPS, "tool ran {} times", counter.n - before)
        check(message is not None and message.content == ANSWER, "tool loop answered {}", message)

    async def transfer_chain() -> None:
        agent_name, message = await final_message(chain)
        check(agent_name == "B" and message is not None and message.content == ANSWER, "{}: {}", agent_name, message)

    async def stream() -> None:
        n = 0
        async for event in streaming.query(QUESTION):
            if event.error is not None:
                raise event.error
            variant = event.message_output
            if variant is not None and variant.is_streaming:
                assert variant.message_stream is not None
                async for chunk in variant.message_stream:
                    n += chunk.content == CHUNK
        check(n == N_CHUNKS, "streamed {} chunks", n)

    # What the agent hands its model: the instruction, then the question.
    prompt = [system("Be brief."), user(QUESTION)]

    async def fake_single_turn() -> None:
        message = await single_model.generate(prompt)
        check(message.content == ANSWER, "fake answered {}", message)

    async def fake_stream() -> None:
        n = 0
        async for chunk in stream_model.stream(prompt):
            n += chunk.content == CHUNK
        check(n == N_CHUNKS, "fake streamed {} chunks", n)

    async def parallel_agent_tool() -> None:
        answers, tool_results = {}, {}
        async for event in parallel.query(QUESTION):
            if event.error is not None:
                raise event.error
            if event.message_output is not None:
                message = event.message_output.message
                assert message is not None
                if message.role == "tool":
                    tool_results[message.tool_call_id] = message.content
                elif message.content:
                    answers[event.agent_name] = message.content
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

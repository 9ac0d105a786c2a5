"""Google ADK: ``LlmAgent`` on a ``BaseLlm`` fake, run by a ``Runner`` with an ``InMemorySessionService``.

Every run gets a new session, as a new conversation does in ADK, and deletes it afterwards so that sessions do
not pile up over thousands of runs. Transfer is ADK's own: ``sub_agents`` and the ``transfer_to_agent`` call.
The parallel workload is a ``ParallelAgent`` of ``LlmAgent``s, each with an ``AgentTool`` of an inner ``LlmAgent``.
"""

# No ``from __future__ import annotations``: pydantic reads the fake model's field annotations at run time,
# and they name classes imported inside ``build``.
import warnings
from collections.abc import AsyncGenerator
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

NAME = "Google ADK"
DISTRIBUTION = "google-adk"


def build() -> Workloads:
    from importlib.metadata import version

    from google.adk.agents import LlmAgent, ParallelAgent, RunConfig
    from google.adk.agents.run_config import StreamingMode
    from google.adk.models import BaseLlm, LlmRequest, LlmResponse
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.adk.tools import AgentTool
    from google.genai import types
    from pydantic import Field

    class FakeLlm(BaseLlm):
        """Answers by the id of the last function response it was given (``""`` for none); streams fixed chunks
        (``partial``) and then the whole message, as ADK expects of a streaming model."""

        answers: dict[str, LlmResponse]
        chunks: list[LlmResponse] = Field(default_factory=list)

        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            if stream and self.chunks:
                for chunk in self.chunks:
                    yield chunk
                return
            last = llm_request.contents[-1].parts
            response = last[-1].function_response if last else None
            yield self.answers[response.id if response is not None and response.id else ""]

    class CountingLlm(FakeLlm):
        """A ``FakeLlm`` that counts its calls: the inner agents' model, so that W6 sees each of them run."""

        counter: Any

        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            self.counter.n += 1
            async for response in super().generate_content_async(llm_request, stream):
                yield response

    # Whole responses report usage, as real models do: without it ADK logs a warning on every model call.
    usage = types.GenerateContentResponseUsageMetadata(prompt_token_count=1, candidates_token_count=1)

    def model_says(part: types.Part, *, partial: bool = False) -> LlmResponse:
        content = types.Content(role="model", parts=[part])
        return LlmResponse(content=content, partial=partial, usage_metadata=None if partial else usage)

    def calling(step: int, name: str, args: dict[str, Any]) -> LlmResponse:
        return model_says(types.Part(function_call=types.FunctionCall(id=call_id(step), name=name, args=args)))

    answer = model_says(types.Part(text=ANSWER))
    counter = Counter()

    async def noop(x: int) -> str:
        """Does nothing."""
        counter.n += 1
        return TOOL_RESULT

    def agent(name: str, model: FakeLlm, **options: Any) -> LlmAgent:
        return LlmAgent(name=name, description=f"agent {name}", instruction="Be brief.", model=model, **options)

    sessions = InMemorySessionService()

    def runner(root: LlmAgent) -> Runner:
        return Runner(app_name="bench", agent=root, session_service=sessions)

    single_model = FakeLlm(model="fake", answers={"": answer})
    single = runner(agent("a", single_model))

    loop_answers = {"": calling(0, "noop", {"x": 0})}
    for step in range(1, N_STEPS):
        loop_answers[call_id(step - 1)] = calling(step, "noop", {"x": step})
    loop_answers[call_id(N_STEPS - 1)] = answer
    looping = runner(agent("a", FakeLlm(model="fake", answers=loop_answers), tools=[noop]))

    def transfer(step: int, to: str) -> LlmResponse:
        return calling(step, "transfer_to_agent", {"agent_name": to})

    b = agent("B", FakeLlm(model="fake", answers={"": answer}))
    a = agent("A", FakeLlm(model="fake", answers={"": transfer(1, "B")}), sub_agents=[b])
    chain = runner(agent("root", FakeLlm(model="fake", answers={"": transfer(0, "A")}), sub_agents=[a]))

    chunks = [model_says(types.Part(text=CHUNK), partial=True) for _ in range(N_CHUNKS)]
    chunks.append(model_says(types.Part(text=CHUNK * N_CHUNKS)))
    stream_model = FakeLlm(model="fake", answers={}, chunks=chunks)
    streaming = runner(agent("a", stream_model))
    sse = RunConfig(streaming_mode=StreamingMode.SSE)

    # Each branch sees the question, calls its inner agent (which sees only the request), then answers.
    inner_runs = [Counter() for _ in range(N_BRANCHES)]
    branches = []
    for i in range(N_BRANCHES):
        inner_answers = {"": model_says(types.Part(text=inner_answer(i)))}
        inner = agent(inner_name(i), CountingLlm(model="fake", answers=inner_answers, counter=inner_runs[i]))
        asking = calling(i, inner_name(i), {"request": REQUEST})
        model = FakeLlm(model="fake", answers={"": asking, call_id(i): model_says(types.Part(text=branch_answer(i)))})
        branches.append(agent(branch_name(i), model, tools=[AgentTool(agent=inner)]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated in ADK 2 in favour of Workflow, still ADK's parallel agent
        parallel = runner(ParallelAgent(name="par", sub_agents=branches))

    question = types.Content(role="user", parts=[types.Part(text=QUESTION)])

    async def events(runner: Runner, run_config: RunConfig | None = None) -> AsyncGenerator[Any, None]:
        session = await sessions.create_session(app_name="bench", user_id="u")
        try:
            async for event in runner.run_async(
                user_id="u", session_id=session.id, new_message=question, run_config=run_config
            ):
                yield event
        finally:
            await sessions.delete_session(app_name="bench", user_id="u", session_id=session.id)

    async def final(runner: Runner) -> tuple[str, str]:
        author, text = "", ""
        async for event in events(runner):
            if event.error_code:
                raise RuntimeError(f"{event.error_code}: {event.error_message}")
            if event.content and event.content.parts and event.content.parts[0].text:
                author, text = event.author, event.content.parts[0].text
        return author, text

    async def single_turn() -> None:
        _, text = await final(single)
        check(text == ANSWER, "single turn answered {!r}", text)

    async def tool_loop() -> None:
        before = counter.n
        _, text = await final(looping)
        check(counter.n - before == N_STEPS, "tool ran {} times", counter.n - before)
        check(text == ANSWER, "tool loop answered {!r}", text)

    async def transfer_chain() -> None:
        author, text = await final(chain)
        check(author == "B" and text == ANSWER, "transfer chain ended with {}: {!r}", author, text)

    async def stream() -> None:
        n = 0
        async for event in events(streaming, sse):
            if event.partial and event.content and event.content.parts:
                n += event.content.parts[0].text == CHUNK
        check(n == N_CHUNKS, "streamed {} chunks", n)

    # The fake alone, through the method an ADK model implements, given the instruction and the question.
    request = LlmRequest(
        model="fake", contents=[question], config=types.GenerateContentConfig(system_instruction="Be brief.")
    )

    async def fake_single_turn() -> None:
        texts = [r.content.parts[0].text async for r in single_model.generate_content_async(request) if r.content]
        check(texts == [ANSWER], "fake answered {}", texts)

    async def fake_stream() -> None:
        n = 0
        async for response in stream_model.generate_content_async(request, stream=True):
            n += bool(response.partial and response.content and response.content.parts[0].text == CHUNK)
        check(n == N_CHUNKS, "fake streamed {} chunks", n)

    async def parallel_agent_tool() -> None:
        answers, tool_results = {}, {}
        async for event in events(parallel):
            if event.error_code:
                raise RuntimeError(f"{event.error_code}: {event.error_message}")
            for part in event.content.parts if event.content and event.content.parts else ():
                if part.function_response is not None:
                    tool_results[part.function_response.id] = part.function_response.response["result"]
                elif part.text:
                    answers[event.author] = part.text
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

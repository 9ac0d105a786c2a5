"""LangGraph: the prebuilt ReAct agent (``create_react_agent``) on a ``BaseChatModel`` fake.

Transfer follows LangGraph's handoff pattern: each agent is a ReAct subgraph in a parent graph, and its handoff
tool returns ``Command(goto=..., graph=Command.PARENT)`` with the tool message added to the shared history.
The parallel workload fans out from ``START`` to three ReAct subgraphs and joins them at ``END``; each one's tool
invokes another compiled ReAct agent, as in LangGraph's agent-as-a-tool pattern.
"""

# No ``from __future__ import annotations``: LangChain reads the tools' and the model's annotations at run time,
# and they name classes imported inside ``build``.
import warnings
from collections.abc import AsyncIterator, Sequence
from typing import Annotated, Any

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

NAME = "LangGraph"
DISTRIBUTION = "langgraph"


def build() -> Workloads:
    from importlib.metadata import version

    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, SystemMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
    from langchain_core.tools import BaseTool, InjectedToolCallId, tool
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.types import Command

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated in favour of langchain.agents.create_agent, still LangGraph's own
        from langgraph.prebuilt import create_react_agent

    class FakeChatModel(BaseChatModel):
        """Answers by the id of the last tool result it was given (``""`` for none); streams fixed chunks.

        Results and chunks are built once and handed out again on every call, so the fake costs next to nothing.
        """

        answers: dict[str, ChatResult]
        chunks: Sequence[ChatGenerationChunk] = ()

        @property
        def _llm_type(self) -> str:
            return "fake"

        def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
            # As provider models do: the tools are bound once, in their wire format.
            return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

        def _generate(self, messages: list[BaseMessage], stop: Any = None, **kwargs: Any) -> ChatResult:
            raise NotImplementedError("async only")

        async def _agenerate(self, messages: list[BaseMessage], stop: Any = None, **kwargs: Any) -> ChatResult:
            last = messages[-1]
            return self.answers[last.tool_call_id if isinstance(last, ToolMessage) else ""]

        async def _astream(
            self, messages: list[BaseMessage], stop: Any = None, **kwargs: Any
        ) -> AsyncIterator[ChatGenerationChunk]:
            for chunk in self.chunks:
                yield chunk

    class CountingChatModel(FakeChatModel):
        """A ``FakeChatModel`` that counts its calls: the inner agents' model, so that W6 sees each of them run."""

        counter: Any

        async def _agenerate(self, messages: list[BaseMessage], stop: Any = None, **kwargs: Any) -> ChatResult:
            self.counter.n += 1
            return await super()._agenerate(messages, stop, **kwargs)

    def result(message: AIMessage) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=message)])

    def calling(step: int, name: str, args: dict[str, Any]) -> ChatResult:
        call = {"name": name, "args": args, "id": call_id(step)}
        return result(AIMessage(content="", id=f"ai-{step}", tool_calls=[call]))

    answer = result(AIMessage(content=ANSWER, id="ai-answer"))
    counter = Counter()

    @tool
    async def noop(x: int) -> str:
        """Does nothing."""
        counter.n += 1
        return TOOL_RESULT

    def agent(model: FakeChatModel, tools: Sequence[BaseTool] = (), name: str | None = None) -> Any:
        return create_react_agent(model, list(tools), prompt="Be brief.", name=name)

    single_model = FakeChatModel(answers={"": answer})
    single = agent(single_model)

    loop_answers = {"": calling(0, "noop", {"x": 0})}
    for step in range(1, N_STEPS):
        loop_answers[call_id(step - 1)] = calling(step, "noop", {"x": step})
    loop_answers[call_id(N_STEPS - 1)] = answer
    looping = agent(FakeChatModel(answers=loop_answers), [noop])

    def handoff(to: str) -> BaseTool:
        @tool(f"transfer_to_{to}", description=f"Transfer the question to agent {to}.")
        def transfer(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
            done = ToolMessage(content=f"successfully transferred to agent [{to}]", tool_call_id=tool_call_id)
            return Command(goto=to, graph=Command.PARENT, update={"messages": [done]})

        return transfer

    # Each next agent sees the shared history, ending with the result of the handoff to it.
    graph = StateGraph(MessagesState)
    graph.add_node("root", agent(FakeChatModel(answers={"": calling(0, "transfer_to_A", {})}), [handoff("A")]))
    graph.add_node("A", agent(FakeChatModel(answers={call_id(0): calling(1, "transfer_to_B", {})}), [handoff("B")]))
    graph.add_node("B", agent(FakeChatModel(answers={call_id(1): answer})))
    graph.add_edge(START, "root")
    graph.add_edge("B", END)
    chain = graph.compile()

    def asking(branch: int) -> BaseTool:
        """The branch's tool: a run of its inner agent, which sees only the request."""
        inner_result = result(AIMessage(content=inner_answer(branch), id=f"ai-{inner_name(branch)}"))
        inner = agent(
            CountingChatModel(answers={"": inner_result}, counter=inner_runs[branch]), name=inner_name(branch)
        )

        @tool(inner_name(branch), description=f"agent {inner_name(branch)}")
        async def ask(request: str) -> str:
            state = await inner.ainvoke({"messages": [("user", request)]})
            return state["messages"][-1].content

        return ask

    # Each branch sees the question, calls its inner agent, then answers; its messages are named after it. The
    # message ids differ between branches: the shared history merges the branches' messages by id.
    inner_runs = [Counter() for _ in range(N_BRANCHES)]
    fan = StateGraph(MessagesState)
    for i in range(N_BRANCHES):
        call = {"name": inner_name(i), "args": {"request": REQUEST}, "id": call_id(i)}
        replies = {
            "": result(AIMessage(content="", id=f"ai-{branch_name(i)}-call", tool_calls=[call])),
            call_id(i): result(AIMessage(content=branch_answer(i), id=f"ai-{branch_name(i)}-answer")),
        }
        fan.add_node(agent(FakeChatModel(answers=replies), [asking(i)], name=branch_name(i)))
        fan.add_edge(START, branch_name(i))
    fan.add_edge([branch_name(i) for i in range(N_BRANCHES)], END)
    parallel = fan.compile()

    chunks = [ChatGenerationChunk(message=AIMessageChunk(content=CHUNK, id="ai-stream")) for _ in range(N_CHUNKS)]
    stream_model = FakeChatModel(answers={}, chunks=chunks)
    streaming = agent(stream_model)

    def final(state: dict[str, Any]) -> BaseMessage:
        return state["messages"][-1]

    async def single_turn() -> None:
        message = final(await single.ainvoke({"messages": [("user", QUESTION)]}))
        check(message.content == ANSWER, "single turn answered {!r}", message)

    async def tool_loop() -> None:
        before = counter.n
        message = final(await looping.ainvoke({"messages": [("user", QUESTION)]}))
        check(counter.n - before == N_STEPS, "tool ran {} times", counter.n - before)
        check(message.content == ANSWER, "tool loop answered {!r}", message)

    async def transfer_chain() -> None:
        state = await chain.ainvoke({"messages": [("user", QUESTION)]})
        message = final(state)
        transfers = [m for m in state["messages"] if isinstance(m, ToolMessage)]
        check(len(transfers) == 2 and message.content == ANSWER, "transfer chain ended with {!r}", message)

    async def stream() -> None:
        n = 0
        async for chunk, _ in streaming.astream({"messages": [("user", QUESTION)]}, stream_mode="messages"):
            n += chunk.content == CHUNK
        check(n == N_CHUNKS, "streamed {} chunks", n)

    # The fake alone, through the methods a LangChain model implements: what the agent hands it is the prompt, then
    # the question.
    prompt: list[BaseMessage] = [SystemMessage("Be brief."), HumanMessage(QUESTION)]

    async def fake_single_turn() -> None:
        result = await single_model._agenerate(prompt)
        check(result.generations[0].message.content == ANSWER, "fake answered {}", result)

    async def fake_stream() -> None:
        n = 0
        async for chunk in stream_model._astream(prompt):
            n += chunk.message.content == CHUNK
        check(n == N_CHUNKS, "fake streamed {} chunks", n)

    async def parallel_agent_tool() -> None:
        answers, tool_results = {}, {}
        for message in (await parallel.ainvoke({"messages": [("user", QUESTION)]}))["messages"]:
            if isinstance(message, ToolMessage):
                tool_results[message.tool_call_id] = message.content
            elif isinstance(message, AIMessage) and message.content:
                answers[message.name] = message.content
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

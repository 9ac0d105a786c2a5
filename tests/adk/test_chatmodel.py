import asyncio
from collections.abc import AsyncIterator

import pytest

from batonflow.adk import (
    AgentEvent,
    AgentInput,
    AgentMiddleware,
    ChatModelAgent,
    ChatModelAgentState,
    ModelRetryConfig,
    RunContext,
    Runner,
    ToolBatch,
    ToolCallHandler,
    collect_events,
)
from batonflow.errors import MaxIterationsError, ModelHTTPError, UserError
from batonflow.models import ModelSettings, ToolChoice
from batonflow.schema import Message, ToolCall, assistant, user
from batonflow.testing import PushModel, ScriptedModel, tool_calls
from batonflow.tools import ToolContext, tool


@tool(threaded=False)
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def run(agent: ChatModelAgent, text: str = "hi", *, streaming: bool = False) -> list[AgentEvent]:
    return await collect_events(Runner(agent, enable_streaming=streaming).query(text))


def messages_of(events: list[AgentEvent]) -> list[Message]:
    out = []
    for e in events:
        variant = e.message_output
        if variant is not None:
            assert variant.message is not None
            out.append(variant.message)
    return out


async def test_agent_without_tools_makes_exactly_one_model_call() -> None:
    model = ScriptedModel([assistant("hello")])
    events = await run(ChatModelAgent(name="a", instruction="Be brief.", model=model))
    assert [m.content for m in messages_of(events)] == ["hello"]
    assert len(model.requests) == 1
    assert [(m.role, m.content) for m in model.requests[0].messages] == [("system", "Be brief."), ("user", "hi")]
    assert model.requests[0].tools == []


async def test_empty_instruction_sends_no_system_message() -> None:
    model = ScriptedModel([assistant("x")])
    await run(ChatModelAgent(name="a", model=model))
    assert [m.role for m in model.requests[0].messages] == ["user"]


async def test_instruction_is_a_template_over_session_values() -> None:
    model = ScriptedModel([assistant("x")])
    agent = ChatModelAgent(name="a", instruction="Serve {customer} kindly {{always}}.", model=model)
    await collect_events(Runner(agent, session_values={"customer": "Ann"}).query("hi"))
    assert model.requests[0].messages[0].content == "Serve Ann kindly {always}."


async def test_missing_template_value_is_an_error_event() -> None:
    model = ScriptedModel([])
    agent = ChatModelAgent(name="a", instruction="Serve {customer}.", model=model)
    events = await collect_events(Runner(agent, session_values={"other": 1}).query("hi"))
    assert isinstance(events[-1].error, UserError)
    assert "expected a session value named 'customer', got only ['other']" in str(events[-1].error)


async def test_react_loop_runs_tools_and_feeds_results_back() -> None:
    model = ScriptedModel([tool_calls(("add", {"a": 2, "b": 3})), assistant("It is 5.")])
    events = await run(ChatModelAgent(name="calc", model=model, tools=[add]))
    assert [(m.role, m.content, m.tool_name) for m in messages_of(events)] == [
        ("assistant", "", ""),
        ("tool", "5", "add"),
        ("assistant", "It is 5.", ""),
    ]
    assert events[1].message_output is not None and events[1].message_output.role == "tool"
    second = model.requests[1].messages
    assert (second[-1].role, second[-1].tool_call_id, second[-1].content) == ("tool", "call_1", "5")
    assert [t.name for t in model.requests[0].tools] == ["add"]
    model.assert_complete()


async def test_tools_run_concurrently_and_report_in_completion_order() -> None:
    slow_started = asyncio.Event()
    fast_done = asyncio.Event()

    @tool
    async def slow() -> str:
        """Slow."""
        slow_started.set()
        await fast_done.wait()
        await asyncio.sleep(0.01)
        return "slow"

    @tool
    async def fast() -> str:
        """Fast."""
        await slow_started.wait()  # would deadlock if the tools ran one after the other
        fast_done.set()
        return "fast"

    model = ScriptedModel([tool_calls(("slow", {}), ("fast", {})), assistant("done")])
    events = await asyncio.wait_for(run(ChatModelAgent(name="a", model=model, tools=[slow, fast])), 2)
    assert [m.content for m in messages_of(events)] == ["", "fast", "slow", "done"]
    # The transcript keeps the order of the calls.
    assert [m.content for m in model.requests[1].messages if m.role == "tool"] == ["slow", "fast"]


async def test_execute_sequentially_runs_tools_in_call_order() -> None:
    order: list[str] = []

    @tool
    async def first() -> str:
        """First."""
        await asyncio.sleep(0.01)
        order.append("first")
        return "1"

    @tool
    async def second() -> str:
        """Second."""
        order.append("second")
        return "2"

    model = ScriptedModel([tool_calls(("first", {}), ("second", {})), assistant("ok")])
    await run(ChatModelAgent(name="a", model=model, tools=[first, second], execute_sequentially=True))
    assert order == ["first", "second"]


async def test_return_directly_ends_the_run_with_the_last_matching_call() -> None:
    @tool(threaded=False)
    def answer(text: str) -> str:
        """Answer."""
        return f"answer: {text}"

    model = ScriptedModel(
        [tool_calls(("answer", {"text": "one"}), ("add", {"a": 1, "b": 1}), ("answer", {"text": "two"}))]
    )
    agent = ChatModelAgent(name="a", model=model, tools=[answer, add], return_directly=["answer"], output_key="out")
    runner = Runner(agent)
    events = await collect_events(runner.run([user("x")]))
    contents = [m.content for m in messages_of(events)]
    assert contents[0] == ""
    assert sorted(contents[1:3]) == ["2", "answer: one"]
    assert contents[-1] == "answer: two"  # held back and emitted last
    assert len(model.requests) == 1


async def test_exceeding_max_iterations_is_an_error_event() -> None:
    model = ScriptedModel([tool_calls(("add", {"a": 1, "b": 1}))] * 3)
    events = await run(ChatModelAgent(name="a", model=model, tools=[add], max_iterations=3))
    assert isinstance(events[-1].error, MaxIterationsError)
    assert str(events[-1].error) == "exceeds max iterations"
    assert len(model.requests) == 3


def test_default_max_iterations_is_twenty() -> None:
    assert ChatModelAgent(name="a", model=ScriptedModel([])).max_iterations == 20


async def test_exit_tool_ends_the_run_with_its_final_result() -> None:
    model = ScriptedModel([tool_calls(("exit", {"final_result": "bye"}))])
    events = await run(ChatModelAgent(name="a", model=model, exit=True))
    assert events[-1].action is not None and events[-1].action.exit
    assert messages_of(events)[-1].content == "bye"
    assert [t.name for t in model.requests[0].tools] == ["exit"]


async def test_output_key_stores_the_final_text_in_the_session() -> None:
    seen: list[str] = []

    class Reader:
        name, description = "reader", ""

        async def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
            assert ctx is not None
            seen.append(ctx.get_session_value("answer"))
            return
            yield

    agent = ChatModelAgent(name="a", model=ScriptedModel([assistant("42")]), output_key="answer")
    ctx = RunContext()
    async for _ in agent.run(AgentInput(messages=[user("q")]), ctx):
        pass
    async for _ in Reader().run(AgentInput(messages=[]), ctx):
        pass
    assert seen == ["42"]


async def test_malformed_tool_arguments_become_an_observation_the_model_can_fix() -> None:
    model = ScriptedModel(
        [tool_calls(("add", '{"a": 1, "b": ')), tool_calls(("add", {"a": 1, "b": 2})), assistant("3")]
    )
    events = await run(ChatModelAgent(name="a", model=model, tools=[add]))
    observation = messages_of(events)[1].content
    assert observation.startswith("Invalid arguments for tool [add]: expected a JSON object, got")
    assert messages_of(events)[-1].content == "3"


async def test_unknown_tool_becomes_an_observation() -> None:
    model = ScriptedModel([tool_calls(("mul", {})), assistant("sorry")])
    events = await run(ChatModelAgent(name="a", model=model, tools=[add]))
    assert messages_of(events)[1].content == "tool [mul] not found: expected one of ['add']"


async def test_a_tool_that_raises_ends_the_run_with_an_error_event() -> None:
    @tool(threaded=False)
    def broken() -> str:
        """Broken."""
        raise RuntimeError("disk on fire")

    model = ScriptedModel([tool_calls(("broken", {})), assistant("never")])
    events = await run(ChatModelAgent(name="a", model=model, tools=[broken]))
    assert isinstance(events[-1].error, RuntimeError)
    assert events[-1].run_path and str(events[-1].run_path[0]) == "a"
    assert model.remaining == 1


async def test_a_tool_error_cancels_sibling_tools_still_running() -> None:
    cancelled = asyncio.Event()

    @tool
    async def hang() -> str:
        """Hang."""
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    @tool
    async def boom() -> str:
        """Boom."""
        await asyncio.sleep(0)
        raise ValueError("boom")

    model = ScriptedModel([tool_calls(("hang", {}), ("boom", {}))])
    events = await asyncio.wait_for(run(ChatModelAgent(name="a", model=model, tools=[hang, boom])), 2)
    assert isinstance(events[-1].error, ValueError)
    assert cancelled.is_set()


async def test_model_error_is_an_error_event() -> None:
    model = ScriptedModel([ModelHTTPError("HTTP 500", status_code=500)])
    events = await run(ChatModelAgent(name="a", model=model))
    assert isinstance(events[-1].error, ModelHTTPError)


async def test_model_retry_recovers_from_a_transient_failure() -> None:
    model = ScriptedModel([ModelHTTPError("HTTP 503", status_code=503), assistant("ok")])
    agent = ChatModelAgent(name="a", model=model, model_retry=ModelRetryConfig(max_retries=2, base_delay=0.001))
    events = await run(agent)
    assert [m.content for m in messages_of(events)] == ["ok"]
    assert len(model.requests) == 2


async def test_gen_model_input_replaces_the_default_input() -> None:
    model = ScriptedModel([assistant("x")])

    def gen(instruction: str, input: AgentInput, ctx: RunContext) -> list[Message]:
        return [user(f"{instruction} / {input.messages[-1].content}")]

    await run(ChatModelAgent(name="a", instruction="I", model=model, gen_model_input=gen), "q")
    assert [m.content for m in model.requests[0].messages] == ["I / q"]


async def test_middlewares_extend_instruction_tools_and_wrap_calls() -> None:
    seen_before: list[int] = []
    wrapped: list[str] = []

    @tool(threaded=False)
    def extra() -> str:
        """Extra."""
        return "extra!"

    def before(state: ChatModelAgentState, ctx: RunContext) -> None:
        seen_before.append(len(state.messages))
        state.messages.append(user("(reminder)"))

    async def after(state: ChatModelAgentState, ctx: RunContext) -> None:
        state.messages[-1].content = state.messages[-1].content.upper()

    def wrap(name: str):  # type: ignore[no-untyped-def]
        def outer(handler: ToolCallHandler) -> ToolCallHandler:
            async def call(tc: ToolCall, ctx: ToolContext) -> str:
                wrapped.append(name)
                return f"{name}({await handler(tc, ctx)})"

            return call

        return outer

    model = ScriptedModel([tool_calls(("extra", {})), assistant("done")])
    agent = ChatModelAgent(
        name="a",
        instruction="Base.",
        model=model,
        middlewares=[
            AgentMiddleware(additional_instruction="More.", additional_tools=[extra], wrap_tool_call=wrap("A")),
            AgentMiddleware(before_chat_model=before, after_chat_model=after, wrap_tool_call=wrap("B")),
        ],
    )
    events = await run(agent)
    assert model.requests[0].messages[0].content == "Base.\n\nMore."
    assert [t.name for t in model.requests[0].tools] == ["extra"]
    assert model.requests[0].messages[-1].content == "(reminder)"
    assert wrapped == ["A", "B"]  # the first middleware is the outermost wrapper
    assert messages_of(events)[1].content == "A(B(extra!))"
    assert seen_before == [2, 5]
    assert messages_of(events)[-1].content == "DONE"


async def test_agent_and_round_hooks_run_once_each_at_their_points() -> None:
    log: list[str] = []

    def start(state: ChatModelAgentState, ctx: RunContext) -> None:
        log.append(f"start {len(state.messages)}")
        state.messages.append(user("(context)"))

    async def end(state: ChatModelAgentState, ctx: RunContext) -> None:
        log.append(f"end {state.messages[-1].content}")

    def tools_done(batch: ToolBatch) -> None:
        log.append(f"tools {sorted(batch.results.items())}")

    model = ScriptedModel([tool_calls(("add", {"a": 1, "b": 2}), ("add", {"a": 2, "b": 2})), assistant("done")])
    middleware = AgentMiddleware(before_agent=start, after_agent=end, after_tools=tools_done)
    agent = ChatModelAgent(name="a", instruction="I.", model=model, tools=[add], middlewares=[middleware])
    await run(agent)
    assert log == ["start 2", "tools [('call_1', '3'), ('call_2', '4')]", "end done"]
    assert model.requests[0].messages[-1].content == "(context)"


async def test_after_agent_does_not_run_when_the_agent_fails_or_is_interrupted() -> None:
    ended: list[str] = []

    @tool(threaded=False)
    def ask(ctx: ToolContext) -> str:
        """Ask a person."""
        ctx.interrupt("who?")

    def end(state: ChatModelAgentState, ctx: RunContext) -> None:
        ended.append("end")

    model = ScriptedModel([tool_calls(("ask", {})), RuntimeError("down")])
    for script in ([tool_calls(("ask", {}))], [RuntimeError("down")]):
        model = ScriptedModel(script)
        agent = ChatModelAgent(name="a", model=model, tools=[ask], middlewares=[AgentMiddleware(after_agent=end)])
        events = await run(agent)
        assert events[-1].error is not None or events[-1].action is not None
    assert ended == []


async def test_on_model_error_may_change_the_request_and_make_the_call_again() -> None:
    seen: list[tuple[str, int]] = []

    def narrow(state: ChatModelAgentState, error: Exception, attempt: int, ctx: RunContext) -> bool:
        seen.append((str(error), attempt))
        state.messages.append(user("(shorter)"))
        return attempt < 2

    middleware = AgentMiddleware(on_model_error=narrow)
    model = ScriptedModel([RuntimeError("too long"), RuntimeError("still"), assistant("ok")])
    agent = ChatModelAgent(name="a", model=model, middlewares=[middleware], max_iterations=1)
    events = await run(agent)
    assert isinstance(events[-1].error, RuntimeError) and str(events[-1].error) == "still"
    assert seen == [("too long", 1), ("still", 2)]

    model = ScriptedModel([RuntimeError("too long"), assistant("ok")])
    agent = ChatModelAgent(name="a", model=model, middlewares=[middleware], max_iterations=1)
    events = await run(agent)
    assert messages_of(events)[-1].content == "ok"  # the failed call did not use up the only iteration
    assert model.requests[1].messages[-1].content == "(shorter)"


async def test_on_model_error_does_not_retry_a_streamed_call() -> None:
    asked: list[int] = []

    def again(state: ChatModelAgentState, error: Exception, attempt: int, ctx: RunContext) -> bool:
        asked.append(attempt)
        return True

    model = ScriptedModel([RuntimeError("down"), assistant("ok")])
    agent = ChatModelAgent(name="a", model=model, middlewares=[AgentMiddleware(on_model_error=again)])
    events = await run(agent, streaming=True)
    assert any(isinstance(e.error, RuntimeError) for e in events)
    assert asked == [] and len(model.requests) == 1


async def test_tool_choice_and_settings_reach_the_model() -> None:
    model = ScriptedModel([tool_calls(("add", {"a": 1, "b": 1})), assistant("2")])
    settings = ModelSettings(temperature=0.0)
    choice: ToolChoice = "required"
    await run(ChatModelAgent(name="a", model=model, tools=[add], tool_choice=choice, model_settings=settings))
    assert model.requests[0].tool_choice == "required"
    assert model.requests[0].settings is settings


async def test_tools_reach_session_values_through_their_context() -> None:
    @tool(threaded=False)
    def remember(ctx: ToolContext) -> str:
        """Remember."""
        ctx.add_session_value("seen", ctx.get_session_value("customer"))
        return "ok"

    model = ScriptedModel([tool_calls(("remember", {})), assistant("done")])
    runner = Runner(ChatModelAgent(name="a", model=model, tools=[remember]), session_values={"customer": "Ann"})
    ctx_values: dict[str, object] = {}
    stream = runner.query("x")
    async for _ in stream:
        pass
    # A second run starts from the Runner's seed again: values do not leak between runs.
    model2 = ScriptedModel([tool_calls(("remember", {})), assistant("done")])
    agent2 = ChatModelAgent(name="a", model=model2, tools=[remember], output_key="final")
    ctx = RunContext()
    ctx.add_session_value("customer", "Bob")
    async for _ in agent2.run(AgentInput(messages=[user("x")]), ctx):
        pass
    ctx_values = ctx.get_session_values()
    assert ctx_values == {"customer": "Bob", "seen": "Bob", "final": "done"}


async def test_agent_is_frozen_after_its_first_run() -> None:
    from batonflow.adk import set_sub_agents

    agent = ChatModelAgent(name="a", model=ScriptedModel([assistant("x")]))
    await run(agent)
    with pytest.raises(UserError, match="agent has been frozen after run"):
        set_sub_agents(agent, [ChatModelAgent(name="b", model=ScriptedModel([]))])


def test_duplicate_tool_names_are_a_user_error() -> None:
    with pytest.raises(UserError, match=r"expected unique tool names, got \['add'\]"):
        ChatModelAgent(name="a", model=ScriptedModel([]), tools=[add, add])


# -- streaming ---------------------------------------------------------------------------------------------------


async def test_streaming_reaches_the_caller_chunk_by_chunk() -> None:
    model = PushModel()
    stream = Runner(ChatModelAgent(name="a", model=model), enable_streaming=True).query("hi")  # type: ignore[arg-type]
    event = await stream.__anext__()
    variant = event.message_output
    assert variant is not None and variant.is_streaming and variant.message_stream is not None
    model.push(assistant("Hel"))
    assert (await variant.message_stream.__anext__()).content == "Hel"  # before the model has finished
    model.push(assistant("lo"))
    model.finish()
    assert (await variant.message_stream.__anext__()).content == "lo"
    assert [e async for e in stream] == []


async def test_streamed_answers_are_recorded_whole_for_the_next_agent() -> None:
    model = ScriptedModel([tool_calls(("add", {"a": 1, "b": 2})), assistant("three it is")])
    events = await run(ChatModelAgent(name="a", model=model, tools=[add]), streaming=True)
    assert [m.content for m in messages_of(events)] == ["", "3", "three it is"]
    assert model.requests[1].messages[-2].tool_calls[0].function.name == "add"


async def test_model_error_mid_stream_reaches_the_stream_and_ends_the_run() -> None:
    model = ScriptedModel([[assistant("par"), ModelHTTPError("HTTP 502", status_code=502)]])
    stream = Runner(ChatModelAgent(name="a", model=model), enable_streaming=True).query("hi")
    events = [e async for e in stream]
    variant = events[0].message_output
    assert variant is not None and variant.message_stream is not None
    assert (await variant.message_stream.__anext__()).content == "par"
    with pytest.raises(ModelHTTPError):
        await variant.message_stream.__anext__()
    assert isinstance(events[-1].error, ModelHTTPError)

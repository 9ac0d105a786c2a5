from collections.abc import Sequence
from typing import Any

import pytest

from batonflow.adk import AgentEvent, AgentMiddleware, ChatModelAgent, InterruptInfo, Runner, collect_events
from batonflow.agents import stop_loop, tool_retry, tool_sanitizer
from batonflow.agents.middleware import StopLoopInterceptor
from batonflow.errors import MaxIterationsError, ToolArgumentsError, UserError
from batonflow.schema import FunctionCall, Message, ToolCall, assistant
from batonflow.store import MemoryCheckpointStore
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import Tool, ToolContext, tool

LOOP_REMINDER_3 = (
    "【系统提示：检测到潜在循环 (Loop Detected)】\n"
    '系统检测到您最近 3 次（连续 3 次相同）执行了高度相似的操作，可能存在"原地打转"的情况。\n\n'
    "请立即暂停当前操作思路，审视历史 Observation 并执行以下步骤：\n"
    "1. **有效性评估**：如果最近的尝试没有带来有效新线索，说明当前策略已失效，请必须更换思路或换个角度切入。\n"
    "2. **强制收敛**：若已有足够信息供用户参考，请直接输出 Final Answer 结束任务。\n"
    "3. **避免重复**：不要重复执行已经执行过且未产生新信息的操作。"
)


@tool(threaded=False)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


@tool(threaded=False)
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class Sleeps:
    """A fake ``asyncio.sleep`` that records the delays asked for."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def flaky(failures: int, *, result: str = "ok", error: Exception | None = None) -> tuple[Tool, list[int]]:
    """A tool that fails ``failures`` times, then returns ``result``; the list counts its calls."""
    calls: list[int] = []

    @tool(threaded=False)
    def fetch() -> str:
        """Fetch something over an unreliable link."""
        calls.append(1)
        if len(calls) <= failures:
            raise error if error is not None else ConnectionError(f"link down ({len(calls)})")
        return result

    return fetch, calls


def agent_with(
    *responses: Message, tools: Sequence[Tool], middlewares: Sequence[AgentMiddleware], max_iterations: int = 20
) -> tuple[ChatModelAgent, ScriptedModel]:
    model = ScriptedModel(list(responses))
    agent = ChatModelAgent(name="a", model=model, tools=tools, middlewares=middlewares, max_iterations=max_iterations)
    return agent, model


async def run(agent: ChatModelAgent, text: str = "go") -> list[AgentEvent]:
    return await collect_events(Runner(agent).query(text))


def observations(events: list[AgentEvent]) -> list[str]:
    found = []
    for event in events:
        variant = event.message_output
        if variant is not None and variant.message is not None and variant.message.role == "tool":
            found.append(variant.message.content)
    return found


def reminders(messages: Sequence[Message]) -> list[str]:
    return [m.content for m in messages if m.role == "user" and m.content.startswith("【系统提示")]


def same_call(n: int, name: str = "lookup", args: dict[str, Any] | str | None = None) -> list[Message]:
    return [tool_calls((name, {"key": "k"} if args is None else args)) for _ in range(n)]


# -- stop_loop -----------------------------------------------------------------------------------------------------


async def test_stop_loop_reminds_with_the_original_text_after_the_third_identical_call() -> None:
    agent, model = agent_with(*same_call(3), assistant("done"), tools=[lookup], middlewares=[stop_loop()])
    await run(agent)
    assert [reminders(r.messages) for r in model.requests[:3]] == [[], [], []]  # two repeats are not a loop
    last = model.requests[3].messages
    assert last[-1].role == "user"
    assert last[-1].content == LOOP_REMINDER_3
    # After the tool results, so that each assistant message is still followed by its tool messages.
    assert [m.role for m in last] == ["user", "assistant", "tool", "assistant", "tool", "assistant", "tool", "user"]
    model.assert_complete()


async def test_stop_loop_still_runs_the_repeated_calls() -> None:
    agent, _ = agent_with(*same_call(3), assistant("done"), tools=[lookup], middlewares=[stop_loop()])
    events = await run(agent)
    assert observations(events) == ["value of k"] * 3


async def test_stop_loop_fingerprint_ignores_argument_key_order_and_spacing() -> None:
    responses = [
        tool_calls(("add", '{"a": 1, "b": 2}')),
        tool_calls(("add", '{ "b":2,"a":1 }')),
        tool_calls(("add", '{"b": 2, "a": 1}')),
        assistant("3"),
    ]
    agent, model = agent_with(*responses, tools=[add], middlewares=[stop_loop(match_arguments=True)])
    await run(agent)
    assert reminders(model.requests[3].messages) == [LOOP_REMINDER_3]


async def test_stop_loop_with_match_arguments_calls_with_different_arguments_are_not_a_loop() -> None:
    responses = [tool_calls(("lookup", {"key": k})) for k in "xyz"]
    agent, model = agent_with(
        *responses, assistant("done"), tools=[lookup], middlewares=[stop_loop(match_arguments=True)]
    )
    await run(agent)
    assert reminders(model.requests[3].messages) == []


@pytest.mark.parametrize("middleware", [stop_loop(), StopLoopInterceptor()], ids=["factory", "class"])
async def test_stop_loop_fingerprints_tool_names_only_by_default_as_the_original(middleware: AgentMiddleware) -> None:
    responses = [tool_calls(("lookup", {"key": k})) for k in "xyz"]
    agent, model = agent_with(*responses, assistant("done"), tools=[lookup], middlewares=[middleware])
    await run(agent)
    assert reminders(model.requests[3].messages) == [LOOP_REMINDER_3]


async def test_stop_loop_name_fingerprint_is_the_calls_names_in_order_as_the_original() -> None:
    responses = [
        tool_calls(("lookup", {"key": "k"}), ("add", {"a": 1, "b": 2})),
        tool_calls(("add", {"a": 1, "b": 2}), ("lookup", {"key": "k"})),  # another order: another fingerprint
        tool_calls(("lookup", {"key": "k"}), ("lookup", {"key": "k"})),  # twice the same: not once
        tool_calls(("lookup", {"key": "k"})),
        tool_calls(("lookup", {"key": "j"}), ("add", {"a": 3, "b": 4})),
        tool_calls(("lookup", {"key": "i"}), ("add", {"a": 5, "b": 6})),
        assistant("done"),
    ]
    agent, model = agent_with(*responses, tools=[lookup, add], middlewares=[stop_loop()])
    await run(agent)
    assert [len(reminders(r.messages)) for r in model.requests] == [0, 0, 0, 0, 0, 0, 1]


async def test_stop_loop_fingerprints_parallel_calls_as_a_set() -> None:
    responses = [
        tool_calls(("lookup", {"key": "k"}), ("add", {"a": 1, "b": 2})),
        tool_calls(("add", {"a": 1, "b": 2}), ("lookup", {"key": "k"})),
        tool_calls(("lookup", {"key": "k"})),  # a different turn: one call of the two
        tool_calls(("lookup", {"key": "k"}), ("add", {"a": 1, "b": 2})),
        assistant("done"),
    ]
    agent, model = agent_with(*responses, tools=[lookup, add], middlewares=[stop_loop(match_arguments=True)])
    await run(agent)
    assert [len(reminders(r.messages)) for r in model.requests] == [0, 0, 0, 0, 1]


@pytest.mark.parametrize(
    ("others", "reminded"),
    [
        (5, True),  # X X a b c d e X: three X among the last 8 turns
        (6, False),  # X X a b c d e f X: the first X has left the window of 8
    ],
)
async def test_stop_loop_window_holds_the_last_eight_tool_turns(others: int, reminded: bool) -> None:
    fillers = [tool_calls(("lookup", {"key": f"other {i}"})) for i in range(others)]
    responses = [*same_call(2), *fillers, *same_call(1), assistant("done")]
    agent, model = agent_with(*responses, tools=[lookup], middlewares=[stop_loop(match_arguments=True)])
    await run(agent)
    assert reminders(model.requests[-1].messages) == ([LOOP_REMINDER_3] if reminded else [])


async def test_stop_loop_counts_anew_after_a_reminder_and_reminds_again_if_the_loop_persists() -> None:
    agent, model = agent_with(*same_call(6), assistant("done"), tools=[lookup], middlewares=[stop_loop()])
    await run(agent)
    assert [len(reminders(r.messages)) for r in model.requests] == [0, 0, 0, 1, 1, 1, 2]
    assert reminders(model.requests[6].messages) == [LOOP_REMINDER_3, LOOP_REMINDER_3]


async def test_stop_loop_never_stops_the_run_a_persistent_loop_ends_at_max_iterations() -> None:
    agent, model = agent_with(*same_call(4), tools=[lookup], middlewares=[stop_loop()], max_iterations=4)
    events = await run(agent)
    assert reminders(model.requests[3].messages) == [LOOP_REMINDER_3]
    assert observations(events) == ["value of k"] * 4
    assert isinstance(events[-1].error, MaxIterationsError)


async def test_stop_loop_reports_the_count_it_found_with_a_custom_threshold() -> None:
    agent, model = agent_with(
        *same_call(4), assistant("done"), tools=[lookup], middlewares=[stop_loop(max_repeat_count=4)]
    )
    await run(agent)
    assert reminders(model.requests[3].messages) == []
    [reminder] = reminders(model.requests[4].messages)
    assert reminder.splitlines()[1].startswith("系统检测到您最近 4 次（连续 4 次相同）")


async def test_stop_loop_raises_threshold_and_window_to_the_originals_minimums_of_2_and_4() -> None:
    # X a b X: with the floors (2 repeats in a window of 4) a loop; with the asked-for 1 and 1 it could not be.
    responses = [
        *same_call(1),
        tool_calls(("lookup", {"key": "a"})),
        tool_calls(("lookup", {"key": "b"})),
        *same_call(1),
        assistant("done"),
    ]
    middleware = stop_loop(max_repeat_count=1, window_size=1, match_arguments=True)
    agent, model = agent_with(*responses, tools=[lookup], middlewares=[middleware])
    await run(agent)
    assert [len(reminders(r.messages)) for r in model.requests] == [0, 0, 0, 0, 1]
    assert "最近 2 次（连续 2 次相同）" in reminders(model.requests[4].messages)[0]


# -- tool_retry ----------------------------------------------------------------------------------------------------


async def test_tool_retry_retries_with_a_linear_backoff_of_one_second_by_default() -> None:
    fetch, calls = flaky(2)
    sleeps = Sleeps()
    agent, _ = agent_with(
        tool_calls(("fetch", {})), assistant("done"), tools=[fetch], middlewares=[tool_retry(sleep=sleeps)]
    )
    events = await run(agent)
    assert observations(events) == ["ok"]
    assert len(calls) == 3
    assert sleeps.delays == [1.0, 2.0]


async def test_tool_retry_after_three_attempts_returns_the_execution_error_text_and_the_run_goes_on() -> None:
    fetch, calls = flaky(99)
    sleeps = Sleeps()
    agent, model = agent_with(
        tool_calls(("fetch", {})), assistant("sorry"), tools=[fetch], middlewares=[tool_retry(sleep=sleeps)]
    )
    events = await run(agent)
    assert observations(events) == ["Execution error in tool [fetch]: link down (3)"]
    assert len(calls) == 3
    assert sleeps.delays == [1.0, 2.0]
    assert events[-1].error is None
    assert model.requests[1].messages[-1].content == "Execution error in tool [fetch]: link down (3)"


async def test_tool_retry_names_the_error_type_when_the_error_has_no_message() -> None:
    fetch, _ = flaky(99, error=TimeoutError())
    agent, _ = agent_with(
        tool_calls(("fetch", {})), assistant("sorry"), tools=[fetch], middlewares=[tool_retry(sleep=Sleeps())]
    )
    assert observations(await run(agent)) == ["Execution error in tool [fetch]: TimeoutError"]


async def test_tool_retry_does_not_retry_invalid_arguments_and_asks_the_model_to_fix_them() -> None:
    bad = tool_calls(("add", {"a": 1, "b": "two"}))
    plain, _ = agent_with(bad, assistant("?"), tools=[add], middlewares=[])
    [argument_error] = observations(await run(plain))
    assert argument_error.startswith("Invalid arguments for tool [add]: ")

    sleeps = Sleeps()
    agent, _ = agent_with(
        tool_calls(("add", {"a": 1, "b": "two"})), assistant("?"), tools=[add], middlewares=[tool_retry(sleep=sleeps)]
    )
    assert observations(await run(agent)) == [f"{argument_error}. Please fix the arguments and try again."]
    assert sleeps.delays == []


async def test_tool_retry_keeps_the_prefix_once_for_argument_errors_raised_by_hand() -> None:
    @tool(threaded=False)
    def pick(choice: str) -> str:
        """Pick one."""
        raise ToolArgumentsError("choice must be 'a' or 'b'", tool_name="pick")

    agent, _ = agent_with(
        tool_calls(("pick", {"choice": "c"})), assistant("?"), tools=[pick], middlewares=[tool_retry(sleep=Sleeps())]
    )
    assert observations(await run(agent)) == [
        "Invalid arguments for tool [pick]: choice must be 'a' or 'b'. Please fix the arguments and try again."
    ]


async def test_tool_retry_does_not_retry_an_interrupt_and_the_run_resumes_normally() -> None:
    calls: list[int] = []

    @tool(threaded=False)
    def approve(ctx: ToolContext) -> str:
        """Ask a human."""
        calls.append(1)
        if not ctx.get_interrupt_state().was_interrupted:
            ctx.interrupt("approve?")
        return f"human said {ctx.get_resume_context().data}"

    sleeps = Sleeps()
    agent, _ = agent_with(
        tool_calls(("approve", {})), assistant("done"), tools=[approve], middlewares=[tool_retry(sleep=sleeps)]
    )
    store = MemoryCheckpointStore()
    events = await collect_events(Runner(agent, checkpoint_store=store).query("go", checkpoint_id="c"))
    action = events[-1].action
    assert action is not None
    assert isinstance(action.interrupted, InterruptInfo)
    assert action.interrupted.data == "approve?"
    assert calls == [1]
    assert sleeps.delays == []

    [target] = action.interrupted.interrupt_contexts
    resumed = await collect_events(Runner(agent, checkpoint_store=store).resume("c", targets={target.id: "yes"}))
    assert observations(resumed) == ["human said yes"]
    assert calls == [1, 1]
    assert sleeps.delays == []


async def test_tool_retry_raises_attempts_and_delay_to_the_originals_minimums_of_1_and_half_a_second() -> None:
    sleeps = Sleeps()
    retry = tool_retry(max_attempts=0, delay=0.0, sleep=sleeps).wrap_tool_call
    assert retry is not None
    calls: list[int] = []

    async def failing(call: ToolCall, ctx: ToolContext) -> str:
        calls.append(1)
        raise RuntimeError("boom")

    call = ToolCall(id="c1", function=FunctionCall(name="t"))
    assert await retry(failing)(call, ToolContext(tool_name="t")) == "Execution error in tool [t]: boom"
    assert (calls, sleeps.delays) == ([1], [])

    retry_twice = tool_retry(max_attempts=2, delay=0.1, sleep=sleeps).wrap_tool_call
    assert retry_twice is not None
    await retry_twice(failing)(call, ToolContext(tool_name="t"))
    assert sleeps.delays == [0.5]


# -- tool_sanitizer ------------------------------------------------------------------------------------------------


def returning(text: str) -> Tool:
    @tool(threaded=False)
    def produce() -> str:
        """Produce some output."""
        return text

    return produce


async def test_tool_sanitizer_turns_an_empty_result_into_no_output_from_tool_untouched_by_the_custom_function() -> None:
    agent, _ = agent_with(
        tool_calls(("produce", {})),
        assistant("ok"),
        tools=[returning("")],
        middlewares=[tool_sanitizer(sanitize=str.upper)],
    )
    assert observations(await run(agent)) == ["[No output from tool]"]


async def test_tool_sanitizer_truncates_past_2000_characters_with_the_originals_suffix() -> None:
    long, exact = "x" * 2001, "y" * 2000
    agent, _ = agent_with(
        tool_calls(("produce", {})),
        assistant("ok"),
        tools=[returning(long)],
        middlewares=[tool_sanitizer()],
    )
    assert observations(await run(agent)) == ["x" * 2000 + "... [Content Truncated due to length]"]
    agent, _ = agent_with(
        tool_calls(("produce", {})), assistant("ok"), tools=[returning(exact)], middlewares=[tool_sanitizer()]
    )
    assert observations(await run(agent)) == [exact]


async def test_tool_sanitizer_runs_the_custom_function_before_truncating() -> None:
    def mask(text: str) -> str:
        return text.replace("sk-123", "[REDACTED KEY]")

    agent, _ = agent_with(
        tool_calls(("produce", {})),
        assistant("ok"),
        tools=[returning("key=sk-123")],
        middlewares=[tool_sanitizer(max_length=12, sanitize=mask)],
    )
    assert observations(await run(agent)) == ["key=[REDACTE... [Content Truncated due to length]"]


async def test_tool_sanitizer_max_length_none_turns_truncation_off() -> None:
    text = "z" * 5000
    agent, _ = agent_with(
        tool_calls(("produce", {})),
        assistant("ok"),
        tools=[returning(text)],
        middlewares=[tool_sanitizer(max_length=None)],
    )
    assert observations(await run(agent)) == [text]


def test_tool_sanitizer_refuses_a_max_length_below_one() -> None:
    with pytest.raises(UserError, match=r"max_length: expected a positive number of characters or None, got 0"):
        tool_sanitizer(max_length=0)


# -- composition ---------------------------------------------------------------------------------------------------


async def test_sanitizer_outside_retry_truncates_the_retry_error_text_and_stop_loop_still_reminds() -> None:
    fetch, calls = flaky(99)
    sleeps = Sleeps()
    agent, model = agent_with(
        *same_call(3, "fetch", {}),
        assistant("giving up"),
        tools=[fetch],
        middlewares=[tool_sanitizer(max_length=20), tool_retry(sleep=sleeps), stop_loop()],
    )
    events = await run(agent)
    assert observations(events) == ["Execution error in t... [Content Truncated due to length]"] * 3
    assert len(calls) == 9
    assert sleeps.delays == [1.0, 2.0] * 3
    assert reminders(model.requests[3].messages) == [LOOP_REMINDER_3]
    assert events[-1].error is None


async def test_sanitizer_inside_retry_sees_only_the_tool_so_the_retry_error_text_is_whole() -> None:
    fetch, _ = flaky(99)
    agent, _ = agent_with(
        tool_calls(("fetch", {})),
        assistant("giving up"),
        tools=[fetch],
        middlewares=[tool_retry(sleep=Sleeps()), tool_sanitizer(max_length=20)],
    )
    assert observations(await run(agent)) == ["Execution error in tool [fetch]: link down (3)"]


async def test_sanitizer_outside_retry_fills_in_an_empty_result_that_came_after_a_retry() -> None:
    fetch, calls = flaky(1, result="")
    sleeps = Sleeps()
    agent, _ = agent_with(
        tool_calls(("fetch", {})),
        assistant("ok"),
        tools=[fetch],
        middlewares=[tool_sanitizer(), tool_retry(sleep=sleeps)],
    )
    assert observations(await run(agent)) == ["[No output from tool]"]
    assert (len(calls), sleeps.delays) == (2, [1.0])


# -- Solon's class names -----------------------------------------------------------------------------------------


async def test_the_interceptor_classes_behave_as_their_factories() -> None:
    from batonflow.agents.middleware import StopLoopInterceptor, ToolRetryInterceptor, ToolSanitizerInterceptor

    agent, model = agent_with(*same_call(3), assistant("done"), tools=[lookup], middlewares=[StopLoopInterceptor()])
    await run(agent)
    assert model.requests[3].messages[-1].content == LOOP_REMINDER_3

    fetch, calls = flaky(2)
    sleeps = Sleeps()
    agent, _ = agent_with(
        tool_calls(("fetch", {})),
        assistant("done"),
        tools=[fetch],
        middlewares=[ToolRetryInterceptor(sleep=sleeps), ToolSanitizerInterceptor(max_length=1)],
    )
    assert observations(await run(agent)) == ["o... [Content Truncated due to length]"]
    assert (len(calls), sleeps.delays) == (3, [1.0, 2.0])

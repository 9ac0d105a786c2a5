"""The final answer: ``Runner.call`` and its twins run to the end and hand back a ``RunResult``."""

from __future__ import annotations

import asyncio

import pytest

from batonflow.adk import ChatModelAgent, Runner, RunResult, set_sub_agents
from batonflow.errors import ModelHTTPError, UserError
from batonflow.schema import Message, ResponseMeta, Usage, assistant, user
from batonflow.store import MemoryCheckpointStore
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import ToolContext, tool
from batonflow.trace import TraceEvent


def used(message: Message, prompt: int, completion: int) -> Message:
    usage = Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)
    message.response_meta = ResponseMeta(finish_reason="stop", usage=usage)
    return message


@tool(threaded=False)
def lookup(order_id: int, ctx: ToolContext) -> str:
    """Look an order up."""
    ctx.add_session_value("looked_up", order_id)
    return f"order {order_id} shipped"


def refunds() -> tuple[ChatModelAgent, list[tuple[int, object]]]:
    """An agent that refunds two orders, each once a person approved it (the safe pattern: re-interrupt when not
    targeted), and the refunds it made."""
    made: list[tuple[int, object]] = []

    @tool(threaded=False)
    def refund(order_id: int, ctx: ToolContext) -> str:
        """Refund an order once approved."""
        if not ctx.get_interrupt_state().was_interrupted:
            ctx.interrupt({"approve_refund": order_id})
        resume = ctx.get_resume_context()
        if not resume.is_resume_target:
            ctx.interrupt({"approve_refund": order_id})
        made.append((order_id, resume.data))
        return "refunded"

    model = ScriptedModel(
        [tool_calls(("refund", {"order_id": 1}), ("refund", {"order_id": 2})), assistant("Both refunded.")]
    )
    return ChatModelAgent(name="refunds", model=model, tools=[refund]), made


async def test_call_runs_to_the_end_and_gives_the_answer_the_events_the_session_values_and_the_metrics() -> None:
    model = ScriptedModel(
        [used(tool_calls(("lookup", {"order_id": 7})), 10, 2), used(assistant("Order 7 has shipped."), 20, 5)]
    )
    runner = Runner(ChatModelAgent(name="a", model=model, tools=[lookup], output_key="answer"))
    result = await runner.call("Where is order 7?")
    assert isinstance(result, RunResult)
    assert result.text == "Order 7 has shipped."
    assert result.message is not None and result.message.role == "assistant"
    assert [e.seq for e in result.events] == [1, 2, 3]
    assert result.session_values == {"looked_up": 7, "answer": "Order 7 has shipped."}
    assert result.metrics is not None
    total = result.metrics.total
    assert (total.prompt_tokens, total.completion_tokens, total.model_calls, total.tool_calls) == (30, 7, 2, 1)
    assert not result.interrupted and result.interrupt is None and result.interrupt_ids == []
    assert result.checkpoint_id is None and result.session_id is None and result.windowed == 0
    assert model.requests[0].messages[-1] == user("Where is order 7?")


async def test_call_takes_messages_and_run_options() -> None:
    model = ScriptedModel([assistant("Hello.")])
    runner = Runner(ChatModelAgent(name="a", model=model, instruction="Hi {name}."), session_values={"name": "x"})
    result = await runner.call([user("one"), user("two")], session_values={"name": "Ann"})
    assert result.text == "Hello."
    assert [m.content for m in model.requests[0].messages] == ["Hi Ann.", "one", "two"]


@pytest.mark.parametrize(
    ("messages", "found"),
    [
        (user("hi"), "got one Message (pass [message])"),
        (3, "got int"),
        ([user("hi"), "there"], "got str at position 1"),
    ],
    ids=["a message", "int", "a string among messages"],
)
async def test_call_refuses_a_prompt_that_is_neither_a_string_nor_messages(messages: object, found: str) -> None:
    runner = Runner(ChatModelAgent(name="a", model=ScriptedModel([])))
    with pytest.raises(UserError) as caught:
        await runner.call(messages)  # type: ignore[arg-type]
    assert str(caught.value) == f"Runner.call: expected a string or a sequence of messages, {found}"


async def test_call_joins_what_was_streamed() -> None:
    runner = Runner(
        ChatModelAgent(name="a", model=ScriptedModel([assistant("Streamed answer.")])), enable_streaming=True
    )
    result = await runner.call("hi")
    assert result.text == "Streamed answer."
    assert [v.is_streaming for e in result.events if (v := e.message_output) is not None] == [True]


async def test_the_answer_is_the_last_agents_after_a_transfer() -> None:
    refund = ChatModelAgent(name="refund", description="Refunds.", model=ScriptedModel([assistant("Refunded.")]))
    router = ChatModelAgent(
        name="router",
        description="Routes.",
        model=ScriptedModel([tool_calls(("transfer_to_agent", {"agent_name": "refund"}))]),
    )
    result = await Runner(set_sub_agents(router, [refund])).call("money back")
    assert (result.text, result.events[-1].agent_name) == ("Refunded.", "refund")
    assert result.metrics is not None and sorted(result.metrics.agents) == ["refund", "router"]


async def test_an_interrupted_call_gives_the_ids_to_resume_and_call_resume_finishes_the_run() -> None:
    agent, made = refunds()
    store = MemoryCheckpointStore()
    runner = Runner(agent, checkpoint_store=store)
    first = await runner.call("Refund orders 1 and 2", checkpoint_id="run-1")
    assert first.interrupted and first.checkpoint_id == "run-1"
    assert sorted(c.info["approve_refund"] for c in first.interrupt_contexts) == [1, 2]
    by_order = {c.info["approve_refund"]: c.id for c in first.interrupt_contexts}
    assert sorted(first.interrupt_ids) == sorted(by_order.values())

    second = await runner.call_resume("run-1", targets={by_order[1]: "yes"})
    assert second.interrupted and second.interrupt_ids == [by_order[2]]  # the other one still waits, same id
    assert made == [(1, "yes")]

    last = await runner.call_resume("run-1", targets={by_order[2]: "no"})
    assert not last.interrupted and last.text == "Both refunded." and last.checkpoint_id is None
    assert made == [(1, "yes"), (2, "no")]
    assert await store.get("run-1") is None


async def test_an_error_that_ends_the_run_is_raised() -> None:
    failing = ScriptedModel([ModelHTTPError("model 'm' request failed: HTTP 400: bad", status_code=400)])
    with pytest.raises(ModelHTTPError, match="HTTP 400: bad"):
        await Runner(ChatModelAgent(name="a", model=failing)).call("hi")


async def test_without_metrics_a_call_is_not_traced() -> None:
    result = await Runner(ChatModelAgent(name="a", model=ScriptedModel([assistant("ok")]))).call("hi", metrics=False)
    assert result.metrics is None and result.text == "ok"
    seen: list[TraceEvent] = []
    runner = Runner(ChatModelAgent(name="a", model=ScriptedModel([assistant("ok")])), callbacks=[seen.append])
    traced = await runner.call("hi", metrics=False)
    assert traced.metrics is not None and seen  # the Runner's callbacks trace it anyway


def test_call_sync_and_call_resume_sync_run_without_an_event_loop() -> None:
    agent, made = refunds()
    runner = Runner(agent, checkpoint_store=MemoryCheckpointStore())
    first = runner.call_sync("Refund orders 1 and 2", checkpoint_id="run-1")
    assert len(first.interrupt_ids) == 2
    last = runner.call_resume_sync("run-1", targets=dict.fromkeys(first.interrupt_ids, "yes"))
    assert last.text == "Both refunded." and sorted(made) == [(1, "yes"), (2, "yes")]


async def test_the_sync_twins_inside_a_running_event_loop_say_to_await_instead() -> None:
    runner = Runner(ChatModelAgent(name="a", model=ScriptedModel([assistant("ok")])))
    cases = [
        (lambda: runner.call_sync("hi"), "call_sync", "`await runner.call(...)`"),
        (lambda: runner.call_resume_sync("run-1"), "call_resume_sync", "`await runner.call_resume(...)`"),
        (
            lambda: runner.query_sync("hi"),
            "run_sync",
            "`await collect_events(runner.run(...))` or `await runner.call(...)`",
        ),
    ]
    for call, name, instead in cases:
        with pytest.raises(UserError) as caught:
            call()
        assert str(caught.value) == (
            f"Runner.{name} cannot block inside a running event loop (a notebook, an async function): expected no "
            f"running loop, got one; use {instead} there instead (a notebook takes a top-level await)"
        )
    # Nothing was started: the model was never asked.
    assert isinstance(runner.agent.agent, ChatModelAgent)
    model = runner.agent.agent.model
    assert isinstance(model, ScriptedModel) and model.requests == []
    assert (await runner.call("hi")).text == "ok"  # the awaitable works here


def test_call_sync_works_from_a_thread_of_a_program_whose_loop_runs_elsewhere() -> None:
    async def main() -> str:
        runner = Runner(ChatModelAgent(name="a", model=ScriptedModel([assistant("ok")])))
        result = await asyncio.to_thread(runner.call_sync, "hi")  # a worker thread has no running loop
        return result.text

    assert asyncio.run(main()) == "ok"

"""The console renderer: a run's agent events as lines of text, printed as they arrive."""

from __future__ import annotations

import asyncio
import io

from batonflow.adk import AgentAction, AgentEvent, InterruptCtx, InterruptInfo, RunStep, event_from_message
from batonflow.agents import HITLPending, PendingTask
from batonflow.errors import MaxIterationsError
from batonflow.observe import ConsoleRenderer
from batonflow.schema import FunctionCall, Message, Stream, ToolCall, assistant

REFUND_PATH = (RunStep("router"), RunStep("refund_agent"))


async def print_event(event: AgentEvent, out: io.StringIO) -> None:
    await ConsoleRenderer(out).print_event(event)


async def test_streamed_text_is_printed_chunk_by_chunk_as_it_arrives() -> None:
    reader, writer = Stream.pipe()
    event = event_from_message(stream=reader)
    event.agent_name, event.run_path = "refund_agent", REFUND_PATH
    out = io.StringIO()
    printing = asyncio.create_task(print_event(event, out))

    writer.send(Message(role="assistant", content=" Your refund"))
    for _ in range(5):
        await asyncio.sleep(0)
    assert out.getvalue() == "[router → refund_agent] refund_agent: Your refund"

    writer.send(Message(role="assistant", content=" is on its way."))
    writer.close()
    await printing
    assert out.getvalue() == "[router → refund_agent] refund_agent: Your refund is on its way.\n"


async def test_tool_calls_of_a_streamed_message_are_printed_once_it_is_complete() -> None:
    chunks = [
        Message(role="assistant", tool_calls=[ToolCall(index=0, id="c", function=FunctionCall(name="issue_refund"))]),
        Message(role="assistant", tool_calls=[ToolCall(index=0, function=FunctionCall(arguments='{"order_id": '))]),
        Message(role="assistant", tool_calls=[ToolCall(index=0, function=FunctionCall(arguments='"1042"}'))]),
    ]
    event = event_from_message(stream=Stream.from_list(chunks))
    event.agent_name, event.run_path = "refund_agent", REFUND_PATH
    out = io.StringIO()

    await print_event(event, out)

    assert out.getvalue() == '[router → refund_agent] refund_agent calls issue_refund(order_id="1042")\n'


async def test_arguments_that_are_not_json_are_printed_as_the_model_wrote_them() -> None:
    call = ToolCall(index=0, id="c", function=FunctionCall(name="issue_refund", arguments="order 1042"))
    event = event_from_message(assistant(tool_calls=[call]))
    event.agent_name, event.run_path = "refund_agent", REFUND_PATH
    out = io.StringIO()

    await print_event(event, out)

    assert out.getvalue() == "[router → refund_agent] refund_agent calls issue_refund(order 1042)\n"


async def test_interrupt_for_approval_is_printed_with_each_pending_call() -> None:
    tasks = tuple(
        PendingTask(call_id=f"c{n}", tool_name="issue_refund", arguments=f'{{"order_id": "{n}"}}', comment="why")
        for n in (1042, 1044)
    )
    cause = InterruptCtx(id="i", address="a", info=HITLPending(tasks=tasks), is_root_cause=True)
    interrupted = InterruptInfo(data=cause.info, interrupt_contexts=[cause])
    event = AgentEvent(agent_name="refund_agent", run_path=REFUND_PATH, action=AgentAction(interrupted=interrupted))
    out = io.StringIO()

    await print_event(event, out)

    assert out.getvalue() == (
        '[router → refund_agent] refund_agent waits for approval: issue_refund(order_id="1042") (why)\n'
        '[router → refund_agent] refund_agent waits for approval: issue_refund(order_id="1044") (why)\n'
    )


async def test_error_event_is_printed_with_its_run_path_and_error_type() -> None:
    event = AgentEvent(agent_name="refund_agent", run_path=REFUND_PATH, error=MaxIterationsError())
    out = io.StringIO()

    await print_event(event, out)

    assert out.getvalue() == "[router → refund_agent] refund_agent error: MaxIterationsError: exceeds max iterations\n"


async def test_failed_stream_ends_the_line_and_leaves_the_error_to_the_error_event() -> None:
    reader, writer = Stream.pipe()
    event = event_from_message(stream=reader)
    event.agent_name, event.run_path = "refund_agent", REFUND_PATH
    writer.send(Message(role="assistant", content="Your"))
    writer.send_error(RuntimeError("connection lost"))
    out = io.StringIO()

    await print_event(event, out)

    assert out.getvalue() == "[router → refund_agent] refund_agent: Your [stream failed]\n"


async def test_streamed_tool_result_is_printed_joined() -> None:
    event = event_from_message(
        stream=Stream.from_list(
            [Message(role="tool", content="Refunded "), Message(role="tool", content="59.00 EUR.")]
        ),
        role="tool",
        tool_name="issue_refund",
    )
    event.agent_name, event.run_path = "refund_agent", REFUND_PATH
    out = io.StringIO()

    await print_event(event, out)

    assert out.getvalue() == "[router → refund_agent] refund_agent ← issue_refund: Refunded 59.00 EUR.\n"


async def test_print_events_prints_a_run_and_returns_the_interrupts_it_stopped_at() -> None:
    cause = InterruptCtx(id="i", address="a", info="approve?", is_root_cause=True)
    events = [
        event_from_message(assistant("Let me check.")),
        AgentEvent(action=AgentAction(interrupted=InterruptInfo(data="approve?", interrupt_contexts=[cause]))),
    ]
    for event in events:
        event.agent_name, event.run_path = "refund_agent", REFUND_PATH
    out = io.StringIO()

    stopped = await ConsoleRenderer(out).print_events(Stream.from_list(events))

    assert stopped == [cause]
    assert out.getvalue() == (
        "[router → refund_agent] refund_agent: Let me check.\n"
        "[router → refund_agent] refund_agent interrupted: approve?\n"
    )


def test_without_an_output_the_renderer_prints_to_the_standard_output_of_the_moment(capsys) -> None:  # type: ignore[no-untyped-def]
    renderer = ConsoleRenderer()
    asyncio.run(renderer.print_event(AgentEvent(agent_name="a", error=MaxIterationsError())))
    assert capsys.readouterr().out == "[a] a error: MaxIterationsError: exceeds max iterations\n"


def test_format_call_shows_json_arguments_as_keywords_and_anything_else_as_written() -> None:
    assert (
        ConsoleRenderer.format_call("refund", '{"order_id": "1042", "amount": 5}')
        == 'refund(order_id="1042", amount=5)'
    )
    assert ConsoleRenderer.format_call("refund", "order 1042") == "refund(order 1042)"
    assert ConsoleRenderer.format_call("noop", "") == "noop()"
    assert ConsoleRenderer.format_call("deep", "[" * 100_000) == f"deep({'[' * 100_000})"

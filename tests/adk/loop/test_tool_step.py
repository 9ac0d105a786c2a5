import asyncio

from batonflow.adk import AgentMiddleware, ChatModelAgent, InterruptInfo, Runner, ToolCallHandler, collect_events
from batonflow.schema import ToolCall, assistant
from batonflow.store import MemoryCheckpointStore
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import InterruptSignal, ToolContext, tool


@tool(threaded=False)
def refund(order: int, ctx: ToolContext) -> str:
    """Refund an order once a person approved it."""
    resumed = ctx.get_resume_context()
    if not resumed.is_resume_target:
        ctx.interrupt({"approve_refund": order})
    return "refunded" if resumed.data == "yes" else "not refunded"


def logging_wrapper(log: list[str]) -> AgentMiddleware:
    """A user's own wrapper, written the ordinary way: every failure becomes an observation."""

    def wrap(handler: ToolCallHandler) -> ToolCallHandler:
        async def call(tool_call: ToolCall, ctx: ToolContext) -> str:
            try:
                return await handler(tool_call, ctx)
            except Exception as error:
                log.append(f"failed: {error}")
                return f"tool failed: {error}"

        return call

    return AgentMiddleware(wrap_tool_call=wrap)


def test_an_interrupt_is_not_an_exception() -> None:
    assert not issubclass(InterruptSignal, Exception)
    assert issubclass(InterruptSignal, BaseException)


async def test_a_wrapper_catching_exception_does_not_swallow_an_interrupt() -> None:
    log: list[str] = []
    model = ScriptedModel([tool_calls(("refund", {"order": 42})), assistant("done")])
    agent = ChatModelAgent(name="a", model=model, tools=[refund], middlewares=[logging_wrapper(log)])
    runner = Runner(agent, checkpoint_store=MemoryCheckpointStore())
    events = await collect_events(runner.query("refund 42", checkpoint_id="run"))
    interrupted = [e.action.interrupted for e in events if e.action is not None and e.action.interrupted]
    assert len(interrupted) == 1 and isinstance(interrupted[0], InterruptInfo)
    assert log == []
    assert len(model.requests) == 1  # the model is not told "tool failed" and the run does not finish
    target = interrupted[0].interrupt_contexts[0].id
    resumed = await collect_events(runner.resume("run", targets={target: "yes"}))
    tool_results = [e.message_output.message.content for e in resumed if e.message_output and e.message_output.message]
    assert tool_results == ["refunded", "done"]


async def test_a_tool_catching_exception_around_its_interrupt_still_interrupts() -> None:
    @tool(threaded=False)
    def careful(ctx: ToolContext) -> str:
        """Asks first."""
        try:
            ctx.interrupt("may I?")
        except Exception:
            return "carried on without asking"

    model = ScriptedModel([tool_calls(("careful", {})), assistant("done")])
    events = await collect_events(Runner(ChatModelAgent(name="a", model=model, tools=[careful])).query("go"))
    assert [e.action.interrupted.data for e in events if e.action and e.action.interrupted] == ["may I?"]


async def test_closing_the_run_cancels_tools_still_running_concurrently() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    @tool(threaded=False)
    async def quick() -> str:
        """Answers at once."""
        await started.wait()
        return "quick"

    @tool(threaded=False)
    async def slow() -> str:
        """Takes its time."""
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "slow"

    model = ScriptedModel([tool_calls(("slow", {}), ("quick", {})), assistant("done")])
    events = Runner(ChatModelAgent(name="a", model=model, tools=[slow, quick])).query("go")
    async for event in events:
        variant = event.message_output
        if variant is not None and variant.message is not None and variant.message.content == "quick":
            break
    await events.aclose()
    assert cancelled.is_set()
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []

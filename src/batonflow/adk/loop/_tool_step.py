"""The tool step: one round of the model's tool calls, from the batch hooks to the results in the transcript.

The calls that have not finished yet run (all of them, unless resuming): concurrently on a task group, or one
after another when the agent says so; a lone call, or calls in sequence, run without tasks. Their result events
come out in completion order, the return-directly one held back to be last, and the transcript keeps the calls'
order. When batch hooks (an approval) are set, calls whose arguments their tool refuses are answered with the
refusal first, and the hooks see only the others. A tool's interrupt is an outcome like a result — the other calls go on — and the round ends in
``Interrupt``; an exception the policy does not turn into an observation ends it in ``Fail`` and cancels what
still runs. The step yields the events to pass on, then at most one outcome; none means "ask the model again".
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import aclosing
from typing import Any, NamedTuple

from ...errors import StepRecordError
from ...schema import Message, Stream, ToolCall, assistant, tool_message
from ...tools import AddressSegment, InterruptSignal, ToolContext, check_arguments
from .._builtin import TRANSFER_TOOL_NAME, transfer_self_text
from .._context import RunContext
from .._events import AgentAction, AgentEvent, event_from_message
from ._middleware import ToolBatch
from ._outcomes import Answer, Fail, Interrupt
from ._policy import AgentSetup, LoopPolicy
from ._state import ReactState, ToolResult
from ._steps import StepLog

__all__ = ["tool_step"]

StepItem = AgentEvent | Answer | Fail | Interrupt


class _Done(NamedTuple):
    """How one call ended: its result and action, or what it raised (an interrupt, or an error)."""

    call: ToolCall
    result: Message
    action: AgentAction | None
    failure: BaseException | None


async def tool_step(
    state: ReactState, setup: AgentSetup, policy: LoopPolicy, ctx: RunContext
) -> AsyncGenerator[StepItem, None]:
    assert state.pending is not None
    calls = state.pending.tool_calls
    completed = state.completed
    todo = [c for c in calls if c.id not in completed] if completed else list(calls)
    interrupts: list[InterruptSignal] = []
    notes: dict[str, str] = {}
    if setup.before_tools and todo:
        todo, notes, answered = await _before_tools(state, setup, policy, ctx, todo, interrupts)
        for answer in answered:
            yield answer
        if answered and isinstance(answered[-1], Answer):
            return
    log = ctx.steps
    direct = policy.direct_call(calls, setup)
    if log is not None and todo:
        try:
            todo, replayed = await _replayed(todo, state, ctx, log, direct)
        except StepRecordError as unusable:
            yield Fail(unusable)
            return
        for event in replayed:
            yield event
    trace = ctx.trace
    acting = await trace.action_start(todo) if trace is not None else None
    source = _running(todo, setup, policy, ctx, state)
    async with aclosing(source) as outcomes:
        async for item in outcomes:
            if isinstance(item, AgentEvent):
                yield item  # sent by a tool while it runs: already attributed, passed through
                continue
            call, result, action, failure = item
            if isinstance(failure, InterruptSignal):
                interrupts.append(failure)
                continue
            if failure is not None:
                if acting is not None:
                    await acting.end(error=failure)
                yield Fail(failure)
                return
            if notes and call.id in notes:
                result = tool_message(result.content + notes[call.id], tool_call_id=call.id, tool_name=result.tool_name)
            completed[call.id] = finished = ToolResult(message=result, action=action)
            if log is not None:
                await log.record(log.tool_key(ctx.address, state.visit, state.turn, call.id), finished)
            if call.id != direct:
                yield _tool_event(result, action)
    if acting is not None:
        await acting.end(interrupted=bool(interrupts))
    if interrupts:
        yield Interrupt(interrupts)
        return
    if log is not None:
        await log.flush()  # saved before the model is asked again
    for concluded in await _conclude(state, setup, policy, ctx, calls, direct):
        yield concluded


def _kept_by_itself(held: ToolResult, setup: AgentSetup) -> bool:
    message = held.message
    named_itself = message.tool_name == TRANSFER_TOOL_NAME and message.content == transfer_self_text(setup.name)
    return held.action is None and named_itself


def _running(
    todo: list[ToolCall], setup: AgentSetup, policy: LoopPolicy, ctx: RunContext, state: ReactState
) -> _Inline | AsyncGenerator[_Done | AgentEvent, None]:
    """The calls' outcomes as they come. The common case runs them right here, free of tasks, queues and another
    generator."""
    call_tool = _caller(ctx)
    if not setup.emits and (setup.sequential or len(todo) == 1):
        return _Inline(todo, setup, policy, ctx, state, call_tool)
    return _concurrent(todo, setup, policy, ctx, state, call_tool)


async def _conclude(
    state: ReactState,
    setup: AgentSetup,
    policy: LoopPolicy,
    ctx: RunContext,
    calls: Sequence[ToolCall],
    direct: str | None,
) -> list[StepItem]:
    """Every call finished: the results go into the transcript, and the round may end the run."""
    completed = state.completed
    state.messages.extend(completed[c.id].message for c in calls)
    if setup.after_tools:
        done = ToolBatch(
            calls=list(calls),
            ctx=ctx,
            address=_batch_address(ctx, state),
            results={c.id: completed[c.id].message.content for c in calls},
        )
        for hook in setup.after_tools:
            await _maybe(hook(done))
    held = completed.get(direct) if direct is not None else None
    if held is not None and _kept_by_itself(held, setup):
        # A transfer to the agent itself (answer_self) does not end the turn: the agent answers next.
        state.pending, state.completed = None, {}
        return [_tool_event(held.message, None)]
    answer = policy.round_answer(calls, completed, setup) if held is None else None
    state.pending, state.completed = None, {}
    if held is not None:
        return [_tool_event(held.message, held.action), Answer(held.message, said=True)]
    return [] if answer is None else [Answer(answer)]


async def _before_tools(
    state: ReactState,
    setup: AgentSetup,
    policy: LoopPolicy,
    ctx: RunContext,
    todo: list[ToolCall],
    interrupts: list[InterruptSignal],
) -> tuple[list[ToolCall], dict[str, str], list[StepItem]]:
    """The ``before_tools`` hooks on the calls to run: the calls left, the notes for their results, and what to
    pass on (the refusals of calls whose arguments do not validate, which the hooks never see, and the results of
    calls a hook answered, ending in ``Answer`` when a hook ended the run). A hook that interrupts holds the whole
    batch: nothing runs."""
    todo, refused = _refused(state, setup, policy, todo)
    if not todo:
        return [], {}, refused
    batch = ToolBatch(calls=todo, ctx=ctx, address=_batch_address(ctx, state))
    try:
        for hook in setup.before_tools:
            await _maybe(hook(batch))
    except InterruptSignal as suspended:
        interrupts.append(suspended)
        return [], {}, refused
    answered = [*refused, *_answered(state, batch, todo)]
    if batch.final_answer is not None:
        return [], {}, answered
    return [c for c in batch.calls if c.id not in state.completed], batch.notes, answered


def _refused(
    state: ReactState, setup: AgentSetup, policy: LoopPolicy, todo: list[ToolCall]
) -> tuple[list[ToolCall], list[StepItem]]:
    """The calls whose arguments their tool refuses (invalid JSON, or not what its schema says) answered with the
    refusal, as the call itself would be, before the ``before_tools`` hooks see the batch: an approval is never
    asked for a call that cannot run. The calls left, and the refusals' events."""
    left: list[ToolCall] = []
    events: list[StepItem] = []
    for call in todo:
        tool = setup.tools.get(call.function.name)
        refusal = None if tool is None else check_arguments(tool, call.function.arguments)
        observed = None if refusal is None else policy.tool_failure(call, refusal, setup)
        if observed is None:  # valid, or a refusal the policy ends the run on: the call itself does that
            left.append(call)
            continue
        answered = tool_message(observed, tool_call_id=call.id, tool_name=call.function.name)
        state.completed[call.id] = ToolResult(message=answered)
        events.append(_tool_event(answered, None))
    return left, events


def _answered(state: ReactState, batch: ToolBatch, todo: list[ToolCall]) -> list[StepItem]:
    """The calls a middleware answered without running them, recorded as finished, and their events; when it
    ended the run instead (``final_answer``), every call has that answer as result, then the answer."""
    if batch.final_answer is not None:
        batch.results = {c.id: batch.final_answer for c in todo}
    items: list[StepItem] = []
    for call in todo:
        if call.id in batch.results:
            answered = tool_message(batch.results[call.id], tool_call_id=call.id, tool_name=call.function.name)
            state.completed[call.id] = ToolResult(message=answered)
            items.append(_tool_event(answered, None))
    if batch.final_answer is not None:
        assert state.pending is not None
        state.messages.extend(state.completed[c.id].message for c in state.pending.tool_calls)
        state.pending, state.completed = None, {}
        items.append(Answer(assistant(batch.final_answer)))
    return items


async def _replayed(
    todo: list[ToolCall], state: ReactState, ctx: RunContext, log: StepLog, direct: str | None
) -> tuple[list[ToolCall], list[AgentEvent]]:
    """The calls still to run, and the events of those the run's step log holds as finished: recorded as
    finished from it, not run again. A resume that lost its lease runs no more tools. The return-directly call's
    event is held back, as when it runs: the round's end gives it, last."""
    log.check()
    left: list[ToolCall] = []
    events: list[AgentEvent] = []
    for call in todo:
        recorded = await log.recall(log.tool_key(ctx.address, state.visit, state.turn, call.id), ToolResult)
        if recorded is not None:
            state.completed[call.id] = recorded
            if call.id != direct:
                events.append(_tool_event(recorded.message, recorded.action))
        else:
            left.append(call)
    return left, events


class _Inline:
    """The calls of a round one after another, awaited here: an iterator with no generator frame, no task, no
    queue (most rounds are one call). A failure that is not an interrupt ends the round."""

    __slots__ = ("_args", "_call_tool", "_calls", "_stop")

    def __init__(
        self,
        calls: list[ToolCall],
        setup: AgentSetup,
        policy: LoopPolicy,
        ctx: RunContext,
        state: ReactState,
        call_tool: CallTool,
    ) -> None:
        self._calls = iter(calls)
        self._call_tool = call_tool
        self._args = (setup, policy, ctx, state)
        self._stop = False

    def __aiter__(self) -> _Inline:
        return self

    async def __anext__(self) -> _Done:
        call = next(self._calls, None)
        if call is None or self._stop:
            raise StopAsyncIteration
        setup, policy, ctx, state = self._args
        done = await _settle(self._call_tool, call, setup, policy, ctx, state, None)
        self._stop = done.failure is not None and not isinstance(done.failure, InterruptSignal)
        return done

    async def aclose(self) -> None:
        self._stop = True


async def _concurrent(
    calls: list[ToolCall],
    setup: AgentSetup,
    policy: LoopPolicy,
    ctx: RunContext,
    state: ReactState,
    call_tool: CallTool,
) -> AsyncGenerator[_Done | AgentEvent, None]:
    """Each call's outcome as it completes, and the events tools send meanwhile (an agent tool's inner events):
    concurrently on a task group, or in order on one task when the agent runs tools sequentially."""
    if not calls:
        return
    channel, writer = Stream.pipe()
    emit = writer.send if setup.emits else None

    async def run(batch: list[ToolCall]) -> None:
        for call in batch:
            done = await _settle(call_tool, call, setup, policy, ctx, state, emit)
            writer.send(done)
            if done.failure is not None and not isinstance(done.failure, InterruptSignal):
                return

    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(run(batch)) for batch in ([calls] if setup.sequential else [[c] for c in calls])]
        try:
            remaining = len(calls)
            async for item in channel:
                yield item
                if isinstance(item, _Done):
                    remaining -= 1
                    if remaining == 0 or (item.failure is not None and not isinstance(item.failure, InterruptSignal)):
                        break
        except GeneratorExit:
            pass  # the reader stopped: the group ends (its tasks cancelled) before this generator does
        finally:
            for task in tasks:
                task.cancel()
            await channel.aclose()


CallTool = Callable[
    [ToolCall, AgentSetup, LoopPolicy, RunContext, ReactState, Callable[[Any], object] | None],
    Awaitable[tuple[Message, AgentAction | None]],
]


async def _settle(
    call_tool: CallTool,
    call: ToolCall,
    setup: AgentSetup,
    policy: LoopPolicy,
    ctx: RunContext,
    state: ReactState,
    emit: Callable[[Any], object] | None,
) -> _Done:
    try:
        result, action = await call_tool(call, setup, policy, ctx, state, emit)
    except InterruptSignal as signal:  # a BaseException: a tool's own ``except Exception`` lets it through
        return _Done(call, _NO_RESULT, None, signal)
    except Exception as failure:
        return _Done(call, _NO_RESULT, None, failure)
    return _Done(call, result, action, None)


async def _call_tool(
    call: ToolCall,
    setup: AgentSetup,
    policy: LoopPolicy,
    ctx: RunContext,
    state: ReactState,
    emit: Callable[[Any], object] | None,
) -> tuple[Message, AgentAction | None]:
    """One call's result message and action; an interrupt raised by the tool propagates."""
    name = call.function.name
    tool_ctx = ToolContext(
        tool_name=name,
        call_id=call.id,
        session_values=ctx.session.values,
        run=ctx,
        history=state.messages,
        emit=emit,
        step=f"{state.visit}.{state.turn}",
    )
    if ctx.resume is not None:
        tool_ctx.get_interrupt_state()  # the call takes what was saved at its address now, as it starts
    if name not in setup.tools:
        content = policy.tool_not_found(name, setup)
    else:
        try:
            content = await setup.handler(call, tool_ctx)
        except Exception as error:
            observed = policy.tool_failure(call, error, setup)
            if observed is None:
                raise
            content = observed
    return tool_message(content, tool_call_id=call.id, tool_name=name), tool_ctx.action


async def _traced_call_tool(
    call: ToolCall,
    setup: AgentSetup,
    policy: LoopPolicy,
    ctx: RunContext,
    state: ReactState,
    emit: Callable[[Any], object] | None,
) -> tuple[Message, AgentAction | None]:
    assert ctx.trace is not None
    return await ctx.trace.tool_call(call, _call_tool(call, setup, policy, ctx, state, emit))


def _caller(ctx: RunContext) -> CallTool:
    """How this round calls a tool: traced or not."""
    return _call_tool if ctx.trace is None else _traced_call_tool


_NO_RESULT = Message(role="tool")


def _batch_address(ctx: RunContext, state: ReactState) -> tuple[AddressSegment, ...]:
    """Where a round's tool batch is in the run: its middlewares' interrupts are addressed here."""
    return (*ctx.address, AddressSegment("tool", "batch", str(state.remaining)))


def _tool_event(message: Message, action: AgentAction | None) -> AgentEvent:
    event = event_from_message(message, role="tool", tool_name=message.tool_name)
    event.action = action
    return event


async def _maybe(result: Awaitable[None] | None) -> None:
    if result is not None:
        await result

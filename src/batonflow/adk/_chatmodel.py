"""``ChatModelAgent``: a model in a ReAct loop with tools (reference §A.4).

model → tools → model … until the model answers without tool calls, a return-directly tool was called, or
``max_iterations`` model calls were made. Tools of one turn run concurrently unless ``execute_sequentially``;
their events come out in completion order, the return-directly one last.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..errors import MaxIterationsError, ResumeError, ToolArgumentsError, UserError
from ..models import ChatModel, ModelSettings, RetryingModel, ToolChoice
from ..schema import Message, Stream, ToolCall, concat_messages, system, tool_message
from ..store import register_type
from ..tools import (
    Address,
    AddressSegment,
    InterruptSignal,
    Tool,
    ToolContext,
    ToolInfo,
)
from ..trace import OpenReason
from ._builtin import ExitTool, TransferToAgentTool, transfer_instruction
from ._context import RunContext
from ._events import AgentAction, AgentEvent, AgentInput, event_from_message
from ._interrupt import InterruptInfo, ResumeInfo
from ._middleware import (
    AgentMiddleware,
    ChatModelAgentState,
    ModelErrorHook,
    StateHook,
    ToolBatch,
    ToolCallHandler,
    render_instruction,
)

__all__ = [
    "AgentMiddleware",
    "ChatModelAgent",
    "ChatModelAgentResumeData",
    "ChatModelAgentState",
    "ModelRetryConfig",
    "ReactState",
    "Route",
    "ToolBatch",
    "ToolCallHandler",
    "ToolResult",
    "render_instruction",
]


@dataclass(slots=True, kw_only=True)
class ToolResult:
    message: Message
    action: AgentAction | None = None


@dataclass(slots=True, kw_only=True)
class ReactState:
    """Where a ReAct loop stands; saved in the checkpoint when a tool interrupts, so that a resume continues it.

    ``pending`` is the assistant message whose tool calls are running, ``completed`` the results of those that
    finished (by call id): on resume only the others run.
    """

    messages: list[Message]
    remaining: int
    pending: Message | None = None
    completed: dict[str, ToolResult] = field(default_factory=dict)
    turn: int = 0  # model calls made so far
    corrections: int = 0  # consecutive empty answers sent back to the model with a correction


register_type(ToolResult, name="ToolResult")
register_type(ReactState, name="ReactState")


@dataclass(slots=True)
class Route:
    """What a loop does with the model's message (``ChatModelAgent._route``): run its tool calls (``act``, with
    the message as it goes into the transcript), finish (``answer``: the final message, or None when it is the
    model's own), or ask again with ``feedback`` appended (then the model's message stays in the transcript only
    if ``keep``). ``show`` is False for a message not worth an event (an empty answer)."""

    act: Message | None = None
    answer: Message | None = None
    feedback: list[Message] | None = None
    keep: bool = True
    show: bool = True


@dataclass(slots=True, kw_only=True)
class ChatModelAgentResumeData:
    """Resume data for a ChatModelAgent itself: ``history_modifier`` rewrites its saved messages first."""

    history_modifier: Callable[[list[Message]], Sequence[Message]] | None = None


@dataclass(slots=True, kw_only=True)
class ModelRetryConfig:
    """Retries of failed model calls (connection errors, timeouts, 429, 5xx) with exponential backoff."""

    max_retries: int = 3
    base_delay: float = 0.1
    max_delay: float = 10.0


GenModelInput = Callable[[str, AgentInput, RunContext], Sequence[Message] | Awaitable[Sequence[Message]]]


@dataclass(slots=True)
class _Plan:
    """What an agent runs with once its place in the tree is fixed: the full instruction and tool set."""

    instruction: str
    tools: dict[str, Tool]
    infos: list[ToolInfo]
    return_directly: frozenset[str]
    handler: ToolCallHandler
    before: list[StateHook] = field(default_factory=list)
    after: list[StateHook] = field(default_factory=list)
    emits: bool = False  # some tool sends events while it runs (an agent tool)
    actions: frozenset[str] = frozenset()  # the built-in tools that act on the run: transfer, exit
    before_tools: list[Callable[[ToolBatch], Awaitable[None] | None]] = field(default_factory=list)
    after_tools: list[Callable[[ToolBatch], Awaitable[None] | None]] = field(default_factory=list)
    start: list[StateHook] = field(default_factory=list)
    end: list[StateHook] = field(default_factory=list)
    model_error: list[ModelErrorHook] = field(default_factory=list)


class _Outcome(NamedTuple):
    call: ToolCall
    result: Message
    action: AgentAction | None
    failure: BaseException | None


class ChatModelAgent:
    """An agent driven by a chat model that may call tools, transfer to other agents, or exit."""

    def __init__(
        self,
        *,
        name: str,
        model: ChatModel,
        description: str = "",
        instruction: str = "",
        tools: Sequence[Tool] = (),
        return_directly: Sequence[str] = (),
        execute_sequentially: bool = False,
        exit: bool | Tool = False,
        output_key: str | None = None,
        max_iterations: int = 20,
        model_retry: ModelRetryConfig | None = None,
        model_settings: ModelSettings | None = None,
        tool_choice: ToolChoice | None = None,
        gen_model_input: GenModelInput | None = None,
        middlewares: Sequence[AgentMiddleware] = (),
    ) -> None:
        if not name:
            raise UserError("ChatModelAgent needs a name: expected a non-empty string, got ''")
        if max_iterations < 1:
            raise UserError(f"max_iterations: expected a positive number of model calls, got {max_iterations}")
        self.name = name
        self.description = description
        self.instruction = instruction
        self.model: ChatModel = model
        if model_retry is not None:
            self.model = RetryingModel(
                model,
                max_retries=model_retry.max_retries,
                base_delay=model_retry.base_delay,
                max_delay=model_retry.max_delay,
            )
        self.tools = list(tools)
        self.return_directly = frozenset(return_directly)
        self.execute_sequentially = execute_sequentially
        self.exit: Tool | None = ExitTool() if exit is True else exit or None
        self.output_key = output_key
        self.max_iterations = max_iterations
        self.model_settings = model_settings
        self.tool_choice = tool_choice
        self.gen_model_input = gen_model_input
        self.middlewares = list(middlewares)
        names = [t.info.name for t in self.tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise UserError(f"agent '{name}': expected unique tool names, got {duplicates} more than once")
        # Set through the flow agent (set_sub_agents); frozen after the first run, as in the original.
        self._sub_agents: list[tuple[str, str]] = []
        self._parent: tuple[str, str] | None = None
        self._disallow_transfer_to_parent = False
        self._frozen = False
        self._plan: _Plan | None = None

    def __repr__(self) -> str:
        return f"ChatModelAgent(name={self.name!r}, model={self.model.model_name!r})"

    # -- the tree hooks (called by set_sub_agents) ----------------------------------------------------------------

    def on_set_sub_agents(self, agents: Sequence[Any]) -> None:
        self._check_not_frozen()
        if self._sub_agents:
            raise UserError("agent's sub-agents has already been set")
        self._sub_agents = [(a.name, a.description) for a in agents]

    def on_set_as_sub_agent(self, parent: Any) -> None:
        self._check_not_frozen()
        if self._parent is not None:
            raise UserError("agent has already been set as a sub-agent of another agent")
        self._parent = (parent.name, parent.description)

    def on_disallow_transfer_to_parent(self) -> None:
        self._check_not_frozen()
        self._disallow_transfer_to_parent = True

    def _check_not_frozen(self) -> None:
        if self._frozen:
            raise UserError("agent has been frozen after run")

    # -- running --------------------------------------------------------------------------------------------------

    async def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        ctx = ctx if ctx is not None else RunContext(enable_streaming=input.enable_streaming)
        self._frozen = True
        plan = self._plan or self._build_plan()
        try:
            messages = await self._model_input(plan.instruction, input, ctx)
        except Exception as error:
            yield AgentEvent(error=error)
            return
        loop = ReactState(messages=messages, remaining=self.max_iterations)
        async for event in self._react(loop, plan, input.enable_streaming, ctx):
            yield event

    async def resume(self, info: ResumeInfo, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        """Continue where the last run stopped: tools that finished are not run again."""
        ctx = ctx if ctx is not None else RunContext(enable_streaming=info.enable_streaming)
        self._frozen = True
        plan = self._plan or self._build_plan()
        loop = info.interrupt_state
        if not isinstance(loop, ReactState):
            yield AgentEvent(
                error=ResumeError(
                    f"agent '{self.name}' cannot resume: expected its saved loop state, got {type(loop).__name__}"
                )
            )
            return
        data = info.resume_data
        if isinstance(data, ChatModelAgentResumeData) and data.history_modifier is not None:
            loop.messages = list(data.history_modifier(loop.messages))
        async for event in self._react(loop, plan, info.enable_streaming, ctx):
            yield event

    def _build_plan(self) -> _Plan:
        instruction = self.instruction
        tools = list(self.tools)
        return_directly = set(self.return_directly)
        actions: set[str] = set()
        targets = list(self._sub_agents)
        if self._parent is not None and not self._disallow_transfer_to_parent:
            targets.append(self._parent)
        if targets:
            instruction = (
                f"{instruction}\n\n{transfer_instruction(targets)}" if instruction else transfer_instruction(targets)
            )
            transfer = TransferToAgentTool([name for name, _ in targets])
            tools.append(transfer)
            actions.add(transfer.info.name)
        if self.exit is not None:
            tools.append(self.exit)
            actions.add(self.exit.info.name)
        return_directly |= actions
        handler: ToolCallHandler = self._invoke_tool
        for mw in self.middlewares:
            if mw.additional_instruction:
                instruction = (
                    f"{instruction}\n\n{mw.additional_instruction}" if instruction else mw.additional_instruction
                )
            tools.extend(mw.additional_tools)
        for mw in reversed(self.middlewares):
            if mw.wrap_tool_call is not None:
                handler = mw.wrap_tool_call(handler)
        by_name = {t.info.name: t for t in tools}
        plan = _Plan(
            instruction=instruction,
            tools=by_name,
            infos=[t.info for t in by_name.values()],
            return_directly=frozenset(return_directly),
            handler=handler,
            before=[mw.before_chat_model for mw in self.middlewares if mw.before_chat_model is not None],
            after=[mw.after_chat_model for mw in self.middlewares if mw.after_chat_model is not None],
            before_tools=[mw.before_tools for mw in self.middlewares if mw.before_tools is not None],
            after_tools=[mw.after_tools for mw in self.middlewares if mw.after_tools is not None],
            start=[mw.before_agent for mw in self.middlewares if mw.before_agent is not None],
            end=[mw.after_agent for mw in self.middlewares if mw.after_agent is not None],
            model_error=[mw.on_model_error for mw in self.middlewares if mw.on_model_error is not None],
            emits=any(getattr(t, "emits_events", False) for t in by_name.values()),
            actions=frozenset(actions),
        )
        self._plan = plan
        return plan

    async def _model_input(self, instruction: str, input: AgentInput, ctx: RunContext) -> list[Message]:
        if self.gen_model_input is not None:
            result = self.gen_model_input(instruction, input, ctx)
            if inspect.isawaitable(result):
                result = await result
            return list(result)
        if not instruction:
            return list(input.messages)
        if ctx.session.values:
            instruction = render_instruction(instruction, ctx.session.values)
        return [system(instruction), *input.messages]

    async def _react(
        self, loop: ReactState, plan: _Plan, streaming: bool, ctx: RunContext
    ) -> AsyncIterator[AgentEvent]:
        view = ChatModelAgentState(messages=loop.messages, tools=list(plan.infos))
        if plan.start and loop.turn == 0 and loop.pending is None:
            for hook in plan.start:
                await _maybe_await(hook(view, ctx))
            loop.messages = view.messages
        if plan.end:
            async with aclosing(self._loop(loop, view, plan, streaming, ctx)) as events:
                finished = True
                async for event in events:
                    if event.error is not None or (event.action is not None and event.action.interrupted is not None):
                        finished = False
                    yield event
            if finished:
                view.messages = loop.messages
                for hook in plan.end:
                    await _maybe_await(hook(view, ctx))
            return
        async for event in self._loop(loop, view, plan, streaming, ctx):
            yield event

    async def _loop(
        self, loop: ReactState, view: ChatModelAgentState, plan: _Plan, streaming: bool, ctx: RunContext
    ) -> AsyncGenerator[AgentEvent, None]:
        trace = ctx.trace
        failures = 0  # failed model calls of this turn, for the on_model_error hooks
        while True:
            if loop.pending is None:
                stop = self._next_turn(loop) if not failures else None
                if isinstance(stop, Message):
                    loop.messages.append(stop)
                    yield event_from_message(stop)
                    self._save_output(stop, ctx)
                    return
                if stop is not None:
                    yield AgentEvent(error=stop)
                    return
                loop.remaining -= 1
                loop.turn += 1
                for hook in plan.before:
                    await _maybe_await(hook(view, ctx))
                request, tools = self._request(view)
                tool_choice = self.tool_choice if tools else None
                reason: OpenReason | None = None
                route: Route | None = None
                try:
                    if trace is not None:
                        reason = await trace.reason_start(self.model.model_name, request, tools or ())
                    if streaming:
                        caller, whole = self.model.stream(
                            request, tools=tools, tool_choice=tool_choice, settings=self.model_settings
                        ).tap()
                        event = event_from_message(stream=caller)
                        joined: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
                        assert event.output is not None and event.output.message_output is not None
                        event.output.message_output._joined = joined
                        yield event
                        try:
                            message = concat_messages(await whole.chunks())
                        except BaseException as error:
                            joined.set_exception(error)
                            joined.exception()  # retrieved here; history readers re-raise it
                            raise
                        joined.set_result(message)
                        if reason is not None:
                            await reason.end(message)
                            reason = None
                    else:
                        message = await self.model.generate(
                            request, tools=tools, tool_choice=tool_choice, settings=self.model_settings
                        )
                        if reason is not None:
                            await reason.end(message)
                            reason = None
                        route = self._route(message, loop, plan)
                        if route.show:
                            yield event_from_message(message)
                except Exception as error:
                    if reason is not None:
                        await reason.end(error=error)
                    if plan.model_error and not streaming:
                        failures += 1
                        if await self._retry_after(error, failures, view, plan, ctx):
                            loop.remaining += 1  # the failed call is not a turn
                            loop.turn -= 1
                            continue
                    yield AgentEvent(error=error)
                    return
                failures = 0
                if route is None:
                    route = self._route(message, loop, plan)
                if route.feedback is not None:
                    if route.keep:
                        view.messages.append(message)
                    view.messages.extend(route.feedback)
                    loop.messages = view.messages
                    continue
                view.messages.append(route.act or message)
                for hook in plan.after:
                    await _maybe_await(hook(view, ctx))
                loop.messages = view.messages
                if route.act is None:
                    if route.answer is not None:
                        loop.messages.append(route.answer)
                        yield event_from_message(route.answer)
                    self._save_output(route.answer or message, ctx)
                    return
                loop.pending, loop.completed = route.act, {}

            # The tool phase: run the calls that have not finished yet (all of them, unless resuming).
            calls = loop.pending.tool_calls
            direct_id = self._direct_call(calls, plan)
            interrupts: list[InterruptSignal] = []
            notes: dict[str, str] = {}
            todo = [c for c in calls if c.id not in loop.completed]
            if plan.before_tools and todo:
                batch = ToolBatch(calls=todo, ctx=ctx, address=_batch_address(ctx, loop))
                try:
                    for batch_hook in plan.before_tools:
                        await _maybe_await(batch_hook(batch))
                except InterruptSignal as suspended:
                    interrupts.append(suspended)  # the whole batch waits: nothing runs
                    todo = []
                else:
                    if batch.final_answer is not None:
                        batch.results = {c.id: batch.final_answer for c in todo}
                    for call in todo:
                        if call.id in batch.results:
                            answered = tool_message(
                                batch.results[call.id], tool_call_id=call.id, tool_name=call.function.name
                            )
                            loop.completed[call.id] = ToolResult(message=answered)
                            yield _tool_event(answered, None)
                    if batch.final_answer is not None:
                        loop.messages.extend(loop.completed[c.id].message for c in calls)
                        loop.pending, loop.completed = None, {}
                        answer = Message(role="assistant", content=batch.final_answer)
                        loop.messages.append(answer)
                        yield event_from_message(answer)
                        self._save_output(answer, ctx)
                        return
                    todo = [c for c in batch.calls if c.id not in loop.completed]
                    notes = batch.notes
            acting = await trace.action_start(todo) if trace is not None else None
            async with aclosing(self._run_tools(todo, plan, ctx, loop.messages)) as outcomes:
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
                        yield AgentEvent(error=failure)
                        return
                    if notes and call.id in notes:
                        result = tool_message(
                            result.content + notes[call.id], tool_call_id=call.id, tool_name=call.function.name
                        )
                    loop.completed[call.id] = ToolResult(message=result, action=action)
                    if call.id != direct_id:
                        yield _tool_event(result, action)
            if acting is not None:
                await acting.end(interrupted=bool(interrupts))
            if interrupts:
                for said in self._interrupt_messages(interrupts):
                    yield event_from_message(said)
                signal = InterruptSignal(
                    None,
                    address=ctx.address,
                    state=ReactState(
                        messages=list(loop.messages),
                        remaining=loop.remaining,
                        pending=loop.pending,
                        completed=dict(loop.completed),
                        turn=loop.turn,
                    ),
                    subs=tuple(interrupts),
                    id=ctx.interrupt_id(ctx.address),
                )
                yield AgentEvent(action=AgentAction(interrupted=InterruptInfo(data=interrupts[0].info), signal=signal))
                return
            # The transcript keeps the calls' order, whatever order they finished in.
            loop.messages.extend(loop.completed[c.id].message for c in calls)
            view.messages = loop.messages
            if plan.after_tools:
                done = ToolBatch(
                    calls=list(calls),
                    ctx=ctx,
                    address=_batch_address(ctx, loop),
                    results={c.id: loop.completed[c.id].message.content for c in calls},
                )
                for batch_hook in plan.after_tools:
                    await _maybe_await(batch_hook(done))
            held = loop.completed.get(direct_id) if direct_id is not None else None
            round_answer = self._round_answer(calls, loop.completed, plan) if held is None else None
            loop.pending, loop.completed = None, {}
            if held is not None:
                yield _tool_event(held.message, held.action)
                self._save_output(held.message, ctx)
                return
            if round_answer is not None:
                loop.messages.append(round_answer)
                yield event_from_message(round_answer)
                self._save_output(round_answer, ctx)
                return

    async def _retry_after(
        self, error: Exception, failures: int, view: ChatModelAgentState, plan: _Plan, ctx: RunContext
    ) -> bool:
        """Whether a middleware wants the failed model call made again (every hook is asked; never more than
        ``_MAX_CALL_RETRIES`` times a turn, whatever they say)."""
        if failures > _MAX_CALL_RETRIES:
            return False
        again = False
        for hook in plan.model_error:
            answer = hook(view, error, failures, ctx)
            if inspect.isawaitable(answer):
                answer = await answer
            again = bool(answer) or again
        return again

    # -- the policy of the loop: what ReActAgent changes ---------------------------------------------------------

    def _next_turn(self, loop: ReactState) -> Message | BaseException | None:
        """Before a model call: None to make it, an error to end the run, or a final answer instead."""
        return MaxIterationsError() if loop.remaining <= 0 else None

    def _request(self, state: ChatModelAgentState) -> tuple[list[Message], list[ToolInfo] | None]:
        """The messages and tools the model is sent."""
        return state.messages, state.tools or None

    def _route(self, message: Message, loop: ReactState, plan: _Plan) -> Route:
        """Tool calls are run; anything else is the answer."""
        return Route(act=message) if message.tool_calls else Route()

    def _direct_call(self, calls: list[ToolCall], plan: _Plan) -> str | None:
        """The call whose result ends the run, held back to be the last event: the last return-directly one."""
        return _return_directly_call(calls, plan.return_directly)

    def _round_answer(self, calls: list[ToolCall], results: dict[str, ToolResult], plan: _Plan) -> Message | None:
        """A final answer made of a round's results, ending the run (none here: see ``_direct_call``)."""
        return None

    def _interrupt_messages(self, interrupts: list[InterruptSignal]) -> list[Message]:
        """Messages said to the caller before a round's interrupt is passed on."""
        return []

    def _tool_failure(self, call: ToolCall, error: Exception, plan: _Plan) -> str | None:
        """The observation for a call that failed, or None when the failure ends the run."""
        return str(error) if isinstance(error, ToolArgumentsError) else None

    def _tool_not_found(self, name: str, plan: _Plan) -> str:
        # An observation, not an error: the model can correct itself (small models do misname tools).
        return f"tool [{name}] not found: expected one of {sorted(plan.tools)}"

    async def _run_tools(
        self, calls: list[ToolCall], plan: _Plan, ctx: RunContext, history: list[Message]
    ) -> AsyncGenerator[_Outcome | AgentEvent, None]:
        """Each call's outcome as it completes, and the events tools send meanwhile (an agent tool's inner
        events). An interrupt is an outcome like a result: the other calls go on. An exception ends the batch
        and cancels what still runs."""
        call_tool = self._call_tool if ctx.trace is None else self._traced_call_tool
        if not calls:
            return
        if not plan.emits and (self.execute_sequentially or len(calls) == 1):
            for call in calls:  # the common case, kept free of tasks and queues
                try:
                    result, action = await call_tool(call, plan, ctx, history, None)
                except Exception as failure:
                    yield _Outcome(call, _NO_RESULT, None, failure)
                    if not isinstance(failure, InterruptSignal):
                        return
                    continue
                yield _Outcome(call, result, action, None)
            return
        channel, writer = Stream.pipe()
        emit = writer.send if plan.emits else None

        async def run(batch: list[ToolCall]) -> None:
            for call in batch:
                try:
                    result, action = await call_tool(call, plan, ctx, history, emit)
                except Exception as failure:
                    writer.send(_Outcome(call, _NO_RESULT, None, failure))
                    if not isinstance(failure, InterruptSignal):
                        return
                    continue
                writer.send(_Outcome(call, result, action, None))

        batches = [calls] if self.execute_sequentially else [[call] for call in calls]
        tasks = [asyncio.ensure_future(run(batch)) for batch in batches]
        try:
            remaining = len(calls)
            async for item in channel:
                yield item
                if isinstance(item, _Outcome):
                    remaining -= 1
                    if remaining == 0 or (item.failure is not None and not isinstance(item.failure, InterruptSignal)):
                        return
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await channel.aclose()

    async def _call_tool(
        self,
        call: ToolCall,
        plan: _Plan,
        ctx: RunContext,
        history: list[Message],
        emit: Callable[[Any], object] | None,
    ) -> tuple[Message, AgentAction | None]:
        """One call's result message and action; an interrupt raised by the tool propagates."""
        name = call.function.name
        tool_ctx = ToolContext(
            tool_name=name, call_id=call.id, session_values=ctx.session.values, run=ctx, history=history, emit=emit
        )
        if name not in plan.tools:
            content = self._tool_not_found(name, plan)
        else:
            try:
                content = await plan.handler(call, tool_ctx)
            except InterruptSignal:
                raise
            except Exception as error:
                observed = self._tool_failure(call, error, plan)
                if observed is None:
                    raise
                content = observed
        return tool_message(content, tool_call_id=call.id, tool_name=name), tool_ctx.action

    async def _traced_call_tool(
        self,
        call: ToolCall,
        plan: _Plan,
        ctx: RunContext,
        history: list[Message],
        emit: Callable[[Any], object] | None,
    ) -> tuple[Message, AgentAction | None]:
        assert ctx.trace is not None
        return await ctx.trace.tool_call(call, self._call_tool(call, plan, ctx, history, emit))

    async def _invoke_tool(self, call: ToolCall, ctx: ToolContext) -> str:
        assert self._plan is not None
        return await self._plan.tools[call.function.name].invoke(call.function.arguments, ctx)

    def _save_output(self, message: Message, ctx: RunContext) -> None:
        if self.output_key:
            ctx.add_session_value(self.output_key, message.content)


_NO_RESULT = Message(role="tool")
_MAX_CALL_RETRIES = 10


def _batch_address(ctx: RunContext, loop: ReactState) -> Address:
    """Where a round's tool batch is in the run: its middlewares' interrupts are addressed here."""
    return (*ctx.address, AddressSegment("tool", "batch", str(loop.remaining)))


def _tool_event(message: Message, action: AgentAction | None) -> AgentEvent:
    event = event_from_message(message, role="tool", tool_name=message.tool_name)
    event.action = action
    return event


def _return_directly_call(calls: list[ToolCall], names: frozenset[str]) -> str | None:
    """The id of the call that ends the run; the last matching call wins, as in the original (§A.4)."""
    found = None
    for call in calls:
        if call.function.name in names:
            found = call.id
    return found


async def _maybe_await(result: Awaitable[None] | None) -> None:
    if result is not None:
        await result

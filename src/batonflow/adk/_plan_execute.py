"""Plan-Execute-Replan: a planner writes a plan, an executor does its first step, a replanner decides (Eino's planexecute).

The three agents talk through session values only: the planner saves the user input and the plan, the executor
saves the result of the step it ran, the replanner records that step and then either answers (``respond``,
which breaks the loop) or saves a revised plan with the remaining steps (``plan``).
``plan_execute_replan`` wires them as ``Sequential[planner, Loop[executor, replanner]]``.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import aclosing
from typing import TypeAlias

from ..errors import RunError, UserError
from ..models import ChatModel, ForcedTool, as_model
from ..schema import Message, assistant
from ..tools import ToolInfo, ToolLike
from ._agent import Agent
from ._chatmodel import ChatModelAgent
from ._context import RunContext
from ._events import AgentEvent, AgentInput, break_loop_action, event_from_message
from ._plan import (
    EXECUTED_STEP,
    EXECUTED_STEPS,
    EXECUTOR_PROMPT,
    PLAN,
    PLAN_TOOL,
    PLANNER_PROMPT,
    REPLANNER_PROMPT,
    RESPOND_TOOL,
    USER_INPUT,
    ExecutedStep,
    ExecutionContext,
    Plan,
    PlanLike,
    PlanParser,
    _prompt_values,
)
from ._workflow import LoopAgent, SequentialAgent
from .loop import ModelStep

__all__ = ["new_executor", "new_planner", "new_replanner", "plan_execute_replan"]

# -- the agents -----------------------------------------------------------------------------------------------------

MessagesOrAwaitable: TypeAlias = Sequence[Message] | Awaitable[Sequence[Message]]
PlannerInput: TypeAlias = Callable[[list[Message]], MessagesOrAwaitable]
"""Builds the planner's model input from the user input."""
ExecutionInput: TypeAlias = Callable[[ExecutionContext], MessagesOrAwaitable]
"""Builds the executor's or the replanner's model input from where the run stands."""


class _Planner:
    """Asks the model for a plan and saves it; see ``new_planner``."""

    def __init__(
        self,
        *,
        name: str,
        description: str,
        model: ChatModel | str,
        plan_tool: ToolInfo | None,
        gen_input: PlannerInput | None,
        parse_plan: PlanParser,
    ) -> None:
        if not name:
            raise UserError("planner needs a name: expected a non-empty string, got ''")
        self.name = name
        self.description = description
        self.model = as_model(model, f"planner {name!r} model")
        self.plan_tool = plan_tool
        self.gen_input = gen_input
        self.parse_plan = parse_plan
        # One tool offered and a call required: the original's "forced" choice is this tool.
        self._step = ModelStep(self.model, tool_choice=ForcedTool(plan_tool.name) if plan_tool is not None else None)

    def __repr__(self) -> str:
        return f"planner({self.name!r}, model={self.model.model_name!r})"

    async def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        ctx = ctx if ctx is not None else RunContext(enable_streaming=input.enable_streaming)
        user_input = list(input.messages)
        ctx.add_session_value(USER_INPUT, user_input)
        tool = self.plan_tool
        try:
            if self.gen_input is not None:
                messages = await _messages(self.gen_input(user_input))
            else:
                messages = PLANNER_PROMPT.format({"input": user_input})
            answer = _ask(
                self._step,
                messages,
                [tool] if tool is not None else None,
                ctx,
                streaming=input.enable_streaming,
                as_arguments=tool is not None,
            )
            answered: list[Message] = []
            async for event in _shown(answer, answered):
                yield event
            message = answered[-1]
            if tool is None:
                text = message.content
            else:
                _require_tool_call(message, f"'{tool.name}'")
                text = message.tool_calls[0].function.arguments
            plan = _parse_plan(self.parse_plan, text)
        except Exception as error:
            yield AgentEvent(error=error)
            return
        ctx.add_session_value(PLAN, plan)


class _Replanner:
    """Records the step just run, then answers or revises the plan; see ``new_replanner``."""

    def __init__(
        self,
        *,
        name: str,
        description: str,
        model: ChatModel | str,
        plan_tool: ToolInfo,
        respond_tool: ToolInfo,
        gen_input: ExecutionInput | None,
        parse_plan: PlanParser,
    ) -> None:
        if not name:
            raise UserError("replanner needs a name: expected a non-empty string, got ''")
        if plan_tool.name == respond_tool.name:
            raise UserError(
                f"replanner '{name}': expected different names for the plan and respond tools, "
                f"got {plan_tool.name!r} for both"
            )
        self.name = name
        self.description = description
        self.model = as_model(model, f"replanner {name!r} model")
        self.plan_tool = plan_tool
        self.respond_tool = respond_tool
        self.gen_input = gen_input
        self.parse_plan = parse_plan
        # The original's "forced" choice: some tool must be called, the model picks which.
        self._step = ModelStep(self.model, tool_choice="required")

    def __repr__(self) -> str:
        return f"replanner({self.name!r}, model={self.model.model_name!r})"

    async def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        ctx = ctx if ctx is not None else RunContext(enable_streaming=input.enable_streaming)
        respond, plan_tool = self.respond_tool, self.plan_tool
        try:
            result = ctx.get_session_value(EXECUTED_STEP)
            if result is None:
                raise UserError(
                    f"replanner '{self.name}': expected session value {EXECUTED_STEP!r} (the executor's result), "
                    "got none"
                )
            context = _execution_context(ctx, self.name)
            done = ExecutedStep(step=context.plan.first_step(), result=str(result))
            context.executed_steps = [*context.executed_steps, done]
            ctx.add_session_value(EXECUTED_STEPS, context.executed_steps)
            if self.gen_input is not None:
                messages = await _messages(self.gen_input(context))
            else:
                values = {**_prompt_values(context), "plan_tool": plan_tool.name, "respond_tool": respond.name}
                messages = REPLANNER_PROMPT.format(values)
            answer = _ask(
                self._step,
                messages,
                [plan_tool, respond],
                ctx,
                streaming=input.enable_streaming,
                as_arguments=True,
            )
            answered: list[Message] = []
            async for event in _shown(answer, answered):
                yield event
            message = answered[-1]
            expected = f"'{plan_tool.name}' or '{respond.name}'"
            _require_tool_call(message, expected)
            call = message.tool_calls[0].function
            if call.name not in (respond.name, plan_tool.name):
                raise RunError(f"unexpected tool call: {call.name}; expected {expected}")
            plan = _parse_plan(self.parse_plan, call.arguments) if call.name == plan_tool.name else None
        except Exception as error:
            yield AgentEvent(error=error)
            return
        if plan is None:
            yield AgentEvent(action=break_loop_action(self.name))
        else:
            ctx.add_session_value(PLAN, plan)


def new_planner(
    *,
    model: ChatModel | str,
    name: str = "planner",
    description: str = "a planner agent",
    plan_tool: ToolInfo | None = PLAN_TOOL,
    gen_input: PlannerInput | None = None,
    parse_plan: PlanParser = Plan.from_json,
) -> Agent:
    """An agent that asks ``model`` for a plan and saves it under ``PLAN`` (the input under ``USER_INPUT``).

    The model must call ``plan_tool``; its arguments are the plan's JSON, shown as an assistant message and parsed
    with ``parse_plan``. With ``plan_tool=None`` the model is instead expected to answer with the JSON itself
    (a model set up for structured output). ``gen_input`` replaces ``PLANNER_PROMPT``.
    """
    return _Planner(
        name=name,
        description=description,
        model=model,
        plan_tool=plan_tool,
        gen_input=gen_input,
        parse_plan=parse_plan,
    )


def new_executor(
    *,
    model: ChatModel | str,
    tools: Sequence[ToolLike] = (),
    max_iterations: int = 20,
    name: str = "executor",
    description: str = "an executor agent",
    gen_input: ExecutionInput | None = None,
) -> ChatModelAgent:
    """A ChatModelAgent that runs the plan's first step and saves its answer under ``EXECUTED_STEP``.

    Its input is ``EXECUTOR_PROMPT`` filled from the session (or what ``gen_input`` builds), not the history.
    """

    async def model_input(_instruction: str, _input: AgentInput, ctx: RunContext) -> list[Message]:
        context = _execution_context(ctx, name)
        if gen_input is not None:
            return await _messages(gen_input(context))
        return EXECUTOR_PROMPT.format({**_prompt_values(context), "step": context.plan.first_step()})

    return ChatModelAgent(
        name=name,
        description=description,
        model=model,
        tools=tools,
        max_iterations=max_iterations,
        output_key=EXECUTED_STEP,
        gen_model_input=model_input,
    )


def new_replanner(
    *,
    model: ChatModel | str,
    name: str = "replanner",
    description: str = "a replanner agent",
    plan_tool: ToolInfo = PLAN_TOOL,
    respond_tool: ToolInfo = RESPOND_TOOL,
    gen_input: ExecutionInput | None = None,
    parse_plan: PlanParser = Plan.from_json,
) -> Agent:
    """An agent that adds the step just run to ``EXECUTED_STEPS`` and has ``model`` call one of two tools.

    ``respond_tool``: the task is done; the call's arguments are shown as an assistant message and the replanner
    breaks the enclosing loop. ``plan_tool``: the arguments are the remaining steps, saved under ``PLAN``.
    ``gen_input`` replaces ``REPLANNER_PROMPT``.
    """
    return _Replanner(
        name=name,
        description=description,
        model=model,
        plan_tool=plan_tool,
        respond_tool=respond_tool,
        gen_input=gen_input,
        parse_plan=parse_plan,
    )


def plan_execute_replan(
    planner: Agent,
    executor: Agent,
    replanner: Agent,
    *,
    max_iterations: int = 10,
    name: str = "plan_execute_replan",
    description: str = "",
) -> SequentialAgent:
    """``Sequential[planner, Loop("execute_replan", [executor, replanner])]``.

    The loop runs at most ``max_iterations`` rounds of execute-then-replan; the replanner's answer ends it sooner.
    """
    if max_iterations < 1:
        raise UserError(f"max_iterations: expected a positive number of execute-replan rounds, got {max_iterations}")
    loop = LoopAgent(name="execute_replan", sub_agents=[executor, replanner], max_iterations=max_iterations)
    return SequentialAgent(name=name, description=description, sub_agents=[planner, loop])


# -- helpers --------------------------------------------------------------------------------------------------------


async def _messages(result: MessagesOrAwaitable) -> list[Message]:
    if inspect.isawaitable(result):
        result = await result
    return list(result)


def _execution_context(ctx: RunContext, agent: str) -> ExecutionContext:
    plan = ctx.get_session_value(PLAN)
    if not isinstance(plan, PlanLike):
        raise UserError(
            f"agent '{agent}': expected session value {PLAN!r} to hold a plan (set by the planner), "
            f"got {type(plan).__name__}"
        )
    user_input = ctx.get_session_value(USER_INPUT)
    if user_input is None:
        raise UserError(f"agent '{agent}': expected session value {USER_INPUT!r} (set by the planner), got none")
    steps = ctx.get_session_value(EXECUTED_STEPS) or []
    return ExecutionContext(user_input=list(user_input), plan=plan, executed_steps=list(steps))


def _require_tool_call(message: Message, expected: str) -> None:
    if not message.tool_calls:
        raise RunError(
            f"no tool call: expected the model to call {expected}, got an answer without tool calls: "
            f"{message.content[:200]!r}"
        )


def _parse_plan(parse: PlanParser, text: str) -> PlanLike:
    try:
        return parse(text)
    except Exception as error:
        raise RunError(f"unmarshal plan error: {error}") from error


async def _ask(
    step: ModelStep,
    messages: list[Message],
    tools: list[ToolInfo] | None,
    ctx: RunContext,
    *,
    streaming: bool,
    as_arguments: bool,
) -> AsyncGenerator[AgentEvent | Message, None]:
    """The model's answer, asked through the agent's model step: first the event that shows it to the caller, then
    the whole message.

    With ``as_arguments`` the event shows the first tool call's arguments (the plan's or the response's JSON) as
    assistant text; an answer without tool calls shows nothing (the caller reports it).
    """
    if streaming:
        reply = await step.stream(messages, tools, ctx, show=_first_call_arguments() if as_arguments else None)
        assert reply is not None
        yield reply.event
        yield await reply.message()
        return
    message = await step.generate(messages, tools, ctx)
    if not as_arguments:
        yield event_from_message(message)
    elif message.tool_calls:
        yield event_from_message(assistant(message.tool_calls[0].function.arguments))
    yield message


async def _shown(answer: AsyncGenerator[AgentEvent | Message, None], into: list[Message]) -> AsyncIterator[AgentEvent]:
    """Forward the events of an ``_ask`` answer and put its whole message into ``into``."""
    async with aclosing(answer) as items:
        async for item in items:
            if isinstance(item, AgentEvent):
                yield item
            else:
                into.append(item)


def _first_call_arguments() -> Callable[[Message], Message]:
    """Maps each chunk to the piece of the first tool call's arguments it carries.

    Chunks of other calls, or of no call, become empty chunks rather than being dropped, so that the shown stream
    is never empty (an empty stream cannot be joined into a message for the history).
    """
    first: list[int | None] = []

    def convert(chunk: Message) -> Message:
        for call in chunk.tool_calls:
            if not first:
                first.append(call.index)
            if call.index == first[0]:
                return assistant(call.function.arguments)
        return assistant()

    return convert

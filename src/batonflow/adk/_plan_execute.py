"""Plan-Execute-Replan: a planner writes a plan, an executor does its first step, a replanner decides (§A.12).

The three agents talk through session values only: the planner saves the user input and the plan, the executor
saves the result of the step it ran, the replanner records that step and then either answers (``respond``,
which breaks the loop) or saves a revised plan with the remaining steps (``plan``).
``plan_execute_replan`` wires them as ``Sequential[planner, Loop[executor, replanner]]``.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, runtime_checkable

from ..errors import RunError, UserError
from ..models import ChatModel, ForcedTool, ToolChoice
from ..schema import Message, Role, assistant, concat_messages
from ..store import register_type
from ..tools import Tool, ToolInfo
from ._agent import Agent
from ._chatmodel import ChatModelAgent, render_instruction
from ._context import RunContext
from ._events import AgentEvent, AgentInput, break_loop_action, event_from_message
from ._workflow import LoopAgent, SequentialAgent

__all__ = [
    "EXECUTED_STEP",
    "EXECUTED_STEPS",
    "EXECUTOR_PROMPT",
    "PLAN",
    "PLANNER_PROMPT",
    "PLAN_TOOL",
    "REPLANNER_PROMPT",
    "RESPOND_TOOL",
    "USER_INPUT",
    "ExecutedStep",
    "ExecutionContext",
    "MessagesPlaceholder",
    "Plan",
    "PlanLike",
    "PromptTemplate",
    "new_executor",
    "new_planner",
    "new_replanner",
    "plan_execute_replan",
]

# -- session keys ---------------------------------------------------------------------------------------------------

USER_INPUT = "UserInput"
"""Session key of the messages the planner was given (``list[Message]``)."""
PLAN = "Plan"
"""Session key of the current plan (a ``PlanLike``, ``Plan`` by default)."""
EXECUTED_STEP = "ExecutedStep"
"""Session key of the executor's answer for the step it just ran (``str``)."""
EXECUTED_STEPS = "ExecutedSteps"
"""Session key of every step run so far with its result (``list[ExecutedStep]``)."""


# -- plans ----------------------------------------------------------------------------------------------------------


@runtime_checkable
class PlanLike(Protocol):
    """What the agents need from a plan: its first step, and a JSON form to show the models."""

    def first_step(self) -> str: ...

    def to_json(self) -> str: ...


@dataclass(slots=True, kw_only=True)
class Plan:
    """The default plan: steps to run in order. Its JSON form is ``{"steps": [...]}``."""

    steps: list[str] = field(default_factory=list)

    def first_step(self) -> str:
        """The step to run next; ``""`` for a plan without steps."""
        return self.steps[0] if self.steps else ""

    def to_json(self) -> str:
        # Compact and unescaped, as the original's JSON encoder writes it: the text goes into prompts.
        return json.dumps({"steps": self.steps}, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Plan:
        """A plan from a model's JSON; ``ValueError`` if it is not ``{"steps": [<strings>]}``."""
        data = json.loads(text)
        steps = data.get("steps") if isinstance(data, dict) else None
        if not isinstance(steps, list) or not all(isinstance(s, str) for s in steps):
            raise ValueError(f'expected a JSON object {{"steps": [<strings>]}}, got {text!r}')
        return cls(steps=steps)


PlanParser: TypeAlias = Callable[[str], PlanLike]
"""Turns the JSON a model wrote (tool arguments, or the answer itself) into a plan."""


@dataclass(slots=True, kw_only=True)
class ExecutedStep:
    step: str
    result: str


@dataclass(slots=True, kw_only=True)
class ExecutionContext:
    """What the executor's and the replanner's prompts are built from."""

    user_input: list[Message]
    plan: PlanLike
    executed_steps: list[ExecutedStep] = field(default_factory=list)


# Plans and executed steps live in the session, so a checkpoint must be able to hold them.
register_type(Plan, "plan_execute.Plan")
register_type(ExecutedStep, "plan_execute.ExecutedStep")


# -- tools ----------------------------------------------------------------------------------------------------------

PLAN_TOOL = ToolInfo(
    name="plan",
    description=(
        "Plan with a list of steps to execute in order. Each step should be clear, actionable, and arranged in a "
        "logical sequence. The output will be used to guide the execution process."
    ),
    parameters={
        "type": "object",
        "properties": {
            "steps": {
                "type": "array",
                "items": {"type": "string"},
                "description": "different steps to follow, should be in sorted order",
            }
        },
        "required": ["steps"],
    },
)

RESPOND_TOOL = ToolInfo(
    name="respond",
    description=(
        "Generate a direct response to the user. Use this tool when you have all the information needed to provide "
        "a final answer."
    ),
    parameters={
        "type": "object",
        "properties": {
            "response": {"type": "string", "description": "The complete response to provide to the user"},
        },
        "required": ["response"],
    },
)


# -- prompts --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MessagesPlaceholder:
    """Where a list of messages (a value of the same name) goes in a prompt."""

    key: str


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    """Chat messages with ``{name}`` placeholders, and places for whole lists of messages.

    Values are substituted by name in one pass (``{{``/``}}`` for literal braces): a value that itself contains
    braces, such as a plan's JSON or a user's text, is inserted as it is.
    """

    parts: tuple[tuple[Role, str] | MessagesPlaceholder, ...]

    def format(self, values: Mapping[str, Any]) -> list[Message]:
        messages: list[Message] = []
        for part in self.parts:
            if isinstance(part, MessagesPlaceholder):
                if part.key not in values:
                    raise UserError(f"failed to format prompt: expected messages named {part.key!r}, got none")
                messages.extend(values[part.key])
            else:
                role, template = part
                messages.append(Message(role=role, content=render_instruction(template, values)))
        return messages


PLANNER_PROMPT = PromptTemplate(
    (
        (
            "system",
            """You are an expert planning agent. Given an objective, create a comprehensive step-by-step plan to achieve the objective.

## YOUR TASK
Analyze the objective and generate a strategic plan that breaks down the goal into manageable, executable steps.

## PLANNING REQUIREMENTS
Each step in your plan must be:
- **Specific and actionable**: Clear instructions that can be executed without ambiguity
- **Self-contained**: Include all necessary context, parameters, and requirements
- **Independently executable**: Can be performed by an agent without dependencies on other steps
- **Logically sequenced**: Arranged in optimal order for efficient execution
- **Objective-focused**: Directly contribute to achieving the main goal

## PLANNING GUIDELINES
- Eliminate redundant or unnecessary steps
- Include relevant constraints, parameters, and success criteria for each step
- Ensure the final step produces a complete answer or deliverable
- Anticipate potential challenges and include mitigation strategies
- Structure steps to build upon each other logically
- Provide sufficient detail for successful execution

## QUALITY CRITERIA
- Plan completeness: Does it address all aspects of the objective?
- Step clarity: Can each step be understood and executed independently?
- Logical flow: Do steps follow a sensible progression?
- Efficiency: Is this the most direct path to the objective?
- Adaptability: Can the plan handle unexpected results or changes?""",
        ),
        MessagesPlaceholder("input"),
    )
)
"""The planner's prompt: a system message, then the user input messages (``input``)."""

EXECUTOR_PROMPT = PromptTemplate(
    (
        (
            "system",
            "You are a diligent and meticulous executor agent. Follow the given plan and execute your tasks carefully "
            "and thoroughly.",
        ),
        (
            "user",
            "## OBJECTIVE\n"
            "{input}\n"
            "## Given the following plan:\n"
            "{plan}\n"
            "## COMPLETED STEPS & RESULTS\n"
            "{executed_steps}\n"
            # The space before the line break is in the original prompt.
            "## Your task is to execute the first step, which is: \n"
            "{step}",
        ),
    )
)
"""The executor's prompt; placeholders ``{input}``, ``{plan}``, ``{executed_steps}`` and ``{step}``."""

REPLANNER_PROMPT = PromptTemplate(
    (
        (
            "system",
            """You are going to review the progress toward an objective. Analyze the current state and determine the optimal next action.

## YOUR TASK
Based on the progress above, you MUST choose exactly ONE action:

### Option 1: COMPLETE (if objective is fully achieved)
Call '{respond_tool}' with:
- A comprehensive final answer
- Clear conclusion summarizing how the objective was met
- Key insights from the execution process

### Option 2: CONTINUE (if more work is needed)
Call '{plan_tool}' with a revised plan that:
- Contains ONLY remaining steps (exclude completed ones)
- Incorporates lessons learned from executed steps
- Addresses any gaps or issues discovered
- Maintains logical step sequence

## PLANNING REQUIREMENTS
Each step in your plan must be:
- **Specific and actionable**: Clear instructions that can be executed without ambiguity
- **Self-contained**: Include all necessary context, parameters, and requirements
- **Independently executable**: Can be performed by an agent without dependencies on other steps
- **Logically sequenced**: Arranged in optimal order for efficient execution
- **Objective-focused**: Directly contribute to achieving the main goal

## PLANNING GUIDELINES
- Eliminate redundant or unnecessary steps
- Adapt strategy based on new information
- Include relevant constraints, parameters, and success criteria for each step

## DECISION CRITERIA
- Has the original objective been completely satisfied?
- Are there any remaining requirements or sub-goals?
- Do the results suggest a need for strategy adjustment?
- What specific actions are still required?""",
        ),
        (
            "user",
            """## OBJECTIVE
{input}

## ORIGINAL PLAN
{plan}

## COMPLETED STEPS & RESULTS
{executed_steps}""",
        ),
    )
)
"""The replanner's prompt; placeholders ``{input}``, ``{plan}``, ``{executed_steps}``, ``{plan_tool}`` and
``{respond_tool}`` (the two tools' names)."""


def _format_input(messages: Sequence[Message]) -> str:
    """The user input as prompt text: each message's content on its own line."""
    return "".join(f"{m.content}\n" for m in messages)


def _format_executed_steps(steps: Sequence[ExecutedStep]) -> str:
    return "".join(f"Step: {s.step}\nResult: {s.result}\n\n" for s in steps)


def _prompt_values(context: ExecutionContext) -> dict[str, str]:
    return {
        "input": _format_input(context.user_input),
        "plan": context.plan.to_json(),
        "executed_steps": _format_executed_steps(context.executed_steps),
    }


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
        model: ChatModel,
        plan_tool: ToolInfo | None,
        gen_input: PlannerInput | None,
        parse_plan: PlanParser,
    ) -> None:
        if not name:
            raise UserError("planner needs a name: expected a non-empty string, got ''")
        self.name = name
        self.description = description
        self.model = model
        self.plan_tool = plan_tool
        self.gen_input = gen_input
        self.parse_plan = parse_plan

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
            message: Message | None = None
            answer = _ask(
                self.model,
                messages,
                tools=[tool] if tool is not None else None,
                # One tool offered and a call required: the original's "forced" choice is this tool.
                tool_choice=ForcedTool(tool.name) if tool is not None else None,
                streaming=input.enable_streaming,
                as_arguments=tool is not None,
            )
            async with aclosing(answer) as items:
                async for item in items:
                    if isinstance(item, AgentEvent):
                        yield item
                    else:
                        message = item
            assert message is not None
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
        model: ChatModel,
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
        self.model = model
        self.plan_tool = plan_tool
        self.respond_tool = respond_tool
        self.gen_input = gen_input
        self.parse_plan = parse_plan

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
            message: Message | None = None
            answer = _ask(
                self.model,
                messages,
                tools=[plan_tool, respond],
                # The original's "forced" choice: some tool must be called, the model picks which.
                tool_choice="required",
                streaming=input.enable_streaming,
                as_arguments=True,
            )
            async with aclosing(answer) as items:
                async for item in items:
                    if isinstance(item, AgentEvent):
                        yield item
                    else:
                        message = item
            assert message is not None
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
    model: ChatModel,
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
    model: ChatModel,
    tools: Sequence[Tool] = (),
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
    model: ChatModel,
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
    model: ChatModel,
    messages: list[Message],
    *,
    tools: list[ToolInfo] | None,
    tool_choice: ToolChoice | None,
    streaming: bool,
    as_arguments: bool,
) -> AsyncGenerator[AgentEvent | Message, None]:
    """The model's answer: first the event that shows it to the caller, then the whole message.

    With ``as_arguments`` the event shows the first tool call's arguments (the plan's or the response's JSON) as
    assistant text; an answer without tool calls shows nothing (the caller reports it).
    """
    if streaming:
        shown, whole = model.stream(messages, tools=tools, tool_choice=tool_choice).tap()
        yield event_from_message(stream=shown.convert(_first_call_arguments()) if as_arguments else shown)
        yield concat_messages(await whole.chunks())
        return
    message = await model.generate(messages, tools=tools, tool_choice=tool_choice)
    if not as_arguments:
        yield event_from_message(message)
    elif message.tool_calls:
        yield event_from_message(assistant(message.tool_calls[0].function.arguments))
    yield message


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

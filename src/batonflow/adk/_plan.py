"""Plan-Execute-Replan's vocabulary: session keys, plans, the plan and respond tools, and Eino's prompts."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, runtime_checkable

from ..codec import register_type
from ..errors import UserError
from ..schema import Message, Role
from ..tools import ToolInfo, parse_model_json
from .loop import render_instruction

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
        """A plan from a model's JSON; ``ValueError`` if it is not ``{"steps": [<strings>]}`` (a
        ``ModelJSONError`` if it is not JSON, or breaks the limits of model JSON)."""
        data = parse_model_json(text)
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

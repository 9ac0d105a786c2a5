"""Planning mode: an agent breaks a complex task into steps and sees its progress before each model call (Solon-AI's
``PlanTalent``).

``planning()`` returns a ``ChatModelAgent`` middleware. It adds a planning guide to the instruction and three tools —
``create_plan``, ``update_plan_progress``, ``revise_plan`` — and before each model call renders the plan as a progress
board at the end of the system message, replacing the board it rendered before. The plan lives in the run's session
values under a key of the agent's own, so an interrupted run saves it with its checkpoint and a resumed run goes on
with it; the middleware keeps no state and can serve any number of agents and concurrent runs. Each change of the plan
is a ``PlanEvent`` on the run's trace.

The texts are English by default and Chinese after ``set_language("zh")``, fixed when the middleware is made.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from ..adk import AgentMiddleware, ChatModelAgentState, Language, RunContext, get_language
from ..schema import system
from ..tools import FunctionTool, ToolContext
from ..trace import PlanEvent

__all__ = ["planning"]

_KEY_PREFIX = "_plan:"  # the session value of an agent's plan; a colon keeps it out of reach of {name} templates

_TEXTS: dict[str, dict[Language, str]] = {
    "guide": {
        "en": (
            "## Task Planning Guide\n"
            "1. **When to plan**: break a complex task into steps with `create_plan`. A task of one step needs no "
            "plan: carry it out or answer directly.\n"
            "2. **Keep progress in sync**: after finishing a step, call `update_plan_progress` with the number of "
            "the next step (counting from 1); once every step is done, pass the number of steps + 1.\n"
            "3. **Revise when reality differs**: when a step fails, information is missing or the situation changes, "
            "call `revise_plan` to replace the steps from the affected one on.\n"
            "4. **Finish**: when all steps are done, stop calling the planning tools and give the final answer."
        ),
        "zh": (
            "## 任务规划指南 (Task Planning Guide)\n"
            "1. **启动机制**: 复杂任务通过 `create_plan` 拆解步骤。"
            "只需一步即可完成的简单任务无需规划，直接执行或回答。\n"
            "2. **进度同步**: 每完成一个步骤，立即调用 `update_plan_progress` 传入下一步的序号（从 1 开始）；"
            "全部完成时传入“步骤数 + 1”。\n"
            "3. **动态修正**: 当步骤失败、信息缺失或情况变化，与计划不符时，"
            "调用 `revise_plan` 从受影响的步骤起替换后续步骤。\n"
            "4. **完成交付**: 所有步骤完成后，不再调用规划工具，直接给出最终答案。"
        ),
    },
    "heading": {"en": "[Plan Progress Board]", "zh": "[执行计划进度看板]"},
    "sync": {
        "en": (
            "Keep the board in sync: when the step marked [●] is done, call `update_plan_progress` with the next "
            "step's number before going on; call `revise_plan` when the plan no longer fits."
        ),
        "zh": (
            "同步协议：完成 [●] 标记的当前步骤后，先调用 `update_plan_progress` 传入下一步的序号，再继续执行；"
            "计划与实际不符时调用 `revise_plan` 修正。"
        ),
    },
    "all_done": {"en": "All steps are done: give the final answer.", "zh": "所有步骤均已完成：请直接给出最终答案。"},
    # Tool descriptions, as docstrings: FunctionTool reads the parameters' descriptions from there.
    "create_doc": {
        "en": (
            "Break a complex task into ordered steps and start on step 1. A task of one step needs no plan.\n\n"
            "Args:\n"
            "    steps: the steps in order, each one short action\n"
        ),
        "zh": (
            "将复杂任务拆解为有序步骤，并从第 1 步开始执行。只有一个步骤的任务无需规划。\n\n"
            "Args:\n"
            "    steps: 按顺序排列的步骤，每步一个简短动作\n"
        ),
    },
    "progress_doc": {
        "en": (
            "Record progress on the plan: call it after finishing a step.\n\n"
            "Args:\n"
            "    next_plan_index: the number of the step to work on next, counting from 1; the number of steps + 1 "
            "when all are done\n"
        ),
        "zh": (
            "更新计划进度：每完成一个步骤后调用。\n\n"
            "Args:\n"
            "    next_plan_index: 下一个要执行的步骤序号（从 1 开始）；全部完成时为“步骤数 + 1”\n"
        ),
    },
    "revise_doc": {
        "en": (
            "Change the rest of the plan when reality differs from it: the steps from from_index on are replaced "
            "by new_steps.\n\n"
            "Args:\n"
            "    new_steps: the steps that replace the plan from from_index on, in order\n"
            "    from_index: the number of the first step to replace, counting from 1; the number of steps + 1 adds "
            "the new steps at the end\n"
        ),
        "zh": (
            "实际情况与计划不符时修订计划：从 from_index 起的步骤替换为 new_steps。\n\n"
            "Args:\n"
            "    new_steps: 从 from_index 起替换原计划的步骤，按顺序排列\n"
            "    from_index: 第一个被替换的步骤序号（从 1 开始）；传入“步骤数 + 1”表示在末尾追加\n"
        ),
    },
    # Observations: each says what changed and where the plan stands now.
    "created": {"en": "Plan created with {count} steps.", "zh": "计划已创建，共 {count} 个步骤。"},
    "skipped": {
        "en": "Planning skipped: a task of at most one step needs no plan. Carry it out directly.",
        "zh": "已跳过规划：任务不超过一个步骤，无需制定计划，请直接执行。",
    },
    "progressed": {"en": "Progress updated.", "zh": "进度已更新。"},
    "clamped": {
        "en": " Step {asked} is outside the plan of {count} steps: taken as {used}.",
        "zh": "步骤 {asked} 超出了共 {count} 个步骤的计划，已按 {used} 处理。",
    },
    "revised": {
        "en": "Plan revised from step {index} on: it now has {count} steps.",
        "zh": "计划已从第 {index} 步起修订，现共 {count} 个步骤。",
    },
    "at": {"en": " Now at step {number} of {count}: {step}", "zh": "当前第 {number}/{count} 步：{step}"},
    "done": {
        "en": " All {count} steps are done: give the final answer.",
        "zh": "全部 {count} 个步骤均已完成，请给出最终答案。",
    },
    "no_plan": {
        "en": "There is no plan yet: call `create_plan` first, or carry out a simple task directly.",
        "zh": "当前没有计划：请先调用 `create_plan`；简单任务可直接执行。",
    },
    "no_steps": {
        "en": (
            "new_steps holds no step (only empty texts): give the steps that replace the plan from step {index} on. "
            "The plan is unchanged."
        ),
        "zh": "new_steps 中没有有效步骤（全为空）：请给出从第 {index} 步起替换的步骤。计划未改动。",
    },
}

_HEADINGS = tuple(_TEXTS["heading"].values())

_Stage = Literal["create", "progress", "revise"]
_Text = Callable[[str], str]  # a key of _TEXTS to its text, in the language of one middleware


@dataclass(frozen=True, slots=True)
class _Progress:
    steps: tuple[str, ...]
    current: int  # 0-based index of the step under way; len(steps) once every step is done


def planning(instruction: str | None = None) -> AgentMiddleware:
    """Planning mode for a ``ChatModelAgent``: a guide, the three planning tools, and a progress board.

    ``create_plan(steps)`` stores the steps, cleaned as Solon cleans them (leading numbering and bullets, ``**``,
    backticks and a trailing full stop or comma removed, empty steps dropped), and starts on step 1; with at most one
    step left it skips planning and clears any plan. ``update_plan_progress(next_plan_index)`` moves to a step,
    counting from 1 and clamped to the plan (the number of steps + 1 means all are done). ``revise_plan(new_steps,
    from_index)`` replaces the steps from ``from_index`` on, clamped to the plan (past its end, the new steps are
    added at the end); if progress was at or past that step, it moves back to it. A call without a plan or with
    arguments that make no sense gets an observation saying so, not an error.

    Before each model call the plan is rendered at the end of the system message, one line per step
    (``1. [√] find flights``: ``[√]`` done, ``[●]`` current, ``[ ]`` to do), and a reminder to keep it in sync.
    ``instruction`` replaces the planning guide (``""``: none).
    """
    text = _texts(get_language())

    async def create_plan(steps: list[str], ctx: ToolContext) -> str:
        return await _create(steps, ctx, text)

    async def update_plan_progress(next_plan_index: int, ctx: ToolContext) -> str:
        return await _progress(next_plan_index, ctx, text)

    async def revise_plan(new_steps: list[str], from_index: int, ctx: ToolContext) -> str:
        return await _revise(new_steps, from_index, ctx, text)

    def before_chat_model(state: ChatModelAgentState, ctx: RunContext) -> None:
        _show_board(state, ctx, text)

    return AgentMiddleware(
        additional_instruction=text("guide") if instruction is None else instruction,
        additional_tools=(
            _function_tool(create_plan, text("create_doc")),
            _function_tool(update_plan_progress, text("progress_doc")),
            _function_tool(revise_plan, text("revise_doc")),
        ),
        before_chat_model=before_chat_model,
    )


Text = Callable[[str], str]


def _texts(language: Language) -> Text:
    def text(key: str) -> str:
        return _TEXTS[key][language]

    return text


def _where(plan: _Progress, text: Text) -> str:
    count = len(plan.steps)
    if plan.current >= count:
        return text("done").format(count=count)
    return text("at").format(number=plan.current + 1, count=count, step=plan.steps[plan.current])


async def _create(steps: list[str], ctx: ToolContext, text: Text) -> str:
    cleaned = _cleaned(steps)
    if len(cleaned) <= 1:
        # Solon clears the plan: a simple task ends the board an earlier plan left.
        ctx.add_session_value(_key(ctx.run), None)
        return text("skipped")
    plan = _Progress(steps=cleaned, current=0)
    await _store(ctx, "create", plan)
    return text("created").format(count=len(cleaned)) + _where(plan, text)


async def _progress(next_plan_index: int, ctx: ToolContext, text: Text) -> str:
    plan = _load(ctx.session_values, _key(ctx.run))
    if plan is None:
        return text("no_plan")
    count = len(plan.steps)
    used = min(max(next_plan_index, 1), count + 1)
    plan = replace(plan, current=used - 1)
    await _store(ctx, "progress", plan)
    clamped = "" if used == next_plan_index else text("clamped").format(asked=next_plan_index, count=count, used=used)
    return text("progressed") + clamped + _where(plan, text)


async def _revise(new_steps: list[str], from_index: int, ctx: ToolContext, text: Text) -> str:
    plan = _load(ctx.session_values, _key(ctx.run))
    if plan is None:
        return text("no_plan")
    cleaned = _cleaned(new_steps)
    if not cleaned:
        return text("no_steps").format(index=from_index)
    # Solon clamps the step to the plan: past its end, the new steps are added at the end.
    count = len(plan.steps)
    used = min(max(from_index, 1), count + 1)
    start = used - 1
    plan = _Progress(steps=plan.steps[:start] + cleaned, current=min(plan.current, start))
    await _store(ctx, "revise", plan)
    clamped = "" if used == from_index else text("clamped").format(asked=from_index, count=count, used=used)
    return text("revised").format(index=used, count=len(plan.steps)) + clamped + _where(plan, text)


def _render(plan: _Progress, text: Text) -> str:
    lines = [f"{i + 1}. {_mark(i, plan.current)} {step}" for i, step in enumerate(plan.steps)]
    footer = text("sync") if plan.current < len(plan.steps) else text("all_done")
    return "\n".join([text("heading"), *lines, footer])


def _show_board(state: ChatModelAgentState, ctx: RunContext, text: Text) -> None:
    """The progress board, re-rendered at the end of the system message before a model call."""
    plan = _load(ctx.session.values, _key(ctx))
    board = _render(plan, text) if plan is not None else ""
    messages = state.messages
    head = messages[0] if messages and messages[0].role == "system" else None
    if head is None:
        if board:
            messages.insert(0, system(board))
        return
    kept = _without_board(head.content)
    content = f"{kept}\n\n{board}" if kept and board else kept or board
    if not content:
        del messages[0]  # it held only a board, and the plan is gone
    elif content != head.content:
        # A new message rather than an edit: the old one may be shared with a recorded request or a checkpoint.
        messages[0] = replace(head, content=content)


def _function_tool(fn: Callable[..., Awaitable[str]], doc: str) -> FunctionTool[..., Awaitable[str]]:
    # FunctionTool reads the descriptions of a tool and its parameters from the docstring. These functions are made
    # afresh by each planning() call, so giving each its language's docstring changes nothing shared.
    fn.__doc__ = doc
    return FunctionTool(fn)


def _mark(index: int, current: int) -> str:
    return "[√]" if index < current else "[●]" if index == current else "[ ]"


_NUMBERING = re.compile(r"^[\d.\-\s*]+")


def _cleaned(steps: list[str]) -> tuple[str, ...]:
    """The steps as Solon's ``cleanPlans`` leaves them: no leading numbering or bullets, no ``**`` or backticks,
    no trailing full stop or comma, and no empty step."""
    cleaned = []
    for step in steps:
        text = _NUMBERING.sub("", step).replace("**", "").replace("`", "").strip()
        if text.endswith((".", "。", ",", "，")):
            text = text[:-1]
        if text:
            cleaned.append(text)
    return tuple(cleaned)


def _key(run: RunContext | None) -> str:
    """The session key of the plan of the agent running in ``run``: one plan per agent of a run."""
    name = run.run_path[-1].agent_name if run is not None and run.run_path else ""
    return _KEY_PREFIX + name


def _load(values: Mapping[str, Any], key: str) -> _Progress | None:
    saved = values.get(key)
    if not isinstance(saved, dict):
        return None
    return _Progress(steps=tuple(saved["steps"]), current=int(saved["current"]))


async def _store(ctx: ToolContext, stage: _Stage, plan: _Progress) -> None:
    # Plain JSON values, which the checkpoint codec writes without a registered class.
    run: RunContext | None = ctx.run
    ctx.add_session_value(_key(run), {"steps": list(plan.steps), "current": plan.current})
    if run is not None and run.trace is not None:
        await run.trace.event(PlanEvent, stage=stage, plans=plan.steps, current=plan.current)


def _without_board(content: str) -> str:
    """``content`` less the board rendered at its end, if any."""
    for heading in _HEADINGS:
        if content.startswith(heading):
            return ""
        at = content.rfind(f"\n\n{heading}")
        if at != -1:
            return content[:at]
    return content

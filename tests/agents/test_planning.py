from collections.abc import Iterator, Sequence

import pytest

from batonflow.adk import (
    AgentEvent,
    AgentMiddleware,
    ChatModelAgent,
    InterruptInfo,
    Runner,
    SequentialAgent,
    collect_events,
    get_language,
    set_language,
)
from batonflow.agents import planning
from batonflow.observe import PlanEvent, TraceEvent
from batonflow.schema import Message, assistant
from batonflow.store import MemoryCheckpointStore
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import Tool, ToolContext, tool

GUIDE_EN = (
    "## Task Planning Guide\n"
    "1. **When to plan**: break a complex task into steps with `create_plan`. A task of one step needs no plan: "
    "carry it out or answer directly.\n"
    "2. **Keep progress in sync**: after finishing a step, call `update_plan_progress` with the number of the next "
    "step (counting from 1); once every step is done, pass the number of steps + 1.\n"
    "3. **Revise when reality differs**: when a step fails, information is missing or the situation changes, call "
    "`revise_plan` to replace the steps from the affected one on.\n"
    "4. **Finish**: when all steps are done, stop calling the planning tools and give the final answer."
)
SYNC_EN = (
    "Keep the board in sync: when the step marked [●] is done, call `update_plan_progress` with the next step's "
    "number before going on; call `revise_plan` when the plan no longer fits."
)
SYNC_ZH = (
    "同步协议：完成 [●] 标记的当前步骤后，先调用 `update_plan_progress` 传入下一步的序号，再继续执行；"
    "计划与实际不符时调用 `revise_plan` 修正。"
)
NO_PLAN = "There is no plan yet: call `create_plan` first, or carry out a simple task directly."
STEPS = ["find flights", "book a hotel", "write the summary"]


@pytest.fixture
def chinese() -> Iterator[None]:
    before = get_language()
    set_language("zh")
    try:
        yield
    finally:
        set_language(before)


def agent_with(
    *responses: Message,
    tools: Sequence[Tool] = (),
    instruction: str = "You help.",
    middleware: AgentMiddleware | None = None,
    name: str = "a",
) -> tuple[ChatModelAgent, ScriptedModel]:
    model = ScriptedModel(list(responses))
    agent = ChatModelAgent(
        name=name,
        model=model,
        instruction=instruction,
        tools=tools,
        middlewares=[middleware if middleware is not None else planning()],
    )
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


def system_texts(model: ScriptedModel) -> list[str]:
    """The system message of each request the model got."""
    texts = []
    for request in model.requests:
        assert request.messages[0].role == "system"
        texts.append(request.messages[0].content)
    return texts


def board(*lines: str, footer: str = SYNC_EN) -> str:
    return "\n".join(["[Plan Progress Board]", *lines, footer])


# -- the guide and the tools -------------------------------------------------------------------------------------


async def test_the_english_guide_and_the_three_tools_are_added_to_the_agent() -> None:
    agent, model = agent_with(assistant("hi"))
    await run(agent)
    [request] = model.requests
    assert request.messages[0].content == f"You help.\n\n{GUIDE_EN}"
    assert [t.name for t in request.tools] == ["create_plan", "update_plan_progress", "revise_plan"]
    assert request.tools[0].parameters["properties"]["steps"] == {
        "description": "the steps in order, each one short action",
        "items": {"type": "string"},
        "type": "array",
    }


async def test_the_guide_and_tool_descriptions_are_chinese_after_set_language_zh(chinese: None) -> None:
    agent, model = agent_with(assistant("hi"))
    await run(agent)
    [request] = model.requests
    assert request.messages[0].content.startswith(
        "You help.\n\n## 任务规划指南 (Task Planning Guide)\n1. **启动机制**: 复杂任务通过 `create_plan` 拆解步骤。"
    )
    assert request.tools[1].description == "更新计划进度：每完成一个步骤后调用。"
    assert request.tools[1].parameters["properties"]["next_plan_index"]["description"] == (
        "下一个要执行的步骤序号（从 1 开始）；全部完成时为“步骤数 + 1”"
    )


async def test_an_instruction_replaces_the_guide() -> None:
    agent, model = agent_with(assistant("hi"), middleware=planning("Plan big tasks."))
    await run(agent)
    assert system_texts(model) == ["You help.\n\nPlan big tasks."]


# -- create_plan ---------------------------------------------------------------------------------------------------


async def test_create_plan_cleans_the_steps_and_starts_at_step_1() -> None:
    agent, model = agent_with(
        tool_calls(("create_plan", {"steps": ["  find flights ", "", "book a hotel", "   ", "write the summary"]})),
        assistant("done"),
    )
    events = await run(agent)
    assert observations(events) == ["Plan created with 3 steps. Now at step 1 of 3: find flights"]
    assert system_texts(model)[1] == (
        f"You help.\n\n{GUIDE_EN}\n\n" + board("1. [●] find flights", "2. [ ] book a hotel", "3. [ ] write the summary")
    )


@pytest.mark.parametrize("steps", [[], ["  only step  "], ["only step", "", "  "]])
async def test_create_plan_with_at_most_one_step_left_skips_planning(steps: list[str]) -> None:
    agent, model = agent_with(tool_calls(("create_plan", {"steps": steps})), assistant("done"))
    events = await run(agent)
    assert observations(events) == [
        "Planning skipped: a task of at most one step needs no plan. Carry it out directly."
    ]
    assert system_texts(model)[1] == f"You help.\n\n{GUIDE_EN}"


async def test_create_plan_cleans_numbering_bold_backticks_and_trailing_punctuation_as_solon() -> None:
    steps = ["1. **find** flights.", "- `book` a hotel，", "  * write the summary。", "2.", "**"]
    agent, model = agent_with(tool_calls(("create_plan", {"steps": steps})), assistant("done"))
    await run(agent)
    assert system_texts(model)[1].endswith(
        board("1. [●] find flights", "2. [ ] book a hotel", "3. [ ] write the summary")
    )


async def test_a_one_step_create_plan_clears_an_earlier_plan() -> None:
    agent, model = agent_with(
        tool_calls(("create_plan", {"steps": STEPS})),
        tool_calls(("create_plan", {"steps": ["just answer"]})),
        assistant("done"),
    )
    await run(agent)
    texts = system_texts(model)
    assert "[Plan Progress Board]" in texts[1]
    assert texts[2] == f"You help.\n\n{GUIDE_EN}"


async def test_create_plan_replaces_an_earlier_plan() -> None:
    agent, model = agent_with(
        tool_calls(("create_plan", {"steps": STEPS})),
        tool_calls(("update_plan_progress", {"next_plan_index": 3})),
        tool_calls(("create_plan", {"steps": ["redo a", "redo b"]})),
        assistant("done"),
    )
    await run(agent)
    assert system_texts(model)[3].endswith(board("1. [●] redo a", "2. [ ] redo b"))


# -- update_plan_progress ------------------------------------------------------------------------------------------


async def test_update_plan_progress_counts_from_1_and_clamps_to_the_plan() -> None:
    agent, model = agent_with(
        tool_calls(("create_plan", {"steps": STEPS})),
        tool_calls(("update_plan_progress", {"next_plan_index": 2})),
        tool_calls(("update_plan_progress", {"next_plan_index": 0})),
        tool_calls(("update_plan_progress", {"next_plan_index": 9})),
        tool_calls(("update_plan_progress", {"next_plan_index": 4})),
        assistant("done"),
    )
    events = await run(agent)
    assert observations(events)[1:] == [
        "Progress updated. Now at step 2 of 3: book a hotel",
        "Progress updated. Step 0 is outside the plan of 3 steps: taken as 1. Now at step 1 of 3: find flights",
        "Progress updated. Step 9 is outside the plan of 3 steps: taken as 4. All 3 steps are done: give the final "
        "answer.",
        "Progress updated. All 3 steps are done: give the final answer.",
    ]
    boards = [text.removeprefix(f"You help.\n\n{GUIDE_EN}\n\n") for text in system_texts(model)[2:]]
    assert boards == [
        board("1. [√] find flights", "2. [●] book a hotel", "3. [ ] write the summary"),
        board("1. [●] find flights", "2. [ ] book a hotel", "3. [ ] write the summary"),
        board(
            "1. [√] find flights",
            "2. [√] book a hotel",
            "3. [√] write the summary",
            footer="All steps are done: give the final answer.",
        ),
        board(
            "1. [√] find flights",
            "2. [√] book a hotel",
            "3. [√] write the summary",
            footer="All steps are done: give the final answer.",
        ),
    ]


# -- revise_plan ---------------------------------------------------------------------------------------------------


async def test_revise_plan_replaces_the_steps_from_from_index_and_moves_progress_back_to_it() -> None:
    agent, model = agent_with(
        tool_calls(("create_plan", {"steps": STEPS})),
        tool_calls(("update_plan_progress", {"next_plan_index": 3})),
        tool_calls(("revise_plan", {"new_steps": [" take the train ", "", "write the summary"], "from_index": 2})),
        assistant("done"),
    )
    events = await run(agent)
    assert (
        observations(events)[2] == "Plan revised from step 2 on: it now has 3 steps. Now at step 2 of 3: take the train"
    )
    assert system_texts(model)[3].endswith(
        board("1. [√] find flights", "2. [●] take the train", "3. [ ] write the summary")
    )


async def test_revise_plan_after_the_current_step_keeps_progress() -> None:
    agent, model = agent_with(
        tool_calls(("create_plan", {"steps": STEPS})),
        tool_calls(("revise_plan", {"new_steps": ["write a draft", "polish it"], "from_index": 3})),
        assistant("done"),
    )
    events = await run(agent)
    assert (
        observations(events)[1] == "Plan revised from step 3 on: it now has 4 steps. Now at step 1 of 4: find flights"
    )
    assert system_texts(model)[2].endswith(
        board("1. [●] find flights", "2. [ ] book a hotel", "3. [ ] write a draft", "4. [ ] polish it")
    )


async def test_revise_plan_past_the_last_step_adds_steps_and_reopens_a_finished_plan() -> None:
    agent, model = agent_with(
        tool_calls(("create_plan", {"steps": ["a", "b"]})),
        tool_calls(("update_plan_progress", {"next_plan_index": 3})),
        tool_calls(("revise_plan", {"new_steps": ["c"], "from_index": 3})),
        assistant("done"),
    )
    events = await run(agent)
    assert observations(events)[2] == "Plan revised from step 3 on: it now has 3 steps. Now at step 3 of 3: c"
    assert system_texts(model)[3].endswith(board("1. [√] a", "2. [√] b", "3. [●] c"))


# -- calls the model gets wrong ------------------------------------------------------------------------------------


async def test_progress_and_revision_without_a_plan_tell_the_model_to_create_one() -> None:
    agent, model = agent_with(
        tool_calls(
            ("update_plan_progress", {"next_plan_index": 2}),
            ("revise_plan", {"new_steps": ["x", "y"], "from_index": 1}),
        ),
        assistant("done"),
    )
    events = await run(agent)
    assert observations(events) == [NO_PLAN, NO_PLAN]
    assert system_texts(model)[1] == f"You help.\n\n{GUIDE_EN}"


async def test_bad_arguments_are_observations_and_leave_the_plan_unchanged() -> None:
    agent, model = agent_with(
        tool_calls(("create_plan", {"steps": STEPS})),
        tool_calls(
            ("revise_plan", {"new_steps": ["", " "], "from_index": 2}),
            ("create_plan", {"steps": "find flights, then book a hotel"}),
            ("update_plan_progress", {"next_plan_index": "next"}),
        ),
        assistant("done"),
    )
    events = await run(agent)
    first, second, third = observations(events)[1:]
    assert first == (
        "new_steps holds no step (only empty texts): give the steps that replace the plan from step 2 on. "
        "The plan is unchanged."
    )
    assert second.startswith("Invalid arguments for tool [create_plan]: ")
    assert third.startswith("Invalid arguments for tool [update_plan_progress]: ")
    assert system_texts(model)[2].endswith(
        board("1. [●] find flights", "2. [ ] book a hotel", "3. [ ] write the summary")
    )


async def test_revise_plan_clamps_from_index_to_the_plan_and_past_its_end_adds_the_steps() -> None:
    agent, model = agent_with(
        tool_calls(("create_plan", {"steps": STEPS})),
        tool_calls(("revise_plan", {"new_steps": ["send it"], "from_index": 9})),
        tool_calls(("revise_plan", {"new_steps": ["start over"], "from_index": 0})),
        assistant("done"),
    )
    events = await run(agent)
    assert observations(events)[1:] == [
        "Plan revised from step 4 on: it now has 4 steps. Step 9 is outside the plan of 3 steps: taken as 4. "
        "Now at step 1 of 4: find flights",
        "Plan revised from step 1 on: it now has 1 steps. Step 0 is outside the plan of 4 steps: taken as 1. "
        "Now at step 1 of 1: start over",
    ]
    texts = system_texts(model)
    assert texts[2].endswith(
        board("1. [●] find flights", "2. [ ] book a hotel", "3. [ ] write the summary", "4. [ ] send it")
    )
    assert texts[3].endswith(board("1. [●] start over"))


# -- the board -----------------------------------------------------------------------------------------------------


async def test_the_board_is_replaced_on_each_model_call_not_stacked() -> None:
    agent, model = agent_with(
        tool_calls(("create_plan", {"steps": STEPS})),
        tool_calls(("update_plan_progress", {"next_plan_index": 2})),
        tool_calls(("update_plan_progress", {"next_plan_index": 3})),
        assistant("done"),
    )
    await run(agent)
    texts = system_texts(model)
    assert [text.count("[Plan Progress Board]") for text in texts] == [0, 1, 1, 1]
    assert texts[3] == (
        f"You help.\n\n{GUIDE_EN}\n\n" + board("1. [√] find flights", "2. [√] book a hotel", "3. [●] write the summary")
    )


async def test_the_board_is_chinese_after_set_language_zh(chinese: None) -> None:
    agent, model = agent_with(
        tool_calls(("create_plan", {"steps": ["查航班", "订酒店"]})),
        tool_calls(("update_plan_progress", {"next_plan_index": 2})),
        tool_calls(("update_plan_progress", {"next_plan_index": 3})),
        assistant("完成"),
    )
    events = await run(agent)
    assert observations(events) == [
        "计划已创建，共 2 个步骤。当前第 1/2 步：查航班",
        "进度已更新。当前第 2/2 步：订酒店",
        "进度已更新。全部 2 个步骤均已完成，请给出最终答案。",
    ]
    texts = system_texts(model)
    assert texts[2].endswith("\n\n[执行计划进度看板]\n1. [√] 查航班\n2. [●] 订酒店\n" + SYNC_ZH)
    assert texts[3].endswith(
        "\n\n[执行计划进度看板]\n1. [√] 查航班\n2. [√] 订酒店\n所有步骤均已完成：请直接给出最终答案。"
    )


async def test_without_a_system_message_the_board_becomes_one() -> None:
    agent, model = agent_with(
        tool_calls(("create_plan", {"steps": ["a", "b"]})),
        tool_calls(("update_plan_progress", {"next_plan_index": 2})),
        assistant("done"),
        instruction="",
        middleware=planning(""),
    )
    await run(agent)
    assert model.requests[0].messages[0].role == "user"
    assert [r.messages[0].content for r in model.requests[1:]] == [
        board("1. [●] a", "2. [ ] b"),
        board("1. [√] a", "2. [●] b"),
    ]
    assert [m.role for m in model.requests[2].messages] == ["system", "user", "assistant", "tool", "assistant", "tool"]


async def test_each_agent_of_a_run_has_a_plan_of_its_own() -> None:
    first, _ = agent_with(tool_calls(("create_plan", {"steps": ["a", "b"]})), assistant("planned"), name="first")
    second, model = agent_with(
        tool_calls(("update_plan_progress", {"next_plan_index": 2})), assistant("ok"), name="second"
    )
    events = await collect_events(Runner(SequentialAgent(name="seq", sub_agents=[first, second])).query("go"))
    assert observations(events)[1] == NO_PLAN
    assert "[Plan Progress Board]" not in "".join(system_texts(model))


# -- trace events and checkpoints ----------------------------------------------------------------------------------


async def test_each_change_of_the_plan_is_a_plan_event_for_the_runner_callbacks() -> None:
    agent, _ = agent_with(
        tool_calls(("create_plan", {"steps": STEPS})),
        tool_calls(("update_plan_progress", {"next_plan_index": 3})),
        tool_calls(("update_plan_progress", {"next_plan_index": 2})),
        tool_calls(("revise_plan", {"new_steps": ["", " "], "from_index": 2})),
        tool_calls(("revise_plan", {"new_steps": ["take the train"], "from_index": 2})),
        tool_calls(("update_plan_progress", {"next_plan_index": 99})),
        tool_calls(("create_plan", {"steps": ["just one"]})),
        assistant("done"),
    )
    seen: list[TraceEvent] = []
    await collect_events(Runner(agent, callbacks=[seen.append]).query("go"))
    plans = [(e.stage, e.plans, e.current, e.agent_name) for e in seen if isinstance(e, PlanEvent)]
    assert plans == [  # neither a revision that changes nothing nor planning skipped is an event
        ("create", tuple(STEPS), 0, "a"),
        ("progress", tuple(STEPS), 2, "a"),
        ("progress", tuple(STEPS), 1, "a"),
        ("revise", ("find flights", "take the train"), 1, "a"),
        ("progress", ("find flights", "take the train"), 2, "a"),
    ]


async def test_the_plan_survives_an_interrupt_and_a_resume_from_the_checkpoint() -> None:
    @tool(threaded=False)
    def approve(ctx: ToolContext) -> str:
        """Ask a human."""
        if not ctx.get_interrupt_state().was_interrupted:
            ctx.interrupt("approve?")
        return f"human said {ctx.get_resume_context().data}"

    store = MemoryCheckpointStore()
    agent, _ = agent_with(
        tool_calls(("create_plan", {"steps": STEPS})),
        tool_calls(("update_plan_progress", {"next_plan_index": 2}), ("approve", {}), id_prefix="turn2_"),
        tools=[approve],
    )
    events = await collect_events(Runner(agent, checkpoint_store=store).query("go", checkpoint_id="c"))
    action = events[-1].action
    assert action is not None
    assert isinstance(action.interrupted, InterruptInfo)
    [target] = action.interrupted.interrupt_contexts

    # Another agent object and model, as in another process: the plan can only come from the checkpoint.
    agent, model = agent_with(
        tool_calls(("update_plan_progress", {"next_plan_index": 3}), id_prefix="turn3_"),
        assistant("done"),
        tools=[approve],
    )
    resumed = await collect_events(Runner(agent, checkpoint_store=store).resume("c", targets={target.id: "yes"}))
    assert observations(resumed) == ["human said yes", "Progress updated. Now at step 3 of 3: write the summary"]
    texts = system_texts(model)
    assert texts[0] == (
        f"You help.\n\n{GUIDE_EN}\n\n" + board("1. [√] find flights", "2. [●] book a hotel", "3. [ ] write the summary")
    )
    assert texts[1].endswith(board("1. [√] find flights", "2. [√] book a hotel", "3. [●] write the summary"))

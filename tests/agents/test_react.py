import asyncio
import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from pydantic import BaseModel

from batonflow.adk import AgentEvent, InterruptInfo, ModelRetryConfig, Runner, collect_events, set_language
from batonflow.adk.loop import AgentMiddleware
from batonflow.agents import FeedbackRequest, ReActAgent, tool_retry
from batonflow.errors import ModelHTTPError, UserError
from batonflow.models import JSONSchemaFormat, ModelSettings
from batonflow.schema import Message, assistant, user
from batonflow.store import MemoryCheckpointStore
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import Tool, tool

NATIVE_RULES = """You follow a rigorous ReAct (Reasoning and Acting) logic.

## Core Rules
1. **Direct Action**: If a tool is needed, trigger **Function Calling** directly.
2. **Result-Oriented**: All conclusions MUST be based on real data returned by tools (Observation).
3. **Prohibit Forgery**: Strictly forbidden to simulate tool execution or forge results in your response.
4. **Natural Response**: Once the task is finished, respond directly in natural language without tags like `Final Answer:`.

"""

# ReActSystemPromptCn, word for word: Solon's own Chinese text.
NATIVE_RULES_CN = """你遵循严谨的 ReAct (Reasoning and Acting) 逻辑。

## 核心规则
1. **工具调用**：如果需要调用工具，请【直接】触发函数调用（Function Calling）。
2. **结果导向**：所有结论必须基于工具返回的真实数据（Observation）。
3. **严禁伪造**：禁止在回复中模拟或伪造工具的执行过程。
4. **自然回复**：任务完成后，请以自然语言直接回复，无需输出 `Final Answer:` 等标签。

"""

TEXT_RULES = """## Output Format (Strictly Follow)
Thought: Briefly explain your reasoning (1-2 sentences).
Action: To use a tool, you MUST output a single JSON object: {"name": "tool_name", "arguments": {...}}. No markdown code blocks, no extra text.
Final Answer: Once the task is finished, start with [REACT_AGENT_FINISH] followed by the answer.

## Final Answer Requirements
1. When the task is complete, you MUST provide the final answer.
2. The final answer MUST start with [REACT_AGENT_FINISH].
3. Directly provide your complete answer after [REACT_AGENT_FINISH] without extra tags.

## Core Rules
1. Only use tools from the 'Available Tools' list.
2. Output ONLY one Action and STOP immediately to wait for Observation.
3. Completion is signaled ONLY by [REACT_AGENT_FINISH].

## Example
User: What is the weather in Paris?
Thought: I need to check the current weather for Paris.
Action: {"name": "get_weather", "arguments": {"location": "Paris"}}
Thought: I have obtained the weather information.
Final Answer: [REACT_AGENT_FINISH]The weather in Paris is 18°C and sunny.
"""

TEXT_RULES_CN = """## 输出格式（必须遵守）
Thought: 简要解释你的思考过程（1-2句话）。
Action: 如果需要调用工具，必须输出 JSON 对象：{"name": "工具名", "arguments": {...}}。不要使用代码块，不要有额外文本。
Final Answer: 任务完成后，以 [REACT_AGENT_FINISH] 开头给出回答。

## 最终答案要求
1. 当你获得结论或信息已足够时，必须给出最终答案。
2. 最终答案**必须**以 [REACT_AGENT_FINISH] 开头。
3. 在 [REACT_AGENT_FINISH] 之后直接提供完整回答，不要换行，不要输出标注标签。

## 核心规则
1. 每次仅输出一个 Action，输出后立即停止等待 Observation。
2. 严禁伪造 Observation，严禁调用‘可用工具’之外的工具。
3. 最终回答未带上 [REACT_AGENT_FINISH] 将被视为无效。

## 示例
用户: 北京天气怎么样？
Thought: 我需要查询北京当前的实时天气信息。
Action: {"name": "get_weather", "arguments": {"location": "北京"}}
Thought: 根据观察结果，北京天气良好。
Final Answer: [REACT_AGENT_FINISH]北京目前天气晴间多云，气温约 25°C。
"""


@tool(threaded=False)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


@tool(threaded=False)
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool(threaded=False)
def boom() -> str:
    """Always fails."""
    raise RuntimeError("kaput")


@tool(threaded=False)
def ping() -> str:
    """Answers pong."""
    return "pong"


@pytest.fixture
def chinese() -> Iterator[None]:
    set_language("zh")
    try:
        yield
    finally:
        set_language("en")


def react(*responses: Message | BaseException, tools: Sequence[Tool] = (lookup,), **options: Any) -> ReActAgent:
    return ReActAgent(model=ScriptedModel(list(responses)), tools=tools, model_retry=None, **options)


def scripted(agent: ReActAgent) -> ScriptedModel:
    assert isinstance(agent.model, ScriptedModel)
    return agent.model


async def run(agent: ReActAgent, text: str = "go", **runner: Any) -> list[AgentEvent]:
    return await collect_events(Runner(agent, **runner).query(text))


def messages_of(events: list[AgentEvent], role: str = "assistant") -> list[str]:
    found = []
    for event in events:
        variant = event.message_output
        message = variant.message if variant is not None else None
        if message is not None and message.role == role and not message.tool_calls:
            found.append(variant.message.content)
    return found


def last_answer(events: list[AgentEvent]) -> str:
    return messages_of(events)[-1]


def no_errors(events: list[AgentEvent]) -> None:
    errors = [e.error for e in events if e.error is not None]
    assert not errors, errors


# -- turns -------------------------------------------------------------------------------------------------------


async def test_a_model_that_never_stops_calling_tools_ends_with_the_max_turns_answer_after_8_calls() -> None:
    agent = react(*[tool_calls(("lookup", {"key": str(i)})) for i in range(8)], output_key="out")
    runner = Runner(agent)
    events = await collect_events(runner.query("go"))
    no_errors(events)
    assert last_answer(events) == "Agent error: Maximum turns reached (8)."
    assert len(scripted(agent).requests) == 8
    scripted(agent).assert_complete()
    assert len(messages_of(events, "tool")) == 8


async def test_max_turns_is_configurable_and_the_answer_names_it() -> None:
    agent = react(*[tool_calls(("lookup", {"key": "k"})) for _ in range(3)], max_turns=3)
    events = await run(agent)
    assert last_answer(events) == "Agent error: Maximum turns reached (3)."
    assert len(scripted(agent).requests) == 3


async def test_auto_rethink_extends_the_turns_and_asks_the_model_to_reflect() -> None:
    # max_turns 3: threshold max(3-1, int(3*0.8)) = 2, so the second call comes with the reflection and the limit
    # grows by max(10, 3 // 2) = 10: the run is never cut at 3.
    agent = react(
        *[tool_calls(("lookup", {"key": str(i)})) for i in range(5)], assistant("done"), max_turns=3, auto_rethink=True
    )
    events = await run(agent)
    no_errors(events)
    assert last_answer(events) == "done"
    requests = scripted(agent).requests
    assert len(requests) == 6
    reflections = [m.content for m in requests[-1].messages if m.role == "user" and "Self-Reflection" in m.content]
    assert reflections == [
        "【System Instruction: Self-Reflection】\n"
        "The task has reached turn 2. To make sure it is done accurately and efficiently, start a self-review now:\n\n"
        "1. **Check the core goal**: look again at the core question the user first asked and the task at hand: has "
        "your current direction drifted from the main line?\n"
        "2. **Assess effectiveness**: check the history of Observations. If the recent attempts brought no useful new "
        "clue, the current strategy has failed: you must change your approach or come at it from another angle.\n"
        "3. **Converge**: if you judge that objective limits really make the task impossible, sort out the clues you "
        "have, and in the Final Answer review them with the user and ask for help.\n\n"
        "Decide the next action by the new strategy, or give the Final Answer to end the task"
    ]
    assert requests[1].messages[-1].content.startswith("【System Instruction: Self-Reflection】")


async def test_auto_rethink_reflects_again_when_the_extended_limit_comes_near(chinese: None) -> None:
    # Limit 2 → threshold 1: reflect at turn 1 (limit 12, threshold 11), then at turn 11 (limit 22).
    agent = react(
        *[tool_calls(("lookup", {"key": str(i)})) for i in range(11)], assistant("好"), max_turns=2, auto_rethink=True
    )
    events = await run(agent)
    assert last_answer(events) == "好"
    final = scripted(agent).requests[-1].messages
    turns = [m.content.split("\n")[1].split("。")[0] for m in final if m.role == "user" and "自我反思" in m.content]
    assert turns == ["当前任务已执行至第 1 回合", "当前任务已执行至第 11 回合"]
    eleventh = scripted(agent).requests[10].messages
    assert eleventh[-1].content == (
        "【系统指令：自我反思 (Self-Reflection)】\n"
        "当前任务已执行至第 11 回合。为了确保任务准确高效完成，请立即启动自审程序：\n\n"
        "1. **核心目标检查**：重新审视用户最初提出的核心问题和当前要解决的任务，评估你当前的方向是否偏离了主线？\n"
        "2. **有效性评估**：检查历史 Observation。如果最近的尝试没有带来有效新线索，说明当前策略已失效，请必须更换思路或换个角度切入。\n"
        "3. **强制收敛**：若评估判定由于客观限制确实无法达成，请梳理已知线索，并在 Final Answer 中向用户复盘并申请协助。\n\n"
        "根据新策略决定下一步行动，或输出 Final Answer 结束任务"
    )


# -- answers -----------------------------------------------------------------------------------------------------


EMPTY_REFLECTION = (
    "【System Instruction: Self-Reflection】\n"
    "In turn {turn} of your reasoning you returned an empty response (attempt {attempt}). Reflect on it now:\n\n"
    "1. **Go back to the goal**: look again at the core goal of the task you were given, and check whether you have "
    "drifted from the main line.\n"
    "2. **Review the trail**: go over the latest Observation and your chain of thought so far, and find what led to "
    "the empty response.\n"
    "3. **Correct the strategy**: if the current path is blocked, switch approach decisively or split the task into "
    "smaller subtasks.\n"
)
FORMAT_CORRECTION = (
    "【System Instruction: Format Correction】\n"
    "In turn {turn} you wrote your thinking but no valid Action or Final Answer (attempt {attempt}).\n\n"
    "Check your latest Observation and your chain of thought so far, and make sure the next action or the final "
    "conclusion is stated clearly."
)


async def test_an_empty_answer_gets_solons_self_reflection_naming_turn_and_attempt_then_the_answer_counts() -> None:
    agent = react(tool_calls(("lookup", {"key": "k"})), assistant(""), assistant("   "), assistant("the answer"))
    events = await run(agent)
    no_errors(events)
    assert messages_of(events) == ["the answer"]
    requests = scripted(agent).requests
    assert requests[2].messages[-1].content == EMPTY_REFLECTION.format(turn=2, attempt=1)
    assert requests[3].messages[-1].content == EMPTY_REFLECTION.format(turn=3, attempt=2)
    assert all(m.content or m.tool_calls for m in requests[3].messages if m.role == "assistant")  # not kept


@pytest.mark.parametrize("thinking", ["<think>Which key?</think>", "<think>Which key? I am still thinking"])
async def test_a_think_only_answer_is_kept_and_gets_solons_format_correction(thinking: str) -> None:
    # An unclosed <think> is thinking too: no answer yet.
    agent = react(assistant(thinking), assistant("the answer"))
    events = await run(agent)
    assert messages_of(events) == ["the answer"]
    second = scripted(agent).requests[1].messages
    assert second[-2] == assistant(thinking)  # kept: the model reads its own thinking
    assert second[-1] == user(FORMAT_CORRECTION.format(turn=1, attempt=1))


async def test_the_corrections_are_solons_own_words_in_chinese(chinese: None) -> None:
    agent = react(assistant(""), assistant("<think>嗯</think>"), assistant("好"))
    await run(agent)
    requests = scripted(agent).requests
    assert requests[1].messages[-1].content == (
        "【系统指令：自我反思 (Self-Reflection)】\n"
        "您在第 1 轮推理中返回了空响应（第 1 次尝试），请立即启动自我反思：\n\n"
        "1. **回溯任务目标**：重新审视您最初被分配的任务核心目标，检查是否偏离了主线。\n"
        "2. **审视历史轨迹**：回顾最近的 Observation 和之前的思考链，定位导致空响应的原因。\n"
        "3. **策略修正**：若当前路径受阻，请果断切换思路或拆分为更小的子任务推进。\n"
    )
    assert requests[2].messages[-1].content == (
        "【系统指令：输出格式修正 (Format Correction)】\n"
        "您在第 2 轮中输出了思考内容，但未包含有效的行动（Action）或最终答案（Final Answer）（第 2 次尝试）。\n\n"
        "请检查您最近的 Observation 和之前的思考链，确保下一步操作或最终结论已明确给出。"
    )


async def test_a_model_that_returns_nothing_gets_two_corrections_then_the_apology() -> None:
    agent = react(assistant(""), assistant("   "), assistant(""), output_key="out")
    runner = Runner(agent)
    events = await collect_events(runner.query("go"))
    no_errors(events)
    assert messages_of(events) == ["Sorry, the model returned no valid content several times. Please try again later."]
    assert len(scripted(agent).requests) == 3
    scripted(agent).assert_complete()


async def test_the_apology_is_solons_text_in_chinese(chinese: None) -> None:
    events = await run(react(assistant(""), assistant(""), assistant("")))
    assert messages_of(events) == ["抱歉，模型多次未返回有效内容。请稍后重试。"]


async def test_corrections_count_consecutive_empty_answers_only() -> None:
    agent = react(
        assistant(""),
        assistant(""),
        tool_calls(("lookup", {"key": "k"})),
        assistant(""),
        assistant(""),
        assistant("ok"),
    )
    events = await run(agent)
    assert last_answer(events) == "ok"
    scripted(agent).assert_complete()


async def test_a_native_answer_is_final_and_think_tags_and_the_marker_are_cleared() -> None:
    agent = react(assistant("<think>hmm</think>[REACT_AGENT_FINISH] Paris."), output_key="out")
    runner = Runner(agent)
    events = await collect_events(runner.query("go"))
    assert last_answer(events) == "Paris."


class City(BaseModel):
    name: str
    population: int


async def test_an_answer_off_the_output_schema_is_sent_back_with_the_validation_error() -> None:
    agent = react(
        assistant('{"name": "Paris"}'),
        assistant('{"name": "Paris", "population": 2100000}'),
        output_schema=City,
        output_key="city",
    )
    seen: dict[str, Any] = {}

    async def capture(event: Any) -> None:
        if event.kind == "run_end":
            seen["done"] = True

    events = await run(agent, callbacks=[capture])
    no_errors(events)
    feedback = scripted(agent).requests[1].messages[-1]
    assert feedback.role == "user"
    assert feedback.content.startswith(
        "Your answer does not match the required output format: expected JSON matching City"
    )
    assert "population" in feedback.content
    assert feedback.content.endswith("\nAnswer again, with only the JSON.")
    system = scripted(agent).requests[0].messages[0].content
    assert '"population"' in system  # the schema instruction is in the system prompt


def formats(agent: ReActAgent) -> list[JSONSchemaFormat | None]:
    return [r.settings.response_format if r.settings else None for r in scripted(agent).requests]


async def test_native_style_asks_for_the_schema_through_structured_output_on_every_call() -> None:
    # The provider sends it only on calls that offer no tools (answer_format); the agent asks on every call.
    agent = react(
        tool_calls(("lookup", {"q": "oslo"})),
        assistant('{"name": "Oslo", "population": 700000}'),
        output_schema=City,
        model_settings=ModelSettings(max_tokens=64),
    )

    no_errors(await run(agent))

    assert formats(agent) == [JSONSchemaFormat(City.model_json_schema(), name="City")] * 2
    assert all(r.settings is not None and r.settings.max_tokens == 64 for r in scripted(agent).requests)


async def test_text_style_with_tools_keeps_to_the_prompt_a_grammar_would_forbid_its_actions() -> None:
    agent = react(assistant('[REACT_AGENT_FINISH]{"name": "Oslo", "population": 1}'), style="text", output_schema=City)

    no_errors(await run(agent))

    assert formats(agent) == [None]


async def test_text_style_without_tools_asks_for_structured_output() -> None:
    agent = react(assistant('{"name": "Oslo", "population": 1}'), style="text", tools=(), output_schema=City)

    no_errors(await run(agent))

    assert formats(agent) == [JSONSchemaFormat(City.model_json_schema(), name="City")]


async def test_second_run_reuses_the_structured_output_settings() -> None:
    agent = react(
        assistant('{"name": "Oslo", "population": 1}'),
        assistant('{"name": "Rome", "population": 2}'),
        output_schema=City,
    )

    no_errors(await run(agent))
    no_errors(await run(agent))

    first, second = scripted(agent).requests
    assert first.settings is second.settings


async def test_output_key_gets_the_parsed_value_with_a_schema() -> None:
    agent = react(assistant('{"name": "Oslo", "population": 700000}'), output_schema=City, output_key="city")
    runner = Runner(agent)
    stream = runner.query("go")
    events = await collect_events(stream)
    no_errors(events)
    assert json.loads(last_answer(events)) == {"name": "Oslo", "population": 700000}


# -- tools -------------------------------------------------------------------------------------------------------


async def test_tool_failures_are_observations_with_solons_texts_and_the_run_goes_on() -> None:
    agent = react(
        tool_calls(("nope", {}), ("add", {"a": "x", "b": 1}), ("boom", {})),
        assistant("recovered"),
        tools=(add, boom),
    )
    events = await run(agent)
    no_errors(events)
    not_found, invalid, failed = messages_of(events, "tool")
    assert not_found == "Tool [nope] not found."
    schema = json.dumps(add.info.parameters, ensure_ascii=False)
    assert invalid.startswith(f"Invalid arguments for [add]. Expected Schema: {schema}. Error: ")
    assert "Invalid arguments for tool" not in invalid
    assert failed == "Execution error in tool [boom]: kaput"
    assert last_answer(events) == "recovered"


async def test_tools_run_one_after_another() -> None:
    log: list[str] = []

    @tool(threaded=False)
    async def slow(name: str) -> str:
        """Takes a while."""
        log.append(f"start {name}")
        await asyncio.sleep(0.01)
        log.append(f"end {name}")
        return name

    agent = react(tool_calls(("slow", {"name": "a"}), ("slow", {"name": "b"})), assistant("ok"), tools=(slow,))
    await run(agent)
    assert log == ["start a", "end a", "start b", "end b"]


async def test_a_round_of_only_return_directly_calls_ends_the_run_with_their_results_joined() -> None:
    agent = react(
        tool_calls(("lookup", {"key": "a"}), ("ping", {})),
        tools=(lookup, ping),
        return_directly=["lookup", "ping"],
        output_key="out",
    )
    events = await run(agent)
    no_errors(events)
    assert last_answer(events) == "value of a\npong"
    assert len(scripted(agent).requests) == 1


async def test_a_round_mixing_return_directly_and_other_calls_goes_on() -> None:
    agent = react(
        tool_calls(("lookup", {"key": "a"}), ("ping", {})),
        assistant("after"),
        tools=(lookup, ping),
        return_directly=["ping"],
    )
    events = await run(agent)
    assert last_answer(events) == "after"
    assert len(scripted(agent).requests) == 2


@pytest.mark.parametrize(
    ("call", "middlewares"),
    [
        (("boom", {}), ()),
        (("add", {"a": "x", "b": 1}), ()),
        (("boom", {}), (tool_retry(max_attempts=1),)),
        (("add", {"a": "x", "b": 1}), (tool_retry(max_attempts=1),)),
    ],
    ids=["raises", "invalid-arguments", "raises-under-tool-retry", "invalid-arguments-under-tool-retry"],
)
async def test_a_return_directly_call_that_fails_is_an_observation_and_the_model_is_asked_again(
    call: tuple[str, dict[str, Any]], middlewares: tuple[AgentMiddleware, ...]
) -> None:
    # Solon marks a call return-directly only once it succeeded with something to deliver.
    agent = react(
        tool_calls(call),
        assistant("recovered"),
        tools=(add, boom),
        return_directly=["add", "boom"],
        middlewares=middlewares,
    )
    events = await run(agent)
    no_errors(events)
    (observation,) = messages_of(events, "tool")
    assert observation.startswith(("Execution error in tool [", "Invalid arguments for "))
    assert last_answer(events) == "recovered"
    assert scripted(agent).requests[1].messages[-1].content == observation


async def test_a_return_directly_call_of_a_missing_tool_does_not_end_the_run() -> None:
    agent = react(tool_calls(("gone", {})), assistant("recovered"), return_directly=["gone"])
    events = await run(agent)
    assert messages_of(events, "tool") == ["Tool [gone] not found."]
    assert last_answer(events) == "recovered"


async def test_exit_still_ends_the_run_at_once() -> None:
    agent = react(tool_calls(("exit", {"final_result": "bye"}), ("lookup", {"key": "a"})), exit=True)
    events = await run(agent)
    assert events[-1].action is not None and events[-1].action.exit
    assert len(scripted(agent).requests) == 1


# -- the system prompt -------------------------------------------------------------------------------------------


async def test_the_native_prompt_has_the_role_the_rules_and_the_task_and_sends_tools_natively() -> None:
    agent = react(assistant("ok"), instruction="Help with {topic}.")
    await collect_events(Runner(agent).query("go", session_values={"topic": "maps"}))
    request = scripted(agent).requests[0]
    assert request.messages[0].content == (
        "## Your Role\nProfessional task expert with autonomous action capabilities. "
        + NATIVE_RULES
        + "## Core Task Instructions\nHelp with maps.\n\n"
    )
    assert [t.name for t in request.tools] == ["lookup"]


async def test_a_custom_role_and_no_tools_note() -> None:
    agent = react(assistant("ok"), tools=(), role="Travel agent")
    await run(agent)
    prompt = scripted(agent).requests[0].messages[0].content
    assert prompt == (
        "## Your Role\nTravel agent. "
        + NATIVE_RULES
        + "\n> Note: No tools available in the current environment. Please respond based on existing information.\n"
    )


async def test_the_chinese_prompt(chinese: None) -> None:
    agent = react(assistant("好"), instruction="帮助用户。")
    await run(agent)
    prompt = scripted(agent).requests[0].messages[0].content
    assert (
        prompt
        == "## 你的角色\n具备自主行动能力的专业任务解决专家。" + NATIVE_RULES_CN + "## 核心任务指令\n帮助用户。\n\n"
    )


async def test_the_chinese_no_tools_note_and_text_style_prompt(chinese: None) -> None:
    bare = react(assistant("好"), tools=())
    await run(bare)
    assert (
        scripted(bare)
        .requests[0]
        .messages[0]
        .content.endswith("\n> 注意：当前环境无可用工具，请根据已有信息直接回复。\n")
    )
    text_style = react(assistant("[REACT_AGENT_FINISH] 好"), style="text")
    await run(text_style)
    schema = json.dumps(lookup.info.parameters, ensure_ascii=False)
    assert scripted(text_style).requests[0].messages[0].content == (
        "## 你的角色\n具备自主行动能力的专业任务解决专家。"
        "你必须使用 ReAct 模式解决问题，每一轮推理必须包含显式的标签：Thought（思考） -> Action（行动） -> Observation（观察）。\n\n"
        + TEXT_RULES_CN
        + f"\n## 可用工具\n你可以通过 Action 字段调用以下工具：\n- lookup: Look a key up. 参数定义: {schema}\n"
    )


async def test_the_history_window_keeps_the_last_8_messages_before_the_prompt() -> None:
    agent = react(assistant("ok"))
    history = [user(f"u{i}") if i % 2 == 0 else assistant(f"a{i}") for i in range(20)]
    await collect_events(Runner(agent).run([*history, user("now")]))
    sent = scripted(agent).requests[0].messages
    assert [m.content for m in sent[1:]] == [f"{'u' if i % 2 == 0 else 'a'}{i}" for i in range(12, 20)] + ["now"]


async def test_a_history_shorter_than_the_window_is_sent_whole() -> None:
    agent = react(assistant("ok"))
    history = [user(f"u{i}") if i % 2 == 0 else assistant(f"a{i}") for i in range(6)]
    await collect_events(Runner(agent).run([*history, user("now")]))
    assert [m.content for m in scripted(agent).requests[0].messages[1:]] == [m.content for m in history] + ["now"]


# -- the text style ----------------------------------------------------------------------------------------------


async def test_the_text_style_lists_tools_in_the_prompt_and_sends_none() -> None:
    agent = react(assistant("Final Answer: [REACT_AGENT_FINISH] hi"), style="text")
    await run(agent)
    request = scripted(agent).requests[0]
    assert request.tools == []
    schema = json.dumps(lookup.info.parameters)
    assert request.messages[0].content == (
        "## Your Role\nProfessional task expert with autonomous action capabilities. You MUST use the ReAct pattern to "
        "solve the problem, ensuring each turn contains explicit labels: Thought -> Action -> Observation.\n\n"
        + TEXT_RULES
        + f"\n## Available Tools\nYou can invoke the following tools via the Action field:\n"
        f"- lookup: Look a key up. Input Schema: {schema}\n"
    )


async def test_the_text_style_without_tools_has_solons_note() -> None:
    agent = react(assistant("[REACT_AGENT_FINISH] hi"), style="text", tools=())
    await run(agent)
    prompt = scripted(agent).requests[0].messages[0].content
    assert prompt.endswith("\nNote: No tools available. Provide the Final Answer directly.\n")


async def test_the_text_style_runs_the_action_cuts_a_forged_observation_and_answers_after_the_marker() -> None:
    agent = react(
        assistant(
            'Thought: I need the value.\nAction: {"name": "lookup", "arguments": {"key": "x"}}\n'
            "Observation: value of nothing (made up)\nFinal Answer: wrong"
        ),
        assistant("Thought: I know it.\nFinal Answer: [HELPER_FINISH] It is value of x."),
        style="text",
        name="helper",
        output_key="out",
    )
    runner = Runner(agent)
    events = await collect_events(runner.query("what is x?"))
    no_errors(events)
    assert messages_of(events, "tool") == ["value of x"]
    assert last_answer(events) == "It is value of x."
    second = scripted(agent).requests[1].messages
    assert second[-2] == assistant('Thought: I need the value.\nAction: {"name": "lookup", "arguments": {"key": "x"}}')
    assert second[-1] == user("Observation: value of x")


async def test_the_text_style_runs_several_actions_with_per_turn_ids_and_a_bare_tool_name() -> None:
    agent = react(
        assistant(
            'Action: {"name": "lookup", "arguments": {"key": "a"}}\n{"name": "lookup", "arguments": {"key": "b"}}'
        ),
        assistant("Action: ping"),
        assistant("[REACT_AGENT_FINISH] done"),
        style="text",
        tools=(lookup, ping),
    )
    events = await run(agent)
    assert messages_of(events, "tool") == ["value of a", "value of b", "pong"]
    ids = [
        e.message_output.message.tool_call_id for e in events if e.message_output and e.message_output.role == "tool"
    ]
    assert ids == ["lookup-1-0", "lookup-1-1", "ping-2-0"]


async def test_unreadable_actions_are_observations_the_model_can_fix() -> None:
    agent = react(
        assistant('Action: {"name": "lookup", "arguments": '),
        assistant("Action: 42"),
        assistant('Action: {"name": "lookup", "arguments": {"key": "k"}}'),
        assistant("[REACT_AGENT_FINISH] fixed"),
        style="text",
    )
    events = await run(agent)
    no_errors(events)
    requests = scripted(agent).requests
    assert requests[1].messages[-1].content.startswith("Observation: Error parsing Action JSON: Expecting value")
    assert requests[2].messages[-1].content == (
        'Observation: No valid Action format detected. Use JSON: {"name": "...", "arguments": {}}'
    )
    assert last_answer(events) == "fixed"


async def test_a_bare_action_naming_a_tool_the_agent_lacks_is_no_valid_action() -> None:
    agent = react(assistant("Action: teleport"), assistant("[REACT_AGENT_FINISH] ok"), style="text")
    events = await run(agent)
    assert messages_of(events, "tool") == []
    assert scripted(agent).requests[1].messages[-1].content == (
        'Observation: No valid Action format detected. Use JSON: {"name": "...", "arguments": {}}'
    )


async def test_a_text_answer_without_the_marker_is_taken_whole() -> None:
    events = await run(react(assistant("Thought: easy.\nFinal Answer: 4"), style="text"))
    assert last_answer(events) == "4"


async def test_the_text_style_streams_and_still_answers_after_the_marker() -> None:
    agent = react(
        assistant('Action: {"name": "lookup", "arguments": {"key": "s"}}'),
        assistant("[REACT_AGENT_FINISH] streamed"),
        style="text",
    )
    runner = Runner(agent, enable_streaming=True)
    events = await collect_events(runner.query("go"))
    no_errors(events)
    answers = []
    for event in events:
        variant = event.message_output
        if variant is not None and variant.role == "assistant":
            answers.append((await variant.get_message()).content)
    assert answers[-1] == "streamed"
    assert messages_of(events, "tool") == ["value of s"]


# -- feedback ----------------------------------------------------------------------------------------------------


async def test_feedback_mode_says_why_and_suspends_until_the_caller_answers() -> None:
    agent = react(
        tool_calls(("__ask_for_feedback", {"reason": "Which city do you mean?"})),
        tool_calls(("lookup", {"key": "Paris"})),
        assistant("Paris it is."),
        feedback=True,
    )
    runner = Runner(agent, checkpoint_store=MemoryCheckpointStore())
    events = await collect_events(runner.query("weather please", checkpoint_id="c"))
    assert messages_of(events) == ["Which city do you mean?"]
    interrupted = events[-1].action.interrupted if events[-1].action else None
    assert isinstance(interrupted, InterruptInfo)
    [cause] = interrupted.interrupt_contexts
    assert cause.info == FeedbackRequest("Which city do you mean?")
    resumed = await collect_events(runner.resume("c", {cause.id: "Paris, France"}))
    no_errors(resumed)
    assert messages_of(resumed, "tool") == ["Paris, France", "value of Paris"]
    assert last_answer(resumed) == "Paris it is."


async def test_the_feedback_tool_has_solons_description_in_chinese(chinese: None) -> None:
    agent = react(assistant("好"), feedback=True)
    await run(agent)
    [info] = [t for t in scripted(agent).requests[0].tools if t.name == "__ask_for_feedback"]
    assert info.description == "当任务缺失必要参数、条件或外部反馈而无法继续时，必须调用此工具反馈，并向用户说明原因。"
    assert info.parameters["required"] == ["reason"]


async def test_a_feedback_request_leaves_the_conversation_pending_with_the_reason(tmp_path: Any) -> None:
    from batonflow.agents import Runner, Session
    from batonflow.store import SqliteSessionStore

    store = SqliteSessionStore(tmp_path / "s.db")
    agent = react(
        tool_calls(("__ask_for_feedback", {"reason": "Which order?"})), assistant("Order 7 refunded."), feedback=True
    )
    runner = Runner(agent, session_store=store)
    await collect_events(runner.run([user("refund my order")], session_id="s1"))
    session = await Session.load(store, "s1")
    assert session.is_pending and session.pending_reason == "Which order?"
    assert [m.content for m in session.messages] == ["refund my order", "Which order?"]
    # A new prompt starts afresh from the conversation, as Solon's does: the question is in its history.
    await collect_events(runner.run([user("order 7")], session_id="s1"))
    sent = scripted(agent).requests[-1].messages
    assert [m.content for m in sent[1:]] == ["refund my order", "Which order?", "order 7"]
    session = await Session.load(store, "s1")
    assert not session.is_pending
    await store.close()


# -- configuration -----------------------------------------------------------------------------------------------


async def test_solons_defaults() -> None:
    agent = ReActAgent(model=ScriptedModel([]))
    assert (agent.name, agent.max_turns, agent.finish_marker, agent.history_window) == (
        "react_agent",
        8,
        "[REACT_AGENT_FINISH]",
        8,
    )
    assert agent.style == "native" and not agent.auto_rethink and agent.execute_sequentially
    assert agent.model_retry == ModelRetryConfig(max_retries=2, base_delay=1.0)


async def test_the_default_retry_makes_3_model_calls_in_all_as_solons_retry_config_3() -> None:
    agent = ReActAgent(model=ScriptedModel([]))
    step = agent.setup().step
    assert step.retry is not None and step.retry.attempts == 3


@pytest.mark.parametrize("retries", [0, 1, 3])
async def test_model_retry_max_retries_keeps_einos_meaning_retries_after_the_first_call(retries: int) -> None:
    overloaded = [ModelHTTPError("overloaded", status_code=503) for _ in range(retries + 1)]
    config = ModelRetryConfig(max_retries=retries, base_delay=0.0, max_delay=0.0)
    agent = ReActAgent(model=ScriptedModel([*overloaded, assistant("ok")]), model_retry=config, model_failure="error")
    events = await run(agent)
    assert isinstance(events[-1].error, ModelHTTPError)
    assert len(scripted(agent).requests) == retries + 1


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"style": "xml"}, "ReActAgent style: expected 'native' or 'text', got 'xml'"),
        ({"max_turns": 0}, "max_turns: expected a positive number of model calls, got 0"),
        ({"history_window": -1}, "history_window: expected 0 or more messages"),
    ],
)
def test_bad_configuration_is_refused_with_what_was_expected(options: dict[str, Any], expected: str) -> None:
    with pytest.raises(UserError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        ReActAgent(model=ScriptedModel([]), **options)


async def test_a_run_without_input_is_an_error_event() -> None:
    events = await collect_events(Runner(react()).run([]))
    assert isinstance(events[-1].error, UserError)
    assert "expected at least one input message, got none" in str(events[-1].error)


# -- planning ----------------------------------------------------------------------------------------------------


async def test_planning_mode_adds_the_plan_tools_and_the_board_and_emits_plan_events() -> None:
    agent = react(
        tool_calls(("create_plan", {"steps": ["look up a", "answer"]})),
        tool_calls(("lookup", {"key": "a"})),
        tool_calls(("update_plan_progress", {"next_plan_index": 2})),
        assistant("value of a"),
        planning=True,
    )
    kinds: list[tuple[str, tuple[str, ...], int]] = []

    def on_event(event: Any) -> None:
        if event.kind == "plan":
            kinds.append((event.stage, event.plans, event.current))

    events = await run(agent, callbacks=[on_event])
    no_errors(events)
    requests = scripted(agent).requests
    assert {"create_plan", "update_plan_progress", "revise_plan"} <= {t.name for t in requests[0].tools}
    assert "## Core Task Instructions\n" in requests[0].messages[0].content  # the planning guide is part of the task
    assert "[Plan Progress Board]" not in requests[0].messages[0].content
    board = requests[3].messages[0].content
    assert "1. [√] look up a" in board and "2. [●] answer" in board
    assert kinds == [("create", ("look up a", "answer"), 0), ("progress", ("look up a", "answer"), 1)]


async def test_a_deeply_nested_action_is_an_observation_saying_the_limit() -> None:
    agent = react(
        assistant('Action: {"name": "lookup", "arguments": ' + "[" * 100_000),
        assistant("[REACT_AGENT_FINISH] fixed"),
        style="text",
    )
    events = await run(agent)
    no_errors(events)
    assert scripted(agent).requests[1].messages[-1].content == (
        "Observation: Error parsing Action JSON: expected JSON nested at most 100 levels deep, got 100,001 levels"
    )
    assert last_answer(events) == "fixed"

"""The built-in texts of Solon's ReAct agent, in English and Chinese, read at call time (``set_language``)."""

from __future__ import annotations

import re

from ..adk import get_language

__all__ = [
    "ACTION",
    "EXECUTION_ERROR",
    "INVALID_ARGUMENTS",
    "MAX_TURNS_ANSWER",
    "NOT_FOUND",
    "NO_ACTION",
    "OBSERVATION",
    "RETRY_INVALID_ARGUMENTS",
    "text",
    "without_thinking",
]

_TEXTS: dict[str, dict[str, str]] = {
    # The system prompt: ReActSystemPromptEn and ReActSystemPromptCn, word for word. Solon's Chinese prompt is its
    # own text, not a translation of the English one.
    "role": {
        "en": "Professional task expert with autonomous action capabilities",
        "zh": "具备自主行动能力的专业任务解决专家",
    },
    "role_line": {"en": "## Your Role\n%s. ", "zh": "## 你的角色\n%s。"},
    "native_logic": {
        "en": "You follow a rigorous ReAct (Reasoning and Acting) logic.\n\n",
        "zh": "你遵循严谨的 ReAct (Reasoning and Acting) 逻辑。\n\n",
    },
    "text_logic": {
        "en": "You MUST use the ReAct pattern to solve the problem, ensuring each turn contains explicit labels: "
        "Thought -> Action -> Observation.\n\n",
        "zh": "你必须使用 ReAct 模式解决问题，每一轮推理必须包含显式的标签：Thought（思考） -> Action（行动） -> Observation（观察）。\n\n",
    },
    "native": {
        "en": """## Core Rules
1. **Direct Action**: If a tool is needed, trigger **Function Calling** directly.
2. **Result-Oriented**: All conclusions MUST be based on real data returned by tools (Observation).
3. **Prohibit Forgery**: Strictly forbidden to simulate tool execution or forge results in your response.
4. **Natural Response**: Once the task is finished, respond directly in natural language without tags like `Final Answer:`.

""",
        "zh": """## 核心规则
1. **工具调用**：如果需要调用工具，请【直接】触发函数调用（Function Calling）。
2. **结果导向**：所有结论必须基于工具返回的真实数据（Observation）。
3. **严禁伪造**：禁止在回复中模拟或伪造工具的执行过程。
4. **自然回复**：任务完成后，请以自然语言直接回复，无需输出 `Final Answer:` 等标签。

""",
    },
    "text": {
        "en": """## Output Format (Strictly Follow)
Thought: Briefly explain your reasoning (1-2 sentences).
Action: To use a tool, you MUST output a single JSON object: {"name": "tool_name", "arguments": {...}}. No markdown code blocks, no extra text.
Final Answer: Once the task is finished, start with %(marker)s followed by the answer.

## Final Answer Requirements
1. When the task is complete, you MUST provide the final answer.
2. The final answer MUST start with %(marker)s.
3. Directly provide your complete answer after %(marker)s without extra tags.

## Core Rules
1. Only use tools from the 'Available Tools' list.
2. Output ONLY one Action and STOP immediately to wait for Observation.
3. Completion is signaled ONLY by %(marker)s.

""",
        "zh": """## 输出格式（必须遵守）
Thought: 简要解释你的思考过程（1-2句话）。
Action: 如果需要调用工具，必须输出 JSON 对象：{"name": "工具名", "arguments": {...}}。不要使用代码块，不要有额外文本。
Final Answer: 任务完成后，以 %(marker)s 开头给出回答。

## 最终答案要求
1. 当你获得结论或信息已足够时，必须给出最终答案。
2. 最终答案**必须**以 %(marker)s 开头。
3. 在 %(marker)s 之后直接提供完整回答，不要换行，不要输出标注标签。

## 核心规则
1. 每次仅输出一个 Action，输出后立即停止等待 Observation。
2. 严禁伪造 Observation，严禁调用‘可用工具’之外的工具。
3. 最终回答未带上 %(marker)s 将被视为无效。

""",
    },
    "example": {
        "en": """## Example
User: What is the weather in Paris?
Thought: I need to check the current weather for Paris.
Action: {"name": "get_weather", "arguments": {"location": "Paris"}}
Thought: I have obtained the weather information.
Final Answer: %(marker)sThe weather in Paris is 18°C and sunny.
""",
        "zh": """## 示例
用户: 北京天气怎么样？
Thought: 我需要查询北京当前的实时天气信息。
Action: {"name": "get_weather", "arguments": {"location": "北京"}}
Thought: 根据观察结果，北京天气良好。
Final Answer: %(marker)s北京目前天气晴间多云，气温约 25°C。
""",
    },
    "task": {"en": "## Core Task Instructions\n", "zh": "## 核心任务指令\n"},
    "tools": {
        "en": "\n## Available Tools\nYou can invoke the following tools via the Action field:\n",
        "zh": "\n## 可用工具\n你可以通过 Action 字段调用以下工具：\n",
    },
    "tool_schema": {"en": " Input Schema: ", "zh": " 参数定义: "},
    "native_no_tools": {
        "en": "\n> Note: No tools available in the current environment. Please respond based on existing information.\n",
        "zh": "\n> 注意：当前环境无可用工具，请根据已有信息直接回复。\n",
    },
    "text_no_tools": {
        "en": "\nNote: No tools available. Provide the Final Answer directly.\n",
        "zh": "\n注意：当前没有可用工具。请直接给出 Final Answer。\n",
    },
    # ReasonTask's prompts: auto-rethink near the turn limit, and the two corrections of an empty answer (turn,
    # then attempt).
    "reflection": {
        "en": "【System Instruction: Self-Reflection】\n"
        "The task has reached turn %d. To make sure it is done accurately and efficiently, start a self-review "
        "now:\n\n"
        "1. **Check the core goal**: look again at the core question the user first asked and the task at hand: "
        "has your current direction drifted from the main line?\n"
        "2. **Assess effectiveness**: check the history of Observations. If the recent attempts brought no useful "
        "new clue, the current strategy has failed: you must change your approach or come at it from another "
        "angle.\n"
        "3. **Converge**: if you judge that objective limits really make the task impossible, sort out the clues "
        "you have, and in the Final Answer review them with the user and ask for help.\n\n"
        "Decide the next action by the new strategy, or give the Final Answer to end the task",
        "zh": "【系统指令：自我反思 (Self-Reflection)】\n"
        "当前任务已执行至第 %d 回合。为了确保任务准确高效完成，请立即启动自审程序：\n\n"
        "1. **核心目标检查**：重新审视用户最初提出的核心问题和当前要解决的任务，评估你当前的方向是否偏离了主线？\n"
        "2. **有效性评估**：检查历史 Observation。如果最近的尝试没有带来有效新线索，说明当前策略已失效，"
        "请必须更换思路或换个角度切入。\n"
        "3. **强制收敛**：若评估判定由于客观限制确实无法达成，请梳理已知线索，并在 Final Answer 中向用户复盘并申请协助。\n\n"
        "根据新策略决定下一步行动，或输出 Final Answer 结束任务",
    },
    "format_correction": {
        "en": "【System Instruction: Format Correction】\n"
        "In turn %d you wrote your thinking but no valid Action or Final Answer (attempt %d).\n\n"
        "Check your latest Observation and your chain of thought so far, and make sure the next action or the final "
        "conclusion is stated clearly.",
        "zh": "【系统指令：输出格式修正 (Format Correction)】\n"
        "您在第 %d 轮中输出了思考内容，但未包含有效的行动（Action）或最终答案（Final Answer）（第 %d 次尝试）。\n\n"
        "请检查您最近的 Observation 和之前的思考链，确保下一步操作或最终结论已明确给出。",
    },
    "empty_reflection": {
        "en": "【System Instruction: Self-Reflection】\n"
        "In turn %d of your reasoning you returned an empty response (attempt %d). Reflect on it now:\n\n"
        "1. **Go back to the goal**: look again at the core goal of the task you were given, and check whether you "
        "have drifted from the main line.\n"
        "2. **Review the trail**: go over the latest Observation and your chain of thought so far, and find what "
        "led to the empty response.\n"
        "3. **Correct the strategy**: if the current path is blocked, switch approach decisively or split the task "
        "into smaller subtasks.\n",
        "zh": "【系统指令：自我反思 (Self-Reflection)】\n"
        "您在第 %d 轮推理中返回了空响应（第 %d 次尝试），请立即启动自我反思：\n\n"
        "1. **回溯任务目标**：重新审视您最初被分配的任务核心目标，检查是否偏离了主线。\n"
        "2. **审视历史轨迹**：回顾最近的 Observation 和之前的思考链，定位导致空响应的原因。\n"
        "3. **策略修正**：若当前路径受阻，请果断切换思路或拆分为更小的子任务推进。\n",
    },
    "apology": {
        "en": "Sorry, the model returned no valid content several times. Please try again later.",
        "zh": "抱歉，模型多次未返回有效内容。请稍后重试。",
    },
    # Solon's answers for a model that still fails after its retries (ReasonTask.handleLastException).
    "model_timeout": {
        "en": "Sorry, the model service timed out. Please try again later.",
        "zh": "抱歉，模型服务响应超时。请稍后重试。",
    },
    "model_connection": {
        "en": "Sorry, the connection to the model service failed. Please try again later.",
        "zh": "抱歉，模型服务连接失败。请稍后重试。",
    },
    "model_http": {
        "en": "Sorry, the model service answered with an error (CODE: %d). Please try again later.",
        "zh": "抱歉，模型服务响应出错（CODE: %d）。请稍后重试。",
    },
    "model_other": {
        "en": "Sorry, the model service is unavailable for now (see the logs for details). Please try again later.",
        "zh": "抱歉，暂时无法使用模型服务（具体参考日志）。请稍后重试。",
    },
    "schema_retry": {
        "en": "Your answer does not match the required output format: %s\nAnswer again, with only the JSON.",
        "zh": "你的回答不符合要求的输出格式：%s\n请重新回答，只输出 JSON。",
    },
    "feedback": {
        "en": "When the task lacks a required parameter, condition or outside feedback and cannot go on, you must "
        "call this tool to ask for it, and tell the user why.",
        "zh": "当任务缺失必要参数、条件或外部反馈而无法继续时，必须调用此工具反馈，并向用户说明原因。",
    },
    "feedback_reason": {"en": "Tell the user why.", "zh": "向用户说明原因"},
}


def text(key: str) -> str:
    return _TEXTS[key][get_language()]


MAX_TURNS_ANSWER = "Agent error: Maximum turns reached (%d)."
# The observations of a failed call (each %s is the tool's name); tool_retry's invalid-arguments text is its own.
EXECUTION_ERROR = "Execution error in tool [%s]: "
INVALID_ARGUMENTS = "Invalid arguments for [%s]. Expected Schema: "  # then the schema, ". Error: " and the error
RETRY_INVALID_ARGUMENTS = "Invalid arguments for tool [%s]: "
NOT_FOUND = "Tool [%s] not found."
NO_ACTION = 'Observation: No valid Action format detected. Use JSON: {"name": "...", "arguments": {}}'
ACTION = "Action:"
OBSERVATION = re.compile(r"^\s*Observation:", re.MULTILINE)


def without_thinking(content: str) -> str:
    """The answer in ``content`` (Solon's ``getAnswer``): what follows the first ``</think>``, or nothing while a
    ``<think>`` is still open."""
    end = content.find("</think>")
    if end >= 0:
        return content[end + len("</think>") :]
    return "" if "<think>" in content else content

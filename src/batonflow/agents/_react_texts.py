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
    "THINK",
    "text",
]

_TEXTS: dict[str, dict[str, str]] = {
    "role": {
        "en": "Professional task expert with autonomous action capabilities",
        "zh": "具备自主行动能力的专业任务专家",
    },
    "native": {
        "en": """You follow a rigorous ReAct (Reasoning and Acting) logic.

## Core Rules
1. **Direct Action**: If a tool is needed, trigger **Function Calling** directly.
2. **Result-Oriented**: All conclusions MUST be based on real data returned by tools (Observation).
3. **Prohibit Forgery**: Strictly forbidden to simulate tool execution or forge results in your response.
4. **Natural Response**: Once the task is finished, respond directly in natural language without tags like `Final Answer:`.""",
        "zh": """你遵循严谨的 ReAct（推理与行动）逻辑。

## 核心规则
1. **直接行动**：需要工具时，直接发起 **Function Calling**。
2. **结果导向**：所有结论必须基于工具返回的真实数据（Observation）。
3. **禁止伪造**：严禁在回复中模拟工具执行或伪造结果。
4. **自然回复**：任务完成后，直接用自然语言回答，不要使用 `Final Answer:` 之类的标签。""",
    },
    "text": {
        "en": """You MUST use the ReAct pattern to solve the task, step by step: Thought -> Action -> Observation.

## Output Format (Strictly Follow)
Thought: what you know so far and what to do next.
Action: the tool to call, as a single JSON object: {"name": "tool_name", "arguments": {...}}
(Stop after the Action. The system runs the tool and replies with `Observation: ...`; never write it yourself.)

When you have the answer:
Thought: I now know the final answer.
Final Answer: start with %(marker)s, then the answer for the user.

## Example
User: What is the weather in Paris?
Thought: I need the current weather in Paris.
Action: {"name": "get_weather", "arguments": {"city": "Paris"}}
Observation: 18°C, light rain
Thought: I now know the final answer.
Final Answer: %(marker)s It is 18°C in Paris, with light rain.""",
        "zh": """你必须使用 ReAct 模式逐步解决任务：Thought -> Action -> Observation。

## 输出格式（严格遵守）
Thought: 目前已知的信息以及下一步要做什么。
Action: 要调用的工具，写成单个 JSON 对象：{"name": "tool_name", "arguments": {...}}
（写完 Action 就停下。系统会执行工具并回复 `Observation: ...`，不要自己编写。）

得到答案时：
Thought: 我已经知道最终答案了。
Final Answer: 以 %(marker)s 开头，然后给出给用户的答案。

## 示例
User: 巴黎的天气怎么样？
Thought: 我需要查询巴黎当前的天气。
Action: {"name": "get_weather", "arguments": {"city": "Paris"}}
Observation: 18°C，小雨
Thought: 我已经知道最终答案了。
Final Answer: %(marker)s 巴黎现在 18°C，有小雨。""",
    },
    "role_line": {"en": "## Your Role\n%s. ", "zh": "## 你的角色\n%s。"},
    "task": {"en": "## Core Task Instructions\n", "zh": "## 核心任务指令\n"},
    "tools": {"en": "## Available Tools\n", "zh": "## 可用工具\n"},
    "tool_line": {"en": "- %s: %s Input Schema: %s", "zh": "- %s: %s 输入 Schema: %s"},
    "no_tools": {
        "en": "> Note: No tools available. Answer from your own knowledge and reasoning.",
        "zh": "> 注意：当前没有可用工具。请基于自身知识和推理作答。",
    },
    "reflection": {
        "en": "【System Instruction: Self-Reflection】\nThe task has reached turn %d. Stop and review what the "
        "observations so far have achieved: if the current approach is not making progress, change it; if you "
        "already have enough to answer, give the final answer now.",
        "zh": "【系统指令：自我反思 (Self-Reflection)】\n当前任务已执行至第 %d 回合。请暂停并审视目前的 Observation "
        "取得了哪些进展：如果当前思路没有进展，请更换思路；如果已有足够的信息，请立即给出最终答案。",
    },
    "correction": {
        "en": "【Format Correction】Your last reply was empty. Either call a tool or answer the task.",
        "zh": "【格式纠正】你上一次的回复为空。请调用工具，或直接回答任务。",
    },
    "text_correction": {
        "en": "【Format Correction】Your last reply was empty. Reply with `Thought:` followed by an `Action:` JSON "
        "object, or with `Final Answer: %s ...`.",
        "zh": "【格式纠正】你上一次的回复为空。请以 `Thought:` 开头并给出 `Action:` JSON 对象，"
        "或以 `Final Answer: %s ...` 作答。",
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
    "feedback_reason": {
        "en": "What is missing and why it is needed, addressed to the user.",
        "zh": "向用户说明缺少什么以及为什么需要。",
    },
}


def text(key: str) -> str:
    return _TEXTS[key][get_language()]


MAX_TURNS_ANSWER = "Agent error: Maximum turns reached (%d)."
# The observations of a failed call (each %s is the tool's name); tool_retry's invalid-arguments text is its own.
EXECUTION_ERROR = "Execution error in tool [%s]: "
INVALID_ARGUMENTS = "Invalid arguments for [%s]. Expected Schema: "
RETRY_INVALID_ARGUMENTS = "Invalid arguments for tool [%s]: "
NOT_FOUND = "Tool [%s] not found."
NO_ACTION = 'Observation: No valid Action format detected. Use JSON: {"name": "...", "arguments": {}}'
ACTION = "Action:"
OBSERVATION = re.compile(r"^\s*Observation:", re.MULTILINE)
THINK = re.compile(r"<think>.*?</think>", re.DOTALL)

"""The built-in texts of Solon's team protocols, in English and Chinese, word for word, keyed by protocol and use.

Each text is read at call time in the language asked (``set_language``), through ``phrase(key, language, **values)``;
``%(name)s`` marks what a text is filled with. Solon's Chinese texts are its own, not translations of the English
ones, so both are kept as Solon writes them.
"""

from __future__ import annotations

from ..adk import Language

__all__ = ["phrase"]

_TEXTS: dict[str, dict[str, str]] = {
    # -- a member's profile (AgentProfile.toFormatString) ---------------------------------------------------------
    "member.text_only": {"en": "Input: Text only", "zh": "输入限制: 仅限文本"},
    "member.input_modes": {"en": "Input Modes: ", "zh": "输入模态: "},
    "member.capabilities": {"en": "Capabilities: ", "zh": "核心能力: "},
    # -- the supervisor -------------------------------------------------------------------------------------------
    "supervisor.feedback_description": {
        "en": "When the task lacks a required parameter, condition or outside feedback and cannot go on, you must "
        "call this tool to ask for it, and tell the user why.",
        "zh": "当任务缺失必要参数、条件或外部反馈而无法继续时，必须调用此工具反馈，并向用户说明原因。",
    },
    "supervisor.feedback_reason": {"en": "Tell the user why.", "zh": "向用户说明原因"},
    "supervisor.role": {
        "en": "Team Supervisor, responsible for coordinating agents to complete the task",
        "zh": "团队协作主管 (Supervisor)，负责协调成员完成任务",
    },
    "supervisor.system": {
        "en": "## Your Role\n%(role)s\n\n## Team Members\n```json\n%(members)s\n```\n"
        "\n## Current Task\n%(task)s\n%(protocol)s\n"
        "\n## Output Specification\n1. **Termination**: If the task is finished, output: %(marker)s followed by the "
        "final result. If responding directly to the user, **DO NOT** include any analysis process.\n"
        "2. **Routing**: If the task is ongoing, output **ONLY** the name of the next Agent to execute. Do not "
        "provide extra text.\n"
        "\n## History Analysis & Guidelines\n- Reference collaboration history to avoid redundant turns.\n"
        "- Task Finish Marker: %(marker)s.\n- Note: Do not terminate prematurely; ensure necessary expert input is "
        "obtained.\n",
        "zh": "## 你的角色\n%(role)s\n\n## 团队成员\n```json\n%(members)s\n```\n"
        "\n## 当前任务\n%(task)s\n%(protocol)s\n"
        "\n## 输出规范\n1. **任务终止**：如果任务已完成，必须输出: %(marker)s 并在其后提供最终答案。若直接回复用户，**禁止**包括分析过程。\n"
        "2. **继续执行**：若任务未完成，请**仅输出**下一个要执行的 Agent 名字，不要有额外文本。\n"
        "\n## 历史分析与准则\n- 参考协作历史，避免重复执行相同逻辑。\n"
        "- 任务完成信号：%(marker)s。\n- 注意：严禁过早结束，确保专家意见已被充分获取。\n",
    },
    "supervisor.instruction": {
        "en": "\n## Core Task Instructions\n%(instruction)s\n\n",
        "zh": "\n## 核心任务指令\n%(instruction)s\n\n",
    },
    "supervisor.progress": {
        "en": "## Collaboration Progress (Last %(window)s rounds)\n%(history)s\n\n---\n",
        "zh": "## 协作进度 (最近 %(window)s 轮历史)\n%(history)s\n\n---\n",
    },
    "supervisor.turn": {
        "en": "Current Iteration: %(turn)s\nCommand: Assign next agent or output %(marker)s to finish.",
        "zh": "当前迭代轮次: %(turn)s\n指令：请指派下一位执行者。已完成则输出 %(marker)s",
    },
    "supervisor.pending": {"en": "\n> **Pending Experts**: [%(names)s].", "zh": "\n> **待命专家**：[%(names)s]."},
    # -- every protocol's defaults (TeamProtocolBase) ------------------------------------------------------------
    "protocol.agent_instruction": {
        "en": "## SYSTEM CONTEXT\n### Your Identity\n%(profile)s\n\n"
        "### Collaboration Records (Last %(window)s entries)\n%(history)s\n\n"
        "---\nPlease complete your task based on the progress.",
        "zh": "## 任务上下文 (SYSTEM CONTEXT)\n### 你的身份\n%(profile)s\n\n"
        "### 协作进度 (最近 %(window)s 条)\n%(history)s\n\n---\n请根据上述进度完成你的任务。",
    },
    "protocol.supervisor_instruction": {
        "en": "\n## Collaboration Protocol: %(name)s\n- Candidates: [%(candidates)s]\n- Requirement: Output %(marker)s "
        "when finished.",
        "zh": "\n## 协作协议：%(name)s\n- 备选成员: [%(candidates)s]\n- 决策要求：任务完成请输出 %(marker)s",
    },
    # -- sequential -----------------------------------------------------------------------------------------------
    "sequential.progress": {"en": "\n### Pipeline Progress\n", "zh": "\n### 流水线进度 (Pipeline Progress)\n"},
}


def phrase(key: str, language: Language, **values: object) -> str:
    """The text ``key`` in ``language`` (``en`` or ``zh``), filled with ``values``."""
    template = _TEXTS[key][language]
    return template % values if values else template

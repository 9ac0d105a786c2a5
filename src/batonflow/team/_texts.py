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
    # -- a2a ------------------------------------------------------------------------------------------------------
    "a2a.transfer_requested": {"en": "Transfer to [%(target)s] requested.", "zh": "已发起向 [%(target)s] 的接力请求。"},
    "a2a.transfer_description": {
        "en": "When you are unable to complete the current task, hand it over to a more appropriate expert.",
        "zh": "当你无法完成当前任务时，将其移交给更合适的专家。",
    },
    "a2a.transfer_target": {"en": "Expert name. Options: %(others)s", "zh": "目标专家名。必选范围: %(others)s"},
    "a2a.transfer_state": {"en": "Persistent JSON state.", "zh": "业务状态 JSON。"},
    "a2a.transfer_memo": {
        "en": "Handover memo: put key findings/output the next expert should continue with.",
        "zh": "交接备忘：把需要下游专家继续处理的关键产出/结论写在这里。",
    },
    "a2a.agent_guidelines": {
        "en": "\n## Collaboration Guidelines\n- You must choose the target precisely based on [Capabilities] and "
        "[Modes] tags. Never transfer to an agent that lacks the required modality.\n",
        "zh": "\n## 专家协作指引\n- 必须根据各专家的 [核心能力] 和 [模态] 标签精准选择目标，严禁向不支持相关模态的专家移交任务。\n",
    },
    "a2a.session_context": {
        "en": "\n## Active Session Context\n"
        "> This snapshot records the current state of the task. Continue execution based on this data.\n\n",
        "zh": "\n## 当前接力任务断面 (Active Session Context)\n"
        "> 本部分记录了任务流转至此时的关键快照，请基于此状态继续执行，严禁编造断面之外的信息。\n\n",
    },
    "a2a.trail": {"en": "- **Collaboration Trail**: ", "zh": "- **协作轨迹**: "},
    "a2a.prior": {"en": "- **Prior Expert**: ", "zh": "- **上一步专家**: "},
    "a2a.pending_output": {"en": "- **Pending Output**: ", "zh": "- **待处理产出**: "},
    "a2a.global_state": {"en": "- **Global State**: ", "zh": "- **累积业务状态**: "},
    "a2a.max_transfers": {"en": "Max transfer limit reached.", "zh": "协作达到最大流转次数，任务中止。"},
    "a2a.transfer_failed": {
        "en": "[System] Transfer failed: Expert [%(target)s] is invalid or lacks required capabilities. "
        "Please re-select or resolve yourself.",
        "zh": "【系统通知】移交失败：专家 [%(target)s] 不存在或能力不匹配（如无法处理图片）。请重新选择或尝试自行解决。",
    },
    "a2a.dashboard": {"en": "\n### A2A Dashboard\n", "zh": "\n### A2A 接力看板\n"},
    "a2a.dashboard_state": {"en": "- Global State: %(state)s\n", "zh": "- 全局状态: %(state)s\n"},
    "a2a.dashboard_handovers": {"en": "- Handovers: %(count)s\n", "zh": "- 接力次数: %(count)s\n"},
    "a2a.supervisor_rules": {
        "en": "\n### A2A Collaboration Rules:\n1. **Direct Delivery**: Output `%(marker)s` directly. **DO NOT** "
        "summarize.\n2. **Handover Audit**: Force termination if more than 5 handovers occur.",
        "zh": "\n### A2A 协作准则：\n1. **直接交付**：任务完成时请直接输出 `%(marker)s`，**禁止**对专家的内容进行二次总结或润色。\n"
        "2. **流转审计**：若专家间接力流转超过 5 次仍无实质进展，请立即介入并强制收尾。",
    },
    # -- blackboard -----------------------------------------------------------------------------------------------
    "blackboard.updated": {
        "en": "System: Blackboard updated. Subsequent experts will proceed based on this state.",
        "zh": "系统：黑板已更新。后续专家将基于此状态继续。",
    },
    "blackboard.sync_description": {
        "en": "Sync findings, completed todos and future todos. Provide at least result or state.",
        "zh": "同步你的结论、已完成待办和后续待办。至少提供 result 或 state 之一。",
    },
    "blackboard.sync_result": {
        "en": "Key findings; mention completed TODO text if any",
        "zh": "本阶段的确切结论；若完成了某 TODO，请在此明确写出该 TODO 原文",
    },
    "blackboard.sync_todo": {
        "en": "Suggested tasks for next turns; omit if none",
        "zh": "建议后续协作回合的任务（TODOs），没有则省略",
    },
    "blackboard.sync_completed_todo": {
        "en": "Completed TODO text (semicolon/comma separated)",
        "zh": "已完成的待办原文（可多条，分号/逗号分隔）",
    },
    "blackboard.sync_state": {
        "en": "Detailed JSON state (todo/completed_todo/status)",
        "zh": "JSON 格式的详细业务数据，可含 todo / completed_todo / status",
    },
    "blackboard.agent_guidelines": {
        "en": "\n## Blackboard Guidelines\n- **Proactive Sync**: You must call `%(tool)s` when you reach a conclusion or "
        "identify new tasks (TODOs).\n"
        '- **Data-Driven**: Check the "Current blackboard content" before acting to avoid redundant turns.\n'
        "- **Closure**: When a board TODO is done, pass its exact text via `completed_todo` (or include it in "
        "result) so the system can remove it from the list.\n",
        "zh": "\n## 黑板协作规范\n- **主动同步**：在得出阶段性结论或发现新待办（TODO）时，必须调用 `%(tool)s` 工具。\n"
        "- **数据导向**：决策前请先查阅“当前协作黑板内容”，避免产生冗余的协作回合（Redundant Turns）。\n"
        "- **闭环意识**：完成黑板上某个 TODO 时，请通过 `completed_todo` 参数传入该 TODO 原文，或在 result 中完整写出该 TODO，系统会自动从待办列表移除。\n",
    },
    "blackboard.snapshot": {"en": "[Blackboard Snapshot]", "zh": "【协作黑板快照】"},
    "blackboard.dashboard": {"en": "\n### Global Blackboard\n", "zh": "\n### 全局黑板 (Blackboard Dashboard)\n"},
    "blackboard.supervisor_rules": {
        "en": "\n### Blackboard Management:\n1. **Todo Driven**: Prioritize agents based on `todo` list.\n"
        "2. **Summary**: Finalize findings when todos are cleared.",
        "zh": "\n### 黑板管理原则：\n1. **依据待办**：优先处理黑板中 `todo` 列表的任务。\n"
        "2. **结论导向**：若所有待办已完成且信息补全，整理黑板结论并结束。",
    },
    # -- market-based ---------------------------------------------------------------------------------------------
    "market.dashboard": {"en": "\n### Expert Marketplace\n", "zh": "\n### 专家人才市场 (Expert Marketplace)\n"},
    "market.tips": {
        "en": "> Strategy Tips:\n> - Prefer lower Price agents for simple/light tasks.\n"
        "> - Prefer higher Score/ROI agents for deep/critical tasks.\n"
        "> - Assign lower Price agents for routine tasks under budget constraints.",
        "zh": "> 策略指引：\n> - 简单/轻量任务优先 Price 较低的专家。\n> - 攻坚/深度任务优先 Score/ROI 更高的专家。\n"
        "> - 预算受限时，指派 Price 较低的专家完成基础工作。",
    },
    "market.top": {"en": "\n> **Top ROI Agent**:", "zh": "\n> **今日推荐 (ROI King)**："},
    "market.cheapest": {"en": "\n> **Budget Pick**:", "zh": "\n> **低价优选 (Budget Pick)**："},
    "market.supervisor_rules": {
        "en": "\n### Guidelines: Price for simple tasks; Score/ROI for critical challenges.",
        "zh": "\n### 调度准则：简单任务看价格(Price)，攻坚任务看信誉(Score)与性价比(ROI)。",
    },
    # -- swarm ----------------------------------------------------------------------------------------------------
    "swarm.tasks_added": {"en": "System: Tasks added to pool.", "zh": "系统：子任务已加入任务池。"},
    "swarm.emerge_description": {
        "en": "Call this to decompose tasks or suggest other experts.",
        "zh": "当你发现需要拆解子任务或建议其他专家介入时调用。",
    },
    "swarm.emerge_tasks": {"en": "Task descriptions, separated by semicolons", "zh": "待办任务描述，多个用分号分隔"},
    "swarm.emerge_agents": {
        "en": "Suggested agent names, separated by semicolons",
        "zh": "建议执行的专家名，多个用分号分隔",
    },
    "swarm.agent_guidelines": {
        "en": "\n## Swarm Collaboration\n- **Emergence**: Use `%(tool)s` to add sub-tasks to the pool when delegation "
        "or decomposition is needed.\n- **Focus**: Only call the tool for new task dimensions; do not re-sync "
        "existing tasks.\n",
        "zh": "\n## 蜂群协作规范\n- **任务涌现**：若当前任务需他人配合或拆解，请调用 `%(tool)s` 将子任务放入池中。\n"
        "- **专注性**：仅在发现新任务维度时调用工具，不要重复同步已有任务。\n",
    },
    "swarm.snapshot": {"en": "[Swarm Task Pool Snapshot]", "zh": "【蜂群任务池快照】"},
    "swarm.supervisor_rules": {
        "en": "\n### SWARM Decision Rules:\n1. **Termination**: Output `%(marker)s` when done.\n"
        "2. **Routing**: Output only the next Agent name.\n"
        "3. **Task Pool First**: When task_pool is non-empty, prioritize suggested agents.",
        "zh": "\n### SWARM 决策准则：\n1. **任务终止**：若任务完成，输出 `%(marker)s`。\n"
        "2. **决策优先**：若未完成，仅输出下一位 Agent 名字。不要解释。\n"
        "3. **任务池优先**：看板 task_pool 非空时，优先指派其中建议的专家。",
    },
    "swarm.dashboard": {
        "en": "\n### Swarm Intelligence Dashboard\n",
        "zh": "\n### 蜂群状态看板 (Swarm Intelligence)\n",
    },
    "swarm.instruction": {
        "en": "> **Instruction**:\n> 1. **Load Balancing**: Prioritize agents with lower pheromone values.\n"
        "> 2. **Skill Match**: Ensure emergent tasks in task_pool align with Agent's Capabilities.\n"
        "> 3. **Cool-down**: Avoid re-assigning the agent that just finished.\n",
        "zh": "> **调度指引**：\n> 1. **负载均衡**：优先指派 pheromones 值较低的成员。\n"
        "> 2. **能力匹配**：确保 task_pool 中的任务描述与 Agent 的 Capabilities 一致。\n"
        "> 3. **冷却避障**：避免连续指派刚执行完的 Agent。\n",
    },
    "swarm.recommended": {
        "en": "> 4. **Recommended next**: `%(name)s`\n",
        "zh": "> 4. **推荐下一执行者**：`%(name)s`\n",
    },
    # -- hierarchical ---------------------------------------------------------------------------------------------
    "hierarchical.reporting": {"en": "\n## Collaboration & Reporting\n", "zh": "\n## 协作与汇报规范\n"},
    "hierarchical.report_json": {
        "en": '\n1. Reporting Requirement:\n- End response with a JSON block for key data (e.g., {"result": "...", '
        '"status": "done"}).',
        "zh": '\n1. 汇报要求：\n- 请在回复结尾使用 JSON 块反馈核心数据（例：{"result": "...", "status": "done"}）。',
    },
    "hierarchical.finish_marker": {
        "en": "\n2. **Finish Marker**: Upon completion, must include: ",
        "zh": "\n2. **完成标记**：任务完成时，必须包含标记: ",
    },
    "hierarchical.pre_context": {"en": "\n\n### Pre-Context\n", "zh": "\n\n### 前置背景 (Pre-Context)\n"},
    "hierarchical.from": {"en": "- From ", "zh": "- 来自 "},
    "hierarchical.keep_data": {
        "en": "> Please process based on the data above without altering core information.\n",
        "zh": "> 请务必基于上述背景数据进行处理，不要修改原始关键信息。\n",
    },
    "hierarchical.directive": {
        "en": "\n\n### Supervisor Directive\n",
        "zh": "\n\n### 来自主管的最新指令 (Supervisor Directive)\n",
    },
    "hierarchical.correction": {"en": "\n### Error Correction Required:\n", "zh": "\n### 错误修正请求：\n"},
    "hierarchical.failed_validation": {
        "en": "- Your previous response failed validation: ",
        "zh": "- 你之前的执行结果未通过验证：",
    },
    "hierarchical.fix": {
        "en": "- Please fix this based on the directive and ensure the correct finish marker.\n",
        "zh": "- 请根据主管的最新指令进行修复，并务必包含正确的完成标记。\n",
    },
    "hierarchical.multimodal": {
        "en": "\n- [IMPORTANT]: Multimodal content detected. Process based on the attachments.",
        "zh": "\n- [重要]：输入包含多媒体附件，请务必结合视觉或文件内容进行处理。",
    },
    "hierarchical.errors_left": {
        "en": "[System] Task cannot end because errors exist. Assign agents to fix them.",
        "zh": "【系统干预】由于看板中仍有未解决的错误，任务不能结束。请指派相关专家修复。",
    },
    "hierarchical.dashboard": {"en": "\n## Hierarchical Dashboard\n", "zh": "\n## 运行看板 (Hierarchical Dashboard)\n"},
    "hierarchical.no_reports": {
        "en": "> No reports yet. Issue instructions.\n",
        "zh": "> 暂无汇报，请下达初始指令。\n",
    },
    "hierarchical.sop": {
        "en": "\n### Directive Standards (SOP):\n"
        "> 1. **Explicit Data Transfer**: Always restate core parameters from `_results`.\n"
        "\n### Management & Decision Hints:\n"
        "> **Decision Hint**: Check progress. Keep scheduling if errors exist or key steps are missing.\n"
        "> **Workflow Integrity**: Ensure both design and implementation (e.g., `implementer`) roles have "
        "participated. Do not skip execution steps.\n"
        "> **Final Delivery**: If satisfied, output `%(marker)s` and **consolidate the final code/result** in "
        "this response for the USER.\n"
        "> **Crucial**: Once the marker is output, the workflow ends. You cannot assign agents anymore. Ensure "
        "the final delivery is complete.\n"
        "> **Load Balance**: Refer to `agent_usage`. If an agent fails repeatedly, switch approach or adjust "
        "instructions.\n",
        "zh": "\n### 派发指令准则 (Standard Operating Procedure):\n"
        "> 1. **显式数据传递**：指派专家时，必须复述看板 `_results` 中的核心参数。\n"
        "\n### 管理与决策指引 (Management & Decision Hints):\n"
        "> **决策指引**：对比看板进度。若 `_meta.errors` 存在或关键环节未产出，请继续调度，严禁提前结束。\n"
        "> **流程完整性**：确保设计与执行角色（如 `implementer`）均已参与。严禁跳过关键执行环节直接结束。\n"
        "> **终结交付**：若认为任务已达成，请输出 `%(marker)s` 并在此回复中**汇总最终代码或方案**给用户。\n"
        "> **注意**：输出标记后系统将立即停止，你将无法再次指派专家，请务必在这一步提供完整的交付内容。\n"
        "> **负载建议**：参考 `agent_usage` 避免过度指派。若专家多次失败，请尝试更换专家或调整指令。\n",
    },
    "hierarchical.overworked": {
        "en": "\n> **![Risk Alert]**: Agents %(names)s have been called repeatedly. Stop the loop, request "
        "detailed feedback, or try a different approach.",
        "zh": "\n> **![风险预警]**：专家 %(names)s 已被重复指派多次且未达成目标。请停止无效循环，要求专家提供更详尽的错误说明，或尝试切换到其他专家。",
    },
    "hierarchical.supervisor_rules": {
        "en": "\n### Management Guidelines:\n"
        "1. **Modality Match**: Assign experts based on capabilities.\n"
        "2. **Error Recovery**: Handle `_meta.errors` by re-assignment.\n"
        "3. **Load Balance**: Use `agent_usage` for efficient distribution.",
        "zh": "\n### 管理决策准则：\n"
        "1. **模态适配**：优先指派支持对应模式（图片/文件）的专家。\n"
        "2. **错误恢复**：若 `_meta.errors` 存在，必须指派专家处理，直至错误清除。\n"
        "3. **负载均衡**：参考 `agent_usage` 避免过度使用单一专家。",
    },
    # -- contract net ---------------------------------------------------------------------------------------------
    "contract_net.bid_rejected": {"en": "Bid rejected: plan is required.", "zh": "投标失败：plan 不能为空。"},
    "contract_net.bid_received": {"en": "Bid received.", "zh": "标书已收录。"},
    "contract_net.submit_description": {
        "en": "Submit your execution plan and confidence score.",
        "zh": "提交你的执行计划和信心分。",
    },
    "contract_net.submit_score": {"en": "Confidence score(1-100)", "zh": "信心分(1-100)"},
    "contract_net.submit_plan": {"en": "Plan summary", "zh": "计划摘要"},
    "contract_net.award_order": {
        "en": "\n [Award Execution Order] \n> You won the bid. Execute strictly according to your plan:\n%(plan)s",
        "zh": "\n【中标执行指令】\n> 你已在竞标中胜出。请严格按你提交的计划执行：\n%(plan)s",
    },
    "contract_net.rounds_exhausted": {
        "en": "Bidding rounds exhausted. Award an existing bid or inform the user.",
        "zh": "招标次数已耗尽。请根据现有标书定标，或直接回复用户无法完成。",
    },
    "contract_net.bidding_started": {"en": "Bidding phase initiated.", "zh": "已进入招标流程。"},
    "contract_net.call_description": {
        "en": "Collect proposals from all experts when the best executor is not obvious.",
        "zh": "向全体专家征集方案。当你无法确定由谁执行任务时使用此工具。",
    },
    "contract_net.call_requirement": {"en": "Task requirements", "zh": "任务具体需求"},
    "contract_net.invalid_assignment": {
        "en": "[System] Invalid assignment. You must call %(tool)s first and only assign experts listed in bids_board.",
        "zh": "【系统指引】指派无效。必须先调用 %(tool)s 获取标书，且只能指派已出现在 bids_board 中的专家。",
    },
    "contract_net.cannot_award": {
        "en": "Cannot award: target has no bid and bidding rounds are exhausted.",
        "zh": "无法定标：目标专家无有效标书且招标次数已耗尽。",
    },
    "contract_net.no_bids": {
        "en": "\n> [Warning] No bids in previous round. Remaining attempts: %(remaining)s",
        "zh": "\n> [警告] 前一轮招标无人响应。剩余尝试次数: %(remaining)s",
    },
    "contract_net.final_warning": {
        "en": "\n> [Final Warning] No more bidding rounds. Stop bidding and inform the user that the task "
        "is out of scope.",
        "zh": "\n> [最终警告] 招标次数已耗尽。请停止招标，直接回复用户：该任务超出了当前团队的能力范围。",
    },
    "contract_net.award_now": {
        "en": "\n> [Note] No more bidding rounds. Award based on the current board.\n",
        "zh": "\n> [提示] 招标次数已用尽，请基于当前看板完成定标。\n",
    },
    "contract_net.dashboard": {"en": "\n### Contract Net Dashboard\n", "zh": "\n### 合同网竞标看板\n"},
    "contract_net.tips": {
        "en": "> Tips: Award the best candidate by `score`/`plan`. Remaining bidding rounds: %(remaining)s\n",
        "zh": "> 提示：请根据各专家的 `score` 和 `plan` 择优指派。剩余招标次数: %(remaining)s\n",
    },
    "contract_net.waiting": {
        "en": "> **Mandatory**: Status is 'Waiting'. You **MUST** collect proposals before any assignment.\n"
        "> **Action**: Please call `%(tool)s` to initiate bidding. Remaining: %(remaining)s\n",
        "zh": "> **强制规范**：当前处于“待招标”状态。在进行任何指派前，**必须**先获取专家标书。\n"
        "> **操作建议**：请调用 `%(tool)s` 工具发起招标。剩余次数: %(remaining)s\n",
    },
    "contract_net.profiles": {"en": "#### Agent Profiles:\n", "zh": "#### 成员资质表:\n"},
    "contract_net.supervisor_rules": {
        "en": "\n### CNP Collaboration Rules:\n1. **Tool Usage**: Call `%(tool)s` if unsure about assignments.\n"
        "2. **Decision**: Award the task by naming the best agent based on their bid score.\n"
        "3. **Constraint**: Match task requirements with agent `Modes` (e.g., `image` for vision tasks).\n"
        "4. **No Bypass**: Never assign an expert not listed in bids_board.",
        "zh": "\n### CNP 协作规范：\n1. **工具招标**：若无法确定最佳人选，优先调用 `%(tool)s`。\n"
        "2. **择优录取**：对比看板中的标书分数，直接回复专家名称进行定标。\n"
        "3. **模态检查**：请确保所选专家的 `Modes` 支持当前任务模态（如识图需具备 `image`）。\n"
        "4. **禁止旁路**：未出现在 bids_board 中的专家禁止指派。",
    },
    # -- sequential -----------------------------------------------------------------------------------------------
    "sequential.progress": {"en": "\n### Pipeline Progress\n", "zh": "\n### 流水线进度 (Pipeline Progress)\n"},
}


def phrase(key: str, language: Language, **values: object) -> str:
    """The text ``key`` in ``language`` (``en`` or ``zh``), filled with ``values``."""
    template = _TEXTS[key][language]
    return template % values if values else template

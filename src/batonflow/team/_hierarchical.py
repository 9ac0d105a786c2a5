"""``hierarchical`` (the default): a supervisor model picks every turn's member and decides when the team is done.

Members are asked to end with a JSON report; the supervisor reads a dashboard of the reports (``_reports``, each
cut at 250 characters), the JSON results (``_results``) and ``_meta`` (members whose output said ``FAILED``,
how often each was called, their input modes). A finish while a member's error stands is refused: the member
is sent back to fix it.
"""

from __future__ import annotations

import re
from typing import Any

from ..adk import Language, get_language
from ..graph import GraphSpec
from ..schema import Message, user
from ._current import current_team_run
from ._member import Member, compact_json
from ._protocol import END, START, SUPERVISOR, SYSTEM, TeamProtocolBase, sniff_json
from ._supervisor import SupervisorTask
from ._trace import TeamTrace, trace_key

__all__ = ["HierarchicalProtocol"]

_STATE = "hierarchy_state_obj"
_USAGE = "agent_usage_map"
_ACTIVE = "active_instruction"
_OVERWORK = 3
_MEMO_MAX = 250
_FAILED = re.compile(r"\bFAILED\b", re.IGNORECASE)
_FENCE_OPEN = re.compile(r"```\w*\s*\n?$")
_FENCE_CLOSE = re.compile(r"^\s*```")


_SOP_EN = (
    "\n### Directive Standards (SOP):\n"
    "> 1. **Explicit Data Transfer**: Always restate core parameters from `_results`.\n"
    "\n### Management & Decision Hints:\n"
    "> **Decision Hint**: Check progress. Keep scheduling if errors exist or key steps are missing.\n"
    "> **Workflow Integrity**: Ensure both design and implementation (e.g., `implementer`) roles have "
    "participated. Do not skip execution steps.\n"
    "> **Final Delivery**: If satisfied, output `{marker}` and **consolidate the final code/result** in "
    "this response for the USER.\n"
    "> **Crucial**: Once the marker is output, the workflow ends. You cannot assign agents anymore. Ensure "
    "the final delivery is complete.\n"
    "> **Load Balance**: Refer to `agent_usage`. If an agent fails repeatedly, switch approach or adjust "
    "instructions.\n"
)
_SOP_ZH = (
    "\n### 派发指令准则 (Standard Operating Procedure):\n"
    "> 1. **显式数据传递**：指派专家时，必须复述看板 `_results` 中的核心参数。\n"
    "\n### 管理与决策指引 (Management & Decision Hints):\n"
    "> **决策指引**：对比看板进度。若 `_meta.errors` 存在或关键环节未产出，请继续调度，严禁提前结束。\n"
    "> **流程完整性**：确保设计与执行角色（如 `implementer`）均已参与。严禁跳过关键执行环节直接结束。\n"
    "> **终结交付**：若认为任务已达成，请输出 `{marker}` 并在此回复中**汇总最终代码或方案**给用户。\n"
    "> **注意**：输出标记后系统将立即停止，你将无法再次指派专家，请务必在这一步提供完整的交付内容。\n"
    "> **负载建议**：参考 `agent_usage` 避免过度指派。若专家多次失败，请尝试更换专家或调整指令。\n"
)


def _clean_report(content: str, report: dict[str, Any]) -> str:
    """The prose around a report's JSON block, or the block itself when there is nothing else."""
    start, end = content.find("{"), content.rfind("}")
    if start == -1 or end <= start:
        return content
    before = _FENCE_OPEN.sub("", content[:start]).strip()
    after = _FENCE_CLOSE.sub("", content[end + 1 :]).strip()
    result = (before + ("" if not before or not after else " ") + after).strip()
    if not result:
        result = compact_json(report) if report else content
    return result


class HierarchicalProtocol(TeamProtocolBase):
    """See the module doc."""

    name = "HIERARCHICAL"

    def build_graph(self, spec: GraphSpec) -> None:
        spec.add_start(START).link_add(SUPERVISOR)
        supervisor = spec.add_exclusive(SUPERVISOR, task=SupervisorTask())
        self.link_agents(supervisor)
        supervisor.link_add(END)
        for name in self.config.members.names():
            spec.add_activity(name).link_add(SUPERVISOR)
        spec.add_end(END)

    # -- state -------------------------------------------------------------------------------------------------

    @staticmethod
    def dashboard(trace: TeamTrace) -> dict[str, Any] | None:
        return trace.protocol_context.get(_STATE)

    @staticmethod
    def errors(trace: TeamTrace) -> dict[str, str]:
        state = trace.protocol_context.get(_STATE)
        if not state:
            return {}
        errors = state.get("_meta", {}).get("errors")
        return errors if isinstance(errors, dict) else {}

    # -- members -----------------------------------------------------------------------------------------------

    def agent_instruction(self, trace: TeamTrace, member: Member, language: Language) -> str:
        text = super().agent_instruction(trace, member, language) + "\n\n---"
        zh = language == "zh"
        text += "\n## 协作与汇报规范\n" if zh else "\n## Collaboration & Reporting\n"
        text += (
            '\n1. 汇报要求：\n- 请在回复结尾使用 JSON 块反馈核心数据（例：{"result": "...", "status": "done"}）。'
            if zh
            else '\n1. Reporting Requirement:\n- End response with a JSON block for key data (e.g., {"result": "...", '
            '"status": "done"}).'
        )
        marker = _nested_marker(member)
        if marker:
            text += (
                "\n2. **完成标记**：任务完成时，必须包含标记: "
                if zh
                else "\n2. **Finish Marker**: Upon completion, must include: "
            )
            text += f"`{marker}`\n"
        return text

    def prepare_agent_prompt(
        self, trace: TeamTrace, member: Member, prompt: list[Message], language: Language
    ) -> list[Message]:
        messages = super().prepare_agent_prompt(trace, member, prompt, language)
        zh = language == "zh"
        state = self.dashboard(trace)
        parts: list[str] = []
        last = trace.last_agent_name
        if state is not None and last and last in state.get("_reports", {}):
            summary = state["_reports"][last]
            parts.append("\n\n### 前置背景 (Pre-Context)\n" if zh else "\n\n### Pre-Context\n")
            parts.append(f"{'- 来自 ' if zh else '- From '}{last}: **{summary}**\n")
            parts.append(
                "> 请务必基于上述背景数据进行处理，不要修改原始关键信息。\n"
                if zh
                else "> Please process based on the data above without altering core information.\n"
            )
        active = trace.protocol_context.get(_ACTIVE)
        if active:
            parts.append(
                "\n\n### 来自主管的最新指令 (Supervisor Directive)\n" if zh else "\n\n### Supervisor Directive\n"
            )
            parts.append("> " + str(active).strip().replace("\n", "\n> ") + "\n---\n")
        error = self.errors(trace).get(member.name)
        if error is not None:
            parts.append("\n### 错误修正请求：\n" if zh else "\n### Error Correction Required:\n")
            parts.append(
                f"{'- 你之前的执行结果未通过验证：' if zh else '- Your previous response failed validation: '}**{error}**\n"
            )
            parts.append(
                "- 请根据主管的最新指令进行修复，并务必包含正确的完成标记。\n"
                if zh
                else "- Please fix this based on the directive and ensure the correct finish marker.\n"
            )
        if trace.multimodal:
            parts.append(
                "\n- [重要]：输入包含多媒体附件，请务必结合视觉或文件内容进行处理。"
                if zh
                else "\n- [IMPORTANT]: Multimodal content detected. Process based on the attachments."
            )
        if parts:
            messages.append(user("".join(parts)))
        return messages

    def on_agent_end(self, trace: TeamTrace, member: Member) -> None:
        state = trace.protocol_context.setdefault(_STATE, {})
        content = trace.last_agent_content
        if not content:
            self._mark_error(state, member.name, "Response is empty.")
        else:
            report = sniff_json(content)
            failed = bool(_FAILED.search(content)) or str(report.get("status", "")).upper() == "FAILED"
            marker = _nested_marker(member)
            if marker is not None:
                success = _nested_finished(trace, member) or marker in content or not failed
                reason = "Nested team task not finished (missing completion signal)."
            else:
                success = not failed
                reason = "Task reported as failed (content or status contains FAILED)."
            if success:
                state.get("_meta", {}).get("errors", {}).pop(member.name, None)
            else:
                self._mark_error(state, member.name, reason)
            if report:
                state.setdefault("_results", {})[member.name] = report
            memo = _clean_report(content, report)
            state.setdefault("_reports", {})[member.name] = memo[:_MEMO_MAX] + "..." if len(memo) > _MEMO_MAX else memo
        trace.protocol_context.pop(_ACTIVE, None)
        usage = trace.protocol_context.setdefault(_USAGE, {})
        usage[member.name] = usage.get(member.name, 0) + 1

    @staticmethod
    def _mark_error(state: dict[str, Any], name: str, reason: str) -> None:
        state.setdefault("_meta", {}).setdefault("errors", {})[name] = reason

    # -- the supervisor ----------------------------------------------------------------------------------------

    def resolve_supervisor_route(self, trace: TeamTrace, decision: str) -> str | None:
        if self.config.finish_marker in decision:
            errors = self.errors(trace)
            if errors:
                zh = _zh()
                hint = (
                    "【系统干预】由于看板中仍有未解决的错误，任务不能结束。请指派相关专家修复。"
                    if zh
                    else "[System] Task cannot end because errors exist. Assign agents to fix them."
                )
                trace.add_record("system", SYSTEM, hint)
                trace.protocol_context[_ACTIVE] = hint
                for name in errors:
                    if name in self.config.members:
                        return name
            return None
        if decision:
            trace.protocol_context[_ACTIVE] = decision
        return super().resolve_supervisor_route(trace, decision)

    def should_supervisor_route(self, trace: TeamTrace, decision: str) -> bool:
        if self.config.finish_marker in decision and self.errors(trace) and trace.turn_count < self.config.max_turns:
            return False
        return super().should_supervisor_route(trace, decision)

    def prepare_supervisor_instruction(self, trace: TeamTrace, language: Language) -> str:
        zh = language == "zh"
        state = self.dashboard(trace) or {}
        usage: dict[str, int] = trace.protocol_context.get(_USAGE) or {}
        out = ["\n## 运行看板 (Hierarchical Dashboard)\n" if zh else "\n## Hierarchical Dashboard\n"]
        view: dict[str, Any] = {}
        if state.get("_reports"):
            view["_reports"] = state["_reports"]
        if state.get("_results"):
            view["_results"] = state["_results"]
        errors = self.errors(trace)
        if errors:
            view["_meta"] = {"errors": errors}
        meta = view.setdefault("_meta", {})
        if usage:
            meta["agent_usage"] = usage
        meta["capabilities"] = {member.name: list(member.input_modes) for member in self.config.members}
        dump = f"```json\n{compact_json(view)}\n```\n"
        if not (state.get("_reports") or state.get("_results")):
            out.append("> 暂无汇报，请下达初始指令。\n" if zh else "> No reports yet. Issue instructions.\n")
            if meta["capabilities"] or usage:
                out.append(dump)
        else:
            out.append(dump)
        out.append((_SOP_ZH if zh else _SOP_EN).replace("{marker}", self.config.finish_marker))
        overworked = [name for name, count in usage.items() if count >= _OVERWORK]
        if overworked:
            listed = "[" + ", ".join(overworked) + "]"
            out.append(
                f"\n> **![风险预警]**：专家 {listed} 已被重复指派多次且未达成目标。请停止无效循环，要求专家提供更详尽的错误说明，或尝试切换到其他专家。"
                if zh
                else f"\n> **![Risk Alert]**: Agents {listed} have been called repeatedly. Stop the loop, request "
                "detailed feedback, or try a different approach."
            )
        return "".join(out)

    def supervisor_instruction(self, language: Language) -> str:
        text = super().supervisor_instruction(language)
        if language == "zh":
            return text + (
                "\n### 管理决策准则：\n"
                "1. **模态适配**：优先指派支持对应模式（图片/文件）的专家。\n"
                "2. **错误恢复**：若 `_meta.errors` 存在，必须指派专家处理，直至错误清除。\n"
                "3. **负载均衡**：参考 `agent_usage` 避免过度使用单一专家。"
            )
        return text + (
            "\n### Management Guidelines:\n"
            "1. **Modality Match**: Assign experts based on capabilities.\n"
            "2. **Error Recovery**: Handle `_meta.errors` by re-assignment.\n"
            "3. **Load Balance**: Use `agent_usage` for efficient distribution."
        )


def _zh() -> bool:
    return get_language() == "zh"


def _nested_marker(member: Member) -> str | None:
    """The finish marker of a member that is a team itself."""
    marker = getattr(member.agent, "finish_marker", None)
    return marker if isinstance(marker, str) and marker else None


def _nested_finished(trace: TeamTrace, member: Member) -> bool:
    run = current_team_run()
    found = run.ctx.session.values.get(trace_key(member.name)) if run is not None else None
    return isinstance(found, TeamTrace) and (found.route == END or bool(found.final_answer))

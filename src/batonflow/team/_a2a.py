"""``a2a``: the members hand the task to each other with ``__transfer_to__``; the supervisor decides only when a
member hands over to nobody.

The first member starts. After each member a ``handover`` node routes to the requested target: a target that is
not a member (or cannot read the task's modality) gets the system record ``[System] Transfer failed: ...`` and
the same member again, and does not count; after five handovers the team ends with ``Max transfer limit
reached.``. Without a request the supervisor decides (and finishes).
"""

from __future__ import annotations

from typing import Any

from ..adk import Language, get_language
from ..graph import FlowContext, GraphSpec, Node
from ..schema import ToolInfo
from ._current import current_trace
from ._member import Member, compact_json
from ._protocol import END, START, SUPERVISOR, TeamProtocolBase
from ._supervisor import SupervisorTask
from ._tools import ProtocolTool, string_params
from ._trace import TeamTrace

__all__ = ["A2AProtocol"]

HANDOVER = "handover"
TRANSFER = "__transfer_to__"
_STATE = "a2a_state_obj"


class A2AProtocol(TeamProtocolBase):
    """See the module doc."""

    name = "A2A"
    agent_tool_names = frozenset({TRANSFER})

    def __init__(self, *, max_transfer_rounds: int = 5) -> None:
        super().__init__()
        self.max_transfer_rounds = max_transfer_rounds

    def build_graph(self, spec: GraphSpec) -> None:
        names = self.config.members.names()
        spec.add_start(START).link_add(names[0])
        for name in names:
            spec.add_activity(name).link_add(HANDOVER)
        handover = spec.add_exclusive(HANDOVER, task=self._handover)
        self.link_agents(handover)
        handover.link_add(END, title="route = end", when=lambda context: (current_trace().route or "").lower() == END)
        handover.link_add(SUPERVISOR)
        supervisor = spec.add_exclusive(SUPERVISOR, task=SupervisorTask())
        self.link_agents(supervisor)
        supervisor.link_add(END)
        spec.add_end(END)

    @staticmethod
    def state(trace: TeamTrace) -> dict[str, Any]:
        found: dict[str, Any] = trace.protocol_context.setdefault(
            _STATE, {"global_state": "", "transfer_count": 0, "last_temp_target": "", "last_payload": ""}
        )
        return found

    # -- members -----------------------------------------------------------------------------------------------

    def agent_tools(self, trace: TeamTrace, member: Member) -> list[ProtocolTool]:
        state = self.state(trace)
        zh = get_language() == "zh"
        others = compact_json([m.metadata() for m in self.config.members if m.name != member.name])

        def transfer(args: dict[str, Any]) -> str:
            target = str(args.get("target") or "")
            state["last_temp_target"] = target
            state["last_payload"] = "" if args.get("memo") is None else str(args["memo"])
            if args.get("state"):
                given = args["state"]
                state["global_state"] = given if isinstance(given, str) else compact_json(given)
            return f"已发起向 [{target}] 的接力请求。" if zh else f"Transfer to [{target}] requested."

        if zh:
            info = ToolInfo(
                name=TRANSFER,
                description="当你无法完成当前任务时，将其移交给更合适的专家。",
                parameters=string_params(
                    target=f"目标专家名。必选范围: {others}",
                    state="业务状态 JSON。",
                    memo="交接备忘：把需要下游专家继续处理的关键产出/结论写在这里。",
                ),
            )
        else:
            info = ToolInfo(
                name=TRANSFER,
                description=(
                    "When you are unable to complete the current task, hand it over to a more appropriate expert."
                ),
                parameters=string_params(
                    target=f"Expert name. Options: {others}",
                    state="Persistent JSON state.",
                    memo="Handover memo: put key findings/output the next expert should continue with.",
                ),
            )
        return [ProtocolTool(info=info, handle=transfer, meta={"_agent_": member.name})]

    def agent_instruction(self, trace: TeamTrace, member: Member, language: Language) -> str:
        zh = language == "zh"
        text = super().agent_instruction(trace, member, language)
        if zh:
            text += "\n## 专家协作指引\n- 必须根据各专家的 [核心能力] 和 [模态] 标签精准选择目标，严禁向不支持相关模态的专家移交任务。\n"
        else:
            text += (
                "\n## Collaboration Guidelines\n- You must choose the target precisely based on [Capabilities] and "
                "[Modes] tags. Never transfer to an agent that lacks the required modality.\n"
            )
        state = self.state(trace)
        output = state["last_payload"] or trace.last_agent_content
        shared = state["global_state"]
        trail = [record.source for record in trace.agent_records()]
        if not trail and not output and not shared:
            return text
        if zh:
            text += "\n## 当前接力任务断面 (Active Session Context)\n"
            text += "> 本部分记录了任务流转至此时的关键快照，请基于此状态继续执行，严禁编造断面之外的信息。\n\n"
            labels = ("- **协作轨迹**: ", "- **上一步专家**: ", "- **待处理产出**: ", "- **累积业务状态**: ")
        else:
            text += "\n## Active Session Context\n"
            text += "> This snapshot records the current state of the task. Continue execution based on this data.\n\n"
            labels = (
                "- **Collaboration Trail**: ",
                "- **Prior Expert**: ",
                "- **Pending Output**: ",
                "- **Global State**: ",
            )
        if trail:
            text += f"{labels[0]}{' -> '.join(trail)}\n{labels[1]}{trail[-1]}\n"
        if output:
            text += f"{labels[2]}{output}\n"
        if shared:
            text += f"{labels[3]}{shared}\n"
        return text

    # -- routing -----------------------------------------------------------------------------------------------

    def _handover(self, context: FlowContext, node: Node) -> None:
        trace = current_trace()
        if not self.state(trace)["last_temp_target"]:
            trace.route = SUPERVISOR
            return
        trace.route = self.resolve_supervisor_route(trace, "") or END

    def resolve_supervisor_route(self, trace: TeamTrace, decision: str) -> str | None:
        state = self.state(trace)
        target = state["last_temp_target"]
        if not target:
            return super().resolve_supervisor_route(trace, decision)
        zh = get_language() == "zh"
        if state["transfer_count"] >= self.max_transfer_rounds:
            trace.final_answer = "协作达到最大流转次数，任务中止。" if zh else "Max transfer limit reached."
            return None
        found = self.config.members.get(target)
        if found is None or (trace.multimodal and all(mode.lower() == "text" for mode in found.input_modes)):
            state["last_temp_target"] = ""
            feedback = (
                f"【系统通知】移交失败：专家 [{target}] 不存在或能力不匹配（如无法处理图片）。请重新选择或尝试自行解决。"
                if zh
                else f"[System] Transfer failed: Expert [{target}] is invalid or lacks required capabilities. "
                "Please re-select or resolve yourself."
            )
            trace.add_record("system", "Supervisor", feedback)
            return trace.last_agent_name
        state["transfer_count"] += 1
        state["last_temp_target"] = ""
        return found.name

    def prepare_supervisor_instruction(self, trace: TeamTrace, language: Language) -> str:
        state = self.state(trace)
        if language == "zh":
            text = "\n### A2A 接力看板\n"
            if state["global_state"]:
                text += f"- 全局状态: {state['global_state']}\n"
            return text + f"- 接力次数: {state['transfer_count']}\n"
        text = "\n### A2A Dashboard\n"
        if state["global_state"]:
            text += f"- Global State: {state['global_state']}\n"
        return text + f"- Handovers: {state['transfer_count']}\n"

    def supervisor_instruction(self, language: Language) -> str:
        marker = self.config.finish_marker
        text = super().supervisor_instruction(language)
        if language == "zh":
            return text + (
                f"\n### A2A 协作准则：\n1. **直接交付**：任务完成时请直接输出 `{marker}`，**禁止**对专家的内容进行二次总结或润色。\n"
                "2. **流转审计**：若专家间接力流转超过 5 次仍无实质进展，请立即介入并强制收尾。"
            )
        return text + (
            f"\n### A2A Collaboration Rules:\n1. **Direct Delivery**: Output `{marker}` directly. **DO NOT** "
            "summarize.\n2. **Handover Audit**: Force termination if more than 5 handovers occur."
        )

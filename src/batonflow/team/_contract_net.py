"""``contract_net``: the supervisor calls for bids and awards the task to a bidder (Solon's
``ContractNetProtocol``).

``__call_for_bids__`` (a supervisor tool; also a decision that says ``BIDDING``, ``招标`` or ``CALL_FOR_BIDS``)
starts a round, at most two: the ``bidding`` node bids for every member that did not bid itself (30, +10 when a
word of its role is in the requirement, at least 60 with capabilities, +15 per capability named, at most 95).
Members may bid with ``__submit_proposal__`` while a round is open. The supervisor awards by naming a bidder; the
winner is told to execute its plan. Naming a member with no bid starts another round, or, with none left, ends
the team (``Cannot award: ...``). The team can finish once the winner has worked.
"""

from __future__ import annotations

import re
from typing import Any

from ..adk import Language, get_language
from ..graph import FlowContext, GraphSpec, Node
from ..schema import Message, ToolInfo, user
from ._current import current_trace
from ._member import Member, compact_json
from ._protocol import END, START, SUPERVISOR, SYSTEM, TeamProtocolBase
from ._supervisor import SupervisorTask
from ._tools import ProtocolTool, string_params
from ._trace import TeamTrace

__all__ = ["ContractNetProtocol"]

BIDDING = "bidding"
CALL_FOR_BIDS = "__call_for_bids__"
SUBMIT = "__submit_proposal__"
_STATE = "contract_state_obj"
_ROLE_SPLIT = re.compile(r"[\s,，、/|;:]+")
_WORD = re.compile(r"\w+")
_MARKDOWN = re.compile(r"[*`]")


def _java_list(items: list[str]) -> str:
    return "[" + ", ".join(items) + "]"


def _matches(text: str, keyword: str) -> bool:
    """Whether ``keyword`` is in ``text``: as a whole word when it is one word, else anywhere."""
    t, k = text.lower(), keyword.lower().strip()
    if not t or not k:
        return False
    if _WORD.fullmatch(k):
        return re.search(r"(?<!\w)" + re.escape(k) + r"(?!\w)", t) is not None
    return k in t


def _score(value: Any) -> int:
    try:
        score = int(value) if not isinstance(value, bool) else 50
    except (TypeError, ValueError):
        score = 50
    return max(1, min(100, score))


class ContractNetProtocol(TeamProtocolBase):
    """See the module doc."""

    name = "CONTRACT_NET"
    agent_tool_names = frozenset({SUBMIT})

    def __init__(self, *, max_bidding_rounds: int = 2) -> None:
        super().__init__()
        self.max_bidding_rounds = max_bidding_rounds

    def build_graph(self, spec: GraphSpec) -> None:
        spec.add_start(START).link_add(SUPERVISOR)
        supervisor = spec.add_exclusive(SUPERVISOR, task=SupervisorTask())
        supervisor.link_add(BIDDING, when=lambda context: current_trace().route == BIDDING)
        self.link_agents(supervisor)
        supervisor.link_add(END)
        spec.add_activity(BIDDING, task=self._bidding).link_add(SUPERVISOR)
        for name in self.config.members.names():
            spec.add_activity(name).link_add(SUPERVISOR)
        spec.add_end(END)

    # -- state -------------------------------------------------------------------------------------------------

    @staticmethod
    def state(trace: TeamTrace) -> dict[str, Any]:
        found: dict[str, Any] = trace.protocol_context.setdefault(
            _STATE, {"bids": {}, "history": [], "awarded": None, "requirement": None, "rounds": 0}
        )
        return found

    @staticmethod
    def bid_of(state: dict[str, Any], name: str) -> dict[str, Any] | None:
        bids: dict[str, dict[str, Any]] = state["bids"]
        for key, bid in bids.items():
            if key.lower() == name.lower():
                return bid
        return None

    def start_bidding(self, trace: TeamTrace, requirement: str | None = None) -> bool:
        """A new round, if rounds are left: the last round's bids archived, no winner."""
        state = self.state(trace)
        if state["rounds"] >= self.max_bidding_rounds:
            return False
        self._new_round(state, requirement)
        return True

    @staticmethod
    def _new_round(state: dict[str, Any], requirement: str | None) -> None:
        if state["bids"]:
            state["history"].append(dict(state["bids"]))
        state["bids"] = {}
        state["awarded"] = None
        if requirement is not None:
            state["requirement"] = requirement
        state["rounds"] += 1

    def construct_bid(self, member: Member, trace: TeamTrace, requirement: str | None) -> dict[str, Any]:
        """The bid a member's profile makes for the requirement (or the task)."""
        task = (requirement or trace.user_content).lower()
        score = 30
        matched: list[str] = []
        for token in _ROLE_SPLIT.split(member.role.lower()):
            if len(token) >= 2 and _matches(task, token):
                score += 10
                matched.append(f"role:{token}")
                break
        capabilities = list(member.capabilities)
        if capabilities:
            score = max(score, 60)
        for capability in capabilities:
            if capability.lower() != "assistant" and _matches(task, capability):
                score += 15
                matched.append(capability)
        listed = _java_list(capabilities)
        plan = (
            f"Auto-matched keywords: {_java_list(matched)}; capabilities: {listed}"
            if matched
            else f"Auto-matched by capabilities: {listed}"
        )
        return {"score": min(95, score), "plan": plan, "auto_bid": True}

    def _bidding(self, context: FlowContext, node: Node) -> None:
        trace = current_trace()
        state = self.state(trace)
        if state["rounds"] == 0:
            self._new_round(state, state["requirement"])
        manual = auto = 0
        for member in self.config.members:
            if self.bid_of(state, member.name) is not None:
                manual += 1
                continue
            state["bids"][member.name] = self.construct_bid(member, trace, state["requirement"])
            auto += 1
        trace.add_record(
            "system", BIDDING, f"Bidding finished. {manual + auto} bids collected ({manual} manual, {auto} auto)."
        )
        trace.route = SUPERVISOR

    # -- members -----------------------------------------------------------------------------------------------

    def agent_tools(self, trace: TeamTrace, member: Member) -> list[ProtocolTool]:
        if trace.route != BIDDING:
            return []
        zh = get_language() == "zh"

        def submit(args: dict[str, Any]) -> str:
            plan = "" if args.get("plan") is None else str(args["plan"]).strip()
            if not plan:
                return "投标失败：plan 不能为空。" if zh else "Bid rejected: plan is required."
            bid = {"score": _score(args.get("score")), "plan": plan, "auto_bid": False}
            self.state(trace)["bids"][member.name] = bid
            return "标书已收录。" if zh else "Bid received."

        texts = (
            ("提交你的执行计划和信心分。", "信心分(1-100)", "计划摘要")
            if zh
            else ("Submit your execution plan and confidence score.", "Confidence score(1-100)", "Plan summary")
        )
        parameters = {
            "type": "object",
            "properties": {
                "score": {"type": "integer", "description": texts[1]},
                "plan": {"type": "string", "description": texts[2]},
            },
            "required": ["score", "plan"],
        }
        info = ToolInfo(name=SUBMIT, description=texts[0], parameters=parameters)
        return [ProtocolTool(info=info, handle=submit, meta={"_agent_": member.name})]

    def prepare_agent_prompt(
        self, trace: TeamTrace, member: Member, prompt: list[Message], language: Language
    ) -> list[Message]:
        messages = super().prepare_agent_prompt(trace, member, prompt, language)
        state = self.state(trace)
        awarded = state["awarded"]
        bid = self.bid_of(state, member.name) if awarded and awarded.lower() == member.name.lower() else None
        if bid is not None:
            plan = str(bid.get("plan", ""))
            notice = (
                f"\n【中标执行指令】\n> 你已在竞标中胜出。请严格按你提交的计划执行：\n{plan}"
                if language == "zh"
                else f"\n [Award Execution Order] \n> You won the bid. Execute strictly according to your plan:\n{plan}"
            )
            messages.append(user(notice))
        return messages

    # -- the supervisor ----------------------------------------------------------------------------------------

    def supervisor_tools(self, trace: TeamTrace) -> list[ProtocolTool]:
        zh = get_language() == "zh"

        def call_for_bids(args: dict[str, Any]) -> str:
            requirement = None if args.get("requirement") is None else str(args["requirement"]).strip() or None
            if not self.start_bidding(trace, requirement):
                if zh:
                    return "招标次数已耗尽。请根据现有标书定标，或直接回复用户无法完成。"
                return "Bidding rounds exhausted. Award an existing bid or inform the user."
            trace.route = BIDDING
            return "已进入招标流程。" if zh else "Bidding phase initiated."

        if zh:
            description = "向全体专家征集方案。当你无法确定由谁执行任务时使用此工具。"
            parameters = string_params(requirement="任务具体需求")
        else:
            description = "Collect proposals from all experts when the best executor is not obvious."
            parameters = string_params(requirement="Task requirements")
        info = ToolInfo(name=CALL_FOR_BIDS, description=description, parameters=parameters)
        return [ProtocolTool(info=info, handle=call_for_bids, meta={})]

    def resolve_supervisor_route(self, trace: TeamTrace, decision: str) -> str | None:
        if trace.route == BIDDING:
            return BIDDING
        upper = decision.upper()
        if any(word in upper for word in ("BIDDING", "招标", "CALL_FOR_BIDS", CALL_FOR_BIDS.upper())):
            return BIDDING if self.start_bidding(trace) else None
        name = self._agent_in(decision)
        if name is None:
            return None
        state = self.state(trace)
        if self.bid_of(state, name) is None:
            warning = (
                f"【系统指引】指派无效。必须先调用 {CALL_FOR_BIDS} 获取标书，且只能指派已出现在 bids_board 中的专家。"
                if get_language() == "zh"
                else f"[System] Invalid assignment. You must call {CALL_FOR_BIDS} first and only assign experts listed "
                "in bids_board."
            )
            trace.add_record("system", BIDDING, warning)
            return BIDDING if self.start_bidding(trace) else None
        state["awarded"] = name
        return name

    def _agent_in(self, decision: str) -> str | None:
        clean = _MARKDOWN.sub("", decision).strip()
        exact = self.config.members.canonical(clean)
        if exact is not None:
            return exact
        best: tuple[int, str] | None = None
        for name in self.config.members.names():
            for found in re.finditer(r"(?i)(?<![a-zA-Z0-9])" + re.escape(name) + r"(?![a-zA-Z0-9])", clean):
                if best is None or found.start() > best[0]:
                    best = (found.start(), name)
        return best[1] if best is not None else None

    def on_supervisor_routing(self, trace: TeamTrace, next_route: str) -> None:
        if not next_route or next_route in (BIDDING, END, START, SUPERVISOR, SYSTEM):
            return
        canonical = self.config.members.canonical(next_route)
        if canonical is None:
            return
        state = self.state(trace)
        if self.bid_of(state, canonical) is None:
            if self.start_bidding(trace):
                trace.route = BIDDING
                return
            message = (
                "无法定标：目标专家无有效标书且招标次数已耗尽。"
                if get_language() == "zh"
                else "Cannot award: target has no bid and bidding rounds are exhausted."
            )
            trace.add_record("system", BIDDING, message)
            trace.final_answer = message
            trace.route = END
            return
        state["awarded"] = canonical
        trace.route = canonical

    def is_logic_finished(self, trace: TeamTrace) -> bool:
        if not trace.records:
            return False
        awarded = self.state(trace)["awarded"]
        if awarded is None:
            return super().is_logic_finished(trace)
        return any(r.is_agent and r.source.lower() == awarded.lower() for r in trace.records)

    def dashboard(self, state: dict[str, Any]) -> str:
        awarded = state["awarded"]
        phase = "AWARDED" if awarded is not None else ("EVALUATING" if state["bids"] else "WAITING_FOR_BIDS")
        root: dict[str, Any] = {
            "phase": phase,
            "current_round": state["rounds"],
            "history_count": len(state["history"]),
            "winner": awarded if awarded is not None else "none",
        }
        if state["requirement"]:
            root["requirement"] = state["requirement"]
        root["bids_board"] = {
            name: {
                "score": bid.get("score"),
                "plan": bid.get("plan"),
                "source": "Capability_Match" if bid.get("auto_bid") else "Expert_Proposal",
            }
            for name, bid in state["bids"].items()
        }
        if state["history"]:
            root["history_summary"] = [
                {"round": i + 1, "scores": {name: bid.get("score") for name, bid in bids.items()}}
                for i, bids in enumerate(state["history"])
            ]
        return compact_json(root)

    def prepare_supervisor_instruction(self, trace: TeamTrace, language: Language) -> str:
        state = self.state(trace)
        zh = language == "zh"
        remaining = max(0, self.max_bidding_rounds - state["rounds"])
        text = ""
        if state["rounds"] > 0 and not state["bids"]:
            if remaining > 0:
                text += (
                    f"\n> [警告] 前一轮招标无人响应。剩余尝试次数: {remaining}"
                    if zh
                    else f"\n> [Warning] No bids in previous round. Remaining attempts: {remaining}"
                )
            else:
                text += (
                    "\n> [最终警告] 招标次数已耗尽。请停止招标，直接回复用户：该任务超出了当前团队的能力范围。"
                    if zh
                    else "\n> [Final Warning] No more bidding rounds. Stop bidding and inform the user that the task "
                    "is out of scope."
                )
        elif remaining == 0 and state["bids"]:
            text += (
                "\n> [提示] 招标次数已用尽，请基于当前看板完成定标。\n"
                if zh
                else "\n> [Note] No more bidding rounds. Award based on the current board.\n"
            )
        text += "\n### 合同网竞标看板\n" if zh else "\n### Contract Net Dashboard\n"
        if state["bids"]:
            text += f"```json\n{self.dashboard(state)}\n```\n"
            text += (
                f"> 提示：请根据各专家的 `score` 和 `plan` 择优指派。剩余招标次数: {remaining}\n"
                if zh
                else f"> Tips: Award the best candidate by `score`/`plan`. Remaining bidding rounds: {remaining}\n"
            )
        elif zh:
            text += "> **强制规范**：当前处于“待招标”状态。在进行任何指派前，**必须**先获取专家标书。\n"
            text += f"> **操作建议**：请调用 `{CALL_FOR_BIDS}` 工具发起招标。剩余次数: {remaining}\n"
        else:
            text += "> **Mandatory**: Status is 'Waiting'. You **MUST** collect proposals before any assignment.\n"
            text += f"> **Action**: Please call `{CALL_FOR_BIDS}` to initiate bidding. Remaining: {remaining}\n"
        text += "#### 成员资质表:\n" if zh else "#### Agent Profiles:\n"
        return text + "".join(f"- {compact_json(member.metadata())}\n" for member in self.config.members)

    def supervisor_instruction(self, language: Language) -> str:
        text = super().supervisor_instruction(language)
        if language == "zh":
            return text + (
                f"\n### CNP 协作规范：\n1. **工具招标**：若无法确定最佳人选，优先调用 `{CALL_FOR_BIDS}`。\n"
                "2. **择优录取**：对比看板中的标书分数，直接回复专家名称进行定标。\n"
                "3. **模态检查**：请确保所选专家的 `Modes` 支持当前任务模态（如识图需具备 `image`）。\n"
                "4. **禁止旁路**：未出现在 bids_board 中的专家禁止指派。"
            )
        return text + (
            f"\n### CNP Collaboration Rules:\n1. **Tool Usage**: Call `{CALL_FOR_BIDS}` if unsure about assignments.\n"
            "2. **Decision**: Award the task by naming the best agent based on their bid score.\n"
            "3. **Constraint**: Match task requirements with agent `Modes` (e.g., `image` for vision tasks).\n"
            "4. **No Bypass**: Never assign an expert not listed in bids_board."
        )

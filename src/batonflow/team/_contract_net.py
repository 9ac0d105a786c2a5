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
from ._texts import phrase
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
        language = get_language()

        def submit(args: dict[str, Any]) -> str:
            plan = "" if args.get("plan") is None else str(args["plan"]).strip()
            if not plan:
                return phrase("contract_net.bid_rejected", language)
            bid = {"score": _score(args.get("score")), "plan": plan, "auto_bid": False}
            self.state(trace)["bids"][member.name] = bid
            return phrase("contract_net.bid_received", language)

        parameters = {
            "type": "object",
            "properties": {
                "score": {"type": "integer", "description": phrase("contract_net.submit_score", language)},
                "plan": {"type": "string", "description": phrase("contract_net.submit_plan", language)},
            },
            "required": ["score", "plan"],
        }
        info = ToolInfo(
            name=SUBMIT, description=phrase("contract_net.submit_description", language), parameters=parameters
        )
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
            notice = phrase("contract_net.award_order", language, plan=plan)
            messages.append(user(notice))
        return messages

    # -- the supervisor ----------------------------------------------------------------------------------------

    def supervisor_tools(self, trace: TeamTrace) -> list[ProtocolTool]:
        language = get_language()

        def call_for_bids(args: dict[str, Any]) -> str:
            requirement = None if args.get("requirement") is None else str(args["requirement"]).strip() or None
            if not self.start_bidding(trace, requirement):
                return phrase("contract_net.rounds_exhausted", language)
            trace.route = BIDDING
            return phrase("contract_net.bidding_started", language)

        description = phrase("contract_net.call_description", language)
        parameters = string_params(requirement=phrase("contract_net.call_requirement", language))
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
            warning = phrase("contract_net.invalid_assignment", get_language(), tool=CALL_FOR_BIDS)
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
            message = phrase("contract_net.cannot_award", get_language())
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
        remaining = max(0, self.max_bidding_rounds - state["rounds"])
        text = ""
        if state["rounds"] > 0 and not state["bids"]:
            if remaining > 0:
                text += phrase("contract_net.no_bids", language, remaining=remaining)
            else:
                text += phrase("contract_net.final_warning", language)
        elif remaining == 0 and state["bids"]:
            text += phrase("contract_net.award_now", language)
        text += phrase("contract_net.dashboard", language)
        if state["bids"]:
            text += f"```json\n{self.dashboard(state)}\n```\n"
            text += phrase("contract_net.tips", language, remaining=remaining)
        else:
            text += phrase("contract_net.waiting", language, tool=CALL_FOR_BIDS, remaining=remaining)
        text += phrase("contract_net.profiles", language)
        return text + "".join(f"- {compact_json(member.metadata())}\n" for member in self.config.members)

    def supervisor_instruction(self, language: Language) -> str:
        text = super().supervisor_instruction(language)
        return text + phrase("contract_net.supervisor_rules", language, tool=CALL_FOR_BIDS)

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
from ._texts import phrase
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
        language = get_language()
        others = compact_json([m.metadata() for m in self.config.members if m.name != member.name])

        def transfer(args: dict[str, Any]) -> str:
            target = str(args.get("target") or "")
            state["last_temp_target"] = target
            state["last_payload"] = "" if args.get("memo") is None else str(args["memo"])
            if args.get("state"):
                given = args["state"]
                state["global_state"] = given if isinstance(given, str) else compact_json(given)
            return phrase("a2a.transfer_requested", language, target=target)

        info = ToolInfo(
            name=TRANSFER,
            description=phrase("a2a.transfer_description", language),
            parameters=string_params(
                target=phrase("a2a.transfer_target", language, others=others),
                state=phrase("a2a.transfer_state", language),
                memo=phrase("a2a.transfer_memo", language),
            ),
        )
        return [ProtocolTool(info=info, handle=transfer, meta={"_agent_": member.name})]

    def agent_instruction(self, trace: TeamTrace, member: Member, language: Language) -> str:
        text = super().agent_instruction(trace, member, language) + phrase("a2a.agent_guidelines", language)
        state = self.state(trace)
        output = state["last_payload"] or trace.last_agent_content
        shared = state["global_state"]
        trail = [record.source for record in trace.agent_records()]
        if not trail and not output and not shared:
            return text
        text += phrase("a2a.session_context", language)
        labels = [phrase(f"a2a.{key}", language) for key in ("trail", "prior", "pending_output", "global_state")]
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
        language = get_language()
        if state["transfer_count"] >= self.max_transfer_rounds:
            trace.final_answer = phrase("a2a.max_transfers", language)
            return None
        found = self.config.members.get(target)
        if found is None or (trace.multimodal and all(mode.lower() == "text" for mode in found.input_modes)):
            state["last_temp_target"] = ""
            feedback = phrase("a2a.transfer_failed", language, target=target)
            trace.add_record("system", "Supervisor", feedback)
            return trace.last_agent_name
        state["transfer_count"] += 1
        state["last_temp_target"] = ""
        return found.name

    def prepare_supervisor_instruction(self, trace: TeamTrace, language: Language) -> str:
        state = self.state(trace)
        text = phrase("a2a.dashboard", language)
        if state["global_state"]:
            text += phrase("a2a.dashboard_state", language, state=state["global_state"])
        return text + phrase("a2a.dashboard_handovers", language, count=state["transfer_count"])

    def supervisor_instruction(self, language: Language) -> str:
        marker = self.config.finish_marker
        text = super().supervisor_instruction(language)
        return text + phrase("a2a.supervisor_rules", language, marker=marker)

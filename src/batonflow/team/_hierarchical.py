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
from ._texts import phrase
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
        text += phrase("hierarchical.reporting", language)
        text += phrase("hierarchical.report_json", language)
        marker = _nested_marker(member)
        if marker:
            text += phrase("hierarchical.finish_marker", language)
            text += f"`{marker}`\n"
        return text

    def prepare_agent_prompt(
        self, trace: TeamTrace, member: Member, prompt: list[Message], language: Language
    ) -> list[Message]:
        messages = super().prepare_agent_prompt(trace, member, prompt, language)
        state = self.dashboard(trace)
        parts: list[str] = []
        last = trace.last_agent_name
        if state is not None and last and last in state.get("_reports", {}):
            summary = state["_reports"][last]
            parts.append(phrase("hierarchical.pre_context", language))
            parts.append(f"{phrase('hierarchical.from', language)}{last}: **{summary}**\n")
            parts.append(phrase("hierarchical.keep_data", language))
        active = trace.protocol_context.get(_ACTIVE)
        if active:
            parts.append(phrase("hierarchical.directive", language))
            parts.append("> " + str(active).strip().replace("\n", "\n> ") + "\n---\n")
        error = self.errors(trace).get(member.name)
        if error is not None:
            parts.append(phrase("hierarchical.correction", language))
            parts.append(f"{phrase('hierarchical.failed_validation', language)}**{error}**\n")
            parts.append(phrase("hierarchical.fix", language))
        if trace.multimodal:
            parts.append(phrase("hierarchical.multimodal", language))
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
                hint = phrase("hierarchical.errors_left", get_language())
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
        state = self.dashboard(trace) or {}
        usage: dict[str, int] = trace.protocol_context.get(_USAGE) or {}
        out = [phrase("hierarchical.dashboard", language)]
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
            out.append(phrase("hierarchical.no_reports", language))
            if meta["capabilities"] or usage:
                out.append(dump)
        else:
            out.append(dump)
        out.append(phrase("hierarchical.sop", language, marker=self.config.finish_marker))
        overworked = [name for name, count in usage.items() if count >= _OVERWORK]
        if overworked:
            listed = "[" + ", ".join(overworked) + "]"
            out.append(phrase("hierarchical.overworked", language, names=listed))
        return "".join(out)

    def supervisor_instruction(self, language: Language) -> str:
        text = super().supervisor_instruction(language)
        return text + phrase("hierarchical.supervisor_rules", language)


def _nested_marker(member: Member) -> str | None:
    """The finish marker of a member that is a team itself."""
    marker = getattr(member.agent, "finish_marker", None)
    return marker if isinstance(marker, str) and marker else None


def _nested_finished(trace: TeamTrace, member: Member) -> bool:
    run = current_team_run()
    found = run.ctx.session.values.get(trace_key(member.name)) if run is not None else None
    return isinstance(found, TeamTrace) and (found.route == END or bool(found.final_answer))

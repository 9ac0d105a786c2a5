"""``sequential``: the members run once each in the order they were added, with no model deciding.

A stage passes when its output has more than two characters; a stage that fails runs again once
(``max_retries_per_stage``) and then counts as failed, and the pipeline goes on either way. A member that is not
there is skipped. The pipeline's state is rebuilt from the records when a trace is picked up again.
"""

from __future__ import annotations

import re
from typing import Any

from ..adk import Language
from ..graph import FlowContext, GraphSpec, Node
from ._current import current_trace
from ._member import Member, compact_json
from ._protocol import END, START, TeamProtocolBase
from ._texts import phrase
from ._trace import TeamTrace

__all__ = ["SequentialProtocol"]

ROUTING = "routing"
_STATE = "sequence_state_obj"
_SUMMARY_MAX = 50


_IMAGE_LINK = re.compile(r"(?s).*\[.*?\]\(data:image/.*\).*")


def _has_image(trace: TeamTrace) -> bool:
    """Whether the task, or the last member's output, carries an image."""
    if trace.multimodal:
        return True
    content = trace.last_agent_content
    return "![image]" in content or _IMAGE_LINK.fullmatch(content) is not None


class SequentialProtocol(TeamProtocolBase):
    """See the module doc."""

    name = "SEQUENTIAL"

    def __init__(self, *, max_retries_per_stage: int = 1) -> None:
        super().__init__()
        self.max_retries_per_stage = max_retries_per_stage

    def build_graph(self, spec: GraphSpec) -> None:
        spec.add_start(START).link_add(ROUTING)
        for name in self.config.members.names():
            spec.add_activity(name).link_add(ROUTING)
        routing = spec.add_activity(ROUTING, task=self._route)
        self.link_agents(routing)
        routing.link_add(END)
        spec.add_end(END)

    # -- the pipeline --------------------------------------------------------------------------------------------

    def state(self, trace: TeamTrace) -> dict[str, Any]:
        state: dict[str, Any] | None = trace.protocol_context.get(_STATE)
        if state is None:
            state = self._initial_state(trace)
            trace.protocol_context[_STATE] = state
        return state

    def _initial_state(self, trace: TeamTrace) -> dict[str, Any]:
        pipeline = self.config.members.names()
        stages: dict[str, dict[str, Any]] = {
            name: {"status": "PENDING", "retries": 0, "summary": None} for name in pipeline
        }
        for record in trace.agent_records():
            if record.source not in stages:
                continue
            content = record.content
            if "Incompatible modality" in content or "SKIPPED" in content:
                stages[record.source]["status"] = "SKIPPED"
            elif "Quality check failed" in content or "FAILED" in content:
                stages[record.source]["status"] = "FAILED"
            else:
                stages[record.source]["status"] = "COMPLETED"
        index = 0
        while index < len(pipeline) and stages[pipeline[index]]["status"] in ("COMPLETED", "FAILED", "SKIPPED"):
            index += 1
        return {"pipeline": pipeline, "current_index": index, "stages": stages}

    @staticmethod
    def next_agent(state: dict[str, Any]) -> str:
        pipeline: list[str] = state["pipeline"]
        index: int = state["current_index"]
        return pipeline[index] if index < len(pipeline) else END

    @staticmethod
    def _mark(state: dict[str, Any], name: str, status: str, summary: str | None) -> None:
        info = state["stages"].get(name)
        if info is None:
            return
        info["status"] = status
        if summary:
            info["summary"] = summary[:_SUMMARY_MAX] + "..." if len(summary) > _SUMMARY_MAX else summary

    def _route(self, context: FlowContext, node: Node) -> None:
        trace = current_trace()
        state = self.state(trace)
        following = self.next_agent(state)
        while following != END:
            found = self.config.members.get(following)
            if found is None:
                self._mark(state, following, "SKIPPED", "Agent missing")
            elif _has_image(trace) and not found.supports("image"):
                self._mark(state, following, "SKIPPED", "Incompatible modality")
            else:
                break
            state["current_index"] += 1
            following = self.next_agent(state)
        trace.route = following

    def on_agent_end(self, trace: TeamTrace, member: Member) -> None:
        state = self.state(trace)
        content = trace.last_agent_content
        pipeline: list[str] = state["pipeline"]
        position = pipeline.index(member.name) if member.name in pipeline else -1
        if len(content.strip()) > 2:
            self._mark(state, member.name, "COMPLETED", content)
            state["current_index"] = min(position + 1, len(pipeline)) if position >= 0 else state["current_index"] + 1
            trace.route = ROUTING
            return
        info = state["stages"].get(member.name)
        if info is not None and info["retries"] < self.max_retries_per_stage:
            info["retries"] += 1
            self._mark(state, member.name, "RETRYING", "Quality check failed")
            if position >= 0:
                state["current_index"] = position
            trace.route = member.name
            return
        self._mark(state, member.name, "FAILED", "Quality check failed")
        state["current_index"] = min(position + 1, len(pipeline)) if position >= 0 else state["current_index"] + 1
        trace.route = ROUTING

    def is_logic_finished(self, trace: TeamTrace) -> bool:
        state = self.state(trace)
        return bool(state["pipeline"]) and state["current_index"] >= len(state["pipeline"])

    def prepare_supervisor_instruction(self, trace: TeamTrace, language: Language) -> str:
        title = phrase("sequential.progress", language)
        return f"{title}```json\n{compact_json(self.state(trace))}\n```\n"

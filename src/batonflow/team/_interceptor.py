"""Hooks around a team run: ``TeamInterceptor`` (a ``FlowInterceptor`` too, so it sees every node of the team's
graph), and ``LoopingTeamInterceptor``, which stops a supervisor going round in circles."""

from __future__ import annotations

import re
from typing import Any

from ..graph import FlowInterceptor
from ..schema import Message
from ._member import Member
from ._trace import TeamRecord, TeamTrace

__all__ = ["LoopingTeamInterceptor", "TeamInterceptor"]


class TeamInterceptor(FlowInterceptor):
    """Override what you need. ``should_supervisor_continue`` false ends the team (the supervisor records
    ``[Skipped] Intercepted by <class>``); ``should_agent_continue`` false skips that member's turn (recorded as
    its output ``[Skipped] Cancelled by <class>``). The flow hooks ``on_node_start``/``on_node_end`` get the flow
    context and the node."""

    def on_team_start(self, trace: TeamTrace) -> None:
        return None

    def on_team_end(self, trace: TeamTrace) -> None:
        return None

    def should_supervisor_continue(self, trace: TeamTrace) -> bool:
        return True

    def on_model_start(self, trace: TeamTrace, messages: list[Message]) -> None:
        return None

    def on_model_end(self, trace: TeamTrace, message: Message) -> None:
        return None

    def on_supervisor_decision(self, trace: TeamTrace, decision: str) -> None:
        return None

    def should_agent_continue(self, trace: TeamTrace, agent: Member) -> bool:
        return True

    def on_agent_end(self, trace: TeamTrace, agent: Member) -> None:
        return None


_SPACE = re.compile(r"\s+")


def _normalise(text: str) -> str:
    return _SPACE.sub("", text).lower()


def _edit_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def similarity(a: str, b: str) -> float:
    """1 minus the edit distance over the longer length, whitespace dropped and case folded."""
    if a == b:
        return 1.0
    na, nb = _normalise(a), _normalise(b)
    if na == nb:
        return 1.0
    longest = max(len(na), len(nb))
    if longest == 0:
        return 0.0
    return 1.0 - _edit_distance(na, nb) / longest


class LoopingTeamInterceptor(TeamInterceptor):
    """Ends the team when its members go in circles (at least four member outputs, the last one at least
    ``min_content_length`` long): the last member said nearly the same as its previous output within the last
    ``scan_window`` outputs (``similarity_threshold``), or the last two or three outputs repeat the two or three
    before them (AB-AB, ABC-ABC)."""

    def __init__(
        self,
        *,
        min_content_length: int = 10,
        similarity_threshold: float = 0.95,
        scan_window: int = 10,
        max_repeat_allowed: int = 0,
    ) -> None:
        self.min_content_length = min_content_length
        self.similarity_threshold = similarity_threshold
        self.scan_window = scan_window
        self.max_repeat_allowed = max_repeat_allowed

    def should_supervisor_continue(self, trace: TeamTrace) -> bool:
        return not self.is_looping(trace)

    def is_looping(self, trace: TeamTrace) -> bool:
        records = trace.agent_records()
        if len(records) < 4 or len(records[-1].content) < self.min_content_length:
            return False
        return self._self_loop(records) or self._sequence_loop(records)

    def _self_loop(self, records: list[TeamRecord]) -> bool:
        last = records[-1]
        repeats = 0
        for previous in reversed(records[max(0, len(records) - self.scan_window) : -1]):
            if previous.source != last.source:
                continue
            if similarity(previous.content, last.content) < self.similarity_threshold:
                return False
            repeats += 1
            if repeats > self.max_repeat_allowed:
                return True
        return False

    def _sequence_loop(self, records: list[TeamRecord]) -> bool:
        n = len(records)
        for length in (2, 3):
            if n < 2 * length:
                continue
            if all(
                records[n - 1 - i].source == records[n - 1 - i - length].source
                and similarity(records[n - 1 - i].content, records[n - 1 - i - length].content)
                >= self.similarity_threshold
                for i in range(length)
            ):
                return True
        return False


def interceptor_name(interceptor: Any) -> str:
    return type(interceptor).__name__

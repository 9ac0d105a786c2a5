"""What a team run keeps: its records, route, turn count, protocol state, working memory and final answer.

A ``TeamTrace`` lives in the run's session values under ``__<team name>``, so that a checkpoint holds it and a
resumed run (in another process, say) goes on where the team stood. Everything in it is plain data the codec
writes: the protocols keep their state in ``protocol_context`` as JSON values.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

from ..codec import register_type
from ..schema import Message, TextPart

__all__ = ["TeamMetrics", "TeamRecord", "TeamTrace", "trace_key"]

RecordRole = Literal["assistant", "system"]

NO_PROGRESS = "No progress yet."


def trace_key(team_name: str) -> str:
    """The session value a team's trace is kept under."""
    return f"__{team_name}"


@dataclass(slots=True, kw_only=True)
class TeamRecord:
    """One entry of the collaboration: a member's output (``role == "assistant"``) or a system note."""

    role: RecordRole
    source: str
    content: str
    duration_ms: int = 0

    @property
    def is_agent(self) -> bool:
        return self.role == "assistant"


@dataclass(slots=True, kw_only=True)
class TeamMetrics:
    """What a team's run cost: the supervisor's model calls and tokens, its members' (and nested teams') included."""

    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_duration_ms: int = 0

    def add(self, other: TeamMetrics) -> None:
        self.model_calls += other.model_calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens

    def reset(self) -> None:
        self.model_calls = self.prompt_tokens = self.completion_tokens = self.total_duration_ms = 0


@dataclass(slots=True, kw_only=True)
class TeamTrace:
    """A team's collaboration state; see the module doc. ``flow`` is the graph's position (the flow context as
    JSON) while a run is suspended or interrupted."""

    team_name: str = ""
    prompt: list[Message] = field(default_factory=list)
    records: list[TeamRecord] = field(default_factory=list)
    route: str | None = None
    last_decision: str | None = None
    last_agent_name: str | None = None
    turn_count: int = 0
    protocol_context: dict[str, Any] = field(default_factory=dict)
    working_memory: list[Message] = field(default_factory=list)
    final_answer: str | None = None
    metrics: TeamMetrics = field(default_factory=TeamMetrics)
    pending: bool = False
    pending_reason: str | None = None
    flow: str | None = None
    begin_ms: int = 0

    def reset(self, prompt: list[Message]) -> None:
        """A new task: everything of the last one goes."""
        self.prompt = list(prompt)
        self.records.clear()
        self.route = None
        self.last_decision = None
        self.last_agent_name = None
        self.turn_count = 0
        self.protocol_context.clear()
        self.working_memory.clear()
        self.final_answer = None
        self.metrics.reset()
        self.pending = False
        self.pending_reason = None
        self.flow = None
        self.begin_ms = int(time.time() * 1000)

    @property
    def user_content(self) -> str:
        """The task as the user put it: the prompt's last user message with text (Solon's ``getUserContent``)."""
        for message in reversed(self.prompt):
            if message.role == "user" and message.text:
                return message.text
        return ""

    @property
    def multimodal(self) -> bool:
        """Whether the task came with more than text (an image, say)."""
        return any(
            message.role == "user" and any(not isinstance(part, TextPart) for part in message.parts)
            for message in self.prompt
        )

    def next_turn(self) -> int:
        self.turn_count += 1
        return self.turn_count

    def add_record(self, role: RecordRole, source: str, content: str, duration_ms: int = 0) -> None:
        self.records.append(TeamRecord(role=role, source=source, content=content, duration_ms=duration_ms))

    @property
    def last_agent_content(self) -> str:
        for record in reversed(self.records):
            if record.is_agent:
                return record.content
        return ""

    @property
    def last_agent_duration_ms(self) -> int:
        for record in reversed(self.records):
            if record.is_agent:
                return record.duration_ms
        return 0

    def agent_records(self) -> list[TeamRecord]:
        return [record for record in self.records if record.is_agent]

    def formatted_history(self, window: int = 0, include_system: bool = True) -> str:
        """The records as the supervisor and the members read them, the last ``window`` (0: all)."""
        if not self.records:
            return NO_PROGRESS
        records = self.records if include_system else self.agent_records()
        if 0 < window < len(records):
            records = records[-window:]
        return "\n\n".join(
            f"### {'Expert Output' if r.is_agent else 'System Instruction'} from [{r.source}]:\n{r.content}"
            for r in records
        )


register_type(TeamRecord, name="team.TeamRecord")
register_type(TeamMetrics, name="team.TeamMetrics")
register_type(TeamTrace, name="team.TeamTrace")

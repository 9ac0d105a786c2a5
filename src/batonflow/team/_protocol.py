"""The protocol SPI: how a protocol shapes a team's graph, what its members and its supervisor are given, how
routing decisions are read and when the team may finish; and ``TeamProtocolBase``, the defaults every protocol but
``none`` builds on.

Prompts handed to a protocol are the team's own (its working memory): ``prepare_agent_prompt`` returns a new list
and never changes the one it got.
"""

from __future__ import annotations

import json
from typing import Any

from ..adk import Language
from ..errors import UserError
from ..graph import FlowContext, GraphSpec, NodeSpec
from ..schema import Message
from ._config import TeamConfig
from ._current import current_trace
from ._member import Member
from ._texts import phrase
from ._tools import ProtocolTool
from ._trace import TeamTrace

__all__ = ["NoneProtocol", "TeamProtocol", "TeamProtocolBase", "sniff_json"]

SUPERVISOR = "supervisor"
SYSTEM = "system"
START = "start"
END = "end"


def sniff_json(content: str | None) -> dict[str, Any]:
    """The JSON object from the first ``{`` to the last ``}`` of ``content``; ``{}`` if there is none or it does not
    parse (a model's report is often prose around a JSON block)."""
    if not content:
        return {}
    start, end = content.find("{"), content.rfind("}")
    if start == -1 or end <= start:
        return {}
    try:
        value = json.loads(content[start : end + 1])
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class TeamProtocol:
    """A collaboration protocol; override what yours changes. Bound to one team when the team is made
    (``self.config``)."""

    name = "CUSTOM"
    agent_tool_names: frozenset[str] = frozenset()
    """The names of the tools ``agent_tools`` may give: members on the loop are fitted to offer them."""

    def __init__(self) -> None:
        self._config: TeamConfig | None = None

    def bind(self, config: TeamConfig) -> None:
        if self._config is not None and self._config is not config:
            raise UserError(
                f"protocol {self.name}: expected a protocol instance per team, got one already bound to team "
                f"'{self._config.name}' (for team '{config.name}')"
            )
        self._config = config

    @property
    def config(self) -> TeamConfig:
        if self._config is None:
            raise UserError(f"protocol {self.name} is not bound to a team: give it to a TeamAgent first")
        return self._config

    def build_graph(self, spec: GraphSpec) -> None:
        """Add the team's nodes and links to ``spec`` (node ids: ``start``, ``supervisor``, member names, ``end``)."""

    # -- the member stage --------------------------------------------------------------------------------------

    def agent_tools(self, trace: TeamTrace, member: Member) -> list[ProtocolTool]:
        """Tools the protocol gives a member for this turn (members on the loop get them)."""
        return []

    def agent_instruction(self, trace: TeamTrace, member: Member, language: Language) -> str:
        """Text added to a member's instructions for this turn."""
        return ""

    def prepare_agent_prompt(
        self, trace: TeamTrace, member: Member, prompt: list[Message], language: Language
    ) -> list[Message]:
        """The messages a member runs on: a copy of ``prompt``, with what the protocol adds."""
        return list(prompt)

    def resolve_agent_output(self, trace: TeamTrace, member: Member, content: str) -> str:
        """What is recorded of a member's answer."""
        return content

    def on_agent_end(self, trace: TeamTrace, member: Member) -> None:
        """After a member's record was added."""

    # -- the supervisor stage ----------------------------------------------------------------------------------

    def supervisor_tools(self, trace: TeamTrace) -> list[ProtocolTool]:
        """Tools the supervisor's model is offered; the supervisor answers their calls itself."""
        return []

    def supervisor_instruction(self, language: Language) -> str:
        """Static text of the supervisor's system prompt, after the current task."""
        return ""

    def prepare_supervisor_instruction(self, trace: TeamTrace, language: Language) -> str:
        """A dynamic part after the system prompt (a dashboard), joined with a blank line."""
        return ""

    def prepare_supervisor_context(self, trace: TeamTrace, language: Language) -> str:
        """Text before the progress in the supervisor's user message."""
        return ""

    def should_supervisor_execute(self, trace: TeamTrace) -> bool:
        return True

    def resolve_supervisor_route(self, trace: TeamTrace, decision: str) -> str | None:
        """A route the protocol reads from ``decision`` (a member, or a node of its own), or None."""
        return None

    def should_supervisor_route(self, trace: TeamTrace, decision: str) -> bool:
        """Whether a decision that finishes may finish."""
        return True

    def on_supervisor_routing(self, trace: TeamTrace, next_route: str) -> None:
        """Every route the supervisor commits."""

    # -- the end -----------------------------------------------------------------------------------------------

    def on_team_finished(self, trace: TeamTrace) -> None:
        """When a team run ends, however it ends."""


class NoneProtocol(TeamProtocol):
    """No graph at all: the team's ``graph_adjuster`` builds the whole topology."""

    name = "NONE"


class TeamProtocolBase(TeamProtocol):
    """Solon's ``TeamProtocolBase``: links by route, the members' system context, the candidates line, routing by
    exact name and the finish guard (some member has spoken, after at least one decision)."""

    def link_agents(self, node: NodeSpec) -> None:
        """A link from ``node`` to each member, taken when the trace's route names it."""
        for name in self.config.members.names():
            node.link_add(name, title=f"route = {name}", when=_routes_to(name))

    def candidates(self) -> list[str]:
        return self.config.members.names()

    def is_logic_finished(self, trace: TeamTrace) -> bool:
        if not trace.records or trace.turn_count < 1:
            return False
        return any(record.is_agent for record in trace.records)

    def agent_instruction(self, trace: TeamTrace, member: Member, language: Language) -> str:
        window = max(1, self.config.record_window)
        history = trace.formatted_history(window, include_system=False)
        profile = member.profile_text(language)
        return phrase("protocol.agent_instruction", language, profile=profile, window=window, history=history)

    def should_supervisor_route(self, trace: TeamTrace, decision: str) -> bool:
        if self.config.finish_marker in decision:
            if self.config.graph_adjuster is not None:
                return True  # the user shaped the graph and decides when it ends
            if not self.is_logic_finished(trace):
                return False
        return True

    def supervisor_instruction(self, language: Language) -> str:
        candidates = ", ".join(self.candidates())
        marker = self.config.finish_marker
        return phrase("protocol.supervisor_instruction", language, name=self.name, candidates=candidates, marker=marker)

    def resolve_supervisor_route(self, trace: TeamTrace, decision: str) -> str | None:
        return self.config.members.canonical(decision)


def _routes_to(name: str) -> Any:
    key = name.lower()

    def test(context: FlowContext) -> bool:
        route = current_trace().route
        return route is not None and route.lower() == key

    return test

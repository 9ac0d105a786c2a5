"""``agent_card``: an agent's A2A card, its skills read off the agent's description, tools, sub-agents and team
members."""

from __future__ import annotations

from a2a.types import AgentCard

from batonflow import ChatModelAgent
from batonflow.interop import agent_card
from batonflow.team import TeamAgent
from batonflow.testing import ScriptedModel

from .agui_checks import refunds, router


def skills(card: AgentCard) -> list[tuple[str, list[str]]]:
    return [(skill.id, list(skill.tags)) for skill in card.skills]


def test_an_agent_s_card_has_a_skill_for_it_and_one_for_each_tool() -> None:
    card = agent_card(refunds(), url="http://host/a2a/refunds", version="2.0.0")
    assert (card.name, card.description, card.version) == ("refunds", "Refunds orders.", "2.0.0")
    assert skills(card) == [("refunds", ["agent"]), ("refund", ["tool"])]
    assert card.skills[1].description.startswith("Refund an order once a human approved it.")
    assert card.capabilities.streaming and not card.capabilities.push_notifications
    [interface] = card.supported_interfaces
    assert (interface.url, interface.protocol_binding) == ("http://host/a2a/refunds", "JSONRPC")


def test_sub_agents_and_team_members_are_skills_and_an_agent_without_a_description_gets_one() -> None:
    assert skills(agent_card(router(), url="http://host/a2a/router")) == [
        ("router", ["agent"]),
        ("refunds", ["sub-agent"]),
    ]
    member = ChatModelAgent(name="writer", description="writes", model=ScriptedModel([]))
    team = agent_card(TeamAgent(protocol="sequential", members=[member]), url="http://host/a2a/team")
    assert ("writer", ["team member"]) in skills(team)
    bare = agent_card(ChatModelAgent(name="bare", model=ScriptedModel([])), url="http://host/a2a/bare")
    assert bare.description == "The batonflow agent bare."

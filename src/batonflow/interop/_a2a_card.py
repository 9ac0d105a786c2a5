"""A batonflow agent's A2A agent card: its name and description, one skill for what the agent does and one for each
of its tools, sub-agents and team members (what a caller may ask it for), served over JSON-RPC with streaming.

The card is the ``a2a-sdk`` package's own ``AgentCard``; what it says is read off the agent: ``tools`` (tools
with an ``info``), ``sub_agents`` (a ``FlowAgent``'s, or its inner agent's), and ``members`` (a team's).
"""

from collections.abc import Iterator
from typing import Any

from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, TransportProtocol

from ..adk import Agent

__all__ = ["agent_card"]

_TEXT = ["text/plain"]


def agent_card(agent: Agent, *, url: str, version: str = "1.0.0") -> AgentCard:
    """The A2A card of ``agent`` served at ``url`` (its JSON-RPC endpoint), at ``version`` (the agent's own)."""
    description = agent.description or f"The batonflow agent {agent.name}."
    skills = [AgentSkill(id=agent.name, name=agent.name, description=description, tags=["agent"])]
    seen = {agent.name}
    for skill in _skills(agent):
        if skill.id not in seen:
            seen.add(skill.id)
            skills.append(skill)
    return AgentCard(
        name=agent.name,
        description=description,
        version=version,
        supported_interfaces=[
            AgentInterface(
                url=url, protocol_binding=TransportProtocol.JSONRPC.value, protocol_version=PROTOCOL_VERSION_CURRENT
            )
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=[*_TEXT, "application/json"],
        default_output_modes=_TEXT,
        skills=skills,
    )


def _skills(agent: Any) -> Iterator[AgentSkill]:
    """The skills of ``agent``'s tools, sub-agents and members, and of those of an agent it wraps."""
    inner = getattr(agent, "agent", None)
    for tool in getattr(agent, "tools", None) or ():
        info = getattr(tool, "info", None)
        if info is not None and getattr(info, "name", None):
            yield AgentSkill(id=info.name, name=info.name, description=info.description or info.name, tags=["tool"])
    for sub in getattr(agent, "sub_agents", None) or ():
        yield AgentSkill(id=sub.name, name=sub.name, description=sub.description or sub.name, tags=["sub-agent"])
    members = getattr(agent, "members", None)
    for member in members if isinstance(members, list) else ():
        described = getattr(member.agent, "description", "") or member.name
        yield AgentSkill(id=member.name, name=member.name, description=described, tags=["team member"])
    if inner is not None and inner is not agent and isinstance(inner, Agent):
        yield from _skills(inner)

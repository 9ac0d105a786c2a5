"""Prebuilt multi-agent shapes, after Eino's ``adk/prebuilt``."""

from __future__ import annotations

from collections.abc import Sequence

from ._agent import Agent
from ._deterministic import with_deterministic_transfer
from ._flow import FlowAgent, set_sub_agents

__all__ = ["supervisor"]


def supervisor(supervisor_agent: Agent, sub_agents: Sequence[Agent]) -> FlowAgent:
    """A supervisor that hands work to ``sub_agents`` by transfer; each of them always hands back to it.

    The run ends when the supervisor answers without transferring.
    """
    wrapped = [with_deterministic_transfer(agent, to=[supervisor_agent.name]) for agent in sub_agents]
    return set_sub_agents(supervisor_agent, wrapped)

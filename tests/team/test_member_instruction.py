"""Every protocol's member instruction reaches a ``ReActAgent`` or ``SimpleAgent`` member in its own system prompt,
appended as Solon's ``injectAgentInstruction`` appends it; a ``ChatModelAgent`` reads the same text as a system
message of its input."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from batonflow import Agent, ChatModelAgent, ReActAgent, Runner, SimpleAgent
from batonflow.schema import Message, ToolInfo, assistant
from batonflow.team import PROTOCOL_NAMES, TeamAgent
from batonflow.testing import FunctionModel

PROTOCOLS = [name for name in PROTOCOL_NAMES if name != "none"]
OWN_PROMPT = "You are the worker. Be exact."


def supervisor() -> FunctionModel:
    """Sends the worker in once, then finishes."""
    calls: list[int] = []

    def decide(messages: Sequence[Message], tools: Sequence[ToolInfo]) -> Message:
        calls.append(1)
        return assistant("worker" if len(calls) == 1 else "[TEAM_AGENT_FINISH] done")

    return FunctionModel(decide)


def answering() -> FunctionModel:
    return FunctionModel(lambda messages, tools: assistant('Done {"result": "ok", "status": "done"}'))


def worker(kind: str, model: FunctionModel) -> Agent:
    if kind == "react":
        return ReActAgent(name="worker", description="does the work", model=model, instruction=OWN_PROMPT)
    if kind == "simple":
        return SimpleAgent(name="worker", description="does the work", model=model, system_prompt=OWN_PROMPT)
    return ChatModelAgent(name="worker", description="does the work", model=model)


async def first_request(protocol: str, kind: str) -> tuple[list[Message], str]:
    """The worker's first request, and the system prompt it builds of its own (it has no tools)."""
    model = answering()
    member = worker(kind, model)
    team = TeamAgent(model=supervisor(), protocol=protocol, members=[member], max_turns=3)
    await Runner(team).call("Add two numbers")
    assert model.requests, f"protocol {protocol}: the worker never ran"
    request = model.requests[0]
    own = member.policy.system_prompt(OWN_PROMPT, []) if isinstance(member, ReActAgent) else OWN_PROMPT
    return list(request.messages), own


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("kind", ["react", "simple"])
async def test_a_member_with_its_own_prompt_reads_the_instruction_appended_to_it(protocol: str, kind: str) -> None:
    reference, _ = await first_request(protocol, "chat")
    assert reference[0].role == "system" and reference[0].content.startswith("## SYSTEM CONTEXT\n")
    instruction = reference[0].content
    if kind == "react" and protocol in ("blackboard", "hierarchical", "market_based"):
        # The hierarchical family names a member's own finish marker, which only the ReAct agent has.
        report = '"status": "done"}).'
        marker = "\n2. **Finish Marker**: Upon completion, must include: `[WORKER_FINISH]`\n"
        instruction = instruction.replace(report, report + marker, 1)
    sent, own = await first_request(protocol, kind)
    systems = [m.content for m in sent if m.role == "system"]
    assert len(systems) == 1 and sent[0].role == "system"
    assert systems[0] == own + instruction  # Solon: the agent's prompt, then the protocol's text, nothing between
    assert [m.content for m in sent if m.role != "system"] == [m.content for m in reference[1:]]


@pytest.mark.parametrize(
    ("protocol", "rule"),
    [
        ("hierarchical", "## Collaboration & Reporting\n\n1. Reporting Requirement:"),
        ("a2a", "\n## Collaboration Guidelines\n"),
    ],
)
async def test_the_protocol_rules_reach_a_react_member(protocol: str, rule: str) -> None:
    sent, _ = await first_request(protocol, "react")
    assert rule in sent[0].content


async def test_a_simple_member_without_a_prompt_reads_the_instruction_alone() -> None:
    model = answering()
    member = SimpleAgent(name="worker", description="does the work", model=model)
    await Runner(TeamAgent(model=supervisor(), protocol="hierarchical", members=[member])).call("Add two numbers")
    sent = model.requests[0].messages
    assert [m.role for m in sent].count("system") == 1
    assert sent[0].content.startswith("## SYSTEM CONTEXT\n### Your Identity\n")


async def test_outside_a_team_an_input_system_message_is_still_dropped() -> None:
    model = answering()
    agent = SimpleAgent(name="worker", model=model, system_prompt=OWN_PROMPT)
    await Runner(agent).call([Message(role="system", content="ignored"), Message(role="user", content="hi")])
    assert [m.content for m in model.requests[0].messages] == [OWN_PROMPT, "hi"]

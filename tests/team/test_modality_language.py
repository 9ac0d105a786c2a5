"""Tasks with images, and each protocol's supervisor texts in Chinese."""

from __future__ import annotations

import pytest

from batonflow import AgentInput, ChatModelAgent, Runner, set_language
from batonflow.schema import ImagePart, TextPart, assistant, user
from batonflow.team import PROTOCOL_NAMES, Member, TeamAgent
from batonflow.testing import ScriptedModel, tool_calls

from .conftest import member


def with_image(text: str) -> AgentInput:
    return AgentInput(messages=[user([TextPart(text=text), ImagePart(url="https://example.com/cat.png")])])


async def collect(team: TeamAgent, input: AgentInput) -> str:
    events = [event async for event in team.run(input)]
    message = events[-1].output.message_output.message  # type: ignore[union-attr]
    assert message is not None
    return message.text


async def test_sequential_skips_a_member_that_cannot_read_images() -> None:
    seer = Member(member("seer", "a cat on a mat"), input_modes=["image"])
    blind = member("blind", "never asked")
    team = TeamAgent(protocol="sequential", members=[blind, seer])
    assert await collect(team, with_image("What is in the picture?")) == "a cat on a mat"
    assert blind.model.requests == []  # type: ignore[attr-defined]


async def test_a2a_refuses_a_transfer_to_a_member_that_cannot_read_images() -> None:
    first = ChatModelAgent(
        name="first",
        description="starts",
        model=ScriptedModel([tool_calls(("__transfer_to__", {"target": "blind"})), assistant("I will look myself")]),
    )
    team = TeamAgent(
        model=ScriptedModel([assistant("[TEAM_AGENT_FINISH]")]), protocol="a2a", members=[first, member("blind")]
    )
    assert await collect(team, with_image("Look")) == "I will look myself"


async def test_hierarchical_tells_members_about_the_attachments() -> None:
    seer = Member(member("seer", "a cat"), input_modes=["image"])
    team = TeamAgent(model=ScriptedModel([assistant("seer"), assistant("[TEAM_AGENT_FINISH]")]), members=[seer])
    await collect(team, with_image("Look"))
    notice = seer.agent.model.requests[0].messages[-1].content  # type: ignore[attr-defined]
    assert notice.endswith("\n- [IMPORTANT]: Multimodal content detected. Process based on the attachments.")


CHINESE = {
    "hierarchical": "\n### 管理决策准则：\n1. **模态适配**",
    "sequential": "\n## 协作协议：SEQUENTIAL\n- 备选成员: [a, b]\n- 决策要求：任务完成请输出 [TEAM_AGENT_FINISH]",
    "swarm": "\n### SWARM 决策准则：\n1. **任务终止**：若任务完成，输出 `[TEAM_AGENT_FINISH]`。",
    "a2a": "\n### A2A 协作准则：\n1. **直接交付**：任务完成时请直接输出 `[TEAM_AGENT_FINISH]`",
    "contract_net": "\n### CNP 协作规范：\n1. **工具招标**：若无法确定最佳人选，优先调用 `__call_for_bids__`。",
    "blackboard": "\n### 黑板管理原则：\n1. **依据待办**：优先处理黑板中 `todo` 列表的任务。",
    "market_based": "\n### 调度准则：简单任务看价格(Price)，攻坚任务看信誉(Score)与性价比(ROI)。",
}


@pytest.mark.parametrize("protocol", sorted(CHINESE))
def test_each_protocols_supervisor_instruction_in_chinese(protocol: str) -> None:
    set_language("zh")
    team = TeamAgent(model=ScriptedModel([]), protocol=protocol, members=[member("a"), member("b")])
    assert CHINESE[protocol] in team.protocol.supervisor_instruction("zh")


def test_every_protocol_has_a_name() -> None:
    assert PROTOCOL_NAMES == (
        "a2a",
        "blackboard",
        "contract_net",
        "hierarchical",
        "market_based",
        "none",
        "sequential",
        "swarm",
    )


async def test_a_chinese_team_runs_end_to_end() -> None:
    set_language("zh")
    supervisor = ScriptedModel([assistant("a"), assistant("[TEAM_AGENT_FINISH] 完成")])
    result = await Runner(TeamAgent(model=supervisor, members=[member("a", "好的")])).call("做")
    assert result.text == "完成"
    sent = supervisor.requests[1].messages[0].content
    assert "\n## 运行看板 (Hierarchical Dashboard)\n```json\n" in sent

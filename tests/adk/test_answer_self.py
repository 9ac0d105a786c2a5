"""A router that may answer itself: ``answer_self`` puts its own name in the transfer tool's choice of agents."""

from __future__ import annotations

import pytest

from batonflow.adk import (
    AgentEvent,
    ChatModelAgent,
    FlowAgent,
    Runner,
    TransferToAgentTool,
    collect_events,
    set_sub_agents,
)
from batonflow.errors import TransferError, UserError
from batonflow.schema import Message, assistant
from batonflow.testing import ScriptedModel, tool_calls


def transfer(name: str) -> Message:
    return tool_calls(("transfer_to_agent", {"agent_name": name}))


def shop(*router_answers: Message, answer_self: bool = True) -> tuple[ChatModelAgent, ChatModelAgent, FlowAgent]:
    router = ChatModelAgent(
        name="router", description="front desk", model=ScriptedModel(list(router_answers)), answer_self=answer_self
    )
    refund = ChatModelAgent(name="refund", description="refunds", model=ScriptedModel([assistant("Refunded.")]))
    return router, refund, set_sub_agents(router, [refund])


def said(events: list[AgentEvent]) -> list[tuple[str, str]]:
    found = []
    for event in events:
        variant = event.message_output
        if variant is not None and variant.message is not None:
            found.append((event.agent_name, variant.message.content))
    return found


async def test_the_router_offers_its_own_name_to_answer_itself() -> None:
    router, _, tree = shop(transfer("router"), assistant("We open at 10 on Sundays."))
    await collect_events(Runner(tree).query("What time do you open on Sunday?"))
    assert isinstance(router.model, ScriptedModel)
    parameter = router.model.requests[0].tools[0].parameters["properties"]["agent_name"]
    assert parameter["enum"] == ["refund", "router"]
    assert parameter["description"] == (
        "the name of the agent to transfer to, or your own name (router) to answer the request yourself"
    )


async def test_naming_itself_transfers_nothing_and_the_router_answers() -> None:
    _, refund, tree = shop(transfer("router"), assistant("We open at 10 on Sundays."))
    events = await collect_events(Runner(tree).query("What time do you open on Sunday?"))
    assert all(event.action is None for event in events)
    assert said(events) == [
        ("router", ""),
        ("router", "no transfer: you [router] answer the request yourself, now, in words"),
        ("router", "We open at 10 on Sundays."),
    ]
    assert isinstance(refund.model, ScriptedModel) and refund.model.requests == []


async def test_a_router_that_may_answer_itself_still_transfers() -> None:
    _, _, tree = shop(transfer("refund"))
    events = await collect_events(Runner(tree).query("Money back for order 7, please."))
    assert said(events)[-1] == ("refund", "Refunded.")


async def test_without_answer_self_naming_itself_is_an_unknown_agent() -> None:
    _, _, tree = shop(transfer("router"), answer_self=False)
    events = await collect_events(Runner(tree).query("What time do you open on Sunday?"))
    assert isinstance(events[-1].error, TransferError)
    assert str(events[-1].error) == "transfer failed: agent 'router' not found when transferring from 'router'"


def test_answer_self_needs_the_calling_agent() -> None:
    with pytest.raises(UserError, match=r"answer_self: expected the calling agent's name as source, got ''"):
        TransferToAgentTool(["refund"], answer_self=True)

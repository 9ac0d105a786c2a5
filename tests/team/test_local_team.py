"""Three members on the offline SmolLM2-135M model complete a small task end to end (the sequential protocol: a
model of that size cannot pick members; see examples/team_research.py)."""

from __future__ import annotations

from batonflow import ChatModelAgent, ModelSettings, Runner
from batonflow.models.local import LlamaCppChatModel
from batonflow.team import TeamAgent


async def test_a_three_member_team_on_the_local_model() -> None:
    model = LlamaCppChatModel(seed=7)
    short = ModelSettings(max_tokens=40)
    roles = [
        ("researcher", "List two short facts about the topic."),
        ("writer", "Write one short paragraph from the facts given."),
        ("reviewer", "Check the paragraph. Reply APPROVED and the paragraph."),
    ]
    members = [
        ChatModelAgent(name=name, description=name, instruction=text, model=model, model_settings=short)
        for name, text in roles
    ]
    result = await Runner(TeamAgent(protocol="sequential", members=members)).call(
        "Write a short paragraph about honey bees."
    )
    trace = result.session_values["__team_agent"]
    assert [record.source for record in trace.records] == ["researcher", "writer", "reviewer"]
    assert all(len(record.content) > 2 for record in trace.records)  # every stage passed the quality check
    stages = trace.protocol_context["sequence_state_obj"]["stages"]
    assert {stage["status"] for stage in stages.values()} == {"COMPLETED"}
    assert result.text == trace.records[-1].content
    assert "bee" in result.text.lower()  # on topic; what it says is not checked

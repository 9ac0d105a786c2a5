"""A team of three: a supervisor model routes a researcher, a writer and a reviewer until the reviewer approves.

By default the models are scripted, so the run is the same every time: the supervisor names each member in turn
and finishes with the finish marker, whose text is the team's answer. ``--local`` runs the same three members on
the offline SmolLM2-135M model under the ``sequential`` protocol (no supervisor model): a 135M model writes
fluent, on-topic text, but as a supervisor it does not name members (it copies parts of its prompt), so the
supervisor's fallbacks would do the routing; and as a member it repeats the text before it rather than revising
it, and never says APPROVED. No ``max_tokens`` is needed: the local model keeps each request inside its context
window (an answer is cut to what the prompt leaves of it).
"""

import asyncio
import sys

from batonflow import ChatModelAgent, Runner, load_model
from batonflow.models import ChatModel
from batonflow.schema import assistant
from batonflow.team import TeamAgent, TeamTrace
from batonflow.testing import ScriptedModel


def members(models: list[ChatModel]) -> list[ChatModelAgent]:
    researcher, writer, reviewer = models
    return [
        ChatModelAgent(
            name="researcher",
            description="lists facts about the topic",
            instruction="List two short facts about the topic.",
            model=researcher,
        ),
        ChatModelAgent(
            name="writer",
            description="writes one paragraph from the facts",
            instruction="Write one short paragraph from the facts given.",
            model=writer,
        ),
        ChatModelAgent(
            name="reviewer",
            description="checks the paragraph",
            instruction="Check the paragraph. Reply APPROVED and the paragraph.",
            model=reviewer,
        ),
    ]


def scripted_team() -> TeamAgent:
    supervisor = ScriptedModel(
        [
            assistant("researcher"),
            assistant("next: writer"),
            assistant("route to reviewer"),
            assistant("[TEAM_AGENT_FINISH] Honey bees pollinate crops and make honey from nectar."),
        ]
    )
    scripts = [
        ["1. Bees pollinate crops. 2. Bees make honey from nectar."],
        ["Honey bees pollinate crops and make honey from nectar."],
        ["APPROVED: Honey bees pollinate crops and make honey from nectar."],
    ]
    models: list[ChatModel] = [ScriptedModel([assistant(text) for text in script]) for script in scripts]
    return TeamAgent(model=supervisor, members=members(models))


def local_team() -> TeamAgent:
    model = load_model("local:smollm2")
    return TeamAgent(protocol="sequential", members=members([model, model, model]))


async def main() -> None:
    team = local_team() if "--local" in sys.argv else scripted_team()
    result = await Runner(team).call("Write a short paragraph about honey bees.")
    for event in result.events:
        message = event.output.message_output.message if event.output and event.output.message_output else None
        if message is not None:
            where = " > ".join(str(step) for step in event.run_path)
            print(f"[{where}] {message.text.strip()}")
    trace = result.session_values["__team_agent"]
    assert isinstance(trace, TeamTrace)
    print(f"turns: {trace.turn_count}, members: {[r.source for r in trace.records]}")


if __name__ == "__main__":
    asyncio.run(main())

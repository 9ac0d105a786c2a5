import typing

from batonflow.adk import Runner, collect_events
from batonflow.adk.loop import (
    AgentSetup,
    Answer,
    AskAgain,
    EinoPolicy,
    ModelAgent,
    Outcome,
    ReactState,
    Routed,
)
from batonflow.schema import Message, assistant, user
from batonflow.testing import ScriptedModel


class Persistent(EinoPolicy):
    """Sends an answer that says "maybe" back to the model, and stops after two model calls with its own word."""

    def before_turn(self, state: ReactState) -> Answer | None:
        return Answer(assistant("giving up")) if state.turn >= 2 else None

    def route(self, message: Message, state: ReactState, setup: AgentSetup) -> Routed:
        if "maybe" in message.content:
            return AskAgain([user("Be sure.")], keep=False)
        return super().route(message, state, setup)


def texts(events: list) -> list[str]:
    return [e.message_output.message.content for e in events if e.message_output and e.message_output.message]


async def test_a_policy_decides_what_the_models_message_means() -> None:
    model = ScriptedModel([assistant("maybe"), assistant("yes")])
    agent = ModelAgent(name="a", model=model, policy=Persistent())
    events = await collect_events(Runner(agent).query("sure?"))
    assert texts(events) == ["maybe", "yes"]
    # The doubtful answer was not kept: the second call saw the question and the nudge only.
    assert [m.content for m in model.requests[1].messages] == ["sure?", "Be sure."]


async def test_a_policy_may_end_the_run_before_a_model_call() -> None:
    model = ScriptedModel([assistant("maybe"), assistant("maybe")])
    events = await collect_events(Runner(ModelAgent(name="a", model=model, policy=Persistent())).query("sure?"))
    assert texts(events) == ["maybe", "maybe", "giving up"]
    model.assert_complete()


def test_every_outcome_carries_its_own_tag() -> None:
    kinds = [typing.get_type_hints(cls)["kind"] for cls in typing.get_args(Outcome)]
    tags = [typing.get_args(kind)[0] for kind in kinds]
    assert tags == ["call_tools", "answer", "ask_again", "fail", "retry", "interrupt"]

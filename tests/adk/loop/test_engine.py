import typing
from dataclasses import replace

import pytest

from batonflow.adk import AgentMiddleware, ChatModelAgent, ChatModelAgentState, RunContext, Runner, collect_events
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
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import tool


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


# -- after_chat_model: the loop acts on the message as the middlewares left it (as Eino does) ------------------


ran: list[str] = []


@tool(threaded=False)
def note(text: str) -> str:
    """Note something down."""
    ran.append(text)
    return f"noted {text}"


def tool_pairs(messages: list[Message]) -> tuple[list[str], list[str]]:
    """The call ids the assistant messages make and the ids the tool results answer."""
    calls = [c.id for m in messages if m.role == "assistant" for c in m.tool_calls]
    return calls, [m.tool_call_id for m in messages if m.role == "tool"]


@pytest.mark.parametrize("streaming", [False, True])
async def test_a_tool_call_an_after_model_middleware_removes_does_not_run(streaming: bool) -> None:
    def drop_first_call(state: ChatModelAgentState, ctx: RunContext) -> None:
        message = state.messages[-1]
        if message.tool_calls:
            state.messages[-1] = replace(message, tool_calls=message.tool_calls[1:])

    ran.clear()
    model = ScriptedModel([tool_calls(("note", {"text": "a"}), ("note", {"text": "b"})), assistant("done")])
    middleware = AgentMiddleware(after_chat_model=drop_first_call)
    agent = ChatModelAgent(name="a", model=model, tools=[note], middlewares=[middleware])
    await collect_events(Runner(agent, enable_streaming=streaming).query("note a and b"))
    assert ran == ["b"]
    calls, results = tool_pairs(list(model.requests[1].messages))
    assert calls == results == ["call_2"]  # no result without its call: strict providers refuse those


async def test_a_tool_call_an_after_model_middleware_adds_runs() -> None:
    def add_call(state: ChatModelAgentState, ctx: RunContext) -> None:
        message = state.messages[-1]
        if not message.tool_calls and message.content == "I will not note it.":
            state.messages[-1] = tool_calls(("note", {"text": "c"}), id_prefix="added_")

    ran.clear()
    model = ScriptedModel([assistant("I will not note it."), assistant("done")])
    agent = ChatModelAgent(
        name="a", model=model, tools=[note], middlewares=[AgentMiddleware(after_chat_model=add_call)]
    )
    events = await collect_events(Runner(agent).query("note c"))
    assert ran == ["c"]
    assert texts(events)[-1] == "done"
    calls, results = tool_pairs(list(model.requests[1].messages))
    assert calls == results == ["added_1"]


async def test_a_message_whose_calls_a_middleware_removed_is_the_answer_as_left() -> None:
    def answer_instead(state: ChatModelAgentState, ctx: RunContext) -> None:
        state.messages[-1] = assistant("No notes today.")

    def keep_output(state: ChatModelAgentState, ctx: RunContext) -> None:
        outputs.append(ctx.get_session_value("said"))

    ran.clear()
    outputs: list[str] = []
    model = ScriptedModel([tool_calls(("note", {"text": "a"}))])
    middleware = AgentMiddleware(after_chat_model=answer_instead, after_agent=keep_output)
    agent = ChatModelAgent(name="a", model=model, tools=[note], output_key="said", middlewares=[middleware])
    events = await collect_events(Runner(agent).query("note a"))
    assert ran == []
    assert events[-1].error is None
    assert outputs == ["No notes today."]
    model.assert_complete()


async def test_a_middleware_that_empties_the_transcript_ends_the_run_with_eino_s_error() -> None:
    def clear(state: ChatModelAgentState, ctx: RunContext) -> None:
        state.messages.clear()

    model = ScriptedModel([assistant("hello")])
    agent = ChatModelAgent(name="a", model=model, middlewares=[AgentMiddleware(after_chat_model=clear)])
    events = await collect_events(Runner(agent).query("hi"))
    assert str(events[-1].error) == "no messages left in state after model call"

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from pydantic import BaseModel
from tests.growth import growth

from batonflow.adk import (
    AgentEvent,
    AgentInput,
    AgentTool,
    ChatModelAgent,
    RunContext,
    Runner,
    RunSession,
    SequentialAgent,
    collect_events,
    set_language,
    set_sub_agents,
)
from batonflow.agents import SimpleAgent, parse_output
from batonflow.errors import ModelConnectionError, ModelError, ModelHTTPError, RunError, UserError
from batonflow.models import JSONSchemaFormat, ModelSettings
from batonflow.schema import Message, Stream, assistant, system, tool_message, user
from batonflow.testing import ScriptedModel, split_message, tool_calls
from batonflow.tools import ToolInfo, tool


class Sleeps:
    """An injected ``sleep`` that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


class City(BaseModel):
    name: str
    population: int


CITY_SCHEMA: dict[str, Any] = {
    "title": "Weather",
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 2},
        "sky": {"enum": ["sunny", "cloudy", "rainy"]},
        "temperature": {"type": "number", "minimum": -90, "maximum": 60},
    },
    "required": ["city", "sky"],
    "additionalProperties": False,
}


async def run(
    agent: SimpleAgent,
    messages: Sequence[Message],
    *,
    streaming: bool = False,
    values: Mapping[str, Any] | None = None,
) -> tuple[list[AgentEvent], dict[str, Any]]:
    """The agent's events (streams joined) and the session values after the run."""
    ctx = RunContext(session=RunSession(values=dict(values or {})), enable_streaming=streaming)
    events = agent.run(AgentInput(messages=list(messages), enable_streaming=streaming), ctx)
    return await collect_events(Stream.from_async_iter(events)), ctx.session.values


def sent(model: ScriptedModel, call: int = 0) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in model.requests[call].messages]


def answers(events: list[AgentEvent]) -> list[str]:
    return [e.message_output.message.content for e in events if e.message_output and e.message_output.message]


# -- the request ------------------------------------------------------------------------------------------------------


async def test_system_prompt_is_rendered_from_session_values() -> None:
    model = ScriptedModel([assistant("Hello Ann")])
    agent = SimpleAgent(model=model, system_prompt="You greet {customer} in {{braces}}.")
    events = await collect_events(Runner(agent, session_values={"customer": "Ann"}).query("hi"))
    assert sent(model) == [("system", "You greet Ann in {braces}."), ("user", "hi")]
    assert answers(events) == ["Hello Ann"]


async def test_placeholder_without_a_session_value_is_an_error_event_and_no_model_call() -> None:
    model = ScriptedModel([])
    events, _ = await run(SimpleAgent(model=model, system_prompt="You greet {customer}."), [user("hi")])
    assert len(events) == 1
    assert isinstance(events[0].error, UserError)
    assert "expected a session value named 'customer', got only []" in str(events[0].error)
    assert model.requests == []


async def test_empty_system_prompt_sends_no_system_message() -> None:
    model = ScriptedModel([assistant("x")])
    await run(SimpleAgent(model=model), [user("hi")])
    assert sent(model) == [("user", "hi")]


async def test_history_window_sends_the_last_messages_before_the_prompt_and_drops_system_messages() -> None:
    model = ScriptedModel([assistant("fine")])
    conversation = [
        system("an old system prompt"),
        user("q1"),
        assistant("a1"),
        user("q2"),
        assistant("a2"),
        user("q3"),
        assistant("a3"),
        user("now?"),
    ]
    await run(SimpleAgent(model=model, system_prompt="Be brief.", history_window=3), conversation)
    assert sent(model) == [
        ("system", "Be brief."),
        ("assistant", "a2"),
        ("user", "q3"),
        ("assistant", "a3"),
        ("user", "now?"),
    ]


async def test_default_history_window_is_five_messages() -> None:
    model = ScriptedModel([assistant("ok")])
    conversation = [m for i in range(4) for m in (user(f"q{i}"), assistant(f"a{i}"))]
    await run(SimpleAgent(model=model), [*conversation, user("now?")])
    assert [content for _, content in sent(model)] == ["a1", "q2", "a2", "q3", "a3", "now?"]


async def test_a_history_shorter_than_the_window_is_sent_whole() -> None:
    model = ScriptedModel([assistant("ok")])
    conversation = [user("q1"), assistant("a1"), user("q2"), assistant("a2"), user("now?")]
    await run(SimpleAgent(model=model, history_window=5), conversation)
    assert [content for _, content in sent(model)] == ["q1", "a1", "q2", "a2", "now?"]


async def test_user_messages_that_end_the_input_are_all_the_current_prompt() -> None:
    model = ScriptedModel([assistant("ok")])
    conversation = [
        user("q1"),
        assistant("a1"),
        user("q2"),
        user("For context: [writer] said: draft."),
        user("For context: [editor] said: edited."),
    ]
    await run(SimpleAgent(model=model, history_window=1), conversation)
    assert sent(model) == [
        ("assistant", "a1"),
        ("user", "q2"),
        ("user", "For context: [writer] said: draft."),
        ("user", "For context: [editor] said: edited."),
    ]


async def test_input_that_ends_with_a_tool_result_has_that_result_as_the_prompt() -> None:
    model = ScriptedModel([assistant("ok")])
    conversation = [
        user("time?"),
        tool_calls(("clock", {})),
        tool_message("noon", tool_call_id="call_1", tool_name="clock"),
    ]
    await run(SimpleAgent(model=model, history_window=None), conversation)
    assert [m.role for m in model.requests[0].messages] == ["user", "assistant", "tool"]


async def test_history_window_zero_sends_only_the_prompt_and_none_sends_everything() -> None:
    conversation = [user("q1"), assistant("a1"), user("q2")]
    only_prompt = ScriptedModel([assistant("ok")])
    await run(SimpleAgent(model=only_prompt, history_window=0), conversation)
    assert sent(only_prompt) == [("user", "q2")]
    everything = ScriptedModel([assistant("ok")])
    await run(SimpleAgent(model=everything, history_window=None), conversation)
    assert sent(everything) == [("user", "q1"), ("assistant", "a1"), ("user", "q2")]


async def test_history_window_never_opens_on_tool_results_whose_call_it_cut_off() -> None:
    model = ScriptedModel([assistant("ok")])
    conversation = [
        user("weather?"),
        tool_calls(("weather", {"city": "Oslo"}), ("weather", {"city": "Rome"})),
        tool_message("rain", tool_call_id="call_1", tool_name="weather"),
        tool_message("sun", tool_call_id="call_2", tool_name="weather"),
        assistant("Oslo rain, Rome sun."),
        user("thanks"),
    ]
    await run(SimpleAgent(model=model, history_window=3), conversation)
    assert sent(model) == [("assistant", "Oslo rain, Rome sun."), ("user", "thanks")]


@pytest.mark.parametrize("streaming", [False, True], ids=["generate", "stream"])
async def test_think_tags_are_cleared_from_the_answer(streaming: bool) -> None:
    model = ScriptedModel([assistant("<think>The user wants a greeting.</think>\n\nHello!")])
    events, values = await run(SimpleAgent(model=model, output_key="out"), [user("hi")], streaming=streaming)
    assert values["out"] == "Hello!"
    if not streaming:  # a streamed answer's chunks reached the caller as they came
        assert answers(events) == ["Hello!"]


async def test_no_input_message_is_an_error_event() -> None:
    events, _ = await run(SimpleAgent(model=ScriptedModel([])), [])
    assert str(events[0].error) == "simple agent 'simple_agent': expected at least one input message, got none"


async def test_model_settings_are_passed_to_the_model() -> None:
    model = ScriptedModel([assistant("ok")])
    settings = ModelSettings(temperature=0.1, max_tokens=50)
    await run(SimpleAgent(model=model, model_settings=settings), [user("hi")])
    assert model.requests[0].settings is settings


# -- one call -------------------------------------------------------------------------------------------------------


async def test_tool_calls_come_back_unexecuted_after_exactly_one_model_call() -> None:
    calls: list[str] = []

    @tool(threaded=False)
    def weather(city: str) -> str:
        """The weather in a city."""
        calls.append(city)
        return "sunny"

    model = ScriptedModel([tool_calls(("weather", {"city": "Oslo"}))])
    extra = ToolInfo(name="clock", description="The time.")
    events, values = await run(
        SimpleAgent(model=model, tools=[weather, extra], output_key="out"), [user("Oslo weather?")]
    )
    assert len(model.requests) == 1
    assert [t.name for t in model.requests[0].tools] == ["weather", "clock"]
    assert len(events) == 1
    message = events[0].message_output.message if events[0].message_output else None
    assert message is not None and message.tool_calls[0].function.name == "weather"
    assert calls == []
    assert values == {"out": ""}


async def test_plain_answer_is_one_event_after_one_call() -> None:
    model = ScriptedModel([assistant("Paris.")])
    events, _ = await run(SimpleAgent(model=model), [user("Capital of France?")])
    assert answers(events) == ["Paris."]
    assert [e.error for e in events] == [None]
    assert len(model.requests) == 1
    model.assert_complete()


async def test_duplicate_tool_names_are_refused() -> None:
    info = ToolInfo(name="clock", description="The time.")
    with pytest.raises(UserError, match=r"expected unique tool names, got \['clock'\] more than once"):
        SimpleAgent(model=ScriptedModel([]), tools=[info, info])


# -- retries ----------------------------------------------------------------------------------------------------------


async def test_empty_answers_are_retried_with_exponential_delays() -> None:
    model = ScriptedModel([assistant(""), assistant("   "), assistant("At last.")])
    sleeps = Sleeps()
    events, _ = await run(SimpleAgent(model=model, sleep=sleeps), [user("hi")])
    assert answers(events) == ["At last."]
    assert len(model.requests) == 3
    assert sleeps.delays == [1.0, 2.0]


async def test_reasoning_without_an_answer_counts_as_empty() -> None:
    model = ScriptedModel([Message(role="assistant", reasoning_content="Hmm..."), assistant("Done.")])
    sleeps = Sleeps()
    events, _ = await run(SimpleAgent(model=model, sleep=sleeps), [user("hi")])
    assert answers(events) == ["Done."]
    assert sleeps.delays == [1.0]


async def test_empty_answers_up_to_max_retries_end_with_an_error_event() -> None:
    model = ScriptedModel([assistant("")] * 3)
    sleeps = Sleeps()
    events, values = await run(SimpleAgent(name="echo", model=model, output_key="out", sleep=sleeps), [user("hi")])
    assert len(events) == 1
    assert isinstance(events[0].error, ModelError)
    assert str(events[0].error) == (
        "simple agent 'echo' failed after 3 attempts: expected an answer from model 'scripted', "
        "got an empty response (no content and no tool calls)"
    )
    assert len(model.requests) == 3
    assert sleeps.delays == [1.0, 2.0]
    assert values == {}


async def test_one_attempt_means_no_retry() -> None:
    model = ScriptedModel([assistant("")])
    sleeps = Sleeps()
    events, _ = await run(SimpleAgent(model=model, max_retries=1, sleep=sleeps), [user("hi")])
    assert "failed after 1 attempt:" in str(events[0].error)
    assert sleeps.delays == []


async def test_delay_doubles_from_retry_delay_and_is_capped_at_thirty_seconds() -> None:
    short = Sleeps()
    await run(
        SimpleAgent(model=ScriptedModel([assistant("")] * 4), max_retries=4, retry_delay=0.5, sleep=short),
        [user("hi")],
    )
    assert short.delays == [0.5, 1.0, 2.0]
    long = Sleeps()
    await run(
        SimpleAgent(model=ScriptedModel([assistant("")] * 3), retry_delay=20.0, sleep=long),
        [user("hi")],
    )
    assert long.delays == [20.0, 30.0]


async def test_http_503_is_retried() -> None:
    model = ScriptedModel([ModelHTTPError("unavailable", status_code=503), assistant("Back.")])
    sleeps = Sleeps()
    events, _ = await run(SimpleAgent(model=model, sleep=sleeps), [user("hi")])
    assert answers(events) == ["Back."]
    assert sleeps.delays == [1.0]


async def test_http_400_is_not_retried() -> None:
    failure = ModelHTTPError("bad request", status_code=400)
    model = ScriptedModel([failure, assistant("never")])
    sleeps = Sleeps()
    events, _ = await run(SimpleAgent(model=model, sleep=sleeps), [user("hi")])
    assert [e.error for e in events] == [failure]
    assert len(model.requests) == 1
    assert sleeps.delays == []


async def test_user_error_is_not_retried() -> None:
    failure = UserError("a developer mistake")
    model = ScriptedModel([failure, assistant("never")])
    sleeps = Sleeps()
    events, _ = await run(SimpleAgent(model=model, sleep=sleeps), [user("hi")])
    assert [e.error for e in events] == [failure]
    assert len(model.requests) == 1
    assert sleeps.delays == []


async def test_transport_failures_up_to_max_retries_end_with_the_last_error_and_a_note() -> None:
    last = ModelConnectionError("connection refused")
    model = ScriptedModel([ModelConnectionError("connection reset"), last])
    sleeps = Sleeps()
    events, _ = await run(SimpleAgent(name="echo", model=model, max_retries=2, sleep=sleeps), [user("hi")])
    assert [e.error for e in events] == [last]
    assert last.__notes__ == ["simple agent 'echo': gave up after 2 attempts"]
    assert sleeps.delays == [1.0]


# -- output_key and output_schema -------------------------------------------------------------------------------------


async def test_output_key_stores_the_answer_text() -> None:
    events, values = await run(
        SimpleAgent(model=ScriptedModel([assistant("Paris.")]), output_key="capital"), [user("Capital of France?")]
    )
    assert values == {"capital": "Paris."}
    assert events[0].output is not None and events[0].output.customized_output is None


async def test_output_schema_instruction_follows_the_system_prompt_and_carries_the_schema() -> None:
    model = ScriptedModel([assistant('{"name": "Oslo", "population": 700000}')])
    await run(
        SimpleAgent(model=model, system_prompt="You know {topic}.", output_schema=City),
        [user("Oslo?")],
        values={"topic": "cities"},
    )
    prompt = model.requests[0].messages[0].content
    assert prompt == (
        "You know cities.\n\n"
        "Answer with JSON only: one JSON value that matches the JSON Schema below. Write nothing before or after "
        "it and do not put it in a Markdown code block.\n\n"
        "JSON Schema:\n" + json.dumps(City.model_json_schema(), ensure_ascii=False)
    )


async def test_output_schema_instruction_is_the_system_prompt_when_there_is_none() -> None:
    model = ScriptedModel([assistant('{"name": "Oslo", "population": 700000}')])
    await run(SimpleAgent(model=model, output_schema=City), [user("Oslo?")])
    assert model.requests[0].messages[0].content.startswith("Answer with JSON only:")


async def test_output_schema_instruction_follows_the_language_setting() -> None:
    model = ScriptedModel([assistant('{"name": "Oslo", "population": 700000}')])
    set_language("zh")
    try:
        await run(SimpleAgent(model=model, output_schema=City), [user("Oslo?")])
    finally:
        set_language("en")
    assert model.requests[0].messages[0].content.startswith("只用 JSON 回答")


async def test_output_schema_asks_for_the_providers_structured_output_too() -> None:
    model = ScriptedModel([assistant('{"name": "Oslo", "population": 700000}')])
    settings = ModelSettings(temperature=0.2)

    await run(SimpleAgent(model=model, output_schema=City, model_settings=settings), [user("Oslo?")])

    sent = model.requests[0].settings
    assert sent is not None and sent.temperature == 0.2
    assert sent.response_format == JSONSchemaFormat(City.model_json_schema(), name="City")
    assert model.requests[0].messages[0].content.startswith("Answer with JSON only:")  # the prompt path stays
    assert settings.response_format is None  # the caller's settings untouched


@pytest.mark.parametrize(
    ("schema", "name"),
    [(CITY_SCHEMA, "Weather"), ({"type": "integer"}, "answer"), ({"title": "Big city!", "type": "object"}, "Big_city")],
)
async def test_structured_output_is_named_after_the_schema_title(schema: dict[str, Any], name: str) -> None:
    model = ScriptedModel([assistant("1")])

    await run(SimpleAgent(model=model, output_schema=schema), [user("?")])

    sent = model.requests[0].settings
    assert sent is not None and sent.response_format == JSONSchemaFormat(schema, name=name)


async def test_a_response_format_in_the_model_settings_wins_over_the_schemas() -> None:
    own = JSONSchemaFormat({"type": "object"}, name="Mine", strict=True)
    model = ScriptedModel([assistant('{"name": "Oslo", "population": 700000}')])

    await run(
        SimpleAgent(model=model, output_schema=City, model_settings=ModelSettings(response_format=own)), [user("?")]
    )

    sent = model.requests[0].settings
    assert sent is not None and sent.response_format is own


async def test_without_output_schema_no_structured_output_is_asked_for() -> None:
    model = ScriptedModel([assistant("Oslo.")])

    await run(SimpleAgent(model=model), [user("?")])

    assert model.requests[0].settings is None


async def test_output_schema_answer_is_parsed_into_customized_output_and_the_session() -> None:
    model = ScriptedModel([assistant('```json\n{"name": "Oslo", "population": 700000}\n```')])
    events, values = await run(SimpleAgent(model=model, output_schema=City, output_key="city"), [user("Oslo?")])
    assert len(events) == 1
    assert events[0].output is not None
    assert events[0].output.customized_output == City(name="Oslo", population=700000)
    assert values == {"city": City(name="Oslo", population=700000)}


async def test_output_schema_answer_that_is_not_json_is_an_error_event_and_is_not_retried() -> None:
    model = ScriptedModel([assistant("Oslo has about 700k people.")])
    sleeps = Sleeps()
    events, values = await run(
        SimpleAgent(model=model, output_schema=City, output_key="city", sleep=sleeps), [user("Oslo?")]
    )
    assert answers(events) == ["Oslo has about 700k people."]
    assert isinstance(events[1].error, RunError)
    assert str(events[1].error) == (
        "expected JSON matching City, got 'Oslo has about 700k people.': not valid JSON (Expecting value)"
    )
    assert values == {}
    assert len(model.requests) == 1
    assert sleeps.delays == []


async def test_output_schema_validation_errors_name_each_field() -> None:
    model = ScriptedModel([assistant('{"population": "many", "mayor": "x"}')])
    events, _ = await run(SimpleAgent(model=model, output_schema=City), [user("Oslo?")])
    assert str(events[-1].error) == (
        """expected JSON matching City, got '{"population": "many", "mayor": "x"}': expected 'name', got nothing; """
        "expected 'population' to be a valid integer, got 'many'"
    )


async def test_output_schema_answer_that_is_not_an_object_says_so() -> None:
    model = ScriptedModel([assistant("[1, 2]")])
    events, _ = await run(SimpleAgent(model=model, output_schema=City), [user("Oslo?")])
    assert (
        str(events[-1].error)
        == "expected JSON matching City, got '[1, 2]': expected the answer to be an object, got array"
    )


async def test_json_schema_dict_answer_is_validated_and_parsed() -> None:
    model = ScriptedModel([assistant('{"city": "Oslo", "sky": "rainy", "temperature": 4.5}')])
    events, values = await run(SimpleAgent(model=model, output_schema=CITY_SCHEMA, output_key="w"), [user("?")])
    assert events[0].output is not None
    assert events[0].output.customized_output == {"city": "Oslo", "sky": "rainy", "temperature": 4.5}
    assert values == {"w": {"city": "Oslo", "sky": "rainy", "temperature": 4.5}}
    assert model.requests[0].messages[0].content.endswith(json.dumps(CITY_SCHEMA, ensure_ascii=False))


async def test_json_schema_dict_mistakes_are_listed_one_clause_each() -> None:
    model = ScriptedModel([assistant('{"city": "O", "temperature": 99, "wind": 3}')])
    events, _ = await run(SimpleAgent(model=model, output_schema=CITY_SCHEMA), [user("?")])
    assert str(events[-1].error) == (
        """expected JSON matching Weather, got '{"city": "O", "temperature": 99, "wind": 3}': """
        "expected 'sky' (one of 'sunny', 'cloudy', 'rainy'), got nothing; "
        "expected 'city' to have at least 2 characters, got 1; "
        "expected 'temperature' to be <= 60, got 99; "
        "expected one of 'city', 'sky', 'temperature', got unknown 'wind'"
    )


async def test_json_schema_dict_follows_local_refs_and_any_of() -> None:
    schema = {
        "type": "object",
        "properties": {"stops": {"type": "array", "items": {"$ref": "#/$defs/Stop"}}},
        "required": ["stops"],
        "$defs": {
            "Stop": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "minutes": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                },
                "required": ["name"],
            }
        },
    }
    good = ScriptedModel([assistant('{"stops": [{"name": "A", "minutes": 3}, {"name": "B", "minutes": null}]}')])
    events, _ = await run(SimpleAgent(model=good, output_schema=schema), [user("?")])
    assert events[0].output is not None and len(events[0].output.customized_output["stops"]) == 2
    bad = ScriptedModel([assistant('{"stops": [{"name": "A", "minutes": "soon"}, {}]}')])
    events, _ = await run(SimpleAgent(model=bad, output_schema=schema), [user("?")])
    assert str(events[-1].error).endswith(
        """: expected 'stops[0].minutes' to be integer or null, got 'soon'; expected 'stops[1].name' (string), got nothing"""
    )


async def test_output_schema_with_a_tool_call_answer_is_neither_parsed_nor_stored() -> None:
    model = ScriptedModel([tool_calls(("clock", {}))])
    clock = ToolInfo(name="clock", description="The time.")
    events, values = await run(
        SimpleAgent(model=model, tools=[clock], output_schema=City, output_key="city"), [user("?")]
    )
    assert [e.error for e in events] == [None]
    assert events[0].output is not None and events[0].output.customized_output is None
    assert values == {}


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (42, "output_schema: expected a pydantic BaseModel subclass or a JSON Schema dict, got 42"),
        (
            {"$ref": "#/$defs/Missing"},
            "output_schema: expected $ref '#/$defs/Missing' to name a part of the schema, got nothing there",
        ),
        (
            {"$ref": "https://example.com/s.json"},
            "output_schema: expected local $refs ('#/$defs/Name'), got 'https://example.com/s.json'",
        ),
        ({"default": object()}, "output_schema: expected a JSON Schema made of JSON values, got Object of type object"),
    ],
)
def test_bad_output_schema_is_refused(schema: Any, message: str) -> None:
    with pytest.raises(UserError) as caught:
        SimpleAgent(model=ScriptedModel([]), output_schema=schema)
    assert str(caught.value).startswith(message)


# -- parse_output (Solon's toBean) ------------------------------------------------------------------------------------


async def test_parse_output_reads_an_event_a_message_or_text() -> None:
    model = ScriptedModel([assistant('{"name": "Oslo", "population": 700000}')])
    events, _ = await run(SimpleAgent(model=model), [user("Oslo?")])
    oslo = City(name="Oslo", population=700000)
    assert parse_output(events[0], City) == oslo
    assert parse_output(assistant('```\n{"name": "Oslo", "population": 700000}\n```'), City) == oslo
    assert parse_output('{"city": "Oslo", "sky": "sunny"}', CITY_SCHEMA) == {"city": "Oslo", "sky": "sunny"}


async def test_parse_output_returns_the_agents_parsed_value_itself() -> None:
    model = ScriptedModel([assistant('{"name": "Oslo", "population": 700000}')])
    events, _ = await run(SimpleAgent(model=model, output_schema=City), [user("Oslo?")])
    assert events[0].output is not None
    assert parse_output(events[0], City) is events[0].output.customized_output


def test_parse_output_of_a_non_conforming_answer_raises_the_same_error_as_the_agent() -> None:
    with pytest.raises(RunError, match=r"^expected JSON matching City, got 'nope': not valid JSON"):
        parse_output("nope", City)


def test_parse_output_of_an_unread_stream_asks_to_read_it_first() -> None:
    from batonflow.adk import event_from_message

    event = event_from_message(stream=Stream.from_list([assistant("{}")]))
    with pytest.raises(UserError, match=r"got an unread stream; await event\.message_output\.get_message\(\)"):
        parse_output(event, City)


# -- streaming --------------------------------------------------------------------------------------------------------


async def test_streaming_answer_reaches_the_caller_chunk_by_chunk() -> None:
    answer = assistant("Paris is the capital.")
    model = ScriptedModel([answer])
    agent = SimpleAgent(model=model, output_key="out")
    ctx = RunContext(enable_streaming=True)
    events = agent.run(AgentInput(messages=[user("?")], enable_streaming=True), ctx)
    first = await anext(events)
    variant = first.message_output
    assert variant is not None and variant.is_streaming and variant.message_stream is not None
    chunks = [c.content async for c in variant.message_stream]
    assert chunks == [c.content for c in split_message(answer)]
    assert [e async for e in events] == []
    assert model.requests[0].streaming
    assert ctx.session.values == {"out": "Paris is the capital."}


async def test_streamed_answer_is_recorded_whole_in_the_run_history() -> None:
    model = ScriptedModel([assistant("Paris.")])
    events = await collect_events(Runner(SimpleAgent(model=model), enable_streaming=True).query("?"))
    assert answers(events) == ["Paris."]
    assert [e.error for e in events] == [None]


async def test_streaming_retries_an_empty_answer_before_anything_reaches_the_caller() -> None:
    model = ScriptedModel([assistant(""), assistant("Second try.")])
    sleeps = Sleeps()
    events, _ = await run(SimpleAgent(model=model, sleep=sleeps), [user("?")], streaming=True)
    assert answers(events) == ["Second try."]
    assert len(events) == 1
    assert sleeps.delays == [1.0]


async def test_streaming_failure_before_the_first_chunk_is_retried_and_never_shown() -> None:
    model = ScriptedModel([ModelHTTPError("overloaded", status_code=503), assistant("Fine.")])
    sleeps = Sleeps()
    events, _ = await run(SimpleAgent(model=model, sleep=sleeps), [user("?")], streaming=True)
    assert answers(events) == ["Fine."]
    assert sleeps.delays == [1.0]


async def test_streaming_failure_after_the_first_chunk_is_not_retried() -> None:
    failure = ModelConnectionError("connection reset")
    model = ScriptedModel([[assistant("Par"), failure], assistant("never")])
    sleeps = Sleeps()
    events, _ = await run(SimpleAgent(model=model, sleep=sleeps), [user("?")], streaming=True)
    assert events[0].error is failure  # the stream broke where the model failed
    assert events[-1].error is failure
    assert len(model.requests) == 1
    assert sleeps.delays == []


async def test_streaming_reasoning_without_an_answer_is_an_error_and_not_retried() -> None:
    model = ScriptedModel([Message(role="assistant", reasoning_content="Let me think."), assistant("never")])
    events, _ = await run(SimpleAgent(model=model), [user("?")], streaming=True)
    assert str(events[-1].error) == (
        "simple agent 'simple_agent': expected an answer from model 'scripted', got an empty response "
        "(no content and no tool calls) after its reasoning was streamed; not retried"
    )
    assert len(model.requests) == 1


async def test_streaming_output_schema_value_is_on_the_event_once_its_stream_is_read() -> None:
    model = ScriptedModel([assistant('{"name": "Oslo", "population": 700000}')])
    ctx = RunContext(enable_streaming=True)
    agent = SimpleAgent(model=model, output_schema=City, output_key="city")
    events = agent.run(AgentInput(messages=[user("?")], enable_streaming=True), ctx)
    first = await anext(events)
    assert first.output is not None and first.output.customized_output is None
    assert first.message_output is not None
    await first.message_output.get_message()
    assert first.output.customized_output == City(name="Oslo", population=700000)
    assert ctx.session.values == {"city": City(name="Oslo", population=700000)}
    assert [e async for e in events] == []


async def test_streaming_output_schema_mismatch_follows_the_message_as_an_error_event() -> None:
    model = ScriptedModel([assistant("no JSON here")])
    events, _ = await run(SimpleAgent(model=model, output_schema=City), [user("?")], streaming=True)
    assert answers(events) == ["no JSON here"]
    assert events[0].error is None
    assert str(events[1].error).startswith("expected JSON matching City, got 'no JSON here': not valid JSON")


# -- in agent trees ---------------------------------------------------------------------------------------------------


async def test_transfer_target_receives_the_rewritten_history() -> None:
    router = ChatModelAgent(
        name="router",
        description="Routes requests.",
        model=ScriptedModel([tool_calls(("transfer_to_agent", {"agent_name": "faq"}))]),
    )
    faq_model = ScriptedModel([assistant("Open 9 to 5.")])
    faq = SimpleAgent(name="faq", description="Answers FAQs.", model=faq_model, system_prompt="Answer FAQs.")
    events = await collect_events(Runner(set_sub_agents(router, [faq])).query("When are you open?"))
    assert sent(faq_model) == [
        ("system", "Answer FAQs."),
        ("user", "When are you open?"),
        (
            "user",
            'For context: [router] called tool: `transfer_to_agent` with arguments: {"agent_name": "faq"}.',
        ),
        (
            "user",
            "For context: [router] `transfer_to_agent` tool returned result: successfully transferred to agent [faq].",
        ),
    ]
    assert events[-1].agent_name == "faq"
    assert [s.agent_name for s in events[-1].run_path] == ["router", "faq"]
    assert answers(events)[-1] == "Open 9 to 5."


async def test_in_a_sequence_it_reads_the_previous_agents_output_and_answer() -> None:
    writer = ChatModelAgent(name="writer", model=ScriptedModel([assistant("Roses are red.")]), output_key="draft")
    reviewer_model = ScriptedModel([assistant('{"name": "poem", "population": 1}')])
    reviewer = SimpleAgent(
        name="reviewer", model=reviewer_model, system_prompt="Review this draft: {draft}", output_schema=City
    )
    events = await collect_events(Runner(SequentialAgent(name="seq", sub_agents=[writer, reviewer])).query("a poem"))
    messages = reviewer_model.requests[0].messages
    assert messages[0].content.startswith("Review this draft: Roses are red.\n\nAnswer with JSON only:")
    assert [(m.role, m.content) for m in messages[1:]] == [
        ("user", "a poem"),
        ("user", "For context: [writer] said: Roses are red.."),
    ]
    assert events[-1].output is not None
    assert events[-1].output.customized_output == City(name="poem", population=1)
    assert [s.agent_name for s in events[-1].run_path] == ["seq", "writer", "reviewer"]


async def test_as_an_agent_tool_its_answer_is_the_tool_result() -> None:
    helper_model = ScriptedModel([assistant("42")])
    helper = SimpleAgent(name="helper", description="Computes things.", model=helper_model)
    boss_model = ScriptedModel([tool_calls(("helper", {"request": "compute it"})), assistant("It is 42.")])
    boss = ChatModelAgent(name="boss", model=boss_model, tools=[AgentTool(helper)])
    events = await collect_events(Runner(boss).query("go"))
    assert sent(helper_model) == [("user", "compute it")]
    assert boss_model.requests[1].messages[-1].content == "42"
    assert answers(events)[-1] == "It is 42."


# -- configuration ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_retries": 0}, "max_retries: expected at least 1 attempt, got 0"),
        ({"retry_delay": 0.1}, "retry_delay: expected at least 0.5 seconds, got 0.1"),
        ({"history_window": -1}, "history_window: expected 0 or more messages (None for all), got -1"),
        ({"name": ""}, "SimpleAgent needs a name: expected a non-empty string, got ''"),
    ],
)
def test_bad_configuration_is_a_user_error_saying_what_was_expected(options: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError) as caught:
        SimpleAgent(model=ScriptedModel([]), **options)
    assert str(caught.value) == message


def test_defaults_follow_solon() -> None:
    agent = SimpleAgent(model=ScriptedModel([]))
    assert (agent.name, agent.history_window, agent.max_retries, agent.retry_delay) == ("simple_agent", 5, 3, 1.0)
    assert repr(agent) == "SimpleAgent(name='simple_agent', model='scripted')"


class ClosingModel:
    """Streams two chunks and records whether its stream was closed."""

    model_name = "closing"

    def __init__(self) -> None:
        self.closed = False

    async def generate(self, messages: Sequence[Message], **_: Any) -> Message:
        raise AssertionError("not used")

    def stream(self, messages: Sequence[Message], **_: Any) -> Stream[Message]:
        async def chunks() -> Any:
            try:
                yield assistant("Hello")
                yield assistant(" world")
            finally:
                self.closed = True

        return Stream.from_async_iter(chunks())


async def test_closing_the_run_after_the_streamed_event_closes_the_model_stream() -> None:
    model = ClosingModel()
    events = Runner(SimpleAgent(model=model), enable_streaming=True).query("?")
    first = await anext(events)
    assert first.message_output is not None and first.message_output.is_streaming
    await events.aclose()
    assert model.closed


# -- hostile answers: typed errors the model can read, in time proportional to the answer -----------------------------


async def test_output_schema_answer_nested_too_deeply_is_an_error_event_saying_the_limit() -> None:
    model = ScriptedModel([assistant("[" * 100_000)])
    events, values = await run(SimpleAgent(model=model, output_schema=City, output_key="city"), [user("Oslo?")])
    assert isinstance(events[-1].error, RunError)
    assert str(events[-1].error) == (
        f"expected JSON matching City, got '{'[' * 200}'...: "
        "expected JSON nested at most 100 levels deep, got 100,000 levels"
    )
    assert values == {}


@pytest.mark.parametrize("schema", [City, {"type": "object"}])
def test_parse_output_refuses_deep_and_overlong_answers_with_a_run_error(schema: Any) -> None:
    with pytest.raises(RunError, match=r": expected JSON nested at most 100 levels deep, got 100,000 levels$"):
        parse_output("{" * 100_000, schema)
    with pytest.raises(RunError, match=r": expected at most 1,000,000 characters of JSON, got 1,000,002$"):
        parse_output(json.dumps("x" * 1_000_000), schema)


def test_an_answer_opening_a_fence_over_a_run_of_spaces_is_refused_in_linear_time() -> None:
    def refuse(spaces: int) -> None:
        with pytest.raises(RunError, match="not valid JSON"):
            parse_output("```x" + " " * spaces + "x", City)  # the fence's lazy regular expression took 20 s on 3,000

    assert growth(refuse, 1_000) < 40  # 10 times the spaces: about 10 times the work, 100 or more if quadratic


class Strict(BaseModel, extra="forbid"):
    name: str


@pytest.mark.parametrize(
    ("schema", "clause"),
    [
        (Strict, "expected no field 'f{0}', got {0}"),
        (
            {"type": "object", "properties": {"name": {"type": "string"}}, "additionalProperties": False},
            "expected one of 'name', got unknown 'f{0}'",
        ),
    ],
)
def test_many_unknown_fields_are_reported_in_ten_clauses_and_a_count(schema: Any, clause: str) -> None:
    answer = json.dumps({"name": "Oslo", **{f"f{i}": i for i in range(1_000)}})
    with pytest.raises(RunError) as caught:
        parse_output(answer, schema)
    clauses = "; ".join(clause.format(i) for i in range(10))
    assert str(caught.value).endswith(f"...: {clauses}; and 990 more")

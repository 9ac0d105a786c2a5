"""The ChatModel component: chatConfig, systemPrompt, stream, chatSession, toolProviders, and its input types."""

from __future__ import annotations

import sys

import pytest

from batonflow.flow import MAX_TOOL_ROUNDS, AiFlowEngine, ChatSession, FlowComponentError
from batonflow.graph import FlowContext, Graph
from batonflow.models import ChatModel
from batonflow.schema import Stream, assistant, system, user
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import tool

from .conftest import EXAMPLES, Console, FakeOpenAI


def flow(*nodes: str) -> Graph:
    return Graph.from_yaml("id: g\nlayout:\n" + "".join(f"  - {node}\n" for node in nodes))


CHAT = '{id: chat, task: "@ChatModel", meta: {chatConfig: {model: scripted}'


def chat_node(extra: str = "") -> str:
    return CHAT + (", " + extra if extra else "") + "}}"


@pytest.fixture
def model(engine: AiFlowEngine) -> ScriptedModel:
    scripted = ScriptedModel([assistant("first answer"), assistant("second answer")])
    engine.register("scripted", scripted)
    return scripted


async def test_the_answer_goes_to_output_and_the_system_prompt_is_filled_from_the_variables(
    engine: AiFlowEngine, model: ScriptedModel
) -> None:
    context = await engine.eval(
        flow(chat_node('systemPrompt: "You help #{user}.", output: answer')),
        FlowContext(variables={"message": "hi", "user": "Ann"}),
    )

    assert context.get("answer").content == "first answer"
    assert model.requests[0].messages == [system("You help Ann."), user("hi")]


async def test_no_input_means_no_call(engine: AiFlowEngine, model: ScriptedModel) -> None:
    context = await engine.eval(flow(chat_node()))

    assert model.requests == [] and context.get("message") is None


async def test_the_session_keeps_the_conversation_across_turns(engine: AiFlowEngine, model: ScriptedModel) -> None:
    graph = flow(chat_node('systemPrompt: "Be brief."'))
    context = FlowContext(variables={"message": "one"})
    await engine.eval(graph, context)
    context.put("message", "two")
    await engine.eval(graph, context)

    assert model.requests[1].messages == [system("Be brief."), user("one"), assistant("first answer"), user("two")]
    session = context.get("chatSession")
    assert isinstance(session, ChatSession) and len(session.messages) == 4


async def test_chat_session_names_the_conversation_s_variable(engine: AiFlowEngine) -> None:
    a = ScriptedModel([assistant("a1"), assistant("a2")])
    b = ScriptedModel([assistant("b1")])
    engine.register("a", a)
    engine.register("b", b)
    graph = flow(
        '{task: "@ChatModel", meta: {chatConfig: {model: a}, chatSession: A}}',
        '{task: "@ChatModel", meta: {chatConfig: {model: b}, chatSession: B}}',
        '{task: "@ChatModel", meta: {chatConfig: {model: a}, chatSession: A}}',
    )

    context = await engine.eval(graph, FlowContext(variables={"message": "start"}))

    assert [m.content for m in a.requests[1].messages] == ["start", "a1", "b1"]  # A's own conversation
    assert [m.content for m in b.requests[0].messages] == ["a1"]
    assert [m.content for m in context.get("B").messages] == ["a1", "b1"]


async def test_a_session_given_when_the_flow_starts_is_used(engine: AiFlowEngine, model: ScriptedModel) -> None:
    session = ChatSession("s", [user("earlier"), assistant("noted")])

    await engine.eval(flow(chat_node()), FlowContext(variables={"message": "now", "chatSession": session}))

    assert [m.content for m in model.requests[0].messages] == ["earlier", "noted", "now"]


async def test_max_messages_drops_the_oldest_but_system_messages() -> None:
    session = ChatSession("s", [system("rules")], max_messages=3)
    session.add([user("1"), assistant("2"), user("3")])

    assert [m.content for m in session.messages] == ["rules", "2", "3"]


async def test_stream_true_outputs_a_stream_and_updates_the_session_once_read(
    engine: AiFlowEngine, model: ScriptedModel
) -> None:
    context = await engine.eval(flow(chat_node("stream: true")), FlowContext(variables={"message": "hi"}))

    stream = context.get("message")
    assert isinstance(stream, Stream)
    assert context.get("chatSession").messages == []
    text = "".join([chunk.content for chunk in await stream.collect()])
    assert text == "first answer" and model.requests[0].streaming
    assert [m.content for m in context.get("chatSession").messages] == ["hi", "first answer"]


async def test_stream_as_text_true_is_read_as_solon_writes_it(engine: AiFlowEngine, model: ScriptedModel) -> None:
    context = await engine.eval(
        flow(chat_node('stream: "true"'), '{task: "@VarOutput"}'), FlowContext(variables={"message": "hi"})
    )

    assert context.get("message") == "first answer" and model.requests[0].streaming


async def test_a_message_or_a_list_of_messages_is_the_prompt(engine: AiFlowEngine, model: ScriptedModel) -> None:
    await engine.eval(flow(chat_node()), FlowContext(variables={"message": user("as a message")}))
    await engine.eval(flow(chat_node()), FlowContext(variables={"message": [system("s"), user("u")]}))

    assert model.requests[0].messages == [user("as a message")]
    assert model.requests[1].messages == [system("s"), user("u")]


async def test_another_input_type_is_refused_naming_the_meta(engine: AiFlowEngine, model: ScriptedModel) -> None:
    with pytest.raises(FlowComponentError) as caught:
        await engine.eval(flow(chat_node()), FlowContext(variables={"message": 42}))

    assert caught.value.meta == "input"
    assert "Unsupported data type: int" in str(caught.value)


@tool
def get_weather(location: str) -> str:
    """Get the weather of a city."""
    return f"Sunny, 24 degrees in {location}"


async def test_tool_providers_registered_by_name_are_called_and_answered(engine: AiFlowEngine) -> None:
    model = ScriptedModel([tool_calls(("get_weather", {"location": "Hangzhou"})), assistant("It is sunny.")])
    engine.register("scripted", model)
    engine.register("weather", get_weather)

    context = await engine.eval(
        flow(chat_node("toolProviders: [weather]")), FlowContext(variables={"message": "Weather?"})
    )

    assert [info.name for info in model.requests[0].tools] == ["get_weather"]
    observation = model.requests[1].messages[-1]
    assert observation.role == "tool" and observation.content == "Sunny, 24 degrees in Hangzhou"
    assert context.get("message").content == "It is sunny."
    assert [m.role for m in context.get("chatSession").messages] == ["user", "assistant", "tool", "assistant"]


async def test_a_tool_provider_with_a_tools_method_is_asked_for_its_tools(engine: AiFlowEngine) -> None:
    class Provider:
        async def tools(self) -> list[object]:
            return [get_weather]

    model = ScriptedModel([tool_calls(("get_weather", {"location": "Xi'an"})), assistant("done")])
    engine.register("scripted", model)
    engine.register("provider", Provider())

    await engine.eval(flow(chat_node("toolProviders: [provider]")), FlowContext(variables={"message": "?"}))

    assert model.requests[1].messages[-1].content == "Sunny, 24 degrees in Xi'an"


async def test_tools_stream_too(engine: AiFlowEngine) -> None:
    model = ScriptedModel([tool_calls(("get_weather", {"location": "Hangzhou"})), assistant("Sunny there.")])
    engine.register("scripted", model)
    engine.register("weather", get_weather)

    context = await engine.eval(
        flow(chat_node("toolProviders: [weather], stream: true"), '{task: "@VarOutput"}'),
        FlowContext(variables={"message": "?"}),
    )

    assert context.get("message") == "Sunny there."
    assert model.requests[1].messages[-1].content == "Sunny, 24 degrees in Hangzhou"


async def test_bad_tool_arguments_go_back_to_the_model(engine: AiFlowEngine) -> None:
    model = ScriptedModel([tool_calls(("get_weather", {"city": "x"})), assistant("sorry")])
    engine.register("scripted", model)
    engine.register("weather", get_weather)

    await engine.eval(flow(chat_node("toolProviders: [weather]")), FlowContext(variables={"message": "?"}))

    assert "location" in model.requests[1].messages[-1].content


async def test_a_model_calling_tools_without_end_is_stopped(engine: AiFlowEngine) -> None:
    call = tool_calls(("get_weather", {"location": "x"}))
    engine.register("scripted", ScriptedModel([call] * (MAX_TOOL_ROUNDS + 1)))
    engine.register("weather", get_weather)

    with pytest.raises(FlowComponentError) as caught:
        await engine.eval(flow(chat_node("toolProviders: [weather]")), FlowContext(variables={"message": "?"}))

    assert caught.value.meta == "toolProviders" and f"after {MAX_TOOL_ROUNDS} rounds" in str(caught.value)


async def test_a_failing_model_is_an_error_naming_chat_config(engine: AiFlowEngine) -> None:
    engine.register("scripted", ScriptedModel([RuntimeError("the server is down")]))

    with pytest.raises(FlowComponentError) as caught:
        await engine.eval(flow(chat_node()), FlowContext(variables={"message": "?"}))

    assert (caught.value.node_id, caught.value.meta) == ("chat", "chatConfig")


# -- chatConfig onto providers, against an OpenAI-compatible server on loopback ---------------------------------


@pytest.mark.parametrize(
    ("config", "path", "authorization"),
    [
        (
            "{provider: openai, model: m, apiUrl: '{url}/v1/chat/completions', apiKey: k1}",
            "/v1/chat/completions",
            "Bearer k1",
        ),
        ("{model: m, apiUrl: '{url}/compat/v1'}", "/compat/v1/chat/completions", "Bearer not-needed"),
        ("{provider: ollama, model: qwen2.5, apiUrl: '{url}/api/chat'}", "/v1/chat/completions", "Bearer ollama"),
        (
            "{provider: OpenAI-Compatible, model: m, apiUrl: '{url}/x/chat/completions/'}",
            "/x/chat/completions",
            "Bearer not-needed",
        ),
    ],
)
async def test_chat_config_maps_onto_an_openai_compatible_endpoint(
    loopback_engine: AiFlowEngine, fake_openai: FakeOpenAI, config: str, path: str, authorization: str
) -> None:
    engine = loopback_engine
    graph = flow(
        '{task: "@ChatModel", meta: {message: ping, chatConfig: ' + config.replace("{url}", fake_openai.url) + "}}"
    )

    context = await engine.eval(graph)

    assert context.get("message").content == "pong"
    assert [(p, a) for p, a, _ in fake_openai.requests] == [(path, authorization)]
    assert isinstance(context.get("property_chatModel")[0], ChatModel)


async def test_the_local_provider_is_loaded_once_for_every_node_naming_it(engine: AiFlowEngine) -> None:
    graph = flow(
        '{task: "@ChatModel", meta: {chatConfig: {provider: local}}}',
        '{task: "@ChatModel", meta: {chatConfig: {provider: local, model: smollm2}, output: x}}',
    )
    first = await engine.eval(graph)

    assert first.get("property_chatModel")[0] is engine.settings.shared["local:smollm2"]


async def test_default_options_go_with_each_request(loopback_engine: AiFlowEngine, fake_openai: FakeOpenAI) -> None:
    engine = loopback_engine
    config = (
        f"{{model: m, apiUrl: '{fake_openai.url}/v1', defaultOptions: {{max_tokens: 5, temperature: 0, top_k: 3}}}}"
    )

    await engine.eval(flow('{task: "@ChatModel", meta: {message: ping, chatConfig: ' + config + "}}"))

    body = fake_openai.requests[0][2]
    assert (body["max_tokens"], body["temperature"], body["top_k"]) == (5, 0, 3)


async def test_an_mcp_server_over_stdio_starts_in_the_engine_s_base_folder(console: Console) -> None:
    model = ScriptedModel([tool_calls(("get_weather", {"location": "Xi'an"})), assistant("Sunny.")])
    engine = AiFlowEngine(base_dir=EXAMPLES, stdout=console.stdout, allowed_commands=[sys.executable])
    engine.register("scripted", model)
    servers = f"{{weather: {{type: stdio, command: '{sys.executable}', args: [weather_mcp_server.py, --stdio], timeout: 20}}}}"

    async with engine:
        context = await engine.eval(flow(chat_node(f"mcpServers: {servers}")), FlowContext(variables={"message": "?"}))

    assert [info.name for info in model.requests[0].tools] == ["get_weather"]
    assert model.requests[1].messages[-1].content == "Sunny, 24 degrees in Xi'an"
    assert context.get("message").content == "Sunny."

"""The ChatModel component: chatConfig, systemPrompt, stream, chatSession, toolProviders, and its input types."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from batonflow import Runner, SqliteCheckpointStore
from batonflow.flow import MAX_TOOL_ROUNDS, AiFlowEngine, ChatSession, FlowComponentError, FlowMetaError
from batonflow.graph import FlowContext, Graph, GraphAgent
from batonflow.models import ChatModel
from batonflow.schema import Message, Stream, assistant, system, user
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import ToolContext, tool

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


# -- on the agent loop: tool failures, interrupts, a run of the graph agent's ------------------------------------


@tool
def broken(city: str) -> str:
    """A weather service that is down."""
    raise ConnectionError(f"no answer for {city}")


async def test_a_failing_tool_gives_the_model_an_observation(engine: AiFlowEngine) -> None:
    model = ScriptedModel([tool_calls(("broken", {"city": "Xi'an"})), assistant("The service is down.")])
    engine.register("scripted", model)
    engine.register("weather", broken)

    context = await engine.eval(flow(chat_node("toolProviders: [weather]")), FlowContext(variables={"message": "?"}))

    observation = model.requests[1].messages[-1]
    assert observation.role == "tool"
    assert observation.content == "the tool 'broken' failed: ConnectionError: no answer for Xi'an"
    assert context.get("message").content == "The service is down."


async def test_tool_errors_raise_ends_the_turn_naming_the_tool_s_meta_and_keeps_the_session(
    engine: AiFlowEngine,
) -> None:
    model = ScriptedModel([tool_calls(("broken", {"city": "x"}))])
    engine.register("scripted", model)
    engine.register("weather", broken)
    earlier = ChatSession("s", [user("earlier"), assistant("noted")])

    with pytest.raises(FlowComponentError) as caught:
        await engine.eval(
            flow(chat_node("toolProviders: [weather], toolErrors: raise")),
            FlowContext(variables={"message": "?", "chatSession": earlier}),
        )

    assert (caught.value.node_id, caught.value.meta) == ("chat", "toolProviders")
    assert "the tool 'broken' failed: ConnectionError: no answer for x" in str(caught.value)
    assert [m.content for m in earlier.messages] == ["earlier", "noted"]
    model.assert_complete()


async def test_an_unknown_tool_error_mode_is_refused_before_any_call(
    engine: AiFlowEngine, model: ScriptedModel
) -> None:
    with pytest.raises(FlowMetaError) as caught:
        await engine.eval(flow(chat_node("toolErrors: ignore")), FlowContext(variables={"message": "?"}))

    assert caught.value.meta == "toolErrors" and "expected one of ['observe', 'raise'], got 'ignore'" in str(
        caught.value
    )
    assert model.requests == []


async def test_an_unknown_tool_is_an_observation_naming_the_tools(engine: AiFlowEngine) -> None:
    model = ScriptedModel([tool_calls(("get_wether", {"location": "x"})), assistant("ok")])
    engine.register("scripted", model)
    engine.register("weather", get_weather)

    await engine.eval(flow(chat_node("toolProviders: [weather]")), FlowContext(variables={"message": "?"}))

    assert model.requests[1].messages[-1].content == "Unknown tool 'get_wether': expected one of ['get_weather']"


async def test_the_calls_of_one_round_run_concurrently_and_keep_their_order(engine: AiFlowEngine) -> None:
    both = asyncio.Event()
    started: list[str] = []

    @tool(threaded=False)
    async def wait_for_the_other(name: str) -> str:
        """Wait until both calls are under way."""
        started.append(name)
        if len(started) == 2:
            both.set()
        await asyncio.wait_for(both.wait(), timeout=10)  # a guard against a hang, not a timing assertion
        return name

    model = ScriptedModel(
        [tool_calls(("wait_for_the_other", {"name": "a"}), ("wait_for_the_other", {"name": "b"})), assistant("ab")]
    )
    engine.register("scripted", model)
    engine.register("tools", wait_for_the_other)

    context = await engine.eval(flow(chat_node("toolProviders: [tools]")), FlowContext(variables={"message": "?"}))

    assert [m.content for m in model.requests[1].messages if m.role == "tool"] == ["a", "b"]
    assert [m.role for m in context.get("chatSession").messages] == ["user", "assistant", "tool", "tool", "assistant"]


async def test_an_interrupt_outside_a_graph_agent_is_an_error_naming_the_node(engine: AiFlowEngine) -> None:
    @tool
    def approve(ctx: ToolContext) -> str:
        """Ask a person."""
        return str(ctx.ask("approve?"))

    engine.register("scripted", ScriptedModel([tool_calls(("approve", {}))]))
    engine.register("tools", approve)

    with pytest.raises(FlowComponentError, match="can be interrupted and resumed only in a GraphAgent run") as caught:
        await engine.eval(flow(chat_node("toolProviders: [tools]")), FlowContext(variables={"message": "?"}))

    assert caught.value.node_id == "chat"


APPROVALS: list[object] = []


@tool
def refund(order_id: int, ctx: ToolContext) -> str:
    """Refund an order once a person approved it."""
    APPROVALS.append(ctx.idempotency_key)
    return "refunded" if ctx.ask({"approve_refund": order_id}) == "yes" else "not refunded"


def refund_agent(script: list[Message]) -> tuple[GraphAgent, ScriptedModel]:
    model = ScriptedModel(script)
    engine = AiFlowEngine()
    engine.register("scripted", model)
    engine.register("refunds", refund)
    return GraphAgent(flow(chat_node("toolProviders: [refunds]")), engine=engine, name="support"), model


async def test_a_tool_interrupt_pauses_the_graph_agent_and_resumes_from_the_runner_s_checkpoint(
    tmp_path: Path,
) -> None:
    APPROVALS.clear()
    db = tmp_path / "checkpoints.db"
    async with SqliteCheckpointStore(db) as store:
        agent, _ = refund_agent([tool_calls(("refund", {"order_id": 42}))])
        first = await Runner(agent, checkpoint_store=store).call("refund 42", checkpoint_id="case-1")
    assert len(first.interrupt_ids) == 1

    async with SqliteCheckpointStore(db) as store:  # new agents and a new engine, as another process would have
        agent, model = refund_agent([assistant("Order 42 is refunded.")])
        second = await Runner(agent, checkpoint_store=store).call_resume(
            "case-1", targets=dict.fromkeys(first.interrupt_ids, "yes")
        )

    assert second.text == "Order 42 is refunded."
    observation = model.requests[0].messages[-1]
    assert (observation.role, observation.content) == ("tool", "refunded")
    assert len(APPROVALS) == 2 and APPROVALS[0] == APPROVALS[1]  # the resumed call is the same call
    model.assert_complete()


async def test_under_a_runner_the_node_s_events_stream_with_the_node_s_run_path() -> None:
    agent, _ = refund_agent([assistant("Nothing to refund.")])

    events = [event async for event in Runner(agent).run([user("hello")])]

    answers = [e for e in events if e.output is not None and e.output.message_output is not None]
    assert [[step.agent_name for step in e.run_path] for e in answers] == [["support", "chat", "chat"]]
    assert [e.output.message_output.message.content for e in answers] == ["Nothing to refund."]  # said once


async def test_a_streamed_node_s_answer_is_the_graph_agent_s_answer_said_once() -> None:
    model = ScriptedModel([assistant("Streamed.")])
    engine = AiFlowEngine()
    engine.register("scripted", model)
    agent = GraphAgent(flow(chat_node("stream: true")), engine=engine, name="support")

    result = await Runner(agent, enable_streaming=True).call("hello")

    assert result.text == "Streamed." and model.requests[0].streaming
    assert len([e for e in result.events if e.output is not None and e.output.message_output is not None]) == 1

"""The plumbing every component shares: registration under Solon's names, node events on the bus, the I/O
conventions, properties and per-node caches."""

from __future__ import annotations

from typing import Any

import pytest

from batonflow.flow import (
    COMPONENTS,
    FLOW_NODE_END,
    FLOW_NODE_START,
    AiFlowEngine,
    ChatSession,
    FlowMetaError,
    NodeEvent,
)
from batonflow.graph import ComponentError, FlowContext, FlowEngine, Graph, Node
from batonflow.schema import assistant
from batonflow.testing import ScriptedModel

from .conftest import Console, WordEmbedding

SOLON_NAMES = [
    "VarInput",
    "VarCopy",
    "ConsoleInput",
    "WebInput",
    "ChatModel",
    "EmbeddingModel",
    "GenerateModel",
    "InMemoryRepository",
    "RedisRepository",
    "VarOutput",
    "ConsoleOutput",
    "WebOutput",
]


def test_the_engine_knows_the_twelve_components_by_their_solon_names() -> None:
    engine = AiFlowEngine()

    assert list(COMPONENTS) == SOLON_NAMES
    assert all(callable(getattr(engine.tasks[name], "run", None)) for name in SOLON_NAMES)


def test_two_engines_share_no_component() -> None:
    assert AiFlowEngine().get_component("ChatModel") is not AiFlowEngine().get_component("ChatModel")


async def test_a_user_component_is_added_with_register(engine: AiFlowEngine) -> None:
    engine.register("Shout", lambda context, node: context.put("message", context.get("message").upper()))
    graph = Graph.from_yaml('id: g\nlayout:\n  - {task: "@VarInput", meta: {message: hi}}\n  - {task: "@Shout"}\n')

    context = await engine.eval(graph)

    assert context.get("message") == "HI"


async def test_an_unregistered_component_is_a_component_error_naming_graph_and_node(engine: AiFlowEngine) -> None:
    graph = Graph.from_yaml('id: g\nlayout:\n  - {id: n, task: "@NoSuchThing"}\n')

    with pytest.raises(ComponentError) as caught:
        await engine.eval(graph)

    assert caught.value.graph_id == "g" and caught.value.node_id == "n" and caught.value.name == "NoSuchThing"
    assert "'NoSuchThing' not exist" in str(caught.value)


async def test_each_component_sends_node_start_and_end_events_on_the_context_bus(engine: AiFlowEngine) -> None:
    graph = Graph.from_yaml(
        'id: g\nlayout:\n  - {id: a, task: "@VarInput", meta: {message: hi}}\n  - {id: b, task: "@VarOutput"}\n'
    )
    context = FlowContext()
    seen: list[tuple[str, str, Any]] = []
    context.listen(FLOW_NODE_START, lambda event: seen.append(("start", event.node.id, event.context.get("message"))))
    context.listen(FLOW_NODE_END, lambda event: seen.append(("end", event.node.id, event.context.get("message"))))

    await engine.eval(graph, context)

    assert seen == [("start", "a", None), ("end", "a", "hi"), ("start", "b", "hi"), ("end", "b", "hi")]
    assert FLOW_NODE_START == "flow.node.start" and FLOW_NODE_END == "flow.node.end"


async def test_the_event_payload_is_a_node_event(engine: AiFlowEngine) -> None:
    graph = Graph.from_yaml('id: g\nlayout:\n  - {id: a, task: "@VarInput"}\n')
    context = FlowContext()
    events: list[NodeEvent] = []
    context.listen(FLOW_NODE_START, events.append)

    await engine.eval(graph, context)

    assert isinstance(events[0], NodeEvent) and events[0].context is context and isinstance(events[0].node, Node)


async def test_input_and_output_default_to_message(engine: AiFlowEngine) -> None:
    graph = Graph.from_yaml('id: g\nlayout:\n  - {task: "@VarOutput"}\n')

    context = await engine.eval(graph, FlowContext(variables={"message": 42}))

    assert context.get("message") == "42"


async def test_metas_input_and_output_name_the_variables(engine: AiFlowEngine) -> None:
    graph = Graph.from_yaml('id: g\nlayout:\n  - {task: "@VarOutput", meta: {input: question, output: text}}\n')

    context = await engine.eval(graph, FlowContext(variables={"question": True, "message": "untouched"}))

    assert context.get("text") == "true" and context.get("message") == "untouched"


async def test_a_meta_named_as_the_input_is_a_literal_input(engine: AiFlowEngine) -> None:
    graph = Graph.from_yaml('id: g\nlayout:\n  - {task: "@VarOutput", meta: {input: q, q: literal, output: out}}\n')

    context = await engine.eval(graph, FlowContext(variables={"q": "from the context"}))

    assert context.get("out") == "literal"


async def test_properties_are_stored_as_property_name_lists(engine: AiFlowEngine) -> None:
    model = ScriptedModel([assistant("hello")])
    engine.register("chat", model)
    graph = Graph.from_yaml('id: g\nlayout:\n  - {task: "@ChatModel", meta: {chatConfig: {model: chat}}}\n')

    context = await engine.eval(graph)  # no input: the model is only handed on

    assert context.get("property_chatModel") == [model]
    assert model.requests == []


async def test_the_embedding_model_is_cached_per_node_too(engine: AiFlowEngine) -> None:
    words = WordEmbedding()
    engine.register("words", words)
    graph = Graph.from_yaml(
        'id: g\nlayout:\n  - {id: e, task: "@EmbeddingModel", meta: {embeddingConfig: {model: words}}}\n'
    )
    await engine.eval(graph)
    engine.unregister("words")

    context = await engine.eval(graph)  # built at the first run: not looked up again

    assert context.get("property_embeddingModel") == [words]


async def test_each_node_builds_its_own_model(engine: AiFlowEngine) -> None:
    first, second = WordEmbedding(), WordEmbedding()
    engine.register("first", first)
    engine.register("second", second)
    graph = Graph.from_yaml(
        "id: g\nlayout:\n"
        '  - {id: a, task: "@EmbeddingModel", meta: {embeddingConfig: {model: first}, output: x}}\n'
        '  - {id: b, task: "@VarCopy", meta: {seen: "property_embeddingModel"}}\n'
        '  - {id: c, task: "@EmbeddingModel", meta: {embeddingConfig: {model: second}}}\n'
    )

    context = await engine.eval(graph)

    assert context.get("seen") == [first] and context.get("property_embeddingModel") == [second]


async def test_a_chat_model_is_built_once_per_node(engine: AiFlowEngine) -> None:
    engine.register("chat", ScriptedModel([assistant("one"), assistant("two")]))
    graph = Graph.from_yaml(
        'id: g\nlayout:\n  - {id: c, task: "@ChatModel", meta: {message: hi, chatConfig: {model: chat}}}\n'
    )
    engine.unregister("chat")
    with pytest.raises(FlowMetaError):  # the node has not been built yet: the lookup fails
        await engine.eval(graph)
    engine.register("chat", ScriptedModel([assistant("one"), assistant("two")]))
    await engine.eval(graph)
    engine.unregister("chat")

    context = await engine.eval(graph)  # built: it no longer looks the model up

    assert context.get("message").content == "two"


async def test_the_console_of_an_engine_is_its_own() -> None:
    console = Console(["typed"])
    engine = AiFlowEngine(stdin=console.stdin, stdout=console.stdout)
    graph = Graph.from_yaml('id: g\nlayout:\n  - {task: "@ConsoleInput"}\n  - {task: "@ConsoleOutput"}\n')

    context = await engine.eval(graph)

    assert console.printed == ["typed"] and context.get("message") == "typed"


async def test_a_chat_session_travels_in_the_context_snapshot(engine: AiFlowEngine) -> None:
    engine.register("chat", ScriptedModel([assistant("hello there")]))
    graph = Graph.from_yaml(
        'id: g\nlayout:\n  - {task: "@ChatModel", meta: {message: hi, chatConfig: {model: chat}}}\n'
    )
    context = await engine.eval(graph)
    context.remove("property_chatModel")  # a model object is not data

    restored = FlowContext.from_json(context.to_json())

    session = restored.get("chatSession")
    assert isinstance(session, ChatSession)
    assert [(m.role, m.content) for m in session.messages] == [("user", "hi"), ("assistant", "hello there")]


async def test_a_plain_flow_engine_does_not_know_the_ai_components_and_names_the_engine_that_does() -> None:
    engine = FlowEngine()
    assert engine.get_component("ChatModel") is None
    for name in COMPONENTS:
        graph = Graph.from_yaml(f'id: g\nlayout:\n  - {{id: n, task: "@{name}"}}\n')
        with pytest.raises(ComponentError) as caught:
            await engine.eval(graph)
        assert f"@{name} is an AI flow component: run the graph on a batonflow.flow.AiFlowEngine" in str(caught.value)
        assert "graph 'g', node 'n'" in str(caught.value)


async def test_an_ai_flow_engine_closes_what_its_nodes_open_and_shares_no_component() -> None:
    engine = AiFlowEngine()
    closed: list[str] = []

    async def close() -> None:
        closed.append("connection")

    async with engine:
        engine.add_closer(close)
    assert closed == ["connection"]
    other = AiFlowEngine()
    assert other.tasks["ChatModel"] is not engine.tasks["ChatModel"]  # no cache shared


def test_the_ai_engine_files_splitters_and_image_models_by_what_they_are() -> None:
    from batonflow.flow import Document, GeneratedImage

    class Upper:
        def split(self, documents: list[Document]) -> list[Document]:
            return documents

    class Painter:
        model_name = "painter"

        async def generate_image(self, prompt: str) -> GeneratedImage:
            return GeneratedImage(url="https://img/x.png")

    engine = AiFlowEngine()
    splitter, painter = Upper(), Painter()
    engine.register("upper", splitter)
    engine.register("painter", painter)

    assert dict(engine.splitters) == {"upper": splitter}
    assert engine.models["painter"] is painter and "painter" not in engine.tasks

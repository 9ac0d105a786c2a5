"""The six example flows of examples/flows, from their YAML: with scripted models, then on the real llama.cpp
server (chat and embeddings) and the real MCP server.

Each test reads the example file and swaps only its model configs (``chatConfig``, ``embeddingConfig``) and,
for mcp_case1, the MCP server's URL; everything else runs as written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from batonflow.flow import AiFlowEngine
from batonflow.graph import FlowContext, Graph, GraphSpec
from batonflow.schema import Message, assistant
from batonflow.testing import FunctionModel, ScriptedModel, tool_calls
from batonflow.tools import ToolInfo, tool

from .conftest import EXAMPLES, Console, WordEmbedding

SCRIPTED_CHAT = {"model": "chat"}
SCRIPTED_EMBEDDING = {"model": "words"}


def example(name: str, *, chat: dict[str, Any], embedding: dict[str, Any] | None = None, mcp_url: str = "") -> Graph:
    def edit(spec: GraphSpec) -> None:
        for node in spec.nodes.values():
            if "chatConfig" in node.meta:
                node.meta["chatConfig"] = chat
            if "embeddingConfig" in node.meta:
                node.meta["embeddingConfig"] = embedding
            if mcp_url and "mcpServers" in node.meta:
                node.meta["mcpServers"] = {"mcp1": {"type": "streamable", "url": mcp_url}}

    return Graph.copy(Graph.load(EXAMPLES / f"{name}.yml"), edit)


def engine_with(console: Console, **components: object) -> AiFlowEngine:
    engine = AiFlowEngine(
        stdin=console.stdin, stdout=console.stdout, base_dir=EXAMPLES, allowed_hosts=["127.0.0.1", "localhost"]
    )
    for name, component in components.items():
        engine.register(name, component)
    return engine


@tool
def get_weather(location: str) -> str:
    """Get the weather of a city."""
    if not location:
        raise ValueError("arguments location is null (Assistant recognition failure)")
    return "Sunny, 24 degrees"


def counting(prefix: str) -> Callable[[list[Message], list[ToolInfo]], Message]:
    calls = [0]

    def answer(messages: list[Message], tools: list[ToolInfo]) -> Message:
        calls[0] += 1
        return assistant(f"{prefix} {calls[0]}")

    return answer


# -- scripted models --------------------------------------------------------------------------------------------


async def test_chat_case1_chains_its_layout_and_answers_the_greeting() -> None:
    console = Console()
    model = ScriptedModel([assistant("Hello! How can I help?")])

    context = await engine_with(console, chat=model).eval(example("chat_case1", chat=SCRIPTED_CHAT))

    assert console.printed == ["Hello! How can I help?"]
    assert context.get("var2") == "Hello"
    assert [(m.role, m.content) for m in model.requests[0].messages] == [
        ("system", "You are a chat assistant"),
        ("user", "Hello"),
    ]


async def test_chat_case1_asks_the_question_a_variable_gives() -> None:
    model = ScriptedModel([assistant("Paris.")])

    context = await engine_with(Console(), chat=model).eval(
        example("chat_case1", chat=SCRIPTED_CHAT), FlowContext(variables={"question": "Capital of France?"})
    )

    assert (
        model.requests[0].messages[-1].content == "Capital of France?" and context.get("var2") == "Capital of France?"
    )


async def test_chat_case3_chats_ten_rounds_through_the_exclusive_gateway() -> None:
    console = Console([f"line {i}" for i in range(1, 13)])
    model = FunctionModel(counting("answer"))

    context = await engine_with(console, chat=model).eval(example("chat_case3", chat=SCRIPTED_CHAT))

    assert console.printed == [f"Robot: answer {i}" for i in range(1, 11)]
    assert context.get("demo") == 10 and context.trace.is_end("chat_case3")
    assert [m.content for m in model.requests[-1].messages if m.role == "user"] == [f"line {i}" for i in range(1, 11)]
    assert console.stdin.readline() == "line 11\n"  # ten lines read, no more


async def test_chat_case3_ends_with_the_console_input() -> None:
    console = Console(["only one"])

    context = await engine_with(console, chat=FunctionModel(counting("a"))).eval(
        example("chat_case3", chat=SCRIPTED_CHAT)
    )

    assert console.printed == ["Robot: a 1"] and context.is_stopped and not context.trace.is_end("chat_case3")


async def test_pk_case1_two_models_with_their_own_conversations_take_five_turns_each() -> None:
    console = Console()

    def by_persona(messages: list[Message], tools: list[ToolInfo]) -> Message:
        name = "Afei" if messages[0].content.startswith("You are an agent named Afei") else "Azi"
        turn = sum(1 for m in messages if m.role == "assistant") + 1
        return assistant(f"{name} line {turn}")

    context = await engine_with(console, chat=FunctionModel(by_persona)).eval(example("pk_case1", chat=SCRIPTED_CHAT))

    expected = [line for turn in range(1, 6) for line in (f"Afei: Afei line {turn}", f"Azi: Azi line {turn}")]
    assert console.printed == expected
    a, b = context.get("A"), context.get("B")
    assert [m.content for m in a.messages[:3]] == ["Hello", "Afei line 1", "Azi line 1"]
    assert [m.content for m in b.messages[:3]] == ["Afei line 1", "Azi line 1", "Afei line 2"]
    assert len(a.messages) == len(b.messages) == 10 and context.trace.is_end("pk_case1")


async def test_rag_case1_answers_from_the_local_documents() -> None:
    console = Console()
    model = ScriptedModel([assistant("noear develops Solon.")])
    words = WordEmbedding()

    await engine_with(console, chat=model, words=words).eval(
        example("rag_case1", chat=SCRIPTED_CHAT, embedding=SCRIPTED_EMBEDDING)
    )

    prompt = model.requests[0].messages[-1].content
    assert prompt.startswith("Who develops Solon?\n\n Now: ")
    assert "content='noear develops Solon, a Java framework.'" in prompt
    assert console.printed == ["noear develops Solon."]
    assert len(words.calls[0]) == 5  # the title and four paragraphs of docs/solon.md, embedded once


async def test_tool_case1_calls_the_registered_tool() -> None:
    console = Console()
    model = ScriptedModel([tool_calls(("get_weather", {"location": "Hangzhou"})), assistant("Sunny, 24 degrees.")])

    await engine_with(console, chat=model, weather=get_weather).eval(example("tool_case1", chat=SCRIPTED_CHAT))

    assert model.requests[1].messages[-1].content == "Sunny, 24 degrees"
    assert console.printed == ["Sunny, 24 degrees."]


async def test_mcp_case1_calls_the_tool_of_the_real_mcp_server(mcp_server: str) -> None:
    console = Console()
    model = ScriptedModel([tool_calls(("get_weather", {"location": "Hangzhou"})), assistant("Sunny.")])

    async with engine_with(console, chat=model) as engine:
        await engine.eval(example("mcp_case1", chat=SCRIPTED_CHAT, mcp_url=mcp_server))

    assert [info.name for info in model.requests[0].tools] == ["get_weather"]
    assert model.requests[1].messages[-1].content == "Sunny, 24 degrees in Hangzhou"
    assert console.printed == ["Sunny."]


# -- the real llama.cpp server ------------------------------------------------------------------------------------


def real_chat(llama_server: str) -> dict[str, Any]:
    return {
        "provider": "openai",
        "model": "smollm2",
        "apiUrl": f"{llama_server}/chat/completions",
        "defaultOptions": {"max_tokens": 12, "temperature": 0, "seed": 7},
        "timeout": 120,
    }


def real_embedding(llama_server: str) -> dict[str, Any]:
    return {"provider": "openai", "model": "smollm2", "apiUrl": f"{llama_server}/embeddings", "timeout": 120}


@pytest.mark.real_server
async def test_chat_case1_on_the_real_server(llama_server: str) -> None:
    console = Console()

    context = await engine_with(console).eval(example("chat_case1", chat=real_chat(llama_server)))

    assert len(console.printed) >= 1 and console.printed[0].strip()
    assert context.get("message").strip() and context.trace.is_end("chat_case1") is False  # a chain has no end node
    assert [m.role for m in context.get("chatSession").messages] == ["user", "assistant"]


@pytest.mark.real_server
async def test_chat_case3_on_the_real_server(llama_server: str) -> None:
    console = Console([f"Say the number {i}." for i in range(1, 11)])

    context = await engine_with(console).eval(example("chat_case3", chat=real_chat(llama_server)))

    robot = [line for line in console.printed if line.startswith("Robot: ")]
    assert len(robot) == 10 and context.get("demo") == 10 and context.trace.is_end("chat_case3")


@pytest.mark.real_server
async def test_pk_case1_on_the_real_server(llama_server: str) -> None:
    console = Console()

    context = await engine_with(console).eval(example("pk_case1", chat=real_chat(llama_server)))

    assert sum(line.startswith("Afei: ") for line in console.printed) == 5
    assert sum(line.startswith("Azi: ") for line in console.printed) == 5
    assert len(context.get("A").messages) == len(context.get("B").messages) == 10


@pytest.mark.real_server
async def test_rag_case1_on_the_real_server_with_its_embeddings(llama_server: str) -> None:
    console = Console()
    engine = engine_with(console)

    context = await engine.eval(
        example("rag_case1", chat=real_chat(llama_server), embedding=real_embedding(llama_server))
    )

    prompt = context.get("chatSession").messages[0].content
    assert prompt.startswith("Who develops Solon?\n\n Now: ") and "References: [" in prompt
    assert console.printed and context.get("message").strip()


@pytest.mark.real_server
async def test_tool_case1_on_the_real_server(llama_server: str) -> None:
    console = Console()

    context = await engine_with(console, weather=get_weather).eval(example("tool_case1", chat=real_chat(llama_server)))

    roles = [m.role for m in context.get("chatSession").messages]
    assert roles[0] == "user" and roles[-1] == "assistant" and console.printed


@pytest.mark.real_server
async def test_mcp_case1_on_the_real_server(llama_server: str, mcp_server: str) -> None:
    console = Console()

    async with engine_with(console) as engine:
        context = await engine.eval(example("mcp_case1", chat=real_chat(llama_server), mcp_url=mcp_server))

    messages = context.get("chatSession").messages
    assert messages[-1].role == "assistant" and console.printed
    assert all(
        m.content == "Sunny, 24 degrees in Hangzhou" or m.role != "tool" or "Hangzhou" not in str(m.tool_calls)
        for m in messages
    )


@pytest.mark.real_server
async def test_rag_on_redis_answers_from_the_real_servers(llama_server: str) -> None:
    import uuid

    import redis.asyncio
    from tests.services import REDIS_DB, REDIS_SERVER, REDIS_URL

    prefix = f"batonflow-test:{uuid.uuid4().hex}:"

    def in_redis(spec: GraphSpec) -> None:
        for node in spec.nodes.values():
            if node.task == "@InMemoryRepository":
                node.task = "@RedisRepository"
                node.meta["redisConfig"] = {"server": REDIS_SERVER, "db": REDIS_DB, "keyPrefix": prefix}

    graph = Graph.copy(
        example("rag_case1", chat=real_chat(llama_server), embedding=real_embedding(llama_server)), in_redis
    )
    console = Console()
    client = redis.asyncio.Redis.from_url(REDIS_URL)
    try:
        async with engine_with(console) as engine:
            context = await engine.eval(graph)
        stored = await client.scard(f"{prefix}ids")
    finally:
        keys = [key async for key in client.scan_iter(f"{prefix}*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()

    prompt = context.get("chatSession").messages[0].content
    assert stored == 5 and "References: [Document{id='" in prompt and console.printed

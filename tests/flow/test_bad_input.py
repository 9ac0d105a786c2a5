"""Bad input: each mistake is a typed error naming the graph, the node and the meta, before any model call where
it can be known then; a dead MCP server does not hang the run."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from batonflow.flow import AiFlowEngine, FlowComponentError, FlowMetaError
from batonflow.graph import FlowContext, Graph
from batonflow.schema import Message, assistant
from batonflow.testing import FunctionModel, ScriptedModel, tool_calls
from batonflow.tools import ToolInfo

TEST_MCP_SERVER = Path(__file__).resolve().parents[1] / "tools" / "mcp_server.py"


def chat(meta: str) -> Graph:
    return Graph.from_yaml(f'id: bad\nlayout:\n  - {{id: chat, task: "@ChatModel", meta: {{message: hi, {meta}}}}}\n')


@pytest.fixture
def commands_engine(engine: AiFlowEngine) -> AiFlowEngine:
    """An engine whose stdio MCP servers may run this Python."""
    return AiFlowEngine(allowed_commands=[sys.executable])


@pytest.fixture
def model(engine: AiFlowEngine, commands_engine: AiFlowEngine) -> ScriptedModel:
    scripted = ScriptedModel([assistant("never")])
    engine.register("scripted", scripted)
    commands_engine.register("scripted", scripted)
    return scripted


async def refused(engine: AiFlowEngine, graph: Graph, meta: str) -> str:
    with pytest.raises(FlowMetaError) as caught:
        await engine.eval(graph)
    assert (caught.value.graph_id, caught.value.node_id, caught.value.meta) == ("bad", "chat", meta)
    assert str(caught.value).startswith(f"graph 'bad', node 'chat', meta '{meta}': ")
    return str(caught.value)


async def test_a_stream_that_is_neither_true_nor_false(engine: AiFlowEngine, model: ScriptedModel) -> None:
    text = await refused(engine, chat('stream: "maybe", chatConfig: {model: scripted}'), "stream")

    assert text.endswith("expected true or false, got str 'maybe'") and model.requests == []


async def test_a_chat_config_with_an_unknown_provider(engine: AiFlowEngine) -> None:
    text = await refused(engine, chat("chatConfig: {provider: dashscope, model: qwen}"), "chatConfig")

    assert "unknown provider 'dashscope': expected one of ['local', 'ollama', 'openai', 'openai-compatible']" in text


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ("chatConfig: qwen", "expected a mapping with provider, model, apiUrl and apiKey, got str 'qwen'"),
        ("chatConfig: {provider: openai}", "expected a 'model' for the provider 'openai', got none"),
        ("chatConfig: {model: nobody}", "no chat model is registered under that name"),
        ("chatConfig: {model: m, apiUrl: 'ftp://x'}", "expected an http(s) URL for 'apiUrl', got 'ftp://x'"),
        ("chatConfig: {model: m, apiUrl: 'http://x', timeout: -1}", "expected a positive number of seconds"),
        (
            "chatConfig: {model: scripted, defaultOptions: {max_tokens: many}}",
            "expected int for 'defaultOptions.max_tokens'",
        ),
        ("chatConfig: {provider: 7, model: m}", "expected text for 'provider', got int 7"),
    ],
)
async def test_a_chat_config_written_wrong(
    engine: AiFlowEngine, model: ScriptedModel, meta: str, expected: str
) -> None:
    assert expected in await refused(engine, chat(meta), "chatConfig")


@pytest.mark.parametrize(
    ("meta", "name", "expected"),
    [
        ("toolProviders: weather", "toolProviders", "expected a list of texts, got str 'weather'"),
        ("toolProviders: [nobody]", "toolProviders", "no tool provider is registered as 'nobody'"),
        ("systemPrompt: [a]", "systemPrompt", "expected text, got list"),
        ("chatSession: 5", "chatSession", "expected text, got int 5"),
        ("mcpServers: [a]", "mcpServers", "expected a mapping, got list"),
        (
            "mcpServers: {m: {type: sse, url: 'http://x'}}",
            "mcpServers",
            "server 'm': expected type 'stdio' or 'streamable', got 'sse'",
        ),
        ("mcpServers: {m: {type: streamable}}", "mcpServers", "server 'm': expected an http(s) 'url', got None"),
        ("mcpServers: {m: {type: stdio, args: [x]}}", "mcpServers", "server 'm': expected 'command' as text"),
    ],
)
async def test_a_chat_model_meta_of_the_wrong_type(
    engine: AiFlowEngine, model: ScriptedModel, meta: str, name: str, expected: str
) -> None:
    assert expected in await refused(engine, chat(f"chatConfig: {{model: scripted}}, {meta}"), name)
    assert model.requests == []


async def test_a_session_variable_holding_something_else(engine: AiFlowEngine, model: ScriptedModel) -> None:
    with pytest.raises(
        FlowMetaError, match="expected the context variable 'chatSession' to hold a ChatSession, got str"
    ):
        await engine.eval(chat("chatConfig: {model: scripted}"), FlowContext(variables={"chatSession": "s1"}))


async def test_an_embedding_or_image_config_written_wrong(engine: AiFlowEngine) -> None:
    embedding = Graph.from_yaml(
        'id: bad\nlayout:\n  - {id: chat, task: "@EmbeddingModel", meta: {embeddingConfig: {provider: x, model: m}}}\n'
    )
    image = Graph.from_yaml(
        'id: bad\nlayout:\n  - {id: chat, task: "@GenerateModel", meta: {generateConfig: {provider: local}}}\n'
    )

    assert "unknown provider 'x'" in await refused(engine, embedding, "embeddingConfig")
    assert "the local provider makes no images" in await refused(engine, image, "generateConfig")


async def test_an_mcp_server_that_does_not_start_is_an_error_within_its_timeout(
    commands_engine: AiFlowEngine, model: ScriptedModel
) -> None:
    engine = commands_engine
    graph = chat(
        f"chatConfig: {{model: scripted}}, mcpServers: {{broken: {{type: stdio, command: '{sys.executable}', args: ['-c', 'import sys; sys.exit(3)'], timeout: 5}}}}"
    )

    with pytest.raises(FlowComponentError) as caught:
        await asyncio.wait_for(engine.eval(graph), 60)  # a guard against a hang: the server's timeout is 5 s

    assert (caught.value.graph_id, caught.value.node_id, caught.value.meta) == ("bad", "chat", "mcpServers")
    assert "the MCP server 'broken' did not give its tools: MCPServerError" in str(caught.value)
    assert model.requests == []


async def test_an_mcp_server_that_dies_mid_call_ends_the_run_with_an_error_under_tool_errors_raise(
    commands_engine: AiFlowEngine,
) -> None:
    engine = commands_engine

    def script(messages: list[Message], tools: list[ToolInfo]) -> Message:
        if messages[-1].role != "tool":
            return tool_calls(("pid", {}))
        pid = int(messages[-1].content)
        asyncio.get_running_loop().call_later(0.3, os.kill, pid, signal.SIGKILL)
        return tool_calls(("slow", {"seconds": 60}), id_prefix="slow_")

    engine.register("scripted", FunctionModel(script))
    graph = chat(
        f"chatConfig: {{model: scripted}}, toolErrors: raise, mcpServers: {{tests: {{type: stdio, command: '{sys.executable}', args: ['{TEST_MCP_SERVER}', stdio], timeout: 10}}}}"
    )

    async with engine:
        with pytest.raises(FlowComponentError) as caught:
            await asyncio.wait_for(engine.eval(graph), timeout=60)  # a guard against a hang, not a measure

    assert (caught.value.node_id, caught.value.meta) == ("chat", "mcpServers")
    assert "the tool 'slow' failed: MCPServerError" in str(caught.value)

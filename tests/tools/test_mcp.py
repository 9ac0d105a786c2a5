"""MCPToolProvider against a real MCP server (``mcp_server.py``, the SDK's own server class) over stdio and
streamable HTTP: listing, calls, the result rules, an agent using the tools, and servers that do not start or die.

Each shared server starts once per module; the tests that kill a server start their own.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from batonflow.adk import ChatModelAgent, Runner
from batonflow.errors import RunError, ToolArgumentsError, UserError
from batonflow.schema import assistant
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import Tool
from batonflow.tools.mcp import MCPServerError, MCPTool, MCPToolProvider

pytestmark = pytest.mark.asyncio(loop_scope="module")

SERVER = str(Path(__file__).with_name("mcp_server.py"))
WAIT = 60.0  # a guard against a hang, not a measure
TOOL_NAMES = [
    "add",
    "weather",
    "forecast",
    "two_parts",
    "fail",
    "quota",
    "slow",
    "meet",
    "pid",
    "header",
    "dotted_name",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_http_server() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen([sys.executable, SERVER, "http", str(port)], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the MCP test server exited with code {process.returncode}"
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return process, f"http://127.0.0.1:{port}/mcp"
        time.sleep(0.05)
    process.kill()
    pytest.fail("the MCP test server did not listen within 30 s")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    process, url = start_http_server()
    yield url
    stop(process)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def stdio_provider() -> AsyncIterator[MCPToolProvider]:
    async with MCPToolProvider.stdio(sys.executable, [SERVER, "stdio"], timeout=20) as provider:
        yield provider


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def http_provider(http_url: str) -> AsyncIterator[MCPToolProvider]:
    async with MCPToolProvider.http(http_url, headers={"X-Team": "batonflow"}, timeout=20) as provider:
        yield provider


async def by_name(provider: MCPToolProvider) -> dict[str, Tool]:
    return {tool.info.name: tool for tool in await provider.tools()}


# -- listing and calling, over both transports -------------------------------------------------------------------


@pytest.fixture(params=["stdio", "http"])
def provider(request: pytest.FixtureRequest) -> MCPToolProvider:
    return request.getfixturevalue(f"{request.param}_provider")  # type: ignore[no-any-return]


async def test_the_server_s_tools_become_tools_with_its_schemas(provider: MCPToolProvider) -> None:
    tools = await provider.tools()

    assert [tool.info.name for tool in tools] == TOOL_NAMES
    assert all(isinstance(tool, Tool) and isinstance(tool, MCPTool) for tool in tools)
    add = tools[0].info
    assert add.description == "Add two integers."
    assert add.parameters["type"] == "object"
    assert add.parameters["required"] == ["a", "b"]
    assert {name: p["type"] for name, p in add.parameters["properties"].items()} == {"a": "integer", "b": "integer"}
    weather = tools[1].info.parameters
    assert weather["properties"]["unit"]["default"] == "celsius" and weather["required"] == ["city"]


async def test_a_call_returns_the_text_content(provider: MCPToolProvider) -> None:
    tools = await by_name(provider)

    assert await tools["add"].invoke('{"a": 2, "b": 40}') == "42"
    assert await tools["weather"].invoke('{"city": "Oslo"}') == "Sunny in Oslo, 21 degrees celsius"


async def test_structured_content_arrives_as_the_text_the_server_wrote_for_it(provider: MCPToolProvider) -> None:
    text = await (await by_name(provider))["forecast"].invoke('{"city": "Bergen"}')

    assert json.loads(text) == {"city": "Bergen", "celsius": 19}


async def test_several_contents_are_joined_and_an_image_is_named(provider: MCPToolProvider) -> None:
    text = await (await by_name(provider))["two_parts"].invoke('{"name": "Ann"}')

    assert text == "Hello, Ann.\n\nNice to meet you.\n\n[image: image/png]"


async def test_a_tool_error_is_a_result_the_model_reads(provider: MCPToolProvider) -> None:
    tools = await by_name(provider)

    assert await tools["fail"].invoke('{"reason": "disk full"}') == "Error: Error executing tool fail"
    assert await tools["quota"].invoke("") == "Error: quota exceeded"  # marked once, not twice
    refused = await tools["add"].invoke('{"a": "two"}')
    assert refused.startswith("Error: ") and "validation error" in refused
    assert (await provider.call("no_such_tool", {})).startswith("Error: Unknown tool")


async def test_a_name_a_model_would_refuse_is_made_safe_and_still_calls_the_server_s_tool(
    provider: MCPToolProvider,
) -> None:
    tool = (await by_name(provider))["dotted_name"]

    assert isinstance(tool, MCPTool) and tool.server_name == "dotted.name"
    assert await tool.invoke("") == "dotted"


async def test_arguments_that_are_not_a_json_object_are_refused_before_the_server_is_called(
    stdio_provider: MCPToolProvider,
) -> None:
    add = (await by_name(stdio_provider))["add"]

    with pytest.raises(ToolArgumentsError, match=r"Invalid arguments for tool \[add\]: expected JSON, got"):
        await add.invoke('{"a": 1')
    with pytest.raises(ToolArgumentsError, match=r"expected a JSON object, got array"):
        await add.invoke("[1, 2]")


async def test_calls_from_several_tasks_share_one_connection_at_once(provider: MCPToolProvider) -> None:
    meet = (await by_name(provider))["meet"]
    group = json.dumps({"group": uuid.uuid4().hex, "count": 5})

    answers = await asyncio.gather(*(meet.invoke(group) for _ in range(5)))

    assert answers == ["met"] * 5  # each call waited until all five were in: side by side, not one after another


async def test_http_headers_reach_the_server(http_provider: MCPToolProvider) -> None:
    assert await (await by_name(http_provider))["header"].invoke('{"name": "x-team"}') == "batonflow"


async def test_an_agent_calls_an_mcp_tool_and_reads_its_result(stdio_provider: MCPToolProvider) -> None:
    model = ScriptedModel([tool_calls(("add", {"a": 20, "b": 22})), assistant("The sum is 42.")])
    agent = ChatModelAgent(name="calc", model=model, tools=await stdio_provider.tools())

    result = await Runner(agent).call("What is 20 + 22?")

    assert result.text == "The sum is 42."
    observation = model.requests[1].messages[-1]
    assert (observation.role, observation.content) == ("tool", "42")
    assert "add" in [t.name for t in model.requests[0].tools or []]


# -- servers that do not start, do not answer, or die ------------------------------------------------------------


async def test_a_command_that_does_not_exist_is_a_server_error_naming_it() -> None:
    provider = MCPToolProvider.stdio("no-such-mcp-server-command", timeout=5)

    with pytest.raises(MCPServerError, match="MCP server 'no-such-mcp-server-command' could not be started") as caught:
        await provider.tools()

    assert isinstance(caught.value, RunError) and caught.value.server == "no-such-mcp-server-command"


async def test_a_server_that_exits_at_once_is_an_error_quoting_its_stderr() -> None:
    script = "import sys; print('missing API key', file=sys.stderr); sys.exit(2)"
    async with MCPToolProvider.stdio(sys.executable, ["-c", script], timeout=10) as provider:
        with pytest.raises(
            MCPServerError, match=r"could not be started or reached: .*its stderr ends: missing API key"
        ):
            await provider.tools()


async def test_a_server_that_never_answers_fails_within_the_timeout() -> None:
    async with MCPToolProvider.stdio(sys.executable, ["-c", "import time; time.sleep(60)"], timeout=0.5) as provider:
        with pytest.raises(MCPServerError, match=r"did not start within 0\.5 s"):  # the timeout, not a hang
            await asyncio.wait_for(provider.tools(), WAIT)


async def test_nobody_listening_at_the_url_is_a_server_error_naming_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    async with MCPToolProvider.http(url, timeout=5) as provider:
        with pytest.raises(MCPServerError, match=f"MCP server '{url}' could not be started or reached"):
            await provider.tools()


async def test_a_call_that_takes_too_long_fails_within_the_timeout_and_the_next_call_works() -> None:
    async with MCPToolProvider.stdio(sys.executable, [SERVER, "stdio"], timeout=20) as provider:
        tools = await by_name(provider)
        provider.timeout = 0.5
        with pytest.raises(MCPServerError, match=r"did not answer within 0\.5 s when asked to call the tool 'slow'"):
            await asyncio.wait_for(tools["slow"].invoke('{"seconds": 3600}'), WAIT)
        provider.timeout = 20
        assert await tools["add"].invoke('{"a": 1, "b": 1}') == "2"


async def test_a_stdio_server_killed_mid_call_fails_the_call_at_once_and_is_started_again() -> None:
    async with MCPToolProvider.stdio(sys.executable, [SERVER, "stdio"], timeout=3600) as provider:
        tools = await by_name(provider)
        pid = int(await tools["pid"].invoke(""))
        call = asyncio.ensure_future(tools["slow"].invoke('{"seconds": 7200}'))
        await asyncio.sleep(0.2)

        os.kill(pid, signal.SIGKILL)
        # The death, not the 1-hour timeout, ends the call: the error says the connection ended.
        with pytest.raises(MCPServerError, match=r"failed when asked to call the tool 'slow' \(the connection ended"):
            await asyncio.wait_for(call, WAIT)

        assert int(await tools["pid"].invoke("")) != pid  # a new server process


async def test_an_http_server_killed_mid_call_fails_the_call_within_the_timeout() -> None:
    process, url = start_http_server()
    try:
        async with MCPToolProvider.http(url, timeout=5) as provider:
            tools = await by_name(provider)
            call = asyncio.ensure_future(tools["slow"].invoke('{"seconds": 30}'))
            await asyncio.sleep(0.2)

            process.kill()
            with pytest.raises(MCPServerError, match=f"MCP server '{url}' "):  # by the 5 s timeout at the latest
                await asyncio.wait_for(call, WAIT)
    finally:
        stop(process)


# -- bad input ---------------------------------------------------------------------------------------------------


async def test_bad_arguments_to_the_constructors_are_user_errors() -> None:
    with pytest.raises(UserError, match=r"expected a command \(a non-empty str\), got ''"):
        MCPToolProvider.stdio("")
    with pytest.raises(UserError, match="expected args as a sequence of str, got 'serve'"):
        MCPToolProvider.stdio("server", "serve")  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"expected an http\(s\) URL, got 'ftp://host/mcp'"):
        MCPToolProvider.http("ftp://host/mcp")
    with pytest.raises(UserError, match="timeout: expected a number of seconds above 0, got 0"):
        MCPToolProvider.http("http://127.0.0.1:1/mcp", timeout=0)

"""``batonflow mcp`` against the SDK's own client, over both transports: a stdio server the client starts
(``python -m batonflow mcp tests.interop.mcp_app:app --tools``) and a streamable HTTP one on a free loopback port.
Each transport is spoken in both of the SDK's eras: the handshake protocol (``mode="legacy"``, where elicitation is
a request back to the client within the call) and the 2026-07-28 one (``mode="auto"``, where it is an
``InputRequiredResult`` the client's retry answers).

The servers and clients start once per module; a client's elicitation answers come from ``RESPONDER``, which each
test sets.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
import pytest_asyncio
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

import batonflow

pytestmark = pytest.mark.asyncio(loop_scope="module")

ROOT = Path(__file__).resolve().parents[2]
SRC = Path(batonflow.__file__).resolve().parents[1]
APP = "tests.interop.mcp_app:app"
WAIT = 60.0  # a guard against a hang, not a measure
ENV = {"PYTHONPATH": f"{SRC}{os.pathsep}{ROOT}"}
ERAS = [("stdio", "legacy"), ("stdio", "auto"), ("http", "legacy"), ("http", "auto")]


class Responder:
    """What the user answers to an elicitation (set by each test), and what was asked."""

    def __init__(self) -> None:
        self.answer = types.ElicitResult(action="accept", content={"decision": "approve"})
        self.asked: list[types.ElicitRequestParams] = []

    async def __call__(self, ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params)
        return self.answer


RESPONDER = Responder()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    port = free_port()
    command = [sys.executable, "-m", "batonflow", "mcp", APP, "--tools", "--http", "--port", str(port)]
    process = subprocess.Popen(command, cwd=ROOT, env={**os.environ, **ENV}, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        assert process.poll() is None, f"batonflow mcp --http exited with code {process.returncode}"
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    else:
        process.kill()
        pytest.fail("batonflow mcp --http did not listen in time")
    yield f"http://127.0.0.1:{port}/mcp"
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _server(transport: str, mode: str, url: str) -> Any:
    if transport == "http":
        return url
    # One stdio server is named by module:attr, the other by its file (what a client's config would say).
    target = APP if mode == "legacy" else f"{ROOT / 'tests' / 'interop' / 'mcp_app.py'}:app"
    args = ["-m", "batonflow", "mcp", target, "--tools"]
    return StdioServerParameters(command=sys.executable, args=args, env=ENV, cwd=str(ROOT))


async def _hold(url: str, ready: asyncio.Future[dict[tuple[str, str, bool], Client]], stop: asyncio.Event) -> None:
    """Open every client, hand them over, and close them once told to: in one task, since the SDK's client is made
    of anyio task groups, which the task that entered them must leave."""
    async with AsyncExitStack() as stack:
        made: dict[tuple[str, str, bool], Client] = {}
        try:
            for transport, mode in ERAS:
                for elicits in (True, False):
                    client = Client(
                        _server(transport, mode, url),
                        mode=mode,
                        read_timeout_seconds=WAIT,
                        elicitation_callback=RESPONDER if elicits else None,
                    )
                    made[(transport, mode, elicits)] = await stack.enter_async_context(client)
        except BaseException as error:
            ready.set_exception(error)
            raise
        ready.set_result(made)
        await stop.wait()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def clients(http_url: str) -> AsyncIterator[dict[tuple[str, str, bool], Client]]:
    """A client per transport, era, and whether it declares elicitation."""
    ready: asyncio.Future[dict[tuple[str, str, bool], Client]] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()
    holder = asyncio.create_task(_hold(http_url, ready, stop))
    try:
        yield await asyncio.wait_for(ready, WAIT)
    finally:
        stop.set()
        await asyncio.wait_for(holder, WAIT)


@pytest.fixture(params=ERAS, ids=[f"{t}-{m}" for t, m in ERAS])
def era(request: pytest.FixtureRequest) -> tuple[str, str]:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def client(clients: dict[tuple[str, str, bool], Client], era: tuple[str, str]) -> Client:
    """The client of this era that answers elicitations (through ``RESPONDER``)."""
    RESPONDER.answer = types.ElicitResult(action="accept", content={"decision": "approve"})
    RESPONDER.asked.clear()
    return clients[(*era, True)]


@pytest.fixture
def plain(clients: dict[tuple[str, str, bool], Client], era: tuple[str, str]) -> Client:
    """The client of this era that declares no elicitation."""
    return clients[(*era, False)]


async def call(client: Client, name: str, arguments: dict[str, Any], **options: Any) -> types.CallToolResult:
    with anyio.fail_after(WAIT):
        return await client.call_tool(name, arguments, **options)


def text(result: types.CallToolResult) -> str:
    return "".join(part.text for part in result.content if isinstance(part, types.TextContent))


# -- listing and calling ------------------------------------------------------------------------------------------


async def test_the_agents_the_resume_tool_and_the_agents_tools_are_listed_with_their_schemas(client: Client) -> None:
    with anyio.fail_after(WAIT):
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert list(listed) == ["echoer", "refunds", "asker", "broken", "resume", "order_status", "refund", "pick_colour"]
    assert listed["echoer"].description == "Says back what it is told."
    schema = listed["refunds"].input_schema
    assert schema["required"] == ["input"] and set(schema["properties"]) == {"input", "session_id", "checkpoint_id"}
    assert listed["resume"].input_schema["required"] == ["checkpoint_id", "answers"]
    assert listed["order_status"].input_schema["properties"]["order_id"]["type"] == "integer"
    assert listed["order_status"].description == "The status of an order."


async def test_a_call_runs_the_agent_and_answers_its_final_text(client: Client) -> None:
    result = await call(client, "echoer", {"input": "hello there"})
    assert not result.is_error and text(result) == "echo: hello there"
    structured = result.structured_content or {}
    assert structured["status"] == "completed" and structured["agent"] == "echoer"
    assert len(structured["run_id"]) == 32


async def test_a_session_id_continues_a_conversation(client: Client, era: tuple[str, str]) -> None:
    session = f"talk-{era[0]}-{era[1]}"
    await call(client, "echoer", {"input": "first", "session_id": session})
    second = await call(client, "echoer", {"input": "second", "session_id": session})
    assert text(second) == "echo: second" and (second.structured_content or {})["session_id"] == session


async def test_progress_notifications_say_the_run_s_steps(client: Client) -> None:
    reported: list[tuple[float, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        reported.append((value, message))

    result = await call(client, "refunds", {"input": "refund order 42"}, progress_callback=progress)
    assert text(result) == "order 42: refunded order 42"
    messages = [message for _, message in reported]
    assert messages == [
        "refunds: calls refund",
        "refunds: refund answered: refunded order 42",
        "refunds: order 42: refunded order 42",
    ]
    assert [value for value, _ in reported] == [1, 2, 3]


async def test_tools_true_lists_an_agent_s_tool_which_is_called_directly(client: Client) -> None:
    result = await call(client, "order_status", {"order_id": 7})
    assert not result.is_error and text(result) == "order 7 shipped"


# -- approvals --------------------------------------------------------------------------------------------------


async def test_an_approval_is_asked_through_elicitation_and_the_run_resumes_in_the_same_call(client: Client) -> None:
    result = await call(client, "refunds", {"input": "refund order 42"})
    assert text(result) == "order 42: refunded order 42"
    assert (result.structured_content or {})["status"] == "completed"
    [asked] = RESPONDER.asked
    assert asked.message.startswith("refunds asks for approval:") and 'refund({"order_id": 42})' in asked.message
    assert isinstance(asked, types.ElicitRequestFormParams)
    assert asked.requested_schema["properties"]["decision"]["enum"] == ["approve", "reject"]


async def test_a_rejection_through_elicitation_refuses_the_call(client: Client) -> None:
    RESPONDER.answer = types.ElicitResult(action="accept", content={"decision": "reject", "comment": "no way"})
    result = await call(client, "refunds", {"input": "refund order 42"})
    assert (result.structured_content or {})["status"] == "completed"
    assert text(result) == "no way"  # a rejection's comment is the run's answer: the refund never ran


async def test_a_question_is_asked_through_elicitation_and_its_answer_resumes_the_run(client: Client) -> None:
    RESPONDER.answer = types.ElicitResult(action="accept", content={"answer": "blue"})
    result = await call(client, "asker", {"input": "pick one"})
    assert text(result) == "you picked blue"
    [asked] = RESPONDER.asked
    assert asked.message == "asker asks: which colour?"
    assert isinstance(asked, types.ElicitRequestFormParams) and asked.requested_schema["required"] == ["answer"]


async def test_a_declined_question_leaves_the_run_waiting(client: Client) -> None:
    RESPONDER.answer = types.ElicitResult(action="decline")
    result = await call(client, "asker", {"input": "pick one"})
    structured = result.structured_content or {}
    assert structured["status"] == "interrupted" and structured["interrupts"][0]["kind"] == "question"
    answers = {structured["interrupt_ids"][0]: "green"}
    resumed = await call(client, "resume", {"checkpoint_id": structured["checkpoint_id"], "answers": answers})
    assert text(resumed) == "you picked green"


async def test_a_cancelled_elicitation_leaves_the_run_waiting(client: Client) -> None:
    RESPONDER.answer = types.ElicitResult(action="cancel")
    result = await call(client, "refunds", {"input": "refund order 42"})
    structured = result.structured_content or {}
    assert structured["status"] == "interrupted" and structured["interrupts"][0]["kind"] == "approval"
    answers = {structured["interrupt_ids"][0]: "approve"}
    resumed = await call(client, "resume", {"checkpoint_id": structured["checkpoint_id"], "answers": answers})
    assert text(resumed) == "order 42: refunded order 42"


async def test_without_elicitation_the_result_names_the_checkpoint_and_resume_answers_it(plain: Client) -> None:
    waiting = await call(plain, "refunds", {"input": "refund order 42"})
    structured = waiting.structured_content or {}
    assert not waiting.is_error and structured["status"] == "interrupted"
    checkpoint, [interrupt] = structured["checkpoint_id"], structured["interrupt_ids"]
    assert checkpoint in text(waiting) and interrupt in text(waiting) and "resume" in text(waiting)
    assert structured["interrupts"][0]["info"]["tasks"][0]["tool_name"] == "refund"
    resumed = await call(plain, "resume", {"checkpoint_id": checkpoint, "answers": {interrupt: "approve"}})
    assert text(resumed) == "order 42: refunded order 42"
    assert (resumed.structured_content or {})["status"] == "completed"
    again = await call(plain, "resume", {"checkpoint_id": checkpoint, "answers": {interrupt: "approve"}})
    assert again.is_error and "expected the checkpoint_id of a waiting run" in text(again)


async def test_a_conversation_s_pending_run_is_resumed_by_its_session_id(plain: Client, era: tuple[str, str]) -> None:
    session = f"refund-{era[0]}-{era[1]}"
    waiting = await call(plain, "refunds", {"input": "refund order 42", "session_id": session})
    structured = waiting.structured_content or {}
    assert structured["checkpoint_id"] == session and structured["session_id"] == session
    answers = {structured["interrupt_ids"][0]: "reject"}
    resumed = await call(plain, "resume", {"checkpoint_id": session, "answers": answers})
    assert (resumed.structured_content or {})["status"] == "completed" and "refunded order" not in text(resumed)


# -- bad input ----------------------------------------------------------------------------------------------------


async def test_an_unknown_tool_is_an_error_naming_the_tools(client: Client) -> None:
    with pytest.raises(MCPError) as raised, anyio.fail_after(WAIT):
        await client.call_tool("nobody", {"input": "hi"})
    assert "unknown tool 'nobody'" in raised.value.error.message and "echoer" in raised.value.error.message


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({}, "input: Field required"),
        ({"input": 42}, "input: Input should be a valid string"),
        ({"input": "hi", "colour": "red"}, "colour: Extra inputs are not permitted"),
        ({"input": "hi", "session_id": "s", "checkpoint_id": "c"}, "expected a session_id or a checkpoint_id"),
    ],
)
async def test_arguments_off_the_schema_are_an_error_result(
    client: Client, arguments: dict[str, Any], problem: str
) -> None:
    result = await call(client, "echoer", arguments)
    assert result.is_error and problem in text(result)


async def test_a_run_that_fails_is_an_error_result_naming_its_error(client: Client) -> None:
    result = await call(client, "broken", {"input": "hi"})
    assert result.is_error and text(result).startswith("broken: the run failed: ")
    assert "the model is down" in text(result)


async def test_a_resume_of_an_unknown_checkpoint_is_an_error_result(plain: Client) -> None:
    result = await call(plain, "resume", {"checkpoint_id": "mcp-nothing", "answers": {"x": "approve"}})
    assert result.is_error and "got 'mcp-nothing', which this server does not know" in text(result)
    made_elsewhere = {"checkpoint_id": "mcp-nothing", "answers": {"x": "approve"}, "agent": "refunds"}
    result = await call(plain, "resume", made_elsewhere)
    assert result.is_error and "CheckpointNotFoundError" in text(result)


async def test_answers_to_other_interrupts_are_an_error_result_and_the_run_still_waits(plain: Client) -> None:
    waiting = (await call(plain, "refunds", {"input": "refund order 42"})).structured_content or {}
    wrong = await call(plain, "resume", {"checkpoint_id": waiting["checkpoint_id"], "answers": {"x": "approve"}})
    assert wrong.is_error and "expected answers to interrupts of" in text(wrong)
    answers = {waiting["interrupt_ids"][0]: "approve"}
    right = await call(plain, "resume", {"checkpoint_id": waiting["checkpoint_id"], "answers": answers})
    assert text(right) == "order 42: refunded order 42"


async def test_a_tool_s_bad_arguments_are_an_error_result(client: Client) -> None:
    result = await call(client, "order_status", {"order_id": "seven"})
    assert result.is_error and "order_status" in text(result)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_retry_with_a_request_state_the_server_never_gave_is_an_error_result(
    clients: dict[tuple[str, str, bool], Client], transport: str
) -> None:
    client = clients[(transport, "auto", True)]  # request states are the 2026-07-28 protocol's
    with anyio.fail_after(WAIT):
        result = await client.session.call_tool(
            "refunds", {"input": "refund order 42"}, request_state="forged", allow_input_required=True
        )
    assert isinstance(result, types.CallToolResult) and result.is_error
    assert "got 'forged', which this server does not know" in text(result)

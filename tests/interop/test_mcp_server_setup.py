"""``create_mcp_server``'s refusals, and the targets ``batonflow mcp`` loads: no server or client needed."""

from __future__ import annotations

import pytest

from batonflow import ChatModelAgent
from batonflow.cli import main
from batonflow.errors import UserError
from batonflow.interop import create_mcp_server
from batonflow.schema import assistant
from batonflow.testing import ScriptedModel

from .mcp_app import echoer, order_status, refunds


def agent(name: str, **options: object) -> ChatModelAgent:
    return ChatModelAgent(name=name, model=ScriptedModel([assistant("hi")]), **options)  # type: ignore[arg-type]


def test_the_server_is_the_sdk_s_server_with_the_name_given() -> None:
    from mcp.server import Server

    server = create_mcp_server([echoer, refunds], name="shop")
    assert isinstance(server, Server) and server.name == "shop"


@pytest.mark.parametrize(
    ("agents", "message"),
    [
        ([], "expected at least one agent, got none"),
        ({"": agent("a")}, "expected agents with names"),
        ([agent("twin"), agent("twin")], "got 'twin' twice"),
        ([agent("resume")], "got 'resume' twice"),
    ],
)
def test_agents_that_cannot_be_tools_are_user_errors(agents: object, message: str) -> None:
    with pytest.raises(UserError, match=message):
        create_mcp_server(agents)  # type: ignore[arg-type]


def test_tools_true_refuses_a_tool_named_as_an_agent() -> None:
    clash = agent("order_status")
    with pytest.raises(UserError, match="expected tool names of their own, got 'order_status'"):
        create_mcp_server([echoer, clash], tools=True)
    assert create_mcp_server([echoer, clash]) is not None  # without tools=True, only the agents are tools
    assert order_status.info.name == "order_status"


def test_a_target_file_that_does_not_exist_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "no/such/file.py:app"]) == 1
    assert capsys.readouterr().err == (
        "batonflow: target 'no/such/file.py:app': expected no/such/file.py to be a Python file, found none\n"
    )


def test_a_target_without_a_colon_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "no_colon_here"]) == 1
    assert "expected module:attr" in capsys.readouterr().err

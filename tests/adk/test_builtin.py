import json
from collections.abc import Iterator

import pytest

import batonflow
from batonflow.adk import (
    ChatModelAgent,
    ExitTool,
    Runner,
    TransferToAgentTool,
    collect_events,
    set_language,
    set_sub_agents,
)
from batonflow.errors import ToolArgumentsError, UserError
from batonflow.schema import assistant
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import ToolContext


@pytest.fixture
def chinese() -> Iterator[None]:
    set_language("zh")
    yield
    set_language("en")


async def system_prompt_of_billing(refund_description: str, router_description: str) -> str:
    """The system prompt of an agent with no instruction of its own, a sub-agent and a parent to transfer to."""
    billing = ChatModelAgent(name="billing", description="Bills.", model=ScriptedModel([assistant("ok")]))
    set_sub_agents(billing, [ChatModelAgent(name="refund", description=refund_description, model=ScriptedModel([]))])
    router = ChatModelAgent(
        name="router",
        description=router_description,
        model=ScriptedModel([tool_calls(("transfer_to_agent", {"agent_name": "billing"}))]),
    )
    await collect_events(Runner(set_sub_agents(router, [billing])).query("a question"))
    assert isinstance(billing.model, ScriptedModel)
    return billing.model.requests[0].messages[0].content


async def test_transfer_instruction_is_the_originals_text() -> None:
    assert await system_prompt_of_billing("Handles refunds.", "Routes requests.") == (
        "Available other agents: \n"
        "- Agent name: refund\n"
        "  Agent description: Handles refunds.\n"
        "- Agent name: router\n"
        "  Agent description: Routes requests.\n"
        "\n"
        "Decision rule:\n"
        "- If you're best suited for the question according to your description: ANSWER\n"
        "- If another agent is better according its description: CALL 'transfer_to_agent' function with their "
        "agent name\n"
        "\n"
        "When transferring: OUTPUT ONLY THE FUNCTION CALL"
    )


async def test_transfer_instruction_in_chinese(chinese: None) -> None:
    assert await system_prompt_of_billing("退款", "路由") == (
        "可用的其他 agent：\n- Agent 名字: refund\n  Agent 描述: 退款\n- Agent 名字: router\n  Agent 描述: 路由\n\n"
        "决策规则：\n"
        "- 如果根据你的职责描述，你最适合回答这个问题：ANSWER\n"
        "- 如果根据其职责描述，另一个 agent 更适合：调用 transfer_to_agent 函数，并传入该 agent 的名称\n\n"
        "当进行移交时：只输出函数调用，不要输出其他任何内容"
    )
    assert TransferToAgentTool(["a"]).info.description == "将问题移交给其他 Agent。"
    out = await TransferToAgentTool(["a"]).invoke(json.dumps({"agent_name": "a"}), ToolContext(tool_name="t"))
    assert out == "成功移交任务至 agent [a]"


def test_unknown_language_is_a_user_error() -> None:
    with pytest.raises(UserError, match="expected 'en' or 'zh', got 'fr'"):
        set_language("fr")  # type: ignore[arg-type]


def test_the_built_in_tools_names_are_public() -> None:
    assert batonflow.TRANSFER_TOOL_NAME == TransferToAgentTool(["a"]).info.name == "transfer_to_agent"
    assert batonflow.EXIT_TOOL_NAME == ExitTool().info.name == "exit"


def test_transfer_tool_names_its_targets_as_an_enum() -> None:
    info = TransferToAgentTool(["refund", "router"]).info
    assert info.name == "transfer_to_agent"
    assert info.description == "Transfer the question to another agent."
    assert info.parameters == {
        "type": "object",
        "properties": {
            "agent_name": {
                "type": "string",
                "description": "the name of the agent to transfer to",
                "enum": ["refund", "router"],
            }
        },
        "required": ["agent_name"],
    }


async def test_transfer_tool_sets_the_action_and_says_it_transferred() -> None:
    ctx = ToolContext(tool_name="transfer_to_agent")
    out = await TransferToAgentTool(["a"], source="router").invoke(json.dumps({"agent_name": "a"}), ctx)
    assert out == "successfully transferred to agent [a]"
    assert ctx.action.transfer_to_agent.dest_agent_name == "a"


async def test_transfer_tool_never_says_it_transferred_to_an_agent_that_is_not_there() -> None:
    ctx = ToolContext(tool_name="transfer_to_agent")
    out = await TransferToAgentTool(["a"], source="router").invoke(json.dumps({"agent_name": "nobody"}), ctx)
    assert out == "transfer failed: agent 'nobody' not found when transferring from 'router'"
    # The action is still asked for, so that the flow agent ends the run with the same error.
    assert ctx.action.transfer_to_agent.dest_agent_name == "nobody"
    assert await TransferToAgentTool(["a"]).invoke(json.dumps({"agent_name": "b"})) == (
        "transfer failed: agent 'b' not found"
    )


async def test_exit_tool_returns_the_final_result_and_exits() -> None:
    tool = ExitTool()
    assert tool.info.description == "Exit the agent process and return the final result."
    assert tool.info.parameters["properties"] == {
        "final_result": {"type": "string", "description": "the final result to return"}
    }
    ctx = ToolContext(tool_name="exit")
    assert await tool.invoke('{"final_result": "done"}', ctx) == "done"
    assert ctx.action.exit is True


@pytest.mark.parametrize("arguments", ["{not json", "[]", '{"agent_name": 3}', ""])
async def test_malformed_transfer_arguments_are_tool_argument_errors(arguments: str) -> None:
    with pytest.raises(ToolArgumentsError, match=r"Invalid arguments for tool \[transfer_to_agent\]"):
        await TransferToAgentTool(["a"]).invoke(arguments)


DEEP = "[" * 100_000
TOO_DEEP = "expected JSON nested at most 100 levels deep, got 100,000 levels"


async def test_deeply_nested_transfer_arguments_are_an_observation_not_a_crash() -> None:
    model = ScriptedModel([tool_calls(("transfer_to_agent", DEEP))])
    router = ChatModelAgent(name="router", description="Routes.", model=model)
    root = set_sub_agents(router, [ChatModelAgent(name="a", description="A.", model=ScriptedModel([]))])
    events = await collect_events(Runner(root).query("q"))
    assert [e.error for e in events if e.error is not None] == []
    # transfer_to_agent returns directly (Eino's rule), so its observation is where the run stops.
    last = events[-1].message_output
    assert last is not None and last.message is not None
    assert last.message.content == f"Invalid arguments for tool [transfer_to_agent]: {TOO_DEEP}"


async def test_overlong_exit_arguments_are_refused_saying_the_limit_and_the_size() -> None:
    arguments = json.dumps({"final_result": "x" * 2_000_000})
    with pytest.raises(ToolArgumentsError) as caught:
        await ExitTool().invoke(arguments)
    assert str(caught.value) == (
        "Invalid arguments for tool [exit]: expected at most 1,000,000 characters of JSON, got 2,000,020"
    )

"""The built-in texts and tools of the agent runtime: transfer instruction, ``transfer_to_agent``, ``exit``.

The texts are Eino's exactly (``adk/chatmodel.go``, ``adk/instruction.go``), in English by default and Chinese after
``set_language("zh")``; the language is process-wide, as in Eino (``adk.SetLanguage``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, Literal

from ..errors import ModelJSONError, ToolArgumentsError, UserError
from ..schema import FunctionCall, Message, ToolCall, assistant, tool_message
from ..tools import ToolContext, ToolInfo, parse_model_json
from ._events import exit_action, transfer_action

__all__ = [
    "EXIT_TOOL_NAME",
    "TRANSFER_TOOL_NAME",
    "ExitTool",
    "Language",
    "TransferToAgentTool",
    "gen_transfer_messages",
    "get_language",
    "parse_tool_argument",
    "set_language",
    "transfer_failed_text",
    "transfer_instruction",
    "transfer_self_text",
    "transfer_tool_output",
]

Language = Literal["en", "zh"]
_language: Language = "en"

TRANSFER_TOOL_NAME = "transfer_to_agent"
"""The name of the tool an agent transfers with (Eino's ``TransferToAgentToolName``): what a forced tool choice, a
middleware or a trace filter names it by."""
EXIT_TOOL_NAME = "exit"
"""The name of ``ExitTool``, the tool that ends an agent's run with its argument as the answer."""

_TEXTS: dict[str, dict[Language, str]] = {
    "instruction": {
        "en": """Available other agents: %s

Decision rule:
- If you're best suited for the question according to your description: ANSWER
- If another agent is better according its description: CALL '%s' function with their agent name

When transferring: OUTPUT ONLY THE FUNCTION CALL""",
        "zh": """可用的其他 agent：%s

决策规则：
- 如果根据你的职责描述，你最适合回答这个问题：ANSWER
- 如果根据其职责描述，另一个 agent 更适合：调用 %s 函数，并传入该 agent 的名称

当进行移交时：只输出函数调用，不要输出其他任何内容""",
    },
    "agent_line": {
        "en": "\n- Agent name: %s\n  Agent description: %s",
        "zh": "\n- Agent 名字: %s\n  Agent 描述: %s",
    },
    "transfer_desc": {"en": "Transfer the question to another agent.", "zh": "将问题移交给其他 Agent。"},
    "transfer_output": {"en": "successfully transferred to agent [%s]", "zh": "成功移交任务至 agent [%s]"},
    "transfer_target": {"en": "the name of the agent to transfer to", "zh": "要移交的 agent 名称"},
    "transfer_target_self": {
        "en": "the name of the agent to transfer to, or your own name (%s) to answer the request yourself",
        "zh": "要移交的 agent 名称；若由你自己回答，填你自己的名称（%s）",
    },
    "transfer_self": {
        "en": "no transfer: you [%s] answer the request yourself, now, in words",
        "zh": "未移交：由你 [%s] 直接用文字回答这个问题",
    },
}


def set_language(language: Language) -> None:
    """Switch the built-in texts between English (``"en"``, the default) and Chinese (``"zh"``)."""
    global _language
    if language not in ("en", "zh"):
        raise UserError(f"unknown language: expected 'en' or 'zh', got {language!r}")
    _language = language


def get_language() -> Language:
    return _language


def _text(key: str) -> str:
    return _TEXTS[key][_language]


def transfer_instruction(agents: Sequence[tuple[str, str]]) -> str:
    """The instruction appended to an agent's system prompt, listing ``(name, description)`` targets."""
    lines = "".join(_text("agent_line") % (name, description) for name, description in agents)
    return _text("instruction") % (lines, TRANSFER_TOOL_NAME)


def transfer_tool_output(dest: str) -> str:
    return _text("transfer_output") % dest


def transfer_self_text(name: str) -> str:
    """What ``transfer_to_agent`` answers agent ``name`` when it names itself (``answer_self``)."""
    return _text("transfer_self") % name


def transfer_failed_text(dest: str, source: str) -> str:
    """Eino's error for a transfer to an agent that is not there (the flow agent's, and the transfer tool's result)."""
    where = f" when transferring from '{source}'" if source else ""
    return f"transfer failed: agent '{dest}' not found{where}"


def gen_transfer_messages(dest: str) -> tuple[Message, Message]:
    """An assistant call to ``transfer_to_agent`` (its argument the bare name, as in the original) and its result:
    what a transfer looks like in a transcript when no model made it."""
    call_id = uuid.uuid4().hex
    call = ToolCall(id=call_id, function=FunctionCall(name=TRANSFER_TOOL_NAME, arguments=dest))
    return assistant(tool_calls=[call]), tool_message(
        transfer_tool_output(dest), tool_call_id=call_id, tool_name=TRANSFER_TOOL_NAME
    )


def parse_tool_argument(tool: str, arguments: str, key: str) -> str:
    """The string ``key`` of a built-in tool's JSON arguments; a ``ToolArgumentsError`` the model can read if
    the arguments are not a JSON object with that string, or break the limits of model JSON."""
    expected = f"expected a JSON object with the string '{key}', got {arguments[:200]!r}"
    try:
        parsed: Any = parse_model_json(arguments or "{}")
    except ModelJSONError as error:
        if error.reason != "invalid":
            expected = str(error)
        parsed = None
    if not isinstance(parsed, dict) or not isinstance(parsed.get(key), str):
        raise ToolArgumentsError(f"Invalid arguments for tool [{tool}]: {expected}", tool_name=tool)
    return str(parsed[key])


class TransferToAgentTool:
    """``transfer_to_agent``: hands control to another agent. Its ``agent_name`` is an enum of the allowed
    targets, so that a model (a small one especially) cannot name an agent that does not exist.

    A call that names another agent all the same is answered with the flow agent's error text, not with a success,
    and the run ends with that error (``source`` is the calling agent, for the text).

    ``answer_self`` adds ``source`` to the enum: a model that names its own agent transfers nothing, and its agent
    goes on to answer (the call takes no action, so it does not end the turn). A router on a small model, whose
    forced, grammar-constrained call must name someone, can so keep a request that fits no other agent.
    """

    def __init__(self, targets: Sequence[str], *, source: str = "", answer_self: bool = False) -> None:
        if answer_self and not source:
            raise UserError("transfer_to_agent with answer_self: expected the calling agent's name as source, got ''")
        self.targets = frozenset(targets)
        self.source = source
        self.answer_self = answer_self
        names = [*targets, source] if answer_self else list(targets)
        described = _text("transfer_target_self") % source if answer_self else _text("transfer_target")
        self.info = ToolInfo(
            name=TRANSFER_TOOL_NAME,
            description=_text("transfer_desc"),
            parameters={
                "type": "object",
                "properties": {
                    "agent_name": {
                        "type": "string",
                        "description": described,
                        "enum": names,
                    }
                },
                "required": ["agent_name"],
            },
        )

    async def invoke(self, arguments: str, ctx: ToolContext | None = None) -> str:
        dest = parse_tool_argument(TRANSFER_TOOL_NAME, arguments, "agent_name")
        if self.answer_self and dest == self.source:
            return transfer_self_text(dest)
        if ctx is not None:
            # Asked for even when there is no such agent: the flow agent then ends the run with its error.
            ctx.action = transfer_action(dest)
        if dest not in self.targets:
            # The original says "successfully transferred" here, and then fails.
            return transfer_failed_text(dest, self.source)
        return transfer_tool_output(dest)


class ExitTool:
    """``exit``: ends the agent's run with ``final_result`` as its answer."""

    info = ToolInfo(
        name=EXIT_TOOL_NAME,
        description="Exit the agent process and return the final result.",
        parameters={
            "type": "object",
            "properties": {"final_result": {"type": "string", "description": "the final result to return"}},
            "required": ["final_result"],
        },
    )

    async def invoke(self, arguments: str, ctx: ToolContext | None = None) -> str:
        result = parse_tool_argument(EXIT_TOOL_NAME, arguments, "final_result")
        if ctx is not None:
            ctx.action = exit_action()
        return result

"""The tools a protocol gives its members (``__transfer_to__``, ``__emerge_tasks__``, ``__submit_proposal__``,
``__sync_to_blackboard__``), and how members get them.

A member on the loop (a ``ChatModelAgent``, a ``ReActAgent``) gets a middleware when it joins a team: before each
model call it offers the tools the protocol gives that member for this turn (none outside the team's run), and
it answers their calls itself, without the agent's tool step. A protocol tool returns directly, as in Solon: when
a round's calls are all protocol calls, the last one's result is the member's answer. Arguments that are not a
JSON object are the call's result as an error the model can read, and change nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..adk import RunContext
from ..adk.loop import AgentMiddleware, ModelAgent, ReactState, ToolBatch
from ..errors import ModelJSONError
from ..schema import ToolInfo
from ..tools import parse_model_json
from ._current import current_team_run
from ._member import Member

__all__ = ["PROTOCOL_TOOL_NAMES", "ProtocolTool", "attach_tools", "string_params"]

PROTOCOL_TOOL_NAMES = frozenset(
    {"__transfer_to__", "__emerge_tasks__", "__submit_proposal__", "__sync_to_blackboard__", "__call_for_bids__"}
)


@dataclass(slots=True, frozen=True)
class ProtocolTool:
    """A protocol's tool: what the model is shown, and what a call does (its arguments → its result text).
    ``meta`` carries ``_agent_``, the member it was made for."""

    info: ToolInfo
    handle: Callable[[dict[str, Any]], str]
    meta: Mapping[str, str]


def string_params(**described: str) -> dict[str, Any]:
    """A JSON Schema of string parameters, each described, all required (Solon's ``stringParamAdd``)."""
    return {
        "type": "object",
        "properties": {name: {"type": "string", "description": text} for name, text in described.items()},
        "required": list(described),
    }


def call_tool(tool: ProtocolTool, arguments: str) -> tuple[str, bool]:
    """The result of a call, and whether it was valid (a JSON object of arguments)."""
    try:
        parsed = parse_model_json(arguments or "{}")
    except ModelJSONError as error:
        parsed = error
    if not isinstance(parsed, dict):
        got = arguments[:200]
        return f"Error: {tool.info.name} expects a JSON object of arguments, got {got!r}", False
    return tool.handle(parsed), True


def attach_tools(team_name: str, member: Member) -> bool:
    """Give ``member`` the team's protocol tools, if it is an agent on the loop; whether it got them."""
    agent = member.agent
    if not isinstance(agent, ModelAgent):
        return False

    def current() -> dict[str, ProtocolTool]:
        run = current_team_run()
        if run is None or run.config.name != team_name:
            return {}
        return {tool.info.name: tool for tool in run.protocol.agent_tools(run.trace, member)}

    def offer(state: ReactState, ctx: RunContext) -> None:
        state.tools = [info for info in state.tools if info.name not in PROTOCOL_TOOL_NAMES]
        state.tools.extend(tool.info for tool in current().values())

    def answer(batch: ToolBatch) -> None:
        tools = current()
        ours = [call for call in batch.calls if call.function.name in tools]
        last: str | None = None
        for call in ours:
            text, valid = call_tool(tools[call.function.name], call.function.arguments)
            batch.results[call.id] = text
            last = text if valid else None
        if ours and len(ours) == len(batch.calls) and last is not None:
            batch.final_answer = last

    agent.middlewares.append(AgentMiddleware(before_chat_model=offer, before_tools=answer))
    return True

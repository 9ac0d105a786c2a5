"""The system prompt of Solon's ReAct agent (``ReActSystemPromptEn`` / ``ReActSystemPromptCn``), and the text
style's actions: what the model wrote after ``Action:``, read as tool calls."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from typing import Any, Literal

from ..errors import ModelJSONError
from ..schema import FunctionCall, Message, ToolCall, assistant, user
from ..tools import ToolInfo, check_model_json, decode_model_json
from ._react_texts import ACTION, NO_ACTION, OBSERVATION, text

__all__ = ["parse_actions", "system_prompt"]


def system_prompt(
    style: Literal["native", "text"],
    role: str | None,
    marker: str,
    instruction: str,
    tools: Sequence[ToolInfo],
    schema_instruction: str | None,
) -> str:
    """Solon's prompt for ``style``, word for word: the role, the style's rules, the task's instruction, and in the
    text style the example and the tools; then the output-schema instruction, if any."""
    parts = [text("role_line") % (role or text("role"))]
    task = text("task") + instruction + "\n\n" if instruction else ""
    if style == "native":
        parts += [text("native_logic"), text("native"), task]
        if not tools:
            parts.append(text("native_no_tools"))
    else:
        marks = {"marker": marker}
        parts += [text("text_logic"), text("text") % marks, task, text("example") % marks]
        if not tools:
            parts.append(text("text_no_tools"))
        else:
            parts.append(text("tools"))
            schema = text("tool_schema")
            parts += [
                f"- {t.name}: {t.description}{schema}{json.dumps(t.parameters, ensure_ascii=False)}\n" for t in tools
            ]
    prompt = "".join(parts)
    if schema_instruction:
        prompt = f"{prompt.rstrip()}\n\n{schema_instruction}"
    return prompt


def parse_actions(message: Message, content: str, turn: int, tools: Collection[str]) -> Message | list[Message] | None:
    """The text style's ``Action:`` in ``content``: the assistant message with the calls it names, the observation
    to send back when it cannot be read, or None when there is no action (an answer). ``Action: name`` alone calls
    a tool of ``tools`` without arguments."""
    at = content.find(ACTION)
    if at < 0 or not content[at + len(ACTION) :].strip():
        return None
    forged = OBSERVATION.search(content, at)
    written = content[: forged.start()].rstrip() if forged else content
    rest = written[at + len(ACTION) :].strip()
    if not rest.startswith("{"):
        match = re.match(r"[A-Za-z_][\w.-]*", rest)
        if match is None or match.group(0) not in tools:
            return [user(NO_ACTION)]
        return assistant(written, tool_calls=[_call(match.group(0), {}, turn, 0)])
    try:
        check_model_json(rest)
    except ModelJSONError as error:
        return [user(f"Observation: Error parsing Action JSON: {error.detail}")]
    calls: list[ToolCall] = []
    position = 0
    while position < len(rest):
        if rest[position] in " \t\r\n,":
            position += 1
            continue
        if rest[position] != "{":
            break
        try:
            value, position = decode_model_json(rest, position)
        except ModelJSONError as error:
            return [user(f"Observation: Error parsing Action JSON: {error.detail}")]
        name = value.get("name") if isinstance(value, dict) else None
        arguments = value.get("arguments", {}) if isinstance(value, dict) else None
        if not isinstance(name, str) or not name or not isinstance(arguments, dict):
            return [user(NO_ACTION)]
        calls.append(_call(name, arguments, turn, len(calls)))
    if not calls:
        return [user(NO_ACTION)]
    return assistant(written, tool_calls=calls)


def _call(name: str, arguments: dict[str, Any], turn: int, index: int) -> ToolCall:
    # Solon numbers a round's actions name-0, name-1…; the turn is added so that ids stay unique in a run, as
    # targeted resume needs.
    return ToolCall(
        id=f"{name}-{turn}-{index}",
        function=FunctionCall(name=name, arguments=json.dumps(arguments, ensure_ascii=False)),
    )

"""Tool use for small models: call a tool, then answer in words.

A model of a few hundred million parameters (SmolLM2-135M, the offline default) cannot tell when to call a tool
and when to answer: shown a tool's result with the tools still offered, it calls the same tool again, turn after
turn, until the agent's iteration limit. These helpers take that decision from it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..schema import Message, MessageStream, ToolInfo, assistant, user
from ._base import ChatModel, ForcedTool, ModelSettings, ToolChoice

__all__ = ["ANSWER_PROMPT", "ToolThenAnswer", "answer_from_tool_results", "guide_request"]

ANSWER_PROMPT = "Thanks. Please sum that up in one sentence."


def answer_from_tool_results(messages: Sequence[Message], prompt: str = ANSWER_PROMPT) -> list[Message]:
    """``messages`` rewritten so that a model answers in words from the tool results at their end.

    The trailing tool results become one plain assistant turn, the call that asked for them is dropped, and
    ``prompt`` asks for the answer. The function-call transcript is what a small model would echo back instead
    (measured: with it, SmolLM2 repeats the call's JSON). ``messages`` without trailing tool results are returned
    as they are.
    """
    out = list(messages)
    results: list[str] = []
    while out and out[-1].role == "tool":
        results.insert(0, out.pop().content)
    if not results:
        return out
    if out and out[-1].tool_calls:
        out.pop()
    return [*out, assistant(" ".join(results)), user(prompt)]


def guide_request(
    messages: Sequence[Message],
    tools: Sequence[ToolInfo] | None,
    tool_choice: ToolChoice | None,
    *,
    tool: str | None = None,
    prompt: str = ANSWER_PROMPT,
) -> tuple[list[Message], list[ToolInfo] | None, ToolChoice | None]:
    """The request ``ToolThenAnswer`` makes instead of ``(messages, tools, tool_choice)``."""
    if not tools or tool_choice == "none":
        return list(messages), list(tools) if tools else None, tool_choice
    if not messages or messages[-1].role != "tool":
        name = tool_choice.name if isinstance(tool_choice, ForcedTool) else tool or tools[0].name
        # The forced tool alone: a shorter prompt, which a small model follows better.
        forced = [t for t in tools if t.name == name]
        return list(messages), forced or None, ForcedTool(name) if forced else None
    return answer_from_tool_results(messages, prompt), None, None


class ToolThenAnswer:
    """A model told when to call a tool: ``tool`` is forced until a tool has answered, then words, no tools.

    ``tool=None`` forces the first tool the agent offers. The forced call is grammar-constrained on llama.cpp
    (the tool's JSON schema), so its arguments parse; with only the forced tool in the prompt, a small model
    fills them in better. After a tool result the call is made without tools on ``answer_from_tool_results``, so
    an agent's turn takes two model calls. The caller's own tool choice, when it forces one, is kept.
    """

    def __init__(self, model: ChatModel, tool: str | None = None, *, prompt: str = ANSWER_PROMPT) -> None:
        self.model = model
        self.tool = tool
        self.prompt = prompt
        self.model_name = model.model_name

    def __repr__(self) -> str:
        return f"ToolThenAnswer({self.model!r}, tool={self.tool!r})"

    def _request(
        self, messages: Sequence[Message], tools: Sequence[ToolInfo] | None, tool_choice: ToolChoice | None
    ) -> tuple[list[Message], list[ToolInfo] | None, ToolChoice | None]:
        return guide_request(messages, tools, tool_choice, tool=self.tool, prompt=self.prompt)

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> Message:
        messages, tools, tool_choice = self._request(messages, tools, tool_choice)
        return await self.model.generate(messages, tools=tools, tool_choice=tool_choice, settings=settings)

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> MessageStream:
        messages, tools, tool_choice = self._request(messages, tools, tool_choice)
        return self.model.stream(messages, tools=tools, tool_choice=tool_choice, settings=settings)

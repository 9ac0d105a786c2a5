"""Routing by examples, for models too small to route by instruction.

Asked to call ``transfer_to_agent`` with one of a few names, SmolLM2-135M names a specialist for every request,
off-topic ones included: neither few-shot routings, nor a yes/no question, nor its embeddings tell "What time do
you open?" from a refund (each measured on ``python -m benchmarks.local_routing``). What it does tell apart is how
likely a request reads after a list of requests of each kind: scored that way, it keeps the off-topic ones and
routes the rest as well as before. ``RouteByExamples`` makes that choice in place of the model's call.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Protocol, runtime_checkable

from ..errors import UserError
from ..schema import (
    FunctionCall,
    Message,
    MessageStream,
    ResponseMeta,
    Stream,
    ToolCall,
    ToolInfo,
    Usage,
    assistant,
)
from ._base import ChatModel, ModelSettings, ToolChoice

__all__ = ["RouteByExamples", "TextScorer"]


@runtime_checkable
class TextScorer(Protocol):
    """A model that says how likely it finds a text after another (``LlamaCppChatModel`` does)."""

    async def log_likelihood(self, prefix: str, text: str) -> tuple[float, int]:
        """The sum of ``text``'s token log-probabilities after ``prefix``, and the tokens evaluated."""
        ...


class RouteByExamples:
    """A model whose call of ``tool`` names the option of its ``argument`` that the request reads most like.

    ``examples`` maps options (agent names, for ``transfer_to_agent``) to a few requests of their kind; the
    router's own name among them, with ``answer_self``, keeps requests for no specialist. When ``tool`` is
    offered and the last message is the user's, the model scores that message after each option's examples
    (``header`` and one ``- example`` line each) and the call names the likeliest of the options the tool's enum
    allows; no text is generated. Every other call (the answer after a tool result, say) is ``model``'s own.
    """

    def __init__(
        self,
        model: ChatModel,
        examples: Mapping[str, Sequence[str]],
        *,
        tool: str = "transfer_to_agent",
        argument: str = "agent_name",
        header: str = "Customer messages:\n",
    ) -> None:
        if not isinstance(model, TextScorer):
            raise UserError(
                f"RouteByExamples: expected a model that scores text (log_likelihood, as LlamaCppChatModel has), "
                f"got {type(model).__name__}"
            )
        if not isinstance(examples, Mapping) or not examples:
            raise UserError(f"RouteByExamples: expected a mapping of options to example requests, got {examples!r}")
        for option, texts in examples.items():
            if isinstance(texts, str) or not texts or not all(isinstance(t, str) and t for t in texts):
                raise UserError(
                    f"RouteByExamples: expected a list of non-empty example requests for {option!r}, got {texts!r}"
                )
        self.model = model
        self._scorer: TextScorer = model
        self.examples = {option: tuple(texts) for option, texts in examples.items()}
        self.tool = tool
        self.argument = argument
        self.header = header
        self.model_name = model.model_name
        # What each option's request is scored after: the header, then one "- example" line each.
        self._prefixes = {
            option: header + "".join(f"- {text}\n" for text in texts) + "- " for option, texts in self.examples.items()
        }

    def __repr__(self) -> str:
        return f"RouteByExamples({self.model!r}, options={list(self.examples)!r})"

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> Message:
        options = self._options(messages, tools, tool_choice)
        if options is None:
            return await self.model.generate(messages, tools=tools, tool_choice=tool_choice, settings=settings)
        return await self._route(messages[-1].content, options)

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> MessageStream:
        options = self._options(messages, tools, tool_choice)
        if options is None:
            return self.model.stream(messages, tools=tools, tool_choice=tool_choice, settings=settings)
        return Stream.from_async_iter(self._routed(messages[-1].content, options))

    async def _routed(self, request: str, options: list[str]) -> AsyncIterator[Message]:
        yield await self._route(request, options)

    def _options(
        self, messages: Sequence[Message], tools: Sequence[ToolInfo] | None, tool_choice: ToolChoice | None
    ) -> list[str] | None:
        """The options to choose among when this call is a routing, else None."""
        offered = next((t for t in tools or () if t.name == self.tool), None)
        if offered is None or tool_choice == "none" or not messages or messages[-1].role != "user":
            return None
        field = offered.parameters.get("properties", {}).get(self.argument, {})
        allowed = field.get("enum") if isinstance(field, Mapping) else None
        if not isinstance(allowed, list) or not allowed:
            raise UserError(
                f"RouteByExamples: expected {self.tool}'s {self.argument!r} to be an enum of options, got {field!r}"
            )
        options = [option for option in allowed if option in self.examples]
        if not options:
            raise UserError(
                f"RouteByExamples: expected examples for one of {self.tool}'s options {allowed}, "
                f"got examples for {list(self.examples)}"
            )
        return options

    async def _route(self, request: str, options: list[str]) -> Message:
        scores: dict[str, float] = {}
        evaluated = 0
        for option in options:
            scores[option], tokens = await self._scorer.log_likelihood(self._prefixes[option], request)
            evaluated += tokens
        best = max(options, key=scores.__getitem__)  # the first of equals, in the enum's order
        arguments = json.dumps({self.argument: best})
        call = ToolCall(
            index=0, id=f"call_{uuid.uuid4().hex[:12]}", function=FunctionCall(name=self.tool, arguments=arguments)
        )
        message = assistant(tool_calls=[call])
        message.response_meta = ResponseMeta(
            finish_reason="tool_calls", usage=Usage(prompt_tokens=evaluated, total_tokens=evaluated)
        )
        return message

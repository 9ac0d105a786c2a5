"""``SimpleAgent``: one model call per run, with retries, a history window and typed output (Solon's SimpleAgent).

Solon's one-shot agent as a batonflow ``Agent``: it builds one request — the system prompt rendered from the run's
session values, plus the output-schema instruction when there is one; the last ``history_window`` messages of its
input; the current prompt — asks the model once and answers with the assistant message it got. There is no loop:
tools are offered to the model, and tool calls it makes come back in the answer unexecuted. Solon leaves tool
execution to its ``ChatModel``; batonflow's models never run tools, and running them is what ``ChatModelAgent``
(and ``ReActAgent``) are for.

Retries cover what a second identical request can fix: an empty answer (Solon's ``LlmNoReturnException``) and a
transient transport failure (``is_retryable_error``). An answer that does not fit the output schema is not
retried: the same request tends to get the same answer, and telling the model what was wrong takes a loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, replace

from ..adk import AgentEvent, AgentInput, RunContext, event_from_message
from ..adk.loop import ModelRetry, ModelStep, is_empty_answer, render_instruction
from ..errors import ModelError, RunError, UserError
from ..models import ChatModel, ModelSettings, as_model
from ..schema import Message, system
from ..tools import ToolInfo, ToolLike, as_tool
from ._member_instruction import member_instructions
from ._output import OutputSchema, Schema, parse_output
from ._react_texts import without_thinking

__all__ = ["SimpleAgent", "parse_output"]

# Solon's RetryTask caps its exponential backoff at 30 seconds.
_MAX_DELAY = 30.0


class SimpleAgent:
    """An agent that answers with one model call (Solon's ``SimpleAgent``).

    ``system_prompt`` is a template: ``{name}`` placeholders are filled from the run's session values (``{{`` and
    ``}}`` for literal braces). Unlike ``ChatModelAgent``'s instruction it is rendered even when the session has no
    values, as Solon renders it on every call: a placeholder without a value is an error event, never a literal
    ``{name}`` sent to the model.

    The request holds the system prompt, then the last ``history_window`` non-system messages of the input before
    the current prompt, then the current prompt; ``None`` keeps the whole history. The current prompt is the run
    of user messages that ends the input (its last message if that is not a user message): in a flow, the user's
    request together with the other agents' messages rewritten as context, which the window never cuts. System
    messages before it are dropped: the system prompt is the agent's (Solon's sessions never keep them).

    An empty answer (no text and no tool calls) or a transient model failure (connection error, timeout, HTTP 408,
    409, 429, 5xx) is retried after ``retry_delay·2^(n-1)`` seconds (at most 30), for ``max_retries`` attempts in
    all; other errors end the run at once. Streamed answers are retried only until their first visible chunk: what
    reached the caller is never taken back.

    With ``output_schema`` (a pydantic model class or a JSON Schema dict) the model is told to answer with JSON
    matching it, the call asks for it through the provider's structured output too (``response_format`` in the
    settings: OpenAI's ``json_schema``, a grammar on llama.cpp; not when tools are offered, see
    ``batonflow.models.answer_format``; a format in ``model_settings`` wins), and the answer is validated: the
    parsed value (a model instance, or the JSON value for a dict schema) is the event's
    ``output.customized_output`` and, with ``output_key``, the session value. An answer that
    does not fit is the message event followed by an error event. Without a schema ``output_key`` gets the answer's
    text. An answer with tool calls is returned as it is: not parsed, and with a schema not stored.

    Reasoning a model writes into its content (``<think>…</think>``) is cleared from the answer, as Solon's
    ``getAnswer`` does; a streamed answer's chunks reach the caller as they come, and its parsed value and
    ``output_key`` are the cleared text's.
    """

    def __init__(
        self,
        *,
        model: ChatModel | str,
        name: str = "simple_agent",
        description: str = "",
        system_prompt: str = "",
        tools: Sequence[ToolLike | ToolInfo] = (),
        history_window: int | None = 5,
        max_retries: int = 3,
        retry_delay: float = 1.0,
        output_key: str | None = None,
        output_schema: OutputSchema | None = None,
        model_settings: ModelSettings | None = None,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        if not name:
            raise UserError("SimpleAgent needs a name: expected a non-empty string, got ''")
        if max_retries < 1:
            raise UserError(f"max_retries: expected at least 1 attempt, got {max_retries}")
        if retry_delay < 0.5:
            raise UserError(f"retry_delay: expected at least 0.5 seconds, got {retry_delay}")
        if history_window is not None and history_window < 0:
            raise UserError(f"history_window: expected 0 or more messages (None for all), got {history_window}")
        self.name = name
        self.description = description
        self.model = as_model(model, f"SimpleAgent '{name}' model")
        self.system_prompt = system_prompt
        self.tools = [
            t if isinstance(t, ToolInfo) else as_tool(t, where=f"SimpleAgent '{name}': tools[{i}]").info
            for i, t in enumerate(tools)
        ]
        names = [t.name for t in self.tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise UserError(f"agent '{name}': expected unique tool names, got {duplicates} more than once")
        self.history_window = history_window
        self.max_retries = max_retries
        self.retry_delay = retry_delay
        self.output_key = output_key
        self.output_schema = output_schema
        self.model_settings = model_settings
        self._schema = Schema.of(output_schema) if output_schema is not None else None
        self._step = ModelStep(
            self.model,
            # The provider's structured output where it has one; the prompt and the check stay for the others.
            settings=self._schema.settings(model_settings) if self._schema is not None else model_settings,
            retry=ModelRetry(
                attempts=max_retries,
                backoff=lambda attempt: min(retry_delay * 2.0 ** (attempt - 1), _MAX_DELAY),
                label=f"simple agent '{name}'",
                retry_empty=True,
                sleep=sleep,
            ),
        )

    def __repr__(self) -> str:
        return f"SimpleAgent(name={self.name!r}, model={self.model.model_name!r})"

    # -- running --------------------------------------------------------------------------------------------------

    async def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        ctx = ctx if ctx is not None else RunContext(enable_streaming=input.enable_streaming)
        try:
            messages = self._model_input(input, ctx)
        except Exception as error:
            yield AgentEvent(error=error)
            return
        events = self._stream(messages, ctx) if input.enable_streaming else self._generate(messages, ctx)
        async with aclosing(events) as source:
            async for event in source:
                yield event

    async def _generate(self, messages: list[Message], ctx: RunContext) -> AsyncGenerator[AgentEvent, None]:
        try:
            message = await self._step.generate(messages, self.tools or None, ctx)
            if is_empty_answer(message):
                raise self._empty_answer()
        except Exception as error:
            yield AgentEvent(error=error)
            return
        message = answer_only(message)
        event = event_from_message(message)
        failure = self._conclude(message, event, ctx)
        yield event
        if failure is not None:
            yield AgentEvent(error=failure)

    async def _stream(self, messages: list[Message], ctx: RunContext) -> AsyncGenerator[AgentEvent, None]:
        # The answer is checked by the stream itself once its last chunk is read, so that a caller who has read
        # the stream finds the parsed value on the event, whoever pulled the chunks.
        done = _Done()
        try:
            reply = await self._step.stream(
                messages,
                self.tools or None,
                ctx,
                hold_back=True,
                on_end=lambda message: self._ended(message, done, ctx),
            )
            if reply is None:
                raise self._empty_answer()
        except Exception as error:
            yield AgentEvent(error=error)
            return
        done.event = reply.event
        try:
            yield reply.event
            await reply.message()
        except Exception as error:
            yield AgentEvent(error=error)
            return
        finally:
            # The caller stopped reading the run: nobody joins this message.
            await reply.abandon()
        if done.failure is not None:
            yield AgentEvent(error=done.failure)

    def _ended(self, message: Message, done: _Done, ctx: RunContext) -> None:
        assert done.event is not None
        if is_empty_answer(message):
            # Only reasoning came: it was streamed already, so the answer is not asked for again.
            done.failure = ModelError(
                f"simple agent '{self.name}': expected an answer from model '{self.model.model_name}', got an "
                "empty response (no content and no tool calls) after its reasoning was streamed; not retried",
                model=self.model.model_name,
            )
            return
        done.failure = self._conclude(answer_only(message), done.event, ctx)

    def _empty_answer(self) -> ModelError:
        return ModelError(
            f"simple agent '{self.name}' failed after {_attempts(self.max_retries)}: expected an answer from "
            f"model '{self.model.model_name}', got an empty response (no content and no tool calls)",
            model=self.model.model_name,
        )

    def _model_input(self, input: AgentInput, ctx: RunContext) -> list[Message]:
        if not input.messages:
            raise UserError(f"simple agent '{self.name}': expected at least one input message, got none")
        instruction = render_instruction(self.system_prompt, ctx.session.values) if self.system_prompt else ""
        # A team's instruction follows the agent's own, before the schema (Solon's order), and is not rendered.
        instruction += member_instructions(input.messages)
        if self._schema is not None:
            # Added after rendering: the schema's braces are JSON, not placeholders.
            schema_text = self._schema.instruction()
            instruction = f"{instruction}\n\n{schema_text}" if instruction else schema_text
        return [*([system(instruction)] if instruction else []), *windowed(input.messages, self.history_window)]

    def _conclude(self, message: Message, event: AgentEvent, ctx: RunContext) -> RunError | None:
        """Parse the answer and store it; the validation failure, if any (then nothing is stored)."""
        if self._schema is None:
            if self.output_key:
                ctx.add_session_value(self.output_key, message.text)
            return None
        if message.tool_calls:
            return None
        try:
            value = self._schema.parse(message.text)
        except RunError as failure:
            return failure
        assert event.output is not None
        event.output.customized_output = value
        if self.output_key:
            ctx.add_session_value(self.output_key, value)
        return None


def windowed(messages: Sequence[Message], window: int | None) -> list[Message]:
    """The current prompt, after the last ``window`` non-system messages before it (all of them for None).

    The current prompt is the run of user messages that ends ``messages`` (the last message if that is not a user
    message). A window never opens on tool results whose calls it cut off: strict providers refuse orphan results.
    """
    turn = len(messages)
    while turn > 0 and messages[turn - 1].role == "user":
        turn -= 1
    turn = min(turn, len(messages) - 1)
    history = [m for m in messages[:turn] if m.role != "system"]
    if window is not None and len(history) > window:
        history = history[len(history) - window :] if window else []
    start = 0
    while start < len(history) and history[start].role == "tool":
        start += 1
    return [*history[start:], *messages[turn:]]


def answer_only(message: Message) -> Message:
    """``message`` without its ``<think>…</think>`` (Solon's ``getAnswer``): reasoning a model wrote into its
    content is not part of the answer."""
    answer = without_thinking(message.content)
    return message if answer == message.content else replace(message, content=answer.strip())


@dataclass(slots=True)
class _Done:
    """How a streamed answer ended, filled in by the stream once it is read to the end."""

    event: AgentEvent | None = None
    failure: RunError | None = None


def _attempts(n: int) -> str:
    return "1 attempt" if n == 1 else f"{n} attempts"

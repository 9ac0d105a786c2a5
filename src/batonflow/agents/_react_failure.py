"""A ReActAgent whose model keeps failing answers as Solon's does: with a friendly apology, not an error event.

Solon's ``ReasonTask`` catches what its model call raised after the retries and ends the run with a final answer
that says what kind of failure it was — a timeout, a connection failure, an HTTP status, anything else — so that an
end user reads an apology rather than a stack trace or a provider's HTML. The error itself goes to the log.

Only the model's own failures are answered this way. The agent's model is wrapped in ``FailureTagging``, which
marks every exception the model raises (developer mistakes, ``UserError``, excepted); the run's error
event is replaced only when its error is one of them, so a failure elsewhere (a middleware, a resume) still ends
the run with an error event. The trace keeps the error: each failed attempt is a ``ReasonEnd`` that carries it.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from typing import Literal

from ..adk import AgentEvent, RunContext, event_from_message
from ..errors import ModelConnectionError, ModelHTTPError, ModelTimeoutError, UserError
from ..models import ChatModel, ModelSettings, ToolChoice
from ..schema import Message, MessageStream, Stream, assistant
from ..tools import ToolInfo
from ._react_texts import text

__all__ = ["FailureTagging", "ModelFailure", "answering", "check_model_failure", "failure_answer", "is_model_failure"]

_log = logging.getLogger("batonflow.agents")

SaveOutput = Callable[[Message, RunContext], None]

# Set on an exception the model raised: what tells the model's failure from others. An attribute, not a weak set:
# built-in exceptions cannot be weakly referenced.
_TAG = "_batonflow_model_failure"


def _tag(error: BaseException) -> None:
    if not isinstance(error, UserError):
        setattr(error, _TAG, True)  # every exception takes attributes: BaseException has a __dict__


class FailureTagging:
    """``model``, marking every exception it raises (see the module doc); it changes nothing else."""

    __slots__ = ("model", "model_name")

    def __init__(self, model: ChatModel) -> None:
        self.model = model
        self.model_name = model.model_name

    def __repr__(self) -> str:
        return repr(self.model)

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> Message:
        try:
            return await self.model.generate(messages, tools=tools, tool_choice=tool_choice, settings=settings)
        except Exception as error:
            _tag(error)
            raise

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> MessageStream:
        try:
            inner = self.model.stream(messages, tools=tools, tool_choice=tool_choice, settings=settings)
        except Exception as error:
            _tag(error)
            raise
        return Stream(_TaggedChunks(inner))


class _TaggedChunks:
    """The chunks of a model's stream, its errors marked on the way (an iterator, not a generator frame)."""

    __slots__ = ("_inner",)

    def __init__(self, inner: MessageStream) -> None:
        self._inner = inner

    async def __anext__(self) -> Message:
        try:
            return await self._inner.__anext__()
        except StopAsyncIteration:
            raise
        except Exception as error:
            _tag(error)
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()


ModelFailure = Literal["answer", "error"]


def check_model_failure(value: object) -> ModelFailure:
    if value == "answer" or value == "error":
        return value
    raise UserError(f"ReActAgent model_failure: expected 'answer' or 'error', got {value!r}")


def is_model_failure(error: BaseException) -> bool:
    return getattr(error, _TAG, False) is True


def failure_answer(error: BaseException) -> str:
    """Solon's answer for a model call that failed: by the first kind found along the error's causes, in Solon's
    order — a timeout (or a message that says "timeout"), a failed connection, an HTTP status, anything else."""
    chain = list(_causes(error))
    if any(isinstance(e, ModelTimeoutError | TimeoutError) or "timeout" in str(e).lower() for e in chain):
        return text("model_timeout")
    if any(isinstance(e, ModelConnectionError | ConnectionError) for e in chain):
        return text("model_connection")
    status = next((e.status_code for e in chain if isinstance(e, ModelHTTPError)), None)
    if status is not None:
        return text("model_http") % status
    return text("model_other")


def _causes(error: BaseException) -> list[BaseException]:
    """``error`` and what it was raised from or during, once each."""
    found: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in found:
        found.append(current)
        current = current.__cause__ or current.__context__
    return found


async def answering(
    events: AsyncIterator[AgentEvent], agent_name: str, ctx: RunContext, save: SaveOutput
) -> AsyncGenerator[AgentEvent, None]:
    """``events``, with an error event whose error the model raised replaced by Solon's answer for it."""
    try:
        async for event in events:
            error = event.error
            if error is None or not is_model_failure(error):
                yield event
                continue
            _log.warning("react agent %r: the model call failed; answering with an apology: %r", agent_name, error)
            answer = assistant(failure_answer(error))
            save(answer, ctx)
            yield event_from_message(answer)
    finally:
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()

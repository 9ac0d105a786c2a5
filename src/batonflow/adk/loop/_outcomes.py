"""What a turn of the loop comes to: a tagged union that the engine matches exhaustively.

A policy turns the model's message into ``CallTools``, ``Answer`` or ``AskAgain``, and may stop the loop before a
model call with ``Answer`` or ``Fail``. The engine adds ``Retry`` (a middleware asked for the failed model call
again) and the tool step ``Interrupt`` (a tool, or a middleware on the batch, is waiting for someone).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal, TypeAlias

from ...schema import Message
from ...tools import InterruptSignal

__all__ = ["Answer", "AskAgain", "CallTools", "Fail", "Interrupt", "Outcome", "Retry", "Routed"]


@dataclass(slots=True)
class CallTools:
    """Run the tool calls of ``message``, which goes into the transcript as it is here."""

    message: Message
    kind: Literal["call_tools"] = field(default="call_tools", init=False, repr=False)
    show: ClassVar[bool] = True  # the model's message always gets its event


@dataclass(slots=True)
class Answer:
    """End the run with an answer: ``message``, or the model's own message when None.

    ``show`` is False for a model message not worth an event of its own (an empty answer replaced by an apology).
    ``said`` is True for an answer already in the transcript and shown to the caller (a return-directly result).
    """

    message: Message | None = None
    show: bool = True
    said: bool = False
    kind: Literal["answer"] = field(default="answer", init=False, repr=False)


@dataclass(slots=True)
class AskAgain:
    """Call the model again with ``feedback`` appended; the model's message stays in the transcript if ``keep``."""

    feedback: list[Message]
    keep: bool = True
    show: bool = True
    kind: Literal["ask_again"] = field(default="ask_again", init=False, repr=False)


@dataclass(slots=True)
class Fail:
    """End the run with an error event."""

    error: BaseException
    kind: Literal["fail"] = field(default="fail", init=False, repr=False)


@dataclass(slots=True)
class Retry:
    """Make the failed model call again; it does not count as a turn."""

    kind: Literal["retry"] = field(default="retry", init=False, repr=False)


@dataclass(slots=True)
class Interrupt:
    """Stop the run and wait: the interrupts raised by this round's tools (or by a middleware on the batch)."""

    signals: list[InterruptSignal]
    kind: Literal["interrupt"] = field(default="interrupt", init=False, repr=False)


Routed: TypeAlias = CallTools | Answer | AskAgain
"""What a policy makes of the model's message."""

Outcome: TypeAlias = CallTools | Answer | AskAgain | Fail | Retry | Interrupt
"""Every way a turn can end."""

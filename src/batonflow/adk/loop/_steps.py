"""Step recording: the seam through which a durable worker keeps each model reply and tool result as it finishes.

A worker that may die mid-run (a DBOS worker in *step mode*) installs a ``StepRecorder`` around the run with
``recording_steps``. The model step and the tool step look it up once per call (per batch, for tools): before a
call they ask ``recall(key)``, and a value found there is the call's result, not run again; after a call finished
they ``record(key, value)``. When no recorder is installed, which is the usual case, the lookup is all it costs.

The keys name a call by where it is in the run, never by when it ran, so that a run re-executed after a crash
finds each call's record whatever order the calls finish in this time, and whichever of them its journal replays:

- a model reply: ``model|<agent address>|<n>``, the n-th reply at that address (counted from 0, journal replays
  included, as the journal counts them);
- a tool result: ``tool|<agent address>|<visit>.<turn>|<call id>``, the journal's key (the identity behind
  ``ToolContext.idempotency_key``, without the run id, which a re-run start is given afresh).

What is recorded is the complete result: a model reply as its whole ``Message`` (a stream once joined), a tool
call as its ``ToolResult`` (the result message and the action it asked for), a tool error the policy showed the
model included. An interrupt is not a result and is never recorded; nor is an exception that ends the round.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar

from ...errors import StepRecordError
from ...schema import Address, Message, format_address
from .._journal import Journal
from ._state import ToolResult

__all__ = ["StepRecorder", "Steps", "current_steps", "recording_steps"]

T = TypeVar("T")


class StepRecorder(Protocol):
    """Where a run's finished steps are kept while it may be re-executed (one run segment's records)."""

    async def recall(self, key: str) -> Any:
        """The value recorded under ``key``, or None when there is none."""
        ...

    async def record(self, key: str, value: Any) -> None:
        """Keep ``value`` (a ``Message`` or a ``ToolResult``) under ``key``."""
        ...


class Steps:
    """An installed recorder and the count of model replies at each address of the run it records."""

    __slots__ = ("_replies", "recorder")

    def __init__(self, recorder: StepRecorder) -> None:
        self.recorder = recorder
        self._replies: dict[Address, int] = {}

    def model_key(self, address: Address) -> str:
        """The key of the next model reply at ``address``."""
        return f"model|{format_address(address)}|{self._replies.get(address, 0)}"

    def model_done(self, address: Address) -> None:
        """A reply at ``address`` came (from the model, a record, or the journal)."""
        self._replies[address] = self._replies.get(address, 0) + 1

    @staticmethod
    def tool_key(address: Address, visit: int, turn: int, call_id: str) -> str:
        return Journal.tool_key(address, visit, turn, call_id)

    async def recalled_reply(self, key: str) -> Message | None:
        return _checked(key, await self.recorder.recall(key), Message)

    async def recalled_tool(self, key: str) -> ToolResult | None:
        return _checked(key, await self.recorder.recall(key), ToolResult)

    async def record(self, key: str, value: Message | ToolResult) -> None:
        await self.recorder.record(key, value)


_CURRENT: ContextVar[Steps | None] = ContextVar("batonflow_steps", default=None)

current_steps = _CURRENT.get
"""The recorder installed around the code running now (``recording_steps``), if any."""


@contextmanager
def recording_steps(recorder: StepRecorder) -> Iterator[Steps]:
    """Record the steps of the runs started inside this block with ``recorder`` (and replay what it holds).

    Install it around one run (one run segment): the model replies are counted per address from here. Tasks
    started inside the block see it too (a context variable), so parallel tool calls and agents are recorded.
    """
    steps = Steps(recorder)
    token = _CURRENT.set(steps)
    try:
        yield steps
    finally:
        _CURRENT.reset(token)


def _checked(key: str, value: Any, kind: type[T]) -> T | None:
    if value is None or isinstance(value, kind):
        return value
    raise StepRecordError(
        f"step record {key!r}: expected a {kind.__name__}, got {type(value).__name__}; the record is not this "
        f"call's (delete the segment's records to run the call again)",
        key=key,
    )

"""The step log: where a run's finished model replies and tool results are kept, so that a run executed again
replays them instead of calling again.

A run carries at most one ``StepLog``, on its context (``RunContext.steps``). The model step and the tool step
consult it and nothing else: before a call they ``recall`` its key, and a value found there is the call's result,
not run again; after a call finished they ``record`` it; after a tool batch they ``flush`` what was recorded; before
a batch runs they ``check`` that the run may still run tools. A run without a log (the usual case) pays one
attribute read.

Two stores implement it. The journal of a resume (``batonflow.adk``'s ``Journal``) keeps the steps in the
checkpoint store, written per tool batch, so a retried resume replays what its earlier attempts finished. A
``StepRecorder`` — a durable worker's records of one run segment, the DBOS step table in step mode — keeps each
step as it finishes, so a segment re-run after its worker died replays even the calls of the batch in flight;
``RecordedSteps`` makes one a log. A resume in step mode has both, chained (``ChainedSteps``, journal first): a
step either holds is replayed, one only the table holds is copied into the journal, a new one goes into both.

The keys name a call by where it is in the run, never by when it ran, so that a run executed again finds each
call's record whatever order the calls finish in this time, and whichever of them an earlier store replays:

- a model reply: ``model|<agent address>|<n>``, the n-th reply at that address (counted from 0, replays included);
- a tool result: ``tool|<agent address>|<visit>.<turn>|<call id>`` (the identity behind
  ``ToolContext.idempotency_key``, without the run id, which a re-run start is given afresh).

What is recorded is the complete result: a model reply as its whole ``Message`` (a stream once joined), a tool
call as its ``ToolResult`` (the result message, with any note a ``before_tools`` hook added, and the action it
asked for), a tool error the policy showed the model included. An interrupt is not a result and is never recorded;
nor is an exception that ends the round.

A worker installs a recorder around the run it starts with ``recording_steps``; the Runner puts it on the run's
context (``installed_steps``), chained after the journal when the run is a resume. Nothing in the loop looks it up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar

from ...errors import StepRecordError
from ...schema import Address, Message, format_address
from ._state import ToolResult

__all__ = [
    "ChainedSteps",
    "FenceSteps",
    "RecordedSteps",
    "StepLog",
    "StepRecorder",
    "chained_steps",
    "installed_steps",
    "model_key",
    "recording_steps",
    "tool_key",
]

T = TypeVar("T")


def model_key(address: Address, n: int) -> str:
    """The key of the ``n``-th model reply (from 0) at ``address``."""
    return f"model|{format_address(address)}|{n}"


def tool_key(address: Address, visit: int, turn: int, call_id: str) -> str:
    """The key of tool call ``call_id`` of turn ``turn`` of the loop's ``visit``-th run at ``address``."""
    return f"tool|{format_address(address)}|{visit}.{turn}|{call_id}"


class StepLog(Protocol):
    """What the model step and the tool step ask of a run's finished steps; see the module doc."""

    def model_key(self, address: Address) -> str:
        """The key of the next model reply at ``address`` (replies counted, failed calls not)."""
        ...

    def replied(self, address: Address) -> None:
        """A model reply at ``address`` came, from the model or from the log: the next one has the next key."""
        ...

    def tool_key(self, address: Address, visit: int, turn: int, call_id: str) -> str: ...

    async def recall(self, key: str, kind: type[T]) -> T | None:
        """The ``kind`` (a ``Message`` or a ``ToolResult``) recorded under ``key``, or None when there is none."""
        ...

    async def record(self, key: str, value: Message | ToolResult) -> None: ...

    def check(self) -> None:
        """Raises when the run may not run another tool (a resume that lost its checkpoint's lease)."""
        ...

    async def flush(self) -> None:
        """Keep what was recorded since the last flush (after a tool batch, before the model is asked again)."""
        ...


class StepRecorder(Protocol):
    """A store of one run segment's finished steps, written as each finishes (a worker's step table)."""

    async def recall(self, key: str) -> Any:
        """The value recorded under ``key``, or None when there is none."""
        ...

    async def record(self, key: str, value: Any) -> None:
        """Keep ``value`` (a ``Message`` or a ``ToolResult``) under ``key``."""
        ...


class Replies:
    """The count of model replies at each address of a run: what makes a reply's key."""

    __slots__ = ("_counts",)

    def __init__(self) -> None:
        self._counts: dict[Address, int] = {}

    def model_key(self, address: Address) -> str:
        return model_key(address, self._counts.get(address, 0))

    def replied(self, address: Address) -> None:
        self._counts[address] = self._counts.get(address, 0) + 1

    @staticmethod
    def tool_key(address: Address, visit: int, turn: int, call_id: str) -> str:
        return tool_key(address, visit, turn, call_id)


class RecordedSteps(Replies):
    """A ``StepRecorder`` as a step log: each step recorded as it finishes, nothing to flush. A record of another
    kind than the call's is a ``StepRecordError``, never taken for "not recorded"."""

    __slots__ = ("recorder",)

    def __init__(self, recorder: StepRecorder) -> None:
        super().__init__()
        self.recorder = recorder

    def __repr__(self) -> str:
        return f"RecordedSteps({self.recorder!r})"

    async def recall(self, key: str, kind: type[T]) -> T | None:
        value = await self.recorder.recall(key)
        if value is None or isinstance(value, kind):
            return value
        raise StepRecordError(
            f"step record {key!r}: expected a {kind.__name__}, got {type(value).__name__}; the record is not this "
            f"call's (delete the segment's records to run the call again)",
            key=key,
        )

    async def record(self, key: str, value: Message | ToolResult) -> None:
        await self.recorder.record(key, value)

    def check(self) -> None:
        pass

    async def flush(self) -> None:
        pass


class FenceSteps(Replies):
    """A step log that holds nothing and only fences: ``check`` calls ``fence`` (a lease's check), so that a run
    with no journal (a run's first segment) stops before a tool batch once its lease is lost, as a resume does."""

    __slots__ = ("fence",)

    def __init__(self, fence: Callable[[], None]) -> None:
        super().__init__()
        self.fence = fence

    def __repr__(self) -> str:
        return f"FenceSteps({self.fence!r})"

    async def recall(self, key: str, kind: type[T]) -> T | None:
        return None

    async def record(self, key: str, value: Message | ToolResult) -> None:
        pass

    def check(self) -> None:
        self.fence()

    async def flush(self) -> None:
        pass


class ChainedSteps:
    """Two step logs as one: ``first`` consulted first, ``then`` for what it does not hold (copied into ``first``
    when found there), a new step recorded in both. Both count the replies (their keys agree); ``first`` names
    them."""

    __slots__ = ("first", "then")

    def __init__(self, first: StepLog, then: StepLog) -> None:
        self.first = first
        self.then = then

    def __repr__(self) -> str:
        return f"ChainedSteps({self.first!r}, {self.then!r})"

    def model_key(self, address: Address) -> str:
        return self.first.model_key(address)

    def replied(self, address: Address) -> None:
        self.first.replied(address)
        self.then.replied(address)

    def tool_key(self, address: Address, visit: int, turn: int, call_id: str) -> str:
        return self.first.tool_key(address, visit, turn, call_id)

    async def recall(self, key: str, kind: type[T]) -> T | None:
        value = await self.first.recall(key, kind)
        if value is not None:
            return value
        value = await self.then.recall(key, kind)
        if value is not None:
            await self.first.record(key, value)  # type: ignore[arg-type]  # kind is Message or ToolResult
        return value

    async def record(self, key: str, value: Message | ToolResult) -> None:
        await self.first.record(key, value)
        await self.then.record(key, value)

    def check(self) -> None:
        self.first.check()
        self.then.check()

    async def flush(self) -> None:
        await self.first.flush()
        await self.then.flush()


def chained_steps(first: StepLog | None, then: StepLog | None) -> StepLog | None:
    """``first`` then ``then`` as one log; either alone when the other is None."""
    if first is None or then is None:
        return first if then is None else then
    return ChainedSteps(first, then)


_INSTALLED: ContextVar[RecordedSteps | None] = ContextVar("batonflow_steps", default=None)

installed_steps = _INSTALLED.get
"""The step log ``recording_steps`` installed around the code running now, if any: what a Runner puts on the
contexts of the runs it starts there."""


@contextmanager
def recording_steps(recorder: StepRecorder) -> Iterator[RecordedSteps]:
    """Record the steps of the runs a Runner starts inside this block with ``recorder`` (and replay what it holds).

    Install it around one run (one run segment): the model replies are counted per address from here. Tasks
    started inside the block see it too (a context variable), so a run started on one records as well.
    """
    steps = RecordedSteps(recorder)
    token = _INSTALLED.set(steps)
    try:
        yield steps
    finally:
        _INSTALLED.reset(token)

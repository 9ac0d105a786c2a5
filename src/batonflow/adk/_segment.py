"""A run or a resume working under a checkpoint id's lease: the id reserved before a run starts, and the writes the
Runner makes there (the interrupt's checkpoint, a resume's journal, the deletion of a resume that ran to its end).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import aclosing

from ..errors import CheckpointExistsError
from ..store import CheckpointStore
from ..tools import InterruptSignal
from ._checkpoint import encode_checkpoint
from ._context import RunContext
from ._events import AgentEvent
from ._interrupt import InterruptInfo
from ._journal import Journal
from ._lease import Fenced, LeaseHolder
from ._parts import HistoryChain

__all__ = ["Segment", "reserved"]

_log = logging.getLogger("batonflow.adk")


async def reserved(segment: Segment, events: AsyncIterator[AgentEvent]) -> AsyncIterator[AgentEvent]:
    """``events``, once the segment's checkpoint id is known to be free; a run given a checkpoint id starts here.

    The run holds the id's lease from before it looks until its checkpoint is saved, so that neither a pending run
    nor a second run started with the same id at the same moment is overwritten. The lease is given back before
    the caller sees the interrupt, so that the caller can resume at once.
    """
    checkpoint_id, lease = segment.checkpoint_id, segment.lease
    async with aclosing(events) as source:  # type: ignore[type-var]
        await lease.claim("run or resumed")
        held = True
        try:
            if await segment.store.get(checkpoint_id) is not None:
                raise CheckpointExistsError(
                    f"checkpoint[{checkpoint_id}] holds a pending run, which this run would overwrite: resume it "
                    f"with Runner.resume({checkpoint_id!r}, targets=...), delete it with "
                    f"checkpoint_store.delete({checkpoint_id!r}), or run with another checkpoint_id",
                    checkpoint_id=checkpoint_id,
                )
            async for event in source:
                if held and event.action is not None and isinstance(event.action.interrupted, InterruptInfo):
                    held = False  # saved by now (or the run reports why not)
                    await lease.release()
                yield event
        finally:
            if held:
                await lease.release()


class Segment:
    """A run or a resume working under a checkpoint id's lease, and what it writes there: the interrupt's
    checkpoint, the journal of a resume, the deletion of a resume that ran to its end. Each write is fenced by the
    lease (``LeaseLostError`` once it is lost; atomically in stores whose ``set``/``delete`` take ``owner``).

    ``chain`` holds the parts of the run's history saved so far (None: the store takes whole checkpoints)."""

    __slots__ = ("chain", "checkpoint_id", "failed", "interrupted", "journal", "lease", "store")

    def __init__(
        self,
        store: CheckpointStore,
        checkpoint_id: str,
        lease: LeaseHolder,
        journal: Journal | None = None,
        chain: HistoryChain | None = None,
    ) -> None:
        self.store = store
        self.checkpoint_id = checkpoint_id
        self.lease = lease
        self.journal = journal
        self.chain = chain
        self.interrupted = False
        self.failed = False

    async def save_interrupt(self, ctx: RunContext, signal: InterruptSignal) -> None:
        """The checkpoint of the run stopped by ``signal``: a new part of its history first, when one is due."""
        data = await encode_checkpoint(
            ctx, signal, self.store, chain=self.chain, checkpoint_id=self.checkpoint_id, write=self._write_part
        )
        await self.save(data)
        if self.chain is not None and self.chain.stale:
            live = {part.key for part in self.chain.parts}  # a part written again is named as before
            stale, self.chain.stale = [k for k in self.chain.stale if k not in live], []
            await self._forget(stale)

    async def _write_part(self, key: str, data: bytes) -> None:
        self.lease.check()  # a part is named by its digest: a writer that lost the lease cannot spoil another's
        await self.store.set(key, data)

    async def save(self, data: bytes) -> None:
        """The checkpoint of the run's interrupt."""
        self.lease.check()
        await Fenced(self.store).set(self.checkpoint_id, data, owner=self.lease.owner)
        self.interrupted = True

    async def keep(self, *, quiet: bool = False) -> None:
        """The resume stops short of its end: the checkpoint stays, with the journal of what finished. ``quiet``
        when the caller went away: a failure is logged, not raised."""
        if self.journal is None or self.lease.lost:
            return
        try:
            await self.journal.flush()
        except Exception:
            if not quiet:
                raise
            _log.warning("could not save the journal of checkpoint[%s]", self.checkpoint_id, exc_info=True)

    async def finish(self) -> None:
        """The resume ran to its end: a later resume must not replay it (its tools would run twice)."""
        self.lease.check()
        try:
            await Fenced(self.store).delete(self.checkpoint_id, owner=self.lease.owner)
        except Exception:
            await self.keep()  # a retry then replays the finished tools from the journal, not for real
            raise
        await self.forget_journal()
        if self.chain is not None:
            await self._forget([*(part.key for part in self.chain.parts), *self.chain.stale])

    async def forget_journal(self) -> None:
        """The journal's chunks are of no use any more (the checkpoint they add to is gone or replaced): deleted,
        best effort, since a chunk left behind names a base that no checkpoint has and is never read again."""
        if self.journal is not None:
            await self._forget(self.journal.written())

    async def _forget(self, keys: list[str]) -> None:
        """Delete ``keys`` that no checkpoint refers to any more, best effort: one left behind is never read."""
        for key in keys:
            try:
                await self.store.delete(key)
            except Exception:
                _log.warning("could not delete %s of checkpoint[%s]", key, self.checkpoint_id, exc_info=True)
                return

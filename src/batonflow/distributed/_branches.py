"""Branches of a segment's distributed parallel agents (``ParallelAgent(distribute=True)``, graph agent nodes
with ``distribute: true``) as workflows of their own, on a queue of their own so that segments waiting for their
branches never hold the slots the branches need."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from dbos import EnqueueOptions, WorkflowHandleAsync

from ..adk import Branch, BranchResult
from ..errors import BranchFailedError, SegmentFailedError

if TYPE_CHECKING:
    from ._dbos import DBOSWorker

__all__ = ["BRANCH_QUEUE", "BRANCH_WORKFLOW", "PoolBranches"]

BRANCH_QUEUE = "batonflow-branches"
BRANCH_WORKFLOW = "batonflow.branch"
POLL = 0.05  # seconds between looks at a branch's outcome

_log = logging.getLogger("batonflow.distributed")


class PoolBranches:
    """The branch dispatcher of one segment on a worker: each branch becomes a workflow on the branch queue, named
    by the segment, the branch's address and how many times the segment has run that branch before. A segment that
    runs again after a crash asks for the same names, and gets the branches that ran (or still run), not new
    runs."""

    def __init__(self, worker: DBOSWorker, sid: str, agent: str) -> None:
        self.worker = worker
        self.sid = sid
        self.agent = agent
        self._seen: dict[str, int] = {}

    async def run_branch(self, branch: Branch) -> BranchResult:
        where = branch.where
        self._seen[where] = count = self._seen.get(where, 0) + 1
        bid = f"{self.sid}/{where}#{count}"
        worker, client = self.worker, self.worker.client()
        options = EnqueueOptions(
            workflow_name=BRANCH_WORKFLOW,
            queue_name=BRANCH_QUEUE,
            workflow_id=bid,
            app_version=worker.app_version,
            workflow_id_reuse_policy="return-existing",
        )
        try:
            handle: WorkflowHandleAsync[BranchResult] = await client.enqueue_async(
                options, branch, self.agent, worker.app_version
            )
            result = await handle.get_result(polling_interval_sec=POLL)
        except asyncio.CancelledError:
            await asyncio.shield(self._cancel(bid))
            raise
        except SegmentFailedError as error:
            raise BranchFailedError(f"branch {bid} failed: {error}", kind=error.kind) from None
        if not isinstance(result, BranchResult):
            raise BranchFailedError(f"branch {bid}: expected a BranchResult, got {type(result).__name__}")
        return result

    async def _cancel(self, bid: str) -> None:
        """Stop a branch whose segment stopped waiting for it (cancelled, or its worker stopping)."""
        events = self.worker.events
        try:
            if events is not None:
                await events.request_cancel(bid)
            await self.worker.client().cancel_workflow_async(bid)
        except Exception:
            _log.warning("branch %s: could not be cancelled", bid, exc_info=True)

"""The API's refusals about runs: no such run or checkpoint (404), another request claimed the run first (a 409, or
a 422 under the same ``Idempotency-Key``), or the backend did not answer in time (a 503 with ``Retry-After``).
Each says what is known: of the winner (its run id, request digest, status, when it was accepted), or of the
backend (what it was asked, and why it did not answer)."""

import asyncio
from typing import Any

from ..distributed import SegmentClaim, SegmentRequest
from ..errors import BackendUnavailableError
from ._errors import ApiError, shown

__all__ = ["Bounded", "claimed", "no_checkpoint", "no_run", "unavailable"]


def unavailable(what: str, why: str) -> ApiError:
    return ApiError(
        503,
        "backend_unavailable",
        f"backend: expected an answer {what}, got none: {why}; nothing was started by this request, retry later "
        "(with the same Idempotency-Key, a retry cannot start a second run)",
        expected="a backend that answers",
        found=why,
        headers={"Retry-After": "2"},
    )


def claimed(request: SegmentRequest, claim: SegmentClaim, idempotency_key: str | None) -> ApiError:
    """The refusal of a request whose segment another request claimed first, with what is known of the winner."""
    winner = claim.payload()
    if idempotency_key is not None:
        return ApiError(
            422,
            "idempotency_key_reused",
            f"Idempotency-Key: expected the body of the request that first used it (run {claim.segment_id!r}, "
            f"{claim.status}), got another body",
            expected="the first request's body, or a new key",
            found=winner,
        )
    if not request.resumes:
        return ApiError(
            409,
            "checkpoint_exists",
            f"checkpoint_id: expected a free id, got {shown(request.checkpoint_id)}, which run "
            f"{claim.segment_id!r} ({claim.status}) took with other input (choose another id)",
            expected="an id no run took",
            found=winner,
        )
    return ApiError(
        409,
        "resume_conflict",
        f"resume: expected to be the first answer to this pause, got a different answer after run "
        f"{claim.segment_id!r} claimed it ({claim.status}); its outcome is the run's (GET /runs/{claim.segment_id})",
        expected="the winning resume's request (a retry), or a pause nothing answered yet",
        found=winner,
    )


def no_run(run_id: str) -> ApiError:
    return ApiError(
        404,
        "unknown_run",
        f"run: expected the id of a run of this server's backend (running, or one that ended), got {shown(run_id)}",
        expected="a run id from POST /runs",
        found=shown(run_id),
    )


def no_checkpoint(checkpoint_id: str, why: str) -> ApiError:
    """The 404 of a checkpoint (or conversation) that nothing waits on, saying why."""
    return ApiError(
        404,
        "unknown_checkpoint",
        f"checkpoint: expected a pending checkpoint, got {shown(checkpoint_id)}: {why}",
        expected="an id from GET /checkpoints",
        found=checkpoint_id,
    )


class Bounded:
    """A backend call ``what`` within ``limit`` seconds, as an ``async with`` block: past the limit, or with the
    backend's database away (``BackendUnavailableError``), it is refused as ``unavailable``. A class, where a
    generator's context manager would cost a generator, its frames and a ``StopAsyncIteration`` at each call (a
    run makes one or two)."""

    __slots__ = ("limit", "timeout", "what")

    def __init__(self, what: str, limit: float) -> None:
        self.what = what
        self.limit = limit
        self.timeout = asyncio.timeout(limit)

    async def __aenter__(self) -> None:
        await self.timeout.__aenter__()

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: Any) -> None:
        try:
            await self.timeout.__aexit__(kind, error, tb)
        except TimeoutError:
            error = None  # the limit passed: the call was cancelled
        else:
            if not isinstance(error, TimeoutError | BackendUnavailableError):
                return
        if isinstance(error, BackendUnavailableError):
            raise unavailable(self.what, str(error)) from None
        raise unavailable(self.what, f"no answer within {self.limit:g} s") from None

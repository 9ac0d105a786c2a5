"""One exception tree for everything batonflow raises.

``BatonflowError`` is the root. ``UserError`` marks a developer mistake (bad configuration, misuse of an API,
input that can never work); ``RunError`` marks something that went wrong while a run was going (a provider that
failed, a tool that could not be called). Messages say what was expected and what was found.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BackendUnavailableError",
    "BatonflowError",
    "BranchFailedError",
    "CheckpointExistsError",
    "CheckpointNotFoundError",
    "CodecError",
    "ConcatError",
    "LeaseLostError",
    "MaxIterationsError",
    "ModelConnectionError",
    "ModelError",
    "ModelHTTPError",
    "ModelJSONError",
    "ModelResponseError",
    "ModelTimeoutError",
    "RemoteAgentError",
    "ReplayMismatchError",
    "ResumeConflictError",
    "ResumeError",
    "RunError",
    "RunHistoryError",
    "SegmentClaimedError",
    "SegmentError",
    "SegmentFailedError",
    "StepRecordError",
    "StoreError",
    "StreamClosedError",
    "ToolArgumentsError",
    "ToolNotFoundError",
    "TransferError",
    "UnknownAgentError",
    "UserError",
    "VersionMismatchError",
]


class BatonflowError(Exception):
    """Root of every error batonflow raises."""


class UserError(BatonflowError):
    """A developer mistake: bad configuration, bad input, or an API used the wrong way."""


class ConcatError(UserError):
    """Chunks that cannot form one message (different roles, ids or names)."""


class StreamClosedError(UserError):
    """A stream read after it was closed, or after it was copied."""


class RunError(BatonflowError):
    """Something went wrong during a run."""


class BranchFailedError(RunError):
    """A parallel branch that ran elsewhere failed there, or could not be run: the exception itself cannot travel,
    so ``kind`` is its class name and the message says what happened."""

    def __init__(self, message: str, *, kind: str = "") -> None:
        super().__init__(message)
        self.kind = kind


class ModelError(RunError):
    """A chat model call failed."""

    def __init__(self, message: str, *, model: str = "") -> None:
        super().__init__(message)
        self.model = model


class ModelHTTPError(ModelError):
    """The provider answered with an HTTP error status. ``url`` is where the request went, when known;
    ``retry_after`` the seconds the provider asked to wait before trying again (its ``retry-after``), when it said."""

    def __init__(
        self,
        message: str,
        *,
        status_code: int,
        model: str = "",
        body: object = None,
        url: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, model=model)
        self.status_code = status_code
        self.body = body
        self.url = url
        self.retry_after = retry_after


class ModelResponseError(ModelError):
    """The provider answered with a success status, but not in the API's format: an HTML page (a proxy's, a login
    portal's, a web server's at a wrong ``base_url``), say. ``url``, ``status_code``, ``content_type`` and ``body``
    are what came back. Not retried: the same request gets the same page."""

    def __init__(
        self, message: str, *, url: str, status_code: int, content_type: str, body: str, model: str = ""
    ) -> None:
        super().__init__(message, model=model)
        self.url = url
        self.status_code = status_code
        self.content_type = content_type
        self.body = body


class ModelTimeoutError(ModelError):
    """The provider did not answer in time."""


class ModelConnectionError(ModelError):
    """The provider could not be reached."""


class ToolArgumentsError(RunError):
    """A model called a tool with arguments that are not valid JSON or do not fit the tool's schema.

    ``str(error)`` is written for the model: a runtime turns it into a tool observation so the model can retry.
    """

    def __init__(self, message: str, *, tool_name: str) -> None:
        super().__init__(message)
        self.tool_name = tool_name


class ModelJSONError(RunError, ValueError):
    """JSON that a model wrote and batonflow will not read: not JSON, too long, or nested too deeply.

    ``str(error)`` is written for the model, as an ``expected …, got …`` clause. ``reason`` is ``"invalid"``,
    ``"too_long"`` or ``"too_deep"``; ``detail`` is the parser's own words for invalid JSON (``"Expecting value"``)
    and the clause otherwise; for a limit, ``limit`` and ``found`` are the figures (characters or levels). It is a
    ``ValueError`` too, as ``json.loads``'s error is, so that a parser documented to raise one still does.
    """

    def __init__(self, message: str, *, reason: str, detail: str = "", limit: int = 0, found: int = 0) -> None:
        super().__init__(message)
        self.reason = reason
        self.detail = detail or message
        self.limit = limit
        self.found = found


class RemoteAgentError(RunError):
    """A remote agent (``batonflow.interop.RemoteA2AAgent``) that could not be reached, went away before its
    task's final status, answered what its protocol does not, or ended its task failed, rejected or cancelled.

    ``url`` is the remote's; ``task_id`` its task's id, when it named one.
    """

    def __init__(self, message: str, *, url: str, task_id: str = "") -> None:
        super().__init__(message)
        self.url = url
        self.task_id = task_id


class ToolNotFoundError(RunError):
    """A model called a tool that the agent does not have."""

    def __init__(self, message: str, *, tool_name: str) -> None:
        super().__init__(message)
        self.tool_name = tool_name


class MaxIterationsError(RunError):
    """An agent used up its model calls (``max_iterations``) without finishing."""

    def __init__(self, message: str = "exceeds max iterations") -> None:
        super().__init__(message)


class TransferError(RunError):
    """An agent handed control to an agent that is not among its sub-agents or its parent."""


class CheckpointNotFoundError(RunError):
    """A resume named a checkpoint that the store does not hold (or that was already resumed to the end)."""

    @classmethod
    def in_store(cls, checkpoint_id: str, store: object) -> CheckpointNotFoundError:
        """The error for ``checkpoint_id``, which ``store`` does not hold: the id and the store named."""
        shown = checkpoint_id if len(checkpoint_id) <= 120 else f"{checkpoint_id[:120]}…"
        return cls(
            f"checkpoint: expected a pending checkpoint {shown!r} in the {type(store).__name__}, found none "
            "(it was never saved there, or was already resumed to the end)"
        )


class CheckpointExistsError(RunError):
    """A run was given a ``checkpoint_id`` under which the store already holds a pending run.

    Saving the new run's checkpoint would overwrite the pending one, so the run is refused before it starts. It is a
    ``RunError``, as ``CheckpointNotFoundError`` is: whether an id is taken depends on what the store holds at that
    moment (another worker may have saved under it), not on the code. ``checkpoint_id`` names the id.
    """

    def __init__(self, message: str, *, checkpoint_id: str) -> None:
        super().__init__(message)
        self.checkpoint_id = checkpoint_id


class ResumeConflictError(RunError):
    """Another runner is resuming the same checkpoint, running under the same checkpoint id, or running the same
    conversation, right now.

    ``lease`` is that runner's lease (``batonflow.store.Lease``: its owner, how long it has held it, when it lapses)
    when the store could tell, else None.
    """

    def __init__(self, message: str, *, lease: Any = None) -> None:
        super().__init__(message)
        self.lease = lease


class LeaseLostError(ResumeConflictError):
    """A write fenced by a lease (``set`` or ``delete`` given an ``owner``) found that the owner no longer holds it:
    the lease lapsed, perhaps was taken by another worker, or was broken. Nothing was written.

    ``checkpoint_id`` and ``owner`` name the write; ``holder`` and ``held_for`` (seconds) name who holds the lease
    now, both None when nobody does. It is a ``ResumeConflictError``: another worker may be resuming the same
    checkpoint, and what it writes must not be overwritten by a worker that was too slow to notice.
    """

    def __init__(
        self, message: str, *, checkpoint_id: str, owner: str, holder: str | None = None, held_for: float | None = None
    ) -> None:
        super().__init__(message)
        self.checkpoint_id = checkpoint_id
        self.owner = owner
        self.holder = holder
        self.held_for = held_for


class ResumeError(RunError):
    """A run could not be resumed: the checkpoint does not lead to a resumable agent."""


class CodecError(BatonflowError):
    """Data that cannot be encoded to, or decoded from, batonflow's checkpoint format.

    The message names what failed and where (a JSON path such as ``$.session.values.order``); ``path`` holds that
    path when there is one.
    """

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class StepRecordError(RunError):
    """A recorded step (a model reply or a tool result kept by a worker in step mode) cannot be used: it does not
    decode, or it is not what the call at its key returns. ``key`` names the step."""

    def __init__(self, message: str, *, key: str) -> None:
        super().__init__(message)
        self.key = key


class RunHistoryError(RunError):
    """A run's kept history cannot give what was asked: the run kept none (or is unknown), or a step it does not
    have was named. ``run_id`` names the run."""

    def __init__(self, message: str, *, run_id: str, step: int | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.step = step


class ReplayMismatchError(RunHistoryError):
    """A replay left its record: an agent asked for a step the record has not (the agent tree changed since the
    run: an agent or a tool missing, renamed or added), or the record has steps the replay never reached.
    ``agent_name`` and ``step`` (the index into the history) say where it starts."""

    def __init__(self, message: str, *, run_id: str, step: int, agent_name: str) -> None:
        super().__init__(message, run_id=run_id, step=step)
        self.agent_name = agent_name


class StoreError(RunError):
    """A checkpoint store could not do what was asked: the server is unreachable, refused us, or failed.

    The message names the backend, where it is, and the operation.
    """

    def __init__(self, message: str, *, backend: str) -> None:
        super().__init__(message)
        self.backend = backend


class SegmentError(RunError):
    """A run segment handed to a durable backend (``batonflow.distributed``) could not run where it was sent.

    ``segment_id`` names the segment (its checkpoint id and generation) when it is known.
    """

    def __init__(self, message: str, *, segment_id: str | None = None) -> None:
        super().__init__(message)
        self.segment_id = segment_id


class UnknownAgentError(SegmentError):
    """A queued segment names an agent that the worker which took it does not serve (a worker of another
    application, or one deployed without that agent)."""


class VersionMismatchError(SegmentError):
    """A segment was enqueued by one application version and reached a worker of another: the worker refuses it
    rather than run code the checkpoint was not written for. ``expected`` is the worker's version, ``found`` the
    segment's."""

    def __init__(self, message: str, *, segment_id: str | None = None, expected: str, found: str) -> None:
        super().__init__(message, segment_id=segment_id)
        self.expected = expected
        self.found = found


class SegmentClaimedError(SegmentError):
    """A segment was submitted again with a different request than the one that claimed it first: another answer
    to the same pause, or other input under a checkpoint id already used. Nothing was run for it. ``claim`` is
    what the backend knows of the winner (``batonflow.distributed.SegmentClaim``: its segment, request digest,
    status, when it was accepted)."""

    def __init__(self, message: str, *, segment_id: str | None = None, claim: Any = None) -> None:
        super().__init__(message, segment_id=segment_id)
        self.claim = claim


class SegmentFailedError(SegmentError):
    """A segment's outcome, read back from a backend, is an error raised where it ran (in another process, where
    the exception itself cannot travel): ``kind`` is that exception's class name."""

    def __init__(self, message: str, *, segment_id: str | None = None, kind: str = "") -> None:
        super().__init__(message, segment_id=segment_id)
        self.kind = kind


class BackendUnavailableError(RunError):
    """A durable backend's database (or broker) could not be reached within the time allowed: nothing was claimed
    or run. The message names where it looked (without the password) and for how long."""

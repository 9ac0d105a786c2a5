"""The journal of a resume: what its model and tool steps returned, saved as it goes.

A resume runs from the checkpoint it was given (its *base*) until it ends, is interrupted again, fails or is cut
short. Its tools may have side effects, so a resume that is cut short — the process killed, the provider down, the
caller gone — must not run them again when it is retried. The journal is how: each finished tool's result and each
model reply is recorded under a key that the same step has again when the resume is replayed, and written to the
store after each tool batch, before the next model call. A retry of the resume replays from the same base: a step
whose key is in the journal gives its recorded result instead of running, so finished tools are not run again and
the model is not asked again what it already answered; the first step that is not there runs for real.

The keys are the step log's (``batonflow.adk.loop``): the agent's address in the run and a count of the model
replies it had there, or, for a tool, which run of the loop at that address (``ReactState.visit``), its turn and the
call's id. Replaying from the same base with the same results takes the same path, so each key comes back in the
same place (the durable-execution contract: agents decide from their inputs, not from the clock).

A journal is written in chunks, one per flush, holding what was recorded since the previous one (so a long resume
writes each step once, not its whole journal each time), under ids derived from the checkpoint id. Each chunk names
its base by digest: chunks left by a resume of an older checkpoint under the same id are told apart and ignored.
The first chunk also holds the resume's targets, since the tools that already ran were given that data (unless the
codec cannot hold them, a function say: a retry then gives them again).
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..codec import DecodeLimits, decode, encode, register_type
from ..errors import CodecError, UserError
from ..schema import Address, Message
from ..store import CheckpointStore
from .loop import ToolResult, model_key, tool_key

__all__ = ["Journal", "JournalChunk", "base_digest", "journal_chunk_id"]

T = TypeVar("T")


@dataclass(slots=True, kw_only=True)
class JournalChunk:
    """What one flush of a journal writes: the steps recorded since the previous flush."""

    base: str
    """The digest of the checkpoint the resume started from (``base_digest``)."""
    targets: dict[str, Any] | None = None
    """The resume's targets; in the first chunk only."""
    steps: dict[str, Any] = field(default_factory=dict)


register_type(JournalChunk, name="JournalChunk")


def base_digest(data: bytes) -> str:
    """Names a checkpoint's bytes: equal bytes, equal digest."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def journal_chunk_id(checkpoint_id: str, n: int) -> str:
    """Where chunk ``n`` of ``checkpoint_id``'s journal is kept: a fixed-size id whatever the checkpoint id's size."""
    return f"batonflow-journal:{base_digest(checkpoint_id.encode('utf-8'))}:{n}"


class Journal:
    """The steps of one resume of ``checkpoint_id``: those recorded by earlier attempts (replayed) and new ones. A
    ``StepLog`` (``batonflow.adk.loop``): the resume's context carries it, alone or chained before a worker's records.

    ``fence`` is called before each write and before a batch of tools runs: it raises ``LeaseLostError`` when the
    resume no longer holds its checkpoint's lease, so a resumer that lost it stops before it runs another tool.
    """

    __slots__ = (
        "_counts",
        "_fence",
        "_flushed",
        "_limits",
        "_set",
        "base",
        "checkpoint_id",
        "replay",
        "steps",
        "targets",
    )

    def __init__(
        self,
        checkpoint_id: str,
        base: str,
        targets: dict[str, Any],
        *,
        write: Callable[[str, bytes], Awaitable[None]],
        limits: DecodeLimits,
        fence: Callable[[], None] | None = None,
    ) -> None:
        self.checkpoint_id = checkpoint_id
        self.base = base
        self.targets = targets
        self.replay: dict[str, Any] = {}
        """Steps recorded by earlier attempts of this resume, by key."""
        self.steps: dict[str, Any] = {}
        """Steps recorded by this attempt and not yet written."""
        self._counts: dict[Address, int] = {}
        self._flushed = 0
        self._set = write
        self._limits = limits
        self._fence = fence

    @classmethod
    async def load(
        cls,
        store: CheckpointStore,
        checkpoint_id: str,
        base: str,
        targets: dict[str, Any],
        *,
        write: Callable[[str, bytes], Awaitable[None]],
        limits: DecodeLimits,
        fence: Callable[[], None] | None = None,
    ) -> Journal:
        """The journal an earlier attempt left for the checkpoint whose bytes have digest ``base``, if any.

        A retry continues with the targets it was first given (the tools that ran were given that data): ``targets``
        must be those or empty, else ``UserError``.
        """
        journal = cls(checkpoint_id, base, targets, write=write, limits=limits, fence=fence)
        while True:
            data = await store.get(journal_chunk_id(checkpoint_id, journal._flushed))
            chunk = None if data is None else decode(data, limits=limits)
            if not isinstance(chunk, JournalChunk) or chunk.base != base:
                break  # the end, or what a resume of an older checkpoint under this id left
            if journal._flushed == 0 and chunk.targets is not None:
                if targets and targets != chunk.targets:
                    raise UserError(
                        f"checkpoint[{checkpoint_id}] is part-way through a resume that was given other targets, "
                        f"and its tools ran with them: expected the same targets or none, got {sorted(targets)} "
                        f"instead of {sorted(chunk.targets)}"
                    )
                journal.targets = chunk.targets
            journal.replay.update(chunk.steps)
            journal._flushed += 1
        return journal

    # -- the step log (``StepLog``) -----------------------------------------------------------------------------

    def model_key(self, address: Address) -> str:
        """The key of the next model reply at ``address`` (replies counted, failed calls not)."""
        return model_key(address, self._counts.get(address, 0))

    def replied(self, address: Address) -> None:
        """A model reply at ``address`` came (from the model, or from the journal)."""
        self._counts[address] = self._counts.get(address, 0) + 1

    @staticmethod
    def tool_key(address: Address, visit: int, turn: int, call_id: str) -> str:
        return tool_key(address, visit, turn, call_id)

    async def recall(self, key: str, kind: type[T]) -> T | None:
        """The ``kind`` an earlier attempt recorded under ``key`` (a message or a tool result), or None."""
        value = self.replay.get(key)
        return value if isinstance(value, kind) else None

    async def record(self, key: str, value: Message | ToolResult) -> None:
        self.steps[key] = value

    # -- the store -----------------------------------------------------------------------------------------------

    def check(self) -> None:
        """Raises ``LeaseLostError`` when this resume no longer holds its checkpoint."""
        if self._fence is not None:
            self._fence()

    async def flush(self) -> None:
        """Write the steps recorded since the last flush, as the next chunk; nothing when there are none."""
        if not self.steps:
            return
        self.check()
        chunk = JournalChunk(base=self.base, steps=self.steps, targets=self.targets if self._flushed == 0 else None)
        try:
            data = encode(chunk, limits=self._limits)
        except CodecError:
            if chunk.targets is None:
                raise
            # Resume data the codec cannot hold (a history modifier is a function): the retry must give it again.
            chunk.targets = None
            data = encode(chunk, limits=self._limits)
        await self._set(journal_chunk_id(self.checkpoint_id, self._flushed), data)
        self.steps = {}
        self._flushed += 1

    def written(self) -> list[str]:
        """The ids of the chunks in the store: to delete when the resume is done with them."""
        return [journal_chunk_id(self.checkpoint_id, n) for n in range(self._flushed)]

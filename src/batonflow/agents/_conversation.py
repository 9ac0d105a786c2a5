"""Conversations across runs: ``ConversationRunner``, the ``Runner`` of ``batonflow`` (Solon's agent call with a session).

``ConversationRunner(agent, session_store=store)`` is the runtime's Runner plus conversations, with every option of
the runtime's: ``run(messages, session_id=...)``
feeds the run the latest ``session_window`` messages of that conversation before ``messages`` (8 by default; None
for all of them), and adds the prompt and the final answer to it. An interrupted run leaves the conversation pending, its checkpoint kept as the session's
snapshot; calling again with no messages resumes it. A new prompt starts afresh and drops what was pending, as
every call of the original clears the pending flag first.

Every run of a conversation takes the session store's lease on it first, reads the conversation under it, and holds
it until the conversation is saved again. So of two workers resuming one pending conversation — in one process or
in several, on every backend — exactly one goes ahead and the other gets ``ResumeConflictError`` (the tool that
waited for the approval runs once); and no run overwrites the pending state, attributes or snapshot that another
run of the same conversation is about to write. The pending run's checkpoint never leaves the session: the runtime
reads and writes it there, through a checkpoint store that is the session's snapshot.
"""

from __future__ import annotations

import asyncio
import struct
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from typing import Any

from ..adk import PART_EVENTS, Agent, AgentEvent, Capture, InterruptInfo, LeaseHolder, RunResult, break_lease
from ..adk import Runner as _Runner
from ..codec import decode, encode
from ..errors import CodecError, UserError
from ..schema import Message, Stream, user
from ..store import CheckpointStore, HistoryRetention, SessionStore, check_checkpoint_id, check_session_id
from ..trace import TraceCallback
from ._session import Session

__all__ = ["ConversationRunner", "Runner"]


class ConversationRunner(_Runner):
    """Runs ``agent`` as ``batonflow.adk.Runner`` does, with every option of it, and keeps conversations in
    ``session_store`` across runs. ``batonflow.Runner`` and ``batonflow.agents.Runner`` are this class.

    ``session_window`` is how many past messages of its conversation each run is fed: the last 8 by default (widened
    back to the user message that opened their turn), so that a run's cost does not grow with the conversation;
    ``session_window=None`` feeds the whole conversation. ``call``'s ``result.windowed`` says whether some were left out.
    ``resume_lease`` is how long, in seconds, a resume may hold its checkpoint's lease and a run of a conversation
    the conversation's: long enough for the longest run, short enough to wait out after a worker dies.
    """

    def __init__(
        self,
        agent: Agent,
        *,
        enable_streaming: bool = False,
        session_values: Mapping[str, Any] | None = None,
        skip_transfer_messages: bool = False,
        checkpoint_store: CheckpointStore | None = None,
        resume_lease: float = 300.0,
        callbacks: Sequence[TraceCallback] = (),
        history_part_events: int = PART_EVENTS,
        session_store: SessionStore | None = None,
        session_window: int | None = 8,
        keep_history: bool | HistoryRetention = False,
    ) -> None:
        super().__init__(
            agent,
            enable_streaming=enable_streaming,
            session_values=session_values,
            skip_transfer_messages=skip_transfer_messages,
            checkpoint_store=checkpoint_store,
            resume_lease=resume_lease,
            callbacks=callbacks,
            history_part_events=history_part_events,
            keep_history=keep_history,
        )
        if session_store is not None and not isinstance(session_store, SessionStore):
            raise UserError(f"session_store: expected a SessionStore, got {type(session_store).__qualname__}")
        if session_window is not None and (type(session_window) is not int or session_window < 0):
            raise UserError(
                "session_window: expected None (the whole conversation) or a number of messages >= 0, "
                f"got {session_window!r}"
            )
        self.session_store = session_store
        self.session_window = session_window

    def run(
        self,
        messages: Sequence[Message],
        *,
        session_values: Mapping[str, Any] | None = None,
        checkpoint_id: str | None = None,
        checkpoint_store: CheckpointStore | None = None,
        session_id: str | None = None,
        targets: Mapping[str, Any] | None = None,
        run_id: str | None = None,
        capture: Capture | None = None,
        history_id: str | None = None,
    ) -> Stream[AgentEvent]:
        """The events of one run on ``messages``, as for ``batonflow.adk.Runner.run`` (``run_id`` too, without a
        session; ``capture`` with one or without).

        With ``session_id`` the run continues that conversation of the ``session_store`` (see the module
        docstring); with no messages it resumes the conversation's pending run, ``targets`` as for ``resume``.
        Under ``keep_history`` a turn keeps its record when ``history_id`` names it (in the Runner's checkpoint
        store; a resume given the id of the turn it continues adds to that record).
        """
        if session_id is None:
            if history_id is not None:
                raise UserError(
                    "history_id: expected a session_id with it (a run without one keeps its record under its "
                    "checkpoint_id), got none"
                )
            return super().run(
                messages,
                session_values=session_values,
                checkpoint_id=checkpoint_id,
                checkpoint_store=checkpoint_store,
                run_id=run_id,
                capture=capture,
            )
        if run_id is not None:
            raise UserError(
                f"session {session_id!r}: expected no run_id with a session_id (a conversation's runs are its own), "
                "got one"
            )
        return self._conversation(
            session_id, list(messages), session_values, checkpoint_id, checkpoint_store, targets, capture, history_id
        )

    def _conversation(
        self,
        session_id: str,
        messages: list[Message],
        session_values: Mapping[str, Any] | None,
        checkpoint_id: str | None,
        checkpoint_store: CheckpointStore | None,
        targets: Mapping[str, Any] | None,
        capture: Any = None,
        history_id: str | None = None,
    ) -> Stream[AgentEvent]:
        check_session_id(session_id)
        kept = self._kept_turn(history_id)
        if self.session_store is None:
            raise UserError(
                f"cannot continue session {session_id!r}: expected Runner(..., session_store=...), got no store"
            )
        if checkpoint_id is not None or checkpoint_store is not None:
            raise UserError(
                f"session {session_id!r} keeps its pending run in the session store: expected no checkpoint_id "
                "or checkpoint_store with a session_id, got one"
            )
        return Stream.from_async_iter(
            self._converse(self.session_store, session_id, messages, session_values, targets, capture, kept)
        )

    def _kept_turn(self, history_id: str | None) -> tuple[CheckpointStore, str] | None:
        """Where a turn named ``history_id`` keeps its record: the Runner's checkpoint store, under that id (None
        when it keeps none: no id, or no ``keep_history``)."""
        if history_id is None or self.keep_history is None:
            return None
        check_checkpoint_id(history_id)
        if self.checkpoint_store is None:
            raise UserError(
                f"history_id {history_id!r}: expected Runner(..., checkpoint_store=...) to keep the turn's record "
                "in, got no store"
            )
        return self.checkpoint_store, history_id

    def query(
        self,
        text: str,
        *,
        session_values: Mapping[str, Any] | None = None,
        checkpoint_id: str | None = None,
        session_id: str | None = None,
    ) -> Stream[AgentEvent]:
        return self.run([user(text)], session_values=session_values, checkpoint_id=checkpoint_id, session_id=session_id)

    async def call(
        self,
        messages: Sequence[Message] | str = (),
        *,
        session_values: Mapping[str, Any] | None = None,
        checkpoint_id: str | None = None,
        checkpoint_store: CheckpointStore | None = None,
        session_id: str | None = None,
        targets: Mapping[str, Any] | None = None,
        metrics: bool = True,
        history_id: str | None = None,
    ) -> RunResult:
        """The ``RunResult`` of one run, as ``batonflow.adk.Runner.call`` gives it; with ``session_id`` the run
        continues that conversation, as ``run`` does (no messages: its pending run resumes, with ``targets``;
        ``history_id`` names its record), and ``result.windowed`` says whether ``session_window`` left earlier
        messages of the conversation out."""
        if session_id is None and history_id is not None:
            raise UserError("history_id: expected a session_id with it, got none")
        if session_id is None:
            return await super().call(
                messages,
                session_values=session_values,
                checkpoint_id=checkpoint_id,
                checkpoint_store=checkpoint_store,
                metrics=metrics,
            )
        prompt = self._prompt_messages(messages)
        return await self._called(
            lambda capture: self._conversation(
                session_id, prompt, session_values, checkpoint_id, checkpoint_store, targets, capture, history_id
            ),
            metrics=metrics,
            session_id=session_id,
        )

    def call_sync(
        self,
        messages: Sequence[Message] | str = (),
        *,
        session_values: Mapping[str, Any] | None = None,
        checkpoint_id: str | None = None,
        checkpoint_store: CheckpointStore | None = None,
        session_id: str | None = None,
        targets: Mapping[str, Any] | None = None,
        metrics: bool = True,
    ) -> RunResult:
        """``call`` for code without an event loop; inside one (a notebook) it refuses, saying to await ``call``."""
        call = self.call(
            messages,
            session_values=session_values,
            checkpoint_id=checkpoint_id,
            checkpoint_store=checkpoint_store,
            session_id=session_id,
            targets=targets,
            metrics=metrics,
        )
        return self._blocking(call, "call_sync", "`await runner.call(...)`")

    async def _converse(
        self,
        store: SessionStore,
        session_id: str,
        messages: list[Message],
        session_values: Mapping[str, Any] | None,
        targets: Mapping[str, Any] | None,
        capture: Any,
        kept: tuple[CheckpointStore, str] | None = None,
    ) -> AsyncIterator[AgentEvent]:
        what = f"session {session_id!r}"
        lease = LeaseHolder(store, session_id, uuid.uuid4().hex, self.resume_lease, what, "Runner.break_session_lease")
        await lease.claim("run or resumed")
        try:
            # Read under the lease: what another run saved before the claim is here, and nobody writes it until
            # this run has saved it again (a resume that finished meanwhile has cleared what it resumed).
            # A turn reads the messages its window needs; a resume none (the pending run has its own).
            session = await Session.load(store, session_id, window=self.session_window if messages else 0)
            if messages:
                events = self._prompt(session, messages, session_values, capture, kept)
            else:
                events = self._resume_pending(session, dict(targets or {}), capture, kept)
            async with aclosing(_follow(session, events, lease)) as followed:
                async for event in followed:
                    yield event
        finally:
            await lease.release()

    async def break_session_lease(self, session_id: str, holder: str) -> bool:
        """Free conversation ``session_id`` from a runner that died holding its lease (as ``break_lease`` for a
        checkpoint): only ``holder``'s lease is broken; True when it was."""
        check_session_id(session_id)
        return await break_lease(self.session_store, session_id, holder, f"session {session_id!r}")

    def _prompt(
        self,
        session: Session,
        messages: list[Message],
        session_values: Mapping[str, Any] | None,
        capture: Any,
        kept: tuple[CheckpointStore, str] | None = None,
    ) -> Stream[AgentEvent]:
        history = session.latest(self.session_window)
        if capture is not None:
            capture.windowed = session.partial or len(session.messages) > len(history)
        session.add(*messages)
        session.pending(False)  # a new prompt drops the pending run
        session.snapshot = None
        fed = [*history, *messages]
        return self._started(fed, session_values, session.session_id, _Snapshot(session, kept), capture)

    def _resume_pending(
        self, session: Session, targets: dict[str, Any], capture: Any, kept: tuple[CheckpointStore, str] | None
    ) -> Stream[AgentEvent]:
        if not session.is_pending or session.snapshot is None:
            raise UserError(f"session {session.session_id!r} has nothing to resume: expected a pending run, got none")
        return self._resumes(session.session_id, targets, _Snapshot(session, kept), capture)


async def _follow(session: Session, events: Stream[AgentEvent], lease: LeaseHolder) -> AsyncGenerator[AgentEvent, None]:
    """``events``, recording the run in ``session``: saved when the run stops for an interrupt, before the caller
    sees it (so a caller that stops reading there loses nothing), or else when the run ends; never once the
    conversation's lease is lost (another runner may have it by now)."""
    answer: Message | None = None
    saved = False
    async with aclosing(events):
        async for event in events:
            action = event.action
            if not saved and action is not None and isinstance(action.interrupted, InterruptInfo):
                lease.check()
                await _save(session, answer, action.interrupted)
                saved = True
            yield event
            variant = event.message_output
            if variant is not None and variant.role == "assistant":
                # After the yield: the caller has read a streamed answer by now.
                answer = variant.peek_message() or answer
    if not saved:
        lease.check()
        # The turn saved and the lease given back at once, the save first: on SQLite they commit together, one
        # round trip to the store's writer and one wait for the disk. The finally of the run's stream then has
        # nothing left to give back.
        done, _ = await asyncio.gather(_save(session, answer, None), lease.release(), return_exceptions=True)
        if isinstance(done, BaseException):
            raise done


async def _save(session: Session, answer: Message | None, interrupt: InterruptInfo | None) -> None:
    # What the agent said is part of the conversation even when the run waits (a question asking for feedback); a
    # request for tool calls is not.
    if answer is not None and not answer.tool_calls:
        session.add(answer)
    if interrupt is not None:
        session.pending(True, str(interrupt.data))
    elif session.snapshot is None:
        session.pending(False)
    # else: a resume that failed (a provider error, data of the wrong kind) keeps its checkpoint, with the journal of
    # the tools that finished; the conversation stays pending so that the caller can try again.
    await session.save()


class _Snapshot:
    """The session's snapshot seen as a checkpoint store, so the runtime reads and writes the pending run where the
    conversation keeps it. Its lease always succeeds: the conversation holds the session store's.

    Besides the checkpoint, a resume writes its journal here (chunks under ids of their own). The snapshot then
    holds both: ``_JOURNALED``, the checkpoint's length, the checkpoint, and the chunks encoded as one mapping; a
    snapshot without chunks is the checkpoint's bytes alone, as before. Each chunk is saved with the session at
    once, so a resume cut short is retried from what finished.

    The snapshot is written whole with the session, so a run's history goes into it whole too (``history_parts``).
    """

    history_parts = False

    def __init__(self, session: Session, history_target: tuple[CheckpointStore, str] | None = None) -> None:
        self._session = session
        self.history_target = history_target
        """Where the turn keeps its record under ``keep_history`` (the Runner's checkpoint store, the turn's
        ``history_id``); None: it keeps none."""
        self._checkpoint, self._chunks = _unpack(session.snapshot)

    async def get(self, checkpoint_id: str) -> bytes | None:
        if checkpoint_id == self._session.session_id:
            return self._checkpoint
        return self._chunks.get(checkpoint_id)

    async def set(self, checkpoint_id: str, data: bytes) -> None:
        if checkpoint_id == self._session.session_id:
            self._checkpoint, self._chunks = data, {}
            self._pack()
            return  # the conversation saves it when the caller is told of the interrupt
        self._chunks[checkpoint_id] = data
        self._pack()
        await self._session.save()

    async def delete(self, checkpoint_id: str) -> None:
        if checkpoint_id == self._session.session_id:
            self._checkpoint, self._chunks = None, {}
        else:
            self._chunks.pop(checkpoint_id, None)
        self._pack()

    def _pack(self) -> None:
        if self._checkpoint is None or not self._chunks:
            self._session.snapshot = self._checkpoint
            return
        chunks = encode(dict(self._chunks))
        self._session.snapshot = b"".join((_JOURNALED, _LENGTH.pack(len(self._checkpoint)), self._checkpoint, chunks))

    async def claim(self, checkpoint_id: str, owner: str, ttl: float) -> bool:
        return True

    async def release(self, checkpoint_id: str, owner: str) -> None:
        return None

    async def close(self) -> None:
        return None


_JOURNALED = b"BFJ"
_LENGTH = struct.Struct(">Q")


def _unpack(snapshot: bytes | None) -> tuple[bytes | None, dict[str, bytes]]:
    """A snapshot's checkpoint and journal chunks (see ``_Snapshot``)."""
    if snapshot is None or not snapshot.startswith(_JOURNALED):
        return snapshot, {}
    start = len(_JOURNALED) + _LENGTH.size
    if len(snapshot) < start:
        raise CodecError(f"cannot read a session snapshot: expected a journaled snapshot, got {len(snapshot)} bytes")
    (size,) = _LENGTH.unpack_from(snapshot, len(_JOURNALED))
    chunks = decode(snapshot[start + size :])
    if not isinstance(chunks, dict) or not all(isinstance(v, bytes) for v in chunks.values()):
        raise CodecError("cannot read a session snapshot: expected its journal chunks as a mapping of bytes")
    return snapshot[start : start + size], chunks


Runner = ConversationRunner
"""``batonflow.Runner``: the name the facade and Solon-style code use for ``ConversationRunner``."""

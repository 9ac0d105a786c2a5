"""Conversations across runs: the ``Runner`` of ``batonflow`` (Solon's agent call with a session).

``Runner(agent, session_store=store)`` is the runtime's Runner plus conversations: ``run(messages, session_id=...)``
feeds the run the latest ``session_window`` messages of that conversation before ``messages``, and adds the prompt
and the final answer to it. An interrupted run leaves the conversation pending, its checkpoint kept as the session's
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

import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from typing import Any

from ..adk import Agent, AgentEvent, InterruptInfo
from ..adk import Runner as _Runner
from ..errors import ResumeConflictError, UserError
from ..schema import Message, Stream, user
from ..store import CheckpointStore, SessionStore, check_session_id
from ..trace import TraceCallback
from ._session import Session

__all__ = ["Runner"]


class Runner(_Runner):
    """Runs ``agent`` as ``batonflow.adk.Runner`` does, and keeps conversations in ``session_store`` across runs.

    ``session_window`` is how many past messages each run of a conversation is fed (None: all of them).
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
        session_store: SessionStore | None = None,
        session_window: int | None = 8,
    ) -> None:
        super().__init__(
            agent,
            enable_streaming=enable_streaming,
            session_values=session_values,
            skip_transfer_messages=skip_transfer_messages,
            checkpoint_store=checkpoint_store,
            resume_lease=resume_lease,
            callbacks=callbacks,
        )
        if session_store is not None and not isinstance(session_store, SessionStore):
            raise UserError(f"session_store: expected a SessionStore, got {type(session_store).__qualname__}")
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
    ) -> Stream[AgentEvent]:
        """The events of one run on ``messages``, as for ``batonflow.adk.Runner.run``.

        With ``session_id`` the run continues that conversation of the ``session_store`` (see the module
        docstring); with no messages it resumes the conversation's pending run, ``targets`` as for ``resume``.
        """
        if session_id is None:
            return super().run(
                messages,
                session_values=session_values,
                checkpoint_id=checkpoint_id,
                checkpoint_store=checkpoint_store,
            )
        check_session_id(session_id)
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
            self._converse(self.session_store, session_id, list(messages), session_values, targets)
        )

    def query(
        self,
        text: str,
        *,
        session_values: Mapping[str, Any] | None = None,
        checkpoint_id: str | None = None,
        session_id: str | None = None,
    ) -> Stream[AgentEvent]:
        return self.run([user(text)], session_values=session_values, checkpoint_id=checkpoint_id, session_id=session_id)

    async def _converse(
        self,
        store: SessionStore,
        session_id: str,
        messages: list[Message],
        session_values: Mapping[str, Any] | None,
        targets: Mapping[str, Any] | None,
    ) -> AsyncIterator[AgentEvent]:
        owner = uuid.uuid4().hex
        if not await store.claim(session_id, owner, self.resume_lease):
            raise ResumeConflictError(f"session {session_id!r} is being run or resumed by another runner")
        try:
            # Read under the lease: what another run saved before the claim is here, and nobody writes it until
            # this run has saved it again (a resume that finished meanwhile has cleared what it resumed).
            # A turn reads the messages its window needs; a resume none (the pending run has its own).
            session = await Session.load(store, session_id, window=self.session_window if messages else 0)
            if messages:
                events = self._prompt(session, messages, session_values)
            else:
                events = self._resume_pending(session, dict(targets or {}))
            async with aclosing(_follow(session, events)) as followed:
                async for event in followed:
                    yield event
        finally:
            await store.release(session_id, owner)

    def _prompt(
        self, session: Session, messages: list[Message], session_values: Mapping[str, Any] | None
    ) -> Stream[AgentEvent]:
        history = session.latest(self.session_window)
        session.add(*messages)
        session.pending(False)  # a new prompt drops the pending run
        session.snapshot = None
        return super().run(
            [*history, *messages],
            session_values=session_values,
            checkpoint_id=session.session_id,
            checkpoint_store=_Snapshot(session),
        )

    def _resume_pending(self, session: Session, targets: dict[str, Any]) -> Stream[AgentEvent]:
        if not session.is_pending or session.snapshot is None:
            raise UserError(f"session {session.session_id!r} has nothing to resume: expected a pending run, got none")
        return super().resume(session.session_id, targets, checkpoint_store=_Snapshot(session))


async def _follow(session: Session, events: Stream[AgentEvent]) -> AsyncGenerator[AgentEvent, None]:
    """``events``, recording the run in ``session``: saved when the run stops for an interrupt, before the caller
    sees it (so a caller that stops reading there loses nothing), or else when the run ends."""
    answer: Message | None = None
    saved = False
    async with aclosing(events):
        async for event in events:
            action = event.action
            if not saved and action is not None and isinstance(action.interrupted, InterruptInfo):
                await _save(session, answer, action.interrupted)
                saved = True
            yield event
            variant = event.message_output
            if variant is not None and variant.role == "assistant":
                # After the yield: the caller has read a streamed answer by now.
                answer = variant.peek_message() or answer
    if not saved:
        await _save(session, answer, None)


async def _save(session: Session, answer: Message | None, interrupt: InterruptInfo | None) -> None:
    # What the agent said is part of the conversation even when the run waits (a question asking for feedback); a
    # request for tool calls is not.
    if answer is not None and not answer.tool_calls:
        session.add(answer)
    if interrupt is not None:
        session.pending(True, str(interrupt.data))
    elif session.snapshot is None:
        session.pending(False)
    # else: a resume that refused its data (of the wrong kind) keeps the checkpoint; the conversation stays pending
    # so that the caller can try again with the right data.
    await session.save()


class _Snapshot:
    """The session's snapshot seen as a store of one checkpoint, so the runtime reads and writes the pending run
    where the conversation keeps it. Its lease always succeeds: the conversation holds the session store's."""

    def __init__(self, session: Session) -> None:
        self._session = session

    async def get(self, checkpoint_id: str) -> bytes | None:
        return self._session.snapshot

    async def set(self, checkpoint_id: str, data: bytes) -> None:
        self._session.snapshot = data

    async def delete(self, checkpoint_id: str) -> None:
        self._session.snapshot = None

    async def claim(self, checkpoint_id: str, owner: str, ttl: float) -> bool:
        return True

    async def release(self, checkpoint_id: str, owner: str) -> None:
        return None

    async def close(self) -> None:
        return None

"""The Runner: runs an agent tree for a caller and hands back its events (Eino's ``adk.Runner``).

It wraps the root in a flow agent, seeds the run's session, numbers the events, and turns anything an agent
raises into an error event: the event stream always ends, and a caller that stops reading early closes it all.
Conversations across runs (``session_id=``) are the agents layer's: ``batonflow.agents.Runner`` builds them on
this one.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from typing import Any

from ..errors import CheckpointExistsError, CheckpointNotFoundError, ResumeConflictError, UserError
from ..schema import Message, Stream, user
from ..store import CheckpointStore, check_checkpoint_id
from ..trace import RunTrace, TraceCallback, TraceEvent
from ._agent import Agent
from ._checkpoint import decode_checkpoint, encode_checkpoint
from ._context import RunContext, RunSession
from ._events import AgentEvent, AgentInput
from ._flow import FlowAgent
from ._interrupt import InterruptInfo, ResumeInfo, ResumePoints, interrupt_contexts

__all__ = ["Runner"]

_log = logging.getLogger("batonflow.adk")


class Runner:
    """Runs ``agent`` (and the tree below it) once per call of ``run`` / ``query``; resumes interrupted runs.

    A Runner holds configuration only; concurrent runs do not share state. With a ``checkpoint_store``, a run
    given a ``checkpoint_id`` saves a checkpoint when it is interrupted — before the caller sees the interrupt —
    and ``resume(checkpoint_id, targets=...)`` continues it, in this process or in another one.

    ``callbacks`` (``batonflow.observe``) get every trace event of every run, sync or async; the last one of a
    run is ``RunEnd`` with its ``RunMetrics``. ``stream_trace`` gives agent and trace events in one stream.

    ``run``, ``stream_trace`` and ``resume`` take a ``checkpoint_store`` for one call instead of the Runner's (a
    conversation keeps its pending run's checkpoint in its session this way).
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
    ) -> None:
        self.agent = agent if isinstance(agent, FlowAgent) else FlowAgent(agent)
        self.enable_streaming = enable_streaming
        self.session_values = dict(session_values or {})
        self.skip_transfer_messages = skip_transfer_messages
        self.checkpoint_store = checkpoint_store
        self.resume_lease = resume_lease
        # Trace callbacks (batonflow.observe): each gets every trace event of every run; none means no tracing.
        self.callbacks = tuple(callbacks)
        _check_tree(self.agent)

    def run(
        self,
        messages: Sequence[Message],
        *,
        session_values: Mapping[str, Any] | None = None,
        checkpoint_id: str | None = None,
        checkpoint_store: CheckpointStore | None = None,
    ) -> Stream[AgentEvent]:
        """The events of one run on ``messages``; read them with ``async for``, close the stream to stop early.

        With ``checkpoint_id``, an interrupted run is saved under that id in ``checkpoint_store`` (the Runner's
        when None) before the caller sees the interrupt. The id must be free: a run refuses to start, raising
        ``CheckpointExistsError``, when the store holds a pending run under it, and ``ResumeConflictError`` while
        another runner runs or resumes under it; saving would overwrite that run.
        """
        store = self._store(checkpoint_store, checkpoint_id)
        return Stream.from_async_iter(self._run(messages, session_values, store, checkpoint_id, self.callbacks))

    def _store(self, store: CheckpointStore | None, checkpoint_id: str | None) -> CheckpointStore | None:
        store = self.checkpoint_store if store is None else store
        if checkpoint_id is None:
            return store
        check_checkpoint_id(checkpoint_id)
        if store is None:
            raise UserError(
                f"cannot save checkpoint {checkpoint_id!r}: expected Runner(..., checkpoint_store=...), got no store"
            )
        return store

    def _run(
        self,
        messages: Sequence[Message],
        session_values: Mapping[str, Any] | None,
        store: CheckpointStore | None,
        checkpoint_id: str | None,
        callbacks: Sequence[TraceCallback],
    ) -> AsyncIterator[AgentEvent]:
        values = {**self.session_values, **(session_values or {})}
        ctx = RunContext(
            session=RunSession(values=values),
            enable_streaming=self.enable_streaming,
            skip_transfer_messages=self.skip_transfer_messages,
        )
        trace = RunTrace(callbacks, agent_name=self.agent.name) if callbacks else None
        if trace is not None:
            ctx.trace = trace.root()
        input = AgentInput(messages=list(messages), enable_streaming=self.enable_streaming)
        ctx.root_input = input
        events = self._events(self.agent.run(input, ctx), ctx, store, checkpoint_id)
        traced = events if trace is None else trace.wrap(events)
        if checkpoint_id is None or store is None:
            return traced
        return _reserved(store, checkpoint_id, self.resume_lease, traced)

    def query(
        self, text: str, *, session_values: Mapping[str, Any] | None = None, checkpoint_id: str | None = None
    ) -> Stream[AgentEvent]:
        return self.run([user(text)], session_values=session_values, checkpoint_id=checkpoint_id)

    def stream_trace(
        self,
        messages: Sequence[Message] | str,
        *,
        session_values: Mapping[str, Any] | None = None,
        checkpoint_id: str | None = None,
        checkpoint_store: CheckpointStore | None = None,
    ) -> Stream[AgentEvent | TraceEvent]:
        """One run's agent events and trace events in one stream, in the order they happened (for UIs).

        The Runner's callbacks get the trace events too. The last item is the ``RunEnd`` with the run's metrics.
        """
        store = self._store(checkpoint_store, checkpoint_id)
        if isinstance(messages, str):
            messages = [user(messages)]
        pending: deque[TraceEvent] = deque()
        events = self._run(messages, session_values, store, checkpoint_id, (*self.callbacks, pending.append))
        return Stream.from_async_iter(_interleave(events, pending))

    def resume(
        self,
        checkpoint_id: str,
        targets: Mapping[str, Any] | None = None,
        *,
        checkpoint_store: CheckpointStore | None = None,
    ) -> Stream[AgentEvent]:
        """Continue the run saved under ``checkpoint_id`` (in ``checkpoint_store``, the Runner's when None).

        ``targets`` maps interrupt ids (from ``InterruptCtx.id``) to the data each should get; an interrupted
        component that is not targeted interrupts again and keeps its state. Without targets every interrupted
        component resumes. Only one resume of a checkpoint runs at a time; a finished resume deletes it.
        """
        check_checkpoint_id(checkpoint_id)
        store = self.checkpoint_store if checkpoint_store is None else checkpoint_store
        if store is None:
            raise UserError("failed to resume: expected Runner(..., checkpoint_store=...), got no store")
        return Stream.from_async_iter(self._resume(store, checkpoint_id, dict(targets or {})))

    async def _resume(
        self, store: CheckpointStore, checkpoint_id: str, targets: dict[str, Any]
    ) -> AsyncIterator[AgentEvent]:
        owner = uuid.uuid4().hex
        if not await store.claim(checkpoint_id, owner, self.resume_lease):
            raise ResumeConflictError(f"checkpoint[{checkpoint_id}] is being resumed by another runner")
        try:
            # Read under the lease: a resume that finished between a read and the claim has deleted what was read,
            # and replaying it would run its tools twice.
            data = await store.get(checkpoint_id)
            if data is None:
                raise CheckpointNotFoundError(f"checkpoint[{checkpoint_id}] not exist")
            checkpoint = decode_checkpoint(data, store)
            trace = RunTrace(self.callbacks, agent_name=self.agent.name) if self.callbacks else None
            ctx = RunContext(
                session=RunSession(values=checkpoint.values, events=checkpoint.events),
                root_input=AgentInput(messages=checkpoint.root_messages, enable_streaming=checkpoint.enable_streaming),
                enable_streaming=checkpoint.enable_streaming,
                skip_transfer_messages=self.skip_transfer_messages,
                resume=ResumePoints(checkpoint.interrupts, targets),
            )
            if trace is not None:
                ctx.trace = trace.root()
            outcome: list[bool] = []
            events = self.agent.resume(ResumeInfo(enable_streaming=checkpoint.enable_streaming), ctx)
            forwarding = self._events(events, ctx, store, checkpoint_id, outcome)
            if trace is not None:
                forwarding = trace.wrap(forwarding, resumed=True)
            refused = False
            async with aclosing(forwarding) as forwarded:
                async for event in forwarded:
                    refused = isinstance(event.error, UserError)
                    yield event
            if not outcome and not refused:
                # Resumed to the end: a later resume must not replay it (its tools would run twice). A resume that
                # ends refusing what it was given (resume data of the wrong kind) keeps the checkpoint, so the
                # caller can try again with the right data.
                await store.delete(checkpoint_id)
        finally:
            await store.release(checkpoint_id, owner)

    async def _events(
        self,
        events: AsyncIterator[AgentEvent],
        ctx: RunContext,
        store: CheckpointStore | None,
        checkpoint_id: str | None,
        interrupted: list[bool] | None = None,
    ) -> AsyncGenerator[AgentEvent, None]:
        seq = 0
        try:
            async with aclosing(events) as source:  # type: ignore[type-var]
                async for event in source:
                    seq += 1
                    event.seq = seq
                    action = event.action
                    if (
                        action is not None
                        and action.signal is not None
                        and isinstance(action.interrupted, InterruptInfo)
                    ):
                        action.interrupted.interrupt_contexts = interrupt_contexts(action.signal)
                        if interrupted is not None:
                            interrupted.append(True)
                        if checkpoint_id is not None and store is not None:
                            try:
                                data = await encode_checkpoint(ctx, action.signal, store)
                                await store.set(checkpoint_id, data)
                            except Exception as error:
                                # Nothing was saved: say so instead of showing an interrupt that cannot resume.
                                yield AgentEvent(
                                    agent_name=event.agent_name, run_path=event.run_path, error=error, seq=seq
                                )
                                return
                    yield event
        except Exception as error:  # the root flow agent catches its agent's errors; this is the last line
            yield AgentEvent(agent_name=self.agent.name, error=error, seq=seq + 1)

    # -- conveniences for scripts ------------------------------------------------------------------------------

    def run_sync(
        self, messages: Sequence[Message], *, session_values: Mapping[str, Any] | None = None
    ) -> list[AgentEvent]:
        """All events of a run, streamed messages joined; for scripts and notebooks without an event loop."""
        return asyncio.run(collect_events(self.run(messages, session_values=session_values)))

    def query_sync(self, text: str, *, session_values: Mapping[str, Any] | None = None) -> list[AgentEvent]:
        return self.run_sync([user(text)], session_values=session_values)


async def _reserved(
    store: CheckpointStore, checkpoint_id: str, ttl: float, events: AsyncIterator[AgentEvent]
) -> AsyncIterator[AgentEvent]:
    """``events``, once ``checkpoint_id`` is known to be free; a run given a checkpoint id starts here.

    The run holds the id's lease from before it looks until its checkpoint is saved, so that neither a pending run
    nor a second run started with the same id at the same moment is overwritten. The lease is given back before
    the caller sees the interrupt, so that the caller can resume at once.
    """
    owner = uuid.uuid4().hex
    async with aclosing(events) as source:  # type: ignore[type-var]
        if not await store.claim(checkpoint_id, owner, ttl):
            raise ResumeConflictError(
                f"checkpoint[{checkpoint_id}] is being run or resumed by another runner: "
                "expected a checkpoint id that no other run uses, got one in use"
            )
        held = True
        try:
            if await store.get(checkpoint_id) is not None:
                raise CheckpointExistsError(
                    f"checkpoint[{checkpoint_id}] holds a pending run, which this run would overwrite: resume it "
                    f"with Runner.resume({checkpoint_id!r}, targets=...), delete it with "
                    f"checkpoint_store.delete({checkpoint_id!r}), or run with another checkpoint_id",
                    checkpoint_id=checkpoint_id,
                )
            async for event in source:
                if held and event.action is not None and isinstance(event.action.interrupted, InterruptInfo):
                    held = False  # saved by now (or the run reports why not)
                    try:
                        await store.release(checkpoint_id, owner)
                    except Exception:
                        # The checkpoint is saved: the caller must still see the interrupt. The lease expires by
                        # itself after ``ttl``; until then a resume is refused as a conflict.
                        _log.warning("could not release the lease on checkpoint[%s]", checkpoint_id, exc_info=True)
                yield event
        finally:
            if held:
                await store.release(checkpoint_id, owner)


async def _interleave(
    events: AsyncIterator[AgentEvent], pending: deque[TraceEvent]
) -> AsyncIterator[AgentEvent | TraceEvent]:
    """Each agent event after the trace events emitted while it was produced."""
    async with aclosing(events) as source:  # type: ignore[type-var]
        async for event in source:
            while pending:
                yield pending.popleft()
            yield event
    while pending:
        yield pending.popleft()


async def collect_events(events: Stream[AgentEvent]) -> list[AgentEvent]:
    """Every event of ``events``, with each streamed message read and joined into a whole message."""
    collected = []
    async with aclosing(events):
        async for event in events:
            variant = event.output.message_output if event.output is not None else None
            if variant is not None and variant.is_streaming:
                try:
                    await variant.get_message()
                except Exception as error:
                    if event.error is None:
                        event.error = error
            collected.append(event)
    return collected


def _check_tree(root: FlowAgent) -> None:
    names = [agent.name for agent in root.walk()]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise UserError(f"agent tree of '{root.name}': expected unique agent names, got {repeated} more than once")
    if not all(names):
        raise UserError(f"agent tree of '{root.name}': expected every agent to have a name, got an empty one")

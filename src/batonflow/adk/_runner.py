"""The Runner: runs an agent tree for a caller and hands back its events (Eino's ``adk.Runner``).

It wraps the root in a flow agent, seeds the run's session, numbers the events, and turns anything an agent
raises into an error event: the event stream always ends, and a caller that stops reading early closes it all.
Conversations (``session_id=``) are the agents layer's ``batonflow.ConversationRunner``, built on this one.
"""

from __future__ import annotations

import os
import uuid
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import aclosing
from typing import Any

from ..errors import CheckpointNotFoundError, UserError
from ..schema import Message, Stream, user
from ..store import CheckpointStore, HistoryRetention, check_checkpoint_id
from ..trace import TraceCallback, TraceEvent
from ._agent import Agent
from ._checkpoint import Checkpoint, keeps_parts, limits_of, load_checkpoint
from ._context import RunContext, RunSession
from ._events import AgentEvent, AgentInput
from ._flow import FlowAgent
from ._interrupt import InterruptInfo, ResumeInfo, ResumePoints, interrupt_contexts
from ._journal import Journal, base_digest
from ._lease import LeaseHolder, break_lease, tool_fence
from ._parts import PART_EVENTS, HistoryChain
from ._result import Capture, RunResult, blocking, collect_events, prompt_messages
from ._run_history import KeptRuns
from ._run_record import HistoryRecorder, RunRecord, history_target, recorded, resume_recorder
from ._runner_util import check_tree, fenced, interleave, retention_of, run_id_of, trace_of
from ._segment import Segment, reserved
from .loop import FenceSteps, StepLog, chained_steps, installed_steps

__all__ = ["Runner"]


class Runner(KeptRuns):
    """Runs ``agent`` (and the tree below it) once per call of ``run`` / ``query``; resumes interrupted runs.

    A Runner holds configuration only; concurrent runs do not share state. With a ``checkpoint_store``, a run
    given a ``checkpoint_id`` saves a checkpoint when it is interrupted — before the caller sees the interrupt —
    and ``resume(checkpoint_id, targets=...)`` continues it, in this process or in another one.

    ``callbacks`` (``batonflow.observe``) get every trace event of every run, sync or async; the last one of a
    run is ``RunEnd`` with its ``RunMetrics``. ``stream_trace`` gives agent and trace events in one stream.
    ``run``, ``stream_trace`` and ``resume`` take a ``checkpoint_store`` for one call instead of the Runner's (a
    conversation keeps its pending run's checkpoint in its session this way).

    ``call`` and ``call_resume`` run to the end and return a ``RunResult`` (the answer, the interrupt ids, the
    metrics) instead of the events; ``call_sync`` and ``call_resume_sync`` do so for code without an event loop. A
    long run's history is saved in parts of at least ``history_part_events`` events, which later checkpoints refer
    to, so that each interrupt writes what happened since the last one (0: whole checkpoints).

    ``keep_history`` (True, or a ``HistoryRetention``; off by default) keeps the record of each run given a
    ``checkpoint_id`` after it ends, in the checkpoint store: ``history``, ``replay`` and ``fork`` read it
    (docs/history.md).
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
        keep_history: bool | HistoryRetention = False,
    ) -> None:
        if type(history_part_events) is not int or history_part_events < 0:
            raise UserError(f"history_part_events: expected an int of 0 or more, got {history_part_events!r}")
        self.history_part_events = history_part_events
        self.agent = agent if isinstance(agent, FlowAgent) else FlowAgent(agent)
        self.enable_streaming = enable_streaming
        self.session_values = dict(session_values or {})
        self.skip_transfer_messages = skip_transfer_messages
        self.checkpoint_store = checkpoint_store
        self.resume_lease = resume_lease
        # Trace callbacks (batonflow.observe): each gets every trace event of every run; none means no tracing.
        self.callbacks = tuple(callbacks)
        self.keep_history = retention_of(keep_history)
        self._replaying: StepLog | None = None  # a replay's step log, on the private Runner that replays
        check_tree(self.agent)

    def run(
        self,
        messages: Sequence[Message],
        *,
        session_values: Mapping[str, Any] | None = None,
        checkpoint_id: str | None = None,
        checkpoint_store: CheckpointStore | None = None,
        run_id: str | None = None,
        capture: Capture | None = None,
    ) -> Stream[AgentEvent]:
        """The events of one run on ``messages``; read them with ``async for``, close the stream to stop early.

        With ``checkpoint_id``, an interrupted run is saved under that id in ``checkpoint_store`` (the Runner's
        when None) before the caller sees the interrupt. The id must be free: a run refuses to start, raising
        ``CheckpointExistsError``, when the store holds a pending run under it, and ``ResumeConflictError`` while
        another runner runs or resumes under it; saving would overwrite that run.

        ``run_id`` (32 lowercase hex digits; a fresh random one when None) is what the run's
        ``ToolContext.idempotency_key``s are made of. A run cut off before it saved anything has no journal, so
        starting it again runs its finished tools again: given the first attempt's ``run_id``, they run with the
        same keys, so that a side effect keyed by them happens once. Give it to a retry of the same run only.
        ``capture`` (a ``Capture``) is handed the run's context as it is built: once the stream ended, its
        ``ctx.session.values`` are the run's session values, as ``call``'s result has them.
        """
        return self._started(
            messages, session_values, checkpoint_id, checkpoint_store, capture, run_id=run_id_of(run_id)
        )

    def _started(
        self,
        messages: Sequence[Message],
        session_values: Mapping[str, Any] | None,
        checkpoint_id: str | None,
        checkpoint_store: CheckpointStore | None,
        capture: Capture | None = None,
        run_id: str | None = None,
    ) -> Stream[AgentEvent]:
        store = self._store(checkpoint_store, checkpoint_id)
        run = self._run(messages, session_values, store, checkpoint_id, self.callbacks, capture, run_id)
        return Stream.from_async_iter(run)

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
        capture: Capture | None = None,
        run_id: str | None = None,
    ) -> AsyncIterator[AgentEvent]:
        values = {**self.session_values, **(session_values or {})}
        segment = None
        steps: StepLog | None = installed_steps() or self._replaying
        recorder = None
        retention = self.keep_history
        if retention is not None and (kept := history_target(store, checkpoint_id)) is not None:
            record = RunRecord(run_id=kept[1], root_messages=list(messages), values=dict(values))
            record.enable_streaming = self.enable_streaming
            recorder = HistoryRecorder(record, kept[0], retention)
            steps = chained_steps(recorder, steps)
        if checkpoint_id is not None and store is not None:
            lease = LeaseHolder(
                store, checkpoint_id, uuid.uuid4().hex, self.resume_lease, f"checkpoint[{checkpoint_id}]"
            )
            segment = Segment(
                store, checkpoint_id, lease, chain=self._keeping(store, HistoryChain(self.history_part_events))
            )
        fence = tool_fence(segment.lease if segment is not None else None)
        if fence is not None:  # no journal: the lease (and the process's fence) guard each tool batch
            steps = chained_steps(steps, FenceSteps(fence))
        ctx = RunContext(
            session=RunSession(values=values),
            enable_streaming=self.enable_streaming,
            skip_transfer_messages=self.skip_transfer_messages,
            run_id=os.urandom(16).hex() if run_id is None else run_id,
            steps=steps,
        )
        trace = trace_of(ctx, self.agent.name, callbacks, capture)
        input = AgentInput(messages=list(messages), enable_streaming=self.enable_streaming)
        ctx.root_input = input
        events = self._events(self.agent.run(input, ctx), ctx, segment)
        if recorder is not None:
            recorder.session = ctx.session
            events = recorded(recorder, events)
        traced = events if trace is None else trace.wrap(events)
        return traced if segment is None else reserved(segment, traced)

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
        return Stream.from_async_iter(interleave(events, pending))

    def resume(
        self,
        checkpoint_id: str,
        targets: Mapping[str, Any] | None = None,
        *,
        checkpoint_store: CheckpointStore | None = None,
        capture: Capture | None = None,
    ) -> Stream[AgentEvent]:
        """Continue the run saved under ``checkpoint_id`` (in ``checkpoint_store``, the Runner's when None).

        ``targets`` maps interrupt ids (from ``InterruptCtx.id``) to the data each should get; an interrupted
        component that is not targeted interrupts again and keeps its state. Without targets every interrupted
        component resumes.

        Only one resume of a checkpoint runs at a time (the others get ``ResumeConflictError``, naming the holder);
        it renews its lease while it runs. A resume that runs to its end deletes the checkpoint. One that fails, is
        cut short (the caller stops reading, Ctrl-C) or whose process dies keeps it, with a journal of the steps
        that finished — saved after each tool batch, before the model is asked again — so that resuming again, with
        the same targets or none, replays those steps instead of running their tools a second time. A tool cut off
        mid-call runs again: ``ToolContext.idempotency_key`` lets it make its side effect once (``capture``: as
        for ``run``).
        """
        return self._resumes(checkpoint_id, targets, checkpoint_store, capture)

    def _resumes(
        self,
        checkpoint_id: str,
        targets: Mapping[str, Any] | None,
        checkpoint_store: CheckpointStore | None,
        capture: Capture | None = None,
    ) -> Stream[AgentEvent]:
        check_checkpoint_id(checkpoint_id)
        store = self.checkpoint_store if checkpoint_store is None else checkpoint_store
        if store is None:
            raise UserError("failed to resume: expected Runner(..., checkpoint_store=...), got no store")
        return Stream.from_async_iter(self._resume(store, checkpoint_id, dict(targets or {}), capture))

    def _keeping(self, store: CheckpointStore, chain: HistoryChain) -> HistoryChain | None:
        """``chain``, the history parts a run saves in ``store``; None when parts are off or the store keeps whole
        checkpoints."""
        return chain if self.history_part_events and keeps_parts(store) else None

    async def break_lease(
        self, checkpoint_id: str, holder: str, *, checkpoint_store: CheckpointStore | None = None
    ) -> bool:
        """Free ``checkpoint_id`` from a runner that died holding its lease, so that it can be resumed now rather than
        when the lease lapses. ``holder`` is the owner that ``ResumeConflictError.holder`` named: only that lease
        is broken, never one another runner took since. True when it was broken, False when ``holder`` no longer
        held it. Break only a runner known to be gone: one that still works stops at its next tool batch.
        """
        check_checkpoint_id(checkpoint_id)
        store = self.checkpoint_store if checkpoint_store is None else checkpoint_store
        return await break_lease(store, checkpoint_id, holder, f"checkpoint[{checkpoint_id}]")

    async def _resume(
        self, store: CheckpointStore, checkpoint_id: str, targets: dict[str, Any], capture: Capture | None
    ) -> AsyncIterator[AgentEvent]:
        lease = LeaseHolder(store, checkpoint_id, uuid.uuid4().hex, self.resume_lease, f"checkpoint[{checkpoint_id}]")
        await lease.claim("resumed")
        try:
            # Read under the lease: a resume that finished between a read and the claim has deleted what was read,
            # and replaying it would run its tools twice.
            data = await store.get(checkpoint_id)
            if data is None:
                raise CheckpointNotFoundError.in_store(checkpoint_id, store)
            checkpoint, chain = await load_checkpoint(data, store, checkpoint_id, self.history_part_events)
            journal = await Journal.load(
                store,
                checkpoint_id,
                base_digest(data),
                targets,
                write=store.set,
                limits=limits_of(store),
                fence=lease.check,
            )
            segment = Segment(store, checkpoint_id, lease, journal, self._keeping(store, chain))
            kept = None if self.keep_history is None else history_target(store, checkpoint_id)
            recorder = (
                None
                if kept is None
                else await resume_recorder(
                    self.keep_history, kept[0], kept[1], checkpoint, journal.targets, self.agent.name
                )
            )
            events = self._resumed(checkpoint, journal, segment, capture, recorder)
            async with aclosing(events) as resumed:
                async for event in resumed:
                    yield event
        finally:
            await lease.release()

    async def _resumed(
        self,
        checkpoint: Checkpoint,
        journal: Journal,
        segment: Segment,
        capture: Capture | None,
        recorder: HistoryRecorder | None = None,
    ) -> AsyncGenerator[AgentEvent, None]:
        """The events of one resume segment, and what it leaves in the store: nothing when it ran to the end, the
        new checkpoint when it was interrupted again, and the checkpoint with the journal of the steps that
        finished when it failed or was cut short (so that a retry neither loses the run nor repeats a tool)."""
        ctx = RunContext(
            session=RunSession(values=checkpoint.values, events=checkpoint.events, visits=checkpoint.visits),
            root_input=AgentInput(messages=checkpoint.root_messages, enable_streaming=checkpoint.enable_streaming),
            enable_streaming=checkpoint.enable_streaming,
            skip_transfer_messages=self.skip_transfer_messages,
            resume=ResumePoints(checkpoint.interrupts, journal.targets),
            run_id=checkpoint.run_id or journal.base,
            # a worker's records after the journal; the history's recorder, when kept, before it
            steps=fenced(chained_steps(recorder, chained_steps(journal, installed_steps() or self._replaying))),
        )
        trace = trace_of(ctx, self.agent.name, self.callbacks, capture)
        events = self.agent.resume(ResumeInfo(enable_streaming=checkpoint.enable_streaming), ctx)
        forwarding = self._events(events, ctx, segment)
        if recorder is not None:
            recorder.session = ctx.session
            forwarding = recorded(recorder, forwarding)
        if trace is not None:
            forwarding = trace.wrap(forwarding, resumed=True)
        async with aclosing(forwarding) as forwarded:
            try:
                async for event in forwarded:
                    segment.failed = segment.failed or event.error is not None
                    yield event
            except BaseException:
                await segment.keep(quiet=True)  # cut short (the caller went away, Ctrl-C): what finished is saved
                raise
        if segment.interrupted:
            await segment.forget_journal()  # the new checkpoint holds what the journal did
            return
        try:
            await (segment.keep() if segment.failed else segment.finish())
        except Exception as error:
            error.add_note(
                f"checkpoint[{segment.checkpoint_id}] is kept; the tools whose results were not saved run again"
            )
            yield AgentEvent(agent_name=self.agent.name, error=error)

    async def _events(
        self, events: AsyncIterator[AgentEvent], ctx: RunContext, segment: Segment | None
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
                        if segment is not None:
                            try:
                                await segment.save_interrupt(ctx, action.signal)
                            except Exception as error:
                                # Nothing was saved: say so instead of showing an interrupt that cannot resume.
                                yield AgentEvent(
                                    agent_name=event.agent_name, run_path=event.run_path, error=error, seq=seq
                                )
                                return
                    yield event
        except Exception as error:  # the root flow agent catches its agent's errors; this is the last line
            yield AgentEvent(agent_name=self.agent.name, error=error, seq=seq + 1)

    # -- the final answer -----------------------------------------------------------------------------------------

    async def call(
        self,
        messages: Sequence[Message] | str,
        *,
        session_values: Mapping[str, Any] | None = None,
        checkpoint_id: str | None = None,
        checkpoint_store: CheckpointStore | None = None,
        metrics: bool = True,
    ) -> RunResult:
        """Run on ``messages`` (a string is one user message) to the end, and return what it came to: the last
        message, the events, the session values, the interrupt and its ids, the metrics (``RunResult``).

        The options are ``run``'s. An error that ended the run is raised. The metrics are counted by tracing the
        run, which is most of what ``call`` costs beyond ``run`` (``python -m benchmarks.final_answer``):
        ``metrics=False`` leaves the run untraced, unless the Runner has callbacks, and ``result.metrics`` None.
        """
        prompt = prompt_messages(messages)
        return await self._called(
            lambda capture: self._started(prompt, session_values, checkpoint_id, checkpoint_store, capture),
            metrics=metrics,
            checkpoint_id=checkpoint_id,
        )

    async def call_resume(
        self,
        checkpoint_id: str,
        targets: Mapping[str, Any] | None = None,
        *,
        checkpoint_store: CheckpointStore | None = None,
        metrics: bool = True,
    ) -> RunResult:
        """``resume`` run to its end, as ``call`` runs ``run``: the ``RunResult`` of the resume."""
        return await self._called(
            lambda capture: self._resumes(checkpoint_id, targets, checkpoint_store, capture),
            metrics=metrics,
            checkpoint_id=checkpoint_id,
        )

    _blocking = staticmethod(blocking)
    _prompt_messages = staticmethod(prompt_messages)

    async def _called(
        self,
        start: Callable[[Capture], Stream[AgentEvent]],
        *,
        metrics: bool,
        checkpoint_id: str | None = None,
        session_id: str | None = None,
    ) -> RunResult:
        """The result of the run that ``start`` starts, told what the run is made of as it is built."""
        capture = Capture(metrics=metrics)
        return await capture.result(start(capture), checkpoint_id=checkpoint_id, session_id=session_id)

    def call_sync(
        self,
        messages: Sequence[Message] | str,
        *,
        session_values: Mapping[str, Any] | None = None,
        checkpoint_id: str | None = None,
        checkpoint_store: CheckpointStore | None = None,
        metrics: bool = True,
    ) -> RunResult:
        """``call`` for code without an event loop; inside one (a notebook) it refuses, saying to await ``call``."""
        call = self.call(
            messages,
            session_values=session_values,
            checkpoint_id=checkpoint_id,
            checkpoint_store=checkpoint_store,
            metrics=metrics,
        )
        return self._blocking(call, "call_sync", "`await runner.call(...)`")

    def call_resume_sync(
        self,
        checkpoint_id: str,
        targets: Mapping[str, Any] | None = None,
        *,
        checkpoint_store: CheckpointStore | None = None,
        metrics: bool = True,
    ) -> RunResult:
        """``call_resume`` for code without an event loop, as ``call_sync``."""
        call = self.call_resume(checkpoint_id, targets, checkpoint_store=checkpoint_store, metrics=metrics)
        return self._blocking(call, "call_resume_sync", "`await runner.call_resume(...)`")

    # -- conveniences for scripts ------------------------------------------------------------------------------

    def run_sync(
        self, messages: Sequence[Message], *, session_values: Mapping[str, Any] | None = None
    ) -> list[AgentEvent]:
        """All events of a run, streamed messages joined; for scripts without an event loop (inside one, await
        ``collect_events(runner.run(...))``, or ``call``)."""
        events = collect_events(self.run(messages, session_values=session_values))
        return self._blocking(events, "run_sync", "`await collect_events(runner.run(...))` or `await runner.call(...)`")

    def query_sync(self, text: str, *, session_values: Mapping[str, Any] | None = None) -> list[AgentEvent]:
        return self.run_sync([user(text)], session_values=session_values)

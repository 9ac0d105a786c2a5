"""Resumes that never lose or repeat work: a failed or cut-short resume keeps its checkpoint and the journal of what
finished; a retry replays those steps; tools get an idempotency key; leases are renewed, and lost ones stop the run."""

import asyncio
from typing import Any

import pytest

from batonflow import Runner as ConversationRunner
from batonflow.adk import (
    AgentEvent,
    ChatModelAgent,
    InterruptInfo,
    LoopAgent,
    Runner,
    collect_events,
    fenced_by,
)
from batonflow.errors import (
    CheckpointNotFoundError,
    CodecError,
    LeaseLostError,
    ModelHTTPError,
    ResumeConflictError,
    UserError,
)
from batonflow.schema import Message, assistant, user
from batonflow.store import MemoryCheckpointStore, MemorySessionStore
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import ToolContext, tool


class Desk:
    """What the tools really did, and the idempotency keys they were given."""

    def __init__(self) -> None:
        self.refunds: list[int] = []
        self.keys: list[str] = []
        self.lookups = 0
        self.slow_started: list[str] = []
        self.slow_finished = 0
        self.gate = asyncio.Event()
        self.started = asyncio.Event()

    def tools(self) -> list[Any]:
        @tool(threaded=False)
        def refund(order_id: int, ctx: ToolContext) -> str:
            """Refund an order once a human approved it."""
            self.keys.append(ctx.idempotency_key)
            if not ctx.get_interrupt_state().was_interrupted:
                ctx.interrupt(f"refund order {order_id}?")
            if ctx.get_resume_context().data != "approve":
                return f"refund of order {order_id} rejected"
            self.refunds.append(order_id)
            return f"order {order_id} refunded"

        @tool(threaded=False)
        def lookup() -> str:
            """Look an order up."""
            self.lookups += 1
            return "30 EUR"

        @tool
        async def slow(ctx: ToolContext) -> str:
            """Take a while."""
            self.slow_started.append(ctx.idempotency_key)
            self.started.set()
            await self.gate.wait()
            self.slow_finished += 1
            return "slow done"

        return [refund, lookup, slow]


class KeyedStore(MemoryCheckpointStore):
    """A memory store that knows which ids hold something."""

    def __init__(self) -> None:
        super().__init__()
        self.keys: set[str] = set()

    async def set(self, checkpoint_id: str, data: bytes) -> None:
        await super().set(checkpoint_id, data)
        self.keys.add(checkpoint_id)

    async def delete(self, checkpoint_id: str) -> None:
        await super().delete(checkpoint_id)
        self.keys.discard(checkpoint_id)


def unavailable() -> ModelHTTPError:
    return ModelHTTPError("provider: 503 Service Unavailable", status_code=503)


def agent(desk: Desk, *script: Message | BaseException) -> ChatModelAgent:
    return ChatModelAgent(name="support", description="support", model=ScriptedModel(list(script)), tools=desk.tools())


def interrupt_id(events: list[AgentEvent]) -> str:
    action = events[-1].action
    assert action is not None and isinstance(action.interrupted, InterruptInfo)
    return action.interrupted.interrupt_contexts[0].id


def errors(events: list[AgentEvent]) -> list[BaseException]:
    return [e.error for e in events if e.error is not None]


async def test_a_provider_error_after_the_approved_tool_keeps_the_run_and_the_retry_does_not_refund_again() -> None:
    desk = Desk()
    store = KeyedStore()
    runner = Runner(
        agent(desk, tool_calls(("refund", {"order_id": 7})), unavailable(), assistant("refunded")),
        checkpoint_store=store,
    )
    target = interrupt_id(await collect_events(runner.query("refund 7", checkpoint_id="c")))

    failed = await collect_events(runner.resume("c", {target: "approve"}))
    assert [type(e) for e in errors(failed)] == [ModelHTTPError]
    assert desk.refunds == [7]
    assert await store.get("c") is not None  # kept: the run can be retried
    assert len(store.keys) == 2  # with the journal of the refund's batch

    done = await collect_events(runner.resume("c", {target: "approve"}))
    assert errors(done) == []
    assert done[-1].message_output is not None and done[-1].message_output.message is not None
    assert done[-1].message_output.message.content == "refunded"
    assert desk.refunds == [7]  # the refund came from the journal, not from a second run of the tool
    assert await store.get("c") is None  # ran to its end: gone, journal and all
    assert store.keys == set()
    with pytest.raises(CheckpointNotFoundError):
        await runner.resume("c").collect()


async def test_a_retry_continues_with_the_targets_its_tools_ran_with() -> None:
    desk = Desk()
    runner = Runner(
        agent(desk, tool_calls(("refund", {"order_id": 7})), unavailable(), assistant("refunded")),
        checkpoint_store=MemoryCheckpointStore(),
    )
    target = interrupt_id(await collect_events(runner.query("refund 7", checkpoint_id="c")))
    await collect_events(runner.resume("c", {target: "approve"}))
    with pytest.raises(UserError, match=r"part-way through a resume that was given other targets"):
        await runner.resume("c", {target: "reject"}).collect()
    done = await collect_events(runner.resume("c"))  # no targets: the ones it started with
    assert errors(done) == []
    assert desk.refunds == [7]


async def test_a_resume_cut_short_saves_the_finished_tools_and_the_retry_runs_only_the_unfinished_one() -> None:
    desk = Desk()
    model = ScriptedModel(
        [tool_calls(("refund", {"order_id": 7})), tool_calls(("lookup", {}), ("slow", {})), assistant("done")]
    )
    runner = Runner(
        ChatModelAgent(name="support", model=model, tools=desk.tools()), checkpoint_store=MemoryCheckpointStore()
    )
    target = interrupt_id(await collect_events(runner.query("go", checkpoint_id="c")))

    cut = asyncio.create_task(collect_events(runner.resume("c", {target: "approve"})))
    await desk.started.wait()
    cut.cancel()  # Ctrl-C with the slow tool mid-call
    with pytest.raises(asyncio.CancelledError):
        await cut
    assert (desk.refunds, desk.lookups, desk.slow_finished) == ([7], 1, 0)

    desk.gate.set()
    done = await collect_events(runner.resume("c", {target: "approve"}))
    assert errors(done) == []
    assert (desk.refunds, desk.lookups, desk.slow_finished) == ([7], 1, 1)  # only the cut-off call ran again
    assert len(model.requests) == 3  # the reply that asked for lookup and slow was replayed, not asked for again
    first, second = desk.slow_started
    assert first == second  # the call that ran again had the same idempotency key


async def test_the_idempotency_key_is_the_same_for_a_call_and_its_resume_and_differs_for_every_other_call() -> None:
    desk = Desk()
    runner = Runner(
        agent(desk, tool_calls(("refund", {"order_id": 7})), assistant("ok")),
        checkpoint_store=MemoryCheckpointStore(),
    )
    target = interrupt_id(await collect_events(runner.query("go", checkpoint_id="a")))
    await collect_events(runner.resume("a", {target: "approve"}))
    asked, resumed = desk.keys
    assert asked == resumed and len(asked) == 65

    other = Runner(
        agent(desk, tool_calls(("refund", {"order_id": 7})), assistant("ok")), checkpoint_store=MemoryCheckpointStore()
    )
    await collect_events(other.query("go", checkpoint_id="a"))
    assert desk.keys[2] != asked  # another run, same call id

    # One run, the same agent twice at the same address (a loop's iterations), the same call id and turn.
    keys: list[str] = []

    @tool(threaded=False)
    def lookup(ctx: ToolContext) -> str:
        """Look an order up."""
        keys.append(ctx.idempotency_key)
        return "30 EUR"

    inner = ChatModelAgent(
        name="b",
        model=ScriptedModel(
            [tool_calls(("lookup", {})), assistant("one"), tool_calls(("lookup", {})), assistant("two")]
        ),
        tools=[lookup],
    )
    await collect_events(Runner(LoopAgent(name="loop", sub_agents=[inner], max_iterations=2)).query("go"))
    assert len(keys) == 2 and keys[0] != keys[1]


async def test_a_start_run_again_with_its_run_id_gives_its_tools_the_same_idempotency_keys() -> None:
    keys: list[str] = []

    @tool(threaded=False)
    def lookup(ctx: ToolContext) -> str:
        """Look an order up."""
        keys.append(ctx.idempotency_key)
        return "30 EUR"

    def runner() -> Runner:
        model = ScriptedModel([tool_calls(("lookup", {})), assistant("30 EUR")])
        return Runner(ChatModelAgent(name="s", model=model, tools=[lookup]), checkpoint_store=MemoryCheckpointStore())

    run_id = "0123456789abcdef" * 2
    await collect_events(runner().query("go"))  # a random run id
    for _ in range(2):  # a start cut off before its first checkpoint, then run again by whoever took it over
        await collect_events(runner().run([user("go")], checkpoint_id="c", run_id=run_id))
    assert keys[1] == keys[2] != keys[0] and keys[1].startswith(f"{run_id}-") and len(keys[1]) == 65


@pytest.mark.parametrize("bad", ["ABCDEF" * 5 + "AB", "0" * 31, 17])
def test_a_run_id_that_is_not_32_hex_digits_is_refused(bad: object) -> None:
    runner = Runner(ChatModelAgent(name="s", model=ScriptedModel([assistant("hi")])))
    with pytest.raises(
        UserError, match=r"run_id: expected 32 lowercase hex digits \(such as os.urandom\(16\).hex\(\)\), got"
    ):
        runner.run([user("go")], run_id=bad)  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"session 's': expected no run_id with a session_id"):
        ConversationRunner(runner.agent, session_store=MemorySessionStore()).run(
            [user("go")], session_id="s", run_id="0" * 32
        )


async def test_a_long_resume_renews_its_lease_so_a_second_resumer_is_still_refused() -> None:
    desk = Desk()
    model = ScriptedModel([tool_calls(("refund", {"order_id": 7})), tool_calls(("slow", {})), assistant("done")])
    store = MemoryCheckpointStore()
    runner = Runner(ChatModelAgent(name="s", model=model, tools=desk.tools()), checkpoint_store=store, resume_lease=0.3)
    target = interrupt_id(await collect_events(runner.query("go", checkpoint_id="c")))
    first = asyncio.create_task(collect_events(runner.resume("c", {target: "approve"})))
    await desk.started.wait()
    await asyncio.sleep(0.6)  # twice the ttl: without renewals the lease would have lapsed
    with pytest.raises(ResumeConflictError, match=r"checkpoint\[c\] is being resumed by another runner"):
        await runner.resume("c", {target: "approve"}).collect()
    desk.gate.set()
    assert errors(await first) == []
    assert desk.refunds == [7]


class StolenLeases(MemoryCheckpointStore):
    """A store on which, once ``steal`` is set, another runner has taken every lease."""

    def __init__(self) -> None:
        super().__init__()
        self.steal = False

    async def claim(self, checkpoint_id: str, owner: str, ttl: float) -> bool:
        if self.steal:
            return False
        return await super().claim(checkpoint_id, owner, ttl)

    async def renew(self, checkpoint_id: str, owner: str, ttl: float) -> bool:
        if self.steal:
            return False
        return await super().renew(checkpoint_id, owner, ttl)


async def test_a_resumer_that_lost_its_lease_runs_no_more_tools_and_leaves_the_checkpoint() -> None:
    desk = Desk()
    model = ScriptedModel(
        [tool_calls(("refund", {"order_id": 7})), tool_calls(("slow", {})), tool_calls(("lookup", {})), assistant("x")]
    )
    store = StolenLeases()
    runner = Runner(ChatModelAgent(name="s", model=model, tools=desk.tools()), checkpoint_store=store, resume_lease=0.3)
    target = interrupt_id(await collect_events(runner.query("go", checkpoint_id="c")))
    saved = await store.get("c")
    resuming = asyncio.create_task(collect_events(runner.resume("c", {target: "approve"})))
    await desk.started.wait()
    store.steal = True
    await asyncio.sleep(0.25)  # a renewal finds the lease taken
    desk.gate.set()
    events = await resuming
    assert [type(e) for e in errors(events)] == [LeaseLostError]
    assert desk.lookups == 0  # the tool after the lease was lost did not run
    assert await store.get("c") == saved  # the checkpoint is the new holder's now, untouched


async def test_a_first_segment_that_lost_its_lease_runs_no_more_tools_and_saves_nothing() -> None:
    # A run's first segment has no journal: its lease fences each tool batch all the same (a worker paused past its
    # ttl, whose segment another worker runs again from the start, stops before its next tool).
    desk = Desk()
    model = ScriptedModel(
        [tool_calls(("slow", {})), tool_calls(("lookup", {})), tool_calls(("refund", {"order_id": 7}))]
    )
    store = StolenLeases()
    runner = Runner(ChatModelAgent(name="s", model=model, tools=desk.tools()), checkpoint_store=store, resume_lease=0.3)
    running = asyncio.create_task(collect_events(runner.query("go", checkpoint_id="c")))
    await desk.started.wait()
    store.steal = True
    await asyncio.sleep(0.25)  # a renewal finds the lease taken
    desk.gate.set()
    events = await running
    assert [type(e) for e in errors(events)] == [LeaseLostError]
    assert desk.lookups == 0 and desk.keys == []  # no tool ran after the lease was lost
    assert await store.get("c") is None  # and no checkpoint was saved under the lost lease


async def test_a_process_fence_stops_runs_started_inside_before_their_next_tool() -> None:
    desk = Desk()
    model = ScriptedModel([tool_calls(("slow", {})), tool_calls(("lookup", {})), assistant("x")])
    runner = Runner(ChatModelAgent(name="s", model=model, tools=desk.tools()), checkpoint_store=MemoryCheckpointStore())
    alive = True

    def fence() -> None:
        if not alive:
            raise LeaseLostError("this worker's heartbeat lapsed", checkpoint_id="c", owner="worker-a")

    with fenced_by(fence):
        running = asyncio.create_task(collect_events(runner.query("go", checkpoint_id="c")))
    await desk.started.wait()
    alive = False
    desk.gate.set()
    events = await running
    assert [str(e) for e in errors(events)] == ["this worker's heartbeat lapsed"]
    assert desk.lookups == 0


async def test_a_journal_left_by_an_older_checkpoint_under_the_same_id_is_not_replayed() -> None:
    desk = Desk()
    store = MemoryCheckpointStore()
    script = [tool_calls(("refund", {"order_id": 7})), unavailable()]
    runner = Runner(agent(desk, *script, *script, assistant("ok")), checkpoint_store=store)
    target = interrupt_id(await collect_events(runner.query("go", checkpoint_id="c")))
    await collect_events(runner.resume("c", {target: "approve"}))  # fails after the refund: a journal is left
    await store.delete("c")  # the operator gives up on that run; the id is reused
    target = interrupt_id(await collect_events(runner.query("again", checkpoint_id="c")))
    await collect_events(runner.resume("c", {target: "approve"}))
    assert desk.refunds == [7, 7]  # the new run's refund ran: the old journal's result was not taken for it


async def test_a_conversation_whose_resume_fails_stays_pending_and_its_retry_does_not_refund_again() -> None:
    desk = Desk()
    sessions = MemorySessionStore()
    runner = ConversationRunner(
        agent(desk, tool_calls(("refund", {"order_id": 7})), unavailable(), assistant("refunded")),
        session_store=sessions,
    )
    target = interrupt_id(await collect_events(runner.query("refund 7", session_id="chat")))
    failed = await collect_events(runner.run([], session_id="chat", targets={target: "approve"}))
    assert [type(e) for e in errors(failed)] == [ModelHTTPError]
    stored = await sessions.get("chat")
    assert stored is not None and stored.state.pending and stored.state.snapshot is not None

    done = await collect_events(runner.run([], session_id="chat", targets={target: "approve"}))
    assert errors(done) == []
    assert desk.refunds == [7]
    stored = await sessions.get("chat")
    assert stored is not None and not stored.state.pending and stored.state.snapshot is None
    assert [m.content for m in stored.messages] == ["refund 7", "refunded"]


async def test_a_damaged_journaled_session_snapshot_is_a_codec_error() -> None:
    desk = Desk()
    sessions = MemorySessionStore()
    runner = ConversationRunner(
        agent(desk, tool_calls(("refund", {"order_id": 7})), unavailable(), assistant("ok")), session_store=sessions
    )
    target = interrupt_id(await collect_events(runner.query("refund 7", session_id="chat")))
    await collect_events(runner.run([], session_id="chat", targets={target: "approve"}))
    stored = await sessions.get("chat")
    assert stored is not None and stored.state.snapshot is not None
    assert stored.state.snapshot.startswith(b"BFJ")  # the checkpoint and its journal
    stored.state.snapshot = stored.state.snapshot[:-3]
    await sessions.set_state("chat", stored.state)
    with pytest.raises(CodecError):
        await runner.run([], session_id="chat", targets={target: "approve"}).collect()
    assert desk.refunds == [7]


async def test_a_dead_runners_lease_is_named_in_the_refusal_and_can_be_broken_for_that_holder_only() -> None:
    desk = Desk()
    store = MemoryCheckpointStore()
    runner = Runner(agent(desk, tool_calls(("refund", {"order_id": 7})), assistant("ok")), checkpoint_store=store)
    target = interrupt_id(await collect_events(runner.query("go", checkpoint_id="c")))
    assert await store.claim("c", "dead-worker", 300)  # a resumer that died holding the lease

    with pytest.raises(ResumeConflictError) as refused:
        await runner.resume("c", {target: "approve"}).collect()
    lease = refused.value.lease
    assert lease is not None and lease.owner == "dead-worker" and 0 < lease.expires_in <= 300
    assert "Runner.break_lease('c', 'dead-worker')" in str(refused.value)

    assert not await runner.break_lease("c", "someone-else")  # only the holder named is broken
    assert await runner.break_lease("c", "dead-worker")
    assert errors(await collect_events(runner.resume("c", {target: "approve"}))) == []
    assert desk.refunds == [7]


async def test_breaking_a_lease_needs_a_store_that_can() -> None:
    class Plain:
        async def get(self, checkpoint_id: str) -> bytes | None:
            return None

    runner = Runner(agent(Desk()), checkpoint_store=MemoryCheckpointStore())
    with pytest.raises(UserError, match="expected a store with break_lease"):
        await runner.break_lease("c", "x", checkpoint_store=Plain())  # type: ignore[arg-type]
    with pytest.raises(UserError, match="checkpoint id"):
        await runner.break_lease("", "x")

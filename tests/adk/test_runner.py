import asyncio
import dataclasses
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest
import redis.asyncio
from tests.services import POSTGRES_DSN as POSTGRES
from tests.services import REDIS_URL as REDIS

from batonflow.adk import (
    AgentEvent,
    AgentInput,
    ChatModelAgent,
    InterruptInfo,
    MessageVariant,
    RunContext,
    Runner,
    RunStep,
    collect_events,
    set_sub_agents,
)
from batonflow.errors import CheckpointExistsError, ResumeConflictError, UserError
from batonflow.schema import Message, Stream, assistant, user
from batonflow.store import (
    CheckpointStore,
    MemoryCheckpointStore,
    PostgresCheckpointStore,
    RedisCheckpointStore,
    SqliteCheckpointStore,
)
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import ToolContext, tool


def test_run_step_is_read_only_comparable_and_prints_its_name() -> None:
    step = RunStep("router")
    assert step == RunStep("router") and step != RunStep("refund")
    assert str(step) == "router"
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.agent_name = "other"  # type: ignore[misc]


async def test_message_variant_get_message_joins_a_stream() -> None:
    variant = MessageVariant(is_streaming=True, message_stream=Stream.from_list([assistant("a"), assistant("b")]))
    assert (await variant.get_message()).content == "ab"
    assert (await variant.get_message()).content == "ab"  # joined once, kept


async def test_events_are_numbered_in_order() -> None:
    root = set_sub_agents(
        ChatModelAgent(name="r", model=ScriptedModel([tool_calls(("transfer_to_agent", {"agent_name": "s"}))])),
        [ChatModelAgent(name="s", model=ScriptedModel([assistant("done")]))],
    )
    events = [e async for e in Runner(root).run([user("x")])]
    assert [e.seq for e in events] == [1, 2, 3]


async def test_session_values_are_seeded_per_run_and_shared_by_agents_and_tools() -> None:
    @tool(threaded=False)
    def note(ctx: ToolContext) -> str:
        """Note."""
        ctx.add_session_value("noted", f"for {ctx.get_session_value('user')}")
        return "ok"

    second = ChatModelAgent(name="s", instruction="Remember: {noted}.", model=ScriptedModel([assistant("fine")]))
    first = ChatModelAgent(
        name="f",
        model=ScriptedModel([tool_calls(("note", {}), ("transfer_to_agent", {"agent_name": "s"}))]),
        tools=[note],
    )
    runner = Runner(set_sub_agents(first, [second]), session_values={"user": "ann"})
    await runner.query("x").collect()
    assert isinstance(second.model, ScriptedModel)
    assert second.model.requests[0].messages[0].content.startswith("Remember: for ann.")
    assert runner.session_values == {"user": "ann"}  # the seed is not changed by a run


async def test_run_level_session_values_override_the_seed() -> None:
    agent = ChatModelAgent(name="a", instruction="Hi {name}.", model=ScriptedModel([assistant("x")]))
    await Runner(agent, session_values={"name": "seed"}).query("q", session_values={"name": "run"}).collect()
    assert isinstance(agent.model, ScriptedModel)
    assert agent.model.requests[0].messages[0].content == "Hi run."


def test_query_sync_returns_every_event_with_streams_joined() -> None:
    agent = ChatModelAgent(name="a", model=ScriptedModel([assistant("hello there")]))
    events = Runner(agent, enable_streaming=True).query_sync("hi")
    variant = events[0].message_output
    assert variant is not None and variant.is_streaming
    assert variant.message is not None and variant.message.content == "hello there"


def test_run_sync_takes_messages() -> None:
    agent = ChatModelAgent(name="a", model=ScriptedModel([assistant("ok")]))
    events = Runner(agent).run_sync([user("a"), assistant("b"), user("c")])
    assert isinstance(agent.model, ScriptedModel)
    assert [m.content for m in agent.model.requests[0].messages] == ["a", "b", "c"]
    assert events[-1].message_output is not None


async def test_an_agent_run_on_its_own_works_without_a_runner() -> None:
    agent = ChatModelAgent(name="a", model=ScriptedModel([assistant("solo")]))
    events = [e async for e in agent.run(AgentInput(messages=[user("x")]), RunContext())]
    assert events[0].message_output is not None and events[0].message_output.message == assistant("solo")
    assert events[0].run_path == ()  # only a flow agent sets run paths


# -- checkpoint ids ----------------------------------------------------------------------------------------------------


class Counted:
    """What the tools really did, and a gate that keeps the waiting tool from interrupting until it is opened."""

    def __init__(self) -> None:
        self.calls = 0
        self.entered = asyncio.Event()
        self.gate = asyncio.Event()
        self.gate.set()


def waiting_agent(counted: Counted, *replies: Message) -> ChatModelAgent:
    """An agent whose model asks for ``wait`` and answers "done" (or says ``replies``)."""

    @tool(threaded=False)
    async def wait(ctx: ToolContext) -> str:
        """Wait for a human."""
        if not ctx.get_interrupt_state().was_interrupted:
            counted.calls += 1
            counted.entered.set()
            await counted.gate.wait()
            ctx.interrupt("approve?")
        return "approved"

    script = list(replies) or [tool_calls(("wait", {})), assistant("done")]
    return ChatModelAgent(name="a", model=ScriptedModel(script), tools=[wait])


WAIT, DONE = tool_calls(("wait", {})), assistant("done")


def interrupt_id(events: list[AgentEvent]) -> str:
    action = events[-1].action
    assert action is not None and isinstance(action.interrupted, InterruptInfo)
    return action.interrupted.interrupt_contexts[0].id


@pytest.fixture(params=["memory", "sqlite", "postgres", "redis"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[CheckpointStore]:
    token = uuid.uuid4().hex[:12]
    store: CheckpointStore = {
        "memory": lambda: MemoryCheckpointStore(),
        "sqlite": lambda: SqliteCheckpointStore(tmp_path / "c.db"),
        "postgres": lambda: PostgresCheckpointStore(POSTGRES, table=f"bf_test_{token}"),
        "redis": lambda: RedisCheckpointStore(REDIS, prefix=f"batonflow-test:{token}:"),
    }[request.param]()
    yield store
    await store.close()
    if request.param == "postgres":
        conn = await asyncpg.connect(POSTGRES)
        await conn.execute(f"DROP TABLE IF EXISTS bf_test_{token}, bf_test_{token}_leases")
        await conn.close()
    elif request.param == "redis":
        client = redis.asyncio.Redis.from_url(REDIS)
        keys = [key async for key in client.scan_iter(match=f"batonflow-test:{token}:*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()


async def test_a_run_under_the_id_of_a_pending_run_is_refused_before_it_starts(store: CheckpointStore) -> None:
    counted = Counted()
    runner = Runner(waiting_agent(counted, WAIT, DONE, WAIT), checkpoint_store=store)
    pending = interrupt_id(await collect_events(runner.query("first", checkpoint_id="c")))
    saved = await store.get("c")
    with pytest.raises(CheckpointExistsError) as caught:
        await runner.query("second", checkpoint_id="c").collect()
    assert str(caught.value) == (
        "checkpoint[c] holds a pending run, which this run would overwrite: resume it with "
        "Runner.resume('c', targets=...), delete it with checkpoint_store.delete('c'), or run with another "
        "checkpoint_id"
    )
    assert caught.value.checkpoint_id == "c"
    assert isinstance(runner.agent.agent, ChatModelAgent)
    model = runner.agent.agent.model
    assert isinstance(model, ScriptedModel) and len(model.requests) == 1  # the second run never reached the model
    assert counted.calls == 1
    assert await store.get("c") == saved  # the pending run is intact, and resumes
    events = await collect_events(runner.resume("c", {pending: "yes"}))
    assert events[-1].message_output is not None and events[-1].message_output.message is not None
    assert events[-1].message_output.message.content == "done"
    # Resumed to the end, the id is free again.
    assert interrupt_id(await collect_events(runner.query("third", checkpoint_id="c")))
    assert counted.calls == 2


async def test_an_id_deleted_from_the_store_can_be_used_again(store: CheckpointStore) -> None:
    runner = Runner(waiting_agent(Counted(), WAIT, WAIT), checkpoint_store=store)
    await collect_events(runner.query("first", checkpoint_id="c"))
    await store.delete("c")
    assert interrupt_id(await collect_events(runner.query("again", checkpoint_id="c")))


async def test_of_two_runs_started_with_one_id_at_once_one_is_refused(store: CheckpointStore) -> None:
    counted = Counted()
    counted.gate.clear()
    runner = Runner(waiting_agent(counted), checkpoint_store=store)
    first = asyncio.create_task(collect_events(runner.query("first", checkpoint_id="c")))
    await counted.entered.wait()  # the first run is in its tool, not saved yet
    with pytest.raises(ResumeConflictError, match=r"^checkpoint\[c\] is being run or resumed by another runner"):
        await runner.query("second", checkpoint_id="c").collect()
    counted.gate.set()
    pending = interrupt_id(await first)
    assert counted.calls == 1
    await collect_events(runner.resume("c", {pending: "yes"}))
    assert await store.get("c") is None


async def test_a_run_under_an_id_that_is_being_resumed_is_refused(store: CheckpointStore) -> None:
    runner = Runner(waiting_agent(Counted()), checkpoint_store=store)
    await collect_events(runner.query("first", checkpoint_id="c"))
    assert await store.claim("c", "a resumer", 30)
    with pytest.raises(ResumeConflictError, match=r"checkpoint\[c\] is being run or resumed by another runner"):
        await runner.query("second", checkpoint_id="c").collect()
    await store.release("c", "a resumer")


async def test_the_caller_can_resume_as_soon_as_it_sees_the_interrupt(store: CheckpointStore) -> None:
    runner = Runner(waiting_agent(Counted()), checkpoint_store=store)
    answers = []
    async for event in runner.query("x", checkpoint_id="c"):
        action = event.action
        if action is not None and isinstance(action.interrupted, InterruptInfo):
            # Still inside the run's stream: the run gave the id's lease back when it saved its checkpoint.
            resumed = await collect_events(runner.resume("c", {action.interrupted.interrupt_contexts[0].id: "yes"}))
            answers += [
                e.message_output.message.content for e in resumed if e.message_output and e.message_output.message
            ]
    assert answers[-1] == "done"
    assert await store.get("c") is None
    assert await store.claim("c", "someone", 30)  # and no lease was left behind


class Unreleasing(MemoryCheckpointStore):
    async def release(self, checkpoint_id: str, owner: str) -> None:
        raise ConnectionError("store unreachable")


async def test_a_lease_that_cannot_be_given_back_does_not_hide_a_saved_interrupt(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = Unreleasing()
    events = await collect_events(
        Runner(waiting_agent(Counted()), checkpoint_store=store).query("x", checkpoint_id="c")
    )
    assert interrupt_id(events)
    assert await store.get("c") is not None
    assert "could not release the lease on checkpoint[c]" in caplog.text


async def test_a_refused_run_is_not_traced() -> None:
    seen: list[object] = []
    store = MemoryCheckpointStore()
    await store.set("c", b"pending")
    runner = Runner(waiting_agent(Counted()), checkpoint_store=store, callbacks=[seen.append])
    with pytest.raises(CheckpointExistsError):
        await runner.stream_trace("x", checkpoint_id="c").collect()
    assert seen == []


class Untouchable(MemoryCheckpointStore):
    async def get(self, checkpoint_id: str) -> bytes | None:
        raise AssertionError("the store was reached")

    async def claim(self, checkpoint_id: str, owner: str, ttl: float) -> bool:
        raise AssertionError("the store was reached")


@pytest.mark.parametrize(
    ("checkpoint_id", "message"),
    [
        ("", "must be a non-empty string"),
        ("x" * 1_000_000, "must be at most 256 bytes of UTF-8"),
        ("\ud800", "must be valid Unicode text, got a lone surrogate at index 0"),
        ("a\x00b", "must not contain NUL characters"),
    ],
)
def test_a_bad_checkpoint_id_is_refused_when_the_runner_is_called(checkpoint_id: str, message: str) -> None:
    runner = Runner(waiting_agent(Counted()), checkpoint_store=Untouchable())
    calls = {
        "run": lambda: runner.run([user("x")], checkpoint_id=checkpoint_id),
        "query": lambda: runner.query("x", checkpoint_id=checkpoint_id),
        "stream_trace": lambda: runner.stream_trace("x", checkpoint_id=checkpoint_id),
        "resume": lambda: runner.resume(checkpoint_id),
    }
    for name, call in calls.items():
        with pytest.raises(UserError, match=f"^a checkpoint id {message}") as caught:
            call()  # at the call, before a stream exists
        assert len(str(caught.value)) < 200, name

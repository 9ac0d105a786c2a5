import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from batonflow.adk import (
    AgentEvent,
    AgentInput,
    ChatModelAgent,
    ChatModelAgentResumeData,
    FlowAgent,
    InterruptInfo,
    ResumeInfo,
    RunContext,
    Runner,
    SequentialAgent,
    collect_events,
    event_from_message,
    interrupt,
    set_sub_agents,
    stateful_interrupt,
)
from batonflow.codec import register_type
from batonflow.errors import CheckpointNotFoundError, ResumeConflictError, UserError
from batonflow.schema import Message, assistant, user
from batonflow.store import MemoryCheckpointStore
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import ToolContext, tool


class Ledger:
    """What the tools really did: a side effect must happen once, however often a run is resumed."""

    def __init__(self) -> None:
        self.refunds: list[int] = []
        self.lookups: list[int] = []


def approval_tools(ledger: Ledger) -> list[Any]:
    @tool(threaded=False)
    def refund(order_id: int, ctx: ToolContext) -> str:
        """Refund an order after a human approved it."""
        saved = ctx.get_interrupt_state()
        if not saved.was_interrupted:
            ctx.interrupt({"question": f"approve refund of order {order_id}?"}, state={"order_id": order_id})
        target = ctx.get_resume_context()
        if not target.is_resume_target:
            ctx.interrupt({"question": f"approve refund of order {order_id}?"}, state=saved.state)
        if target.data != "approve":
            return f"refund of order {order_id} rejected"
        ledger.refunds.append(order_id)
        return f"order {order_id} refunded"

    @tool(threaded=False)
    def lookup(order_id: int) -> str:
        """Look up an order."""
        ledger.lookups.append(order_id)
        return f"order {order_id}: 30 EUR"

    return [refund, lookup]


def support(ledger: Ledger, *responses: Message, name: str = "support") -> ChatModelAgent:
    return ChatModelAgent(
        name=name, description="support", model=ScriptedModel(list(responses)), tools=approval_tools(ledger)
    )


def interrupt_of(events: list[AgentEvent]) -> InterruptInfo:
    action = events[-1].action
    assert action is not None
    assert isinstance(action.interrupted, InterruptInfo)
    return action.interrupted


async def test_tool_interrupt_reaches_the_caller_with_its_address_and_parent_chain() -> None:
    ledger = Ledger()
    agent = support(ledger, tool_calls(("refund", {"order_id": 7})))
    runner = Runner(agent, checkpoint_store=MemoryCheckpointStore())
    info = interrupt_of(await collect_events(runner.query("refund 7", checkpoint_id="t1")))
    [root] = info.interrupt_contexts
    assert root.address == "agent:support;tool:refund:call_1"
    assert root.info == {"question": "approve refund of order 7?"}
    assert root.is_root_cause
    assert root.parent is not None
    assert root.parent.address == "agent:support"
    assert not root.parent.is_root_cause
    assert info.data == {"question": "approve refund of order 7?"}
    assert ledger.refunds == []


async def test_checkpoint_is_saved_before_the_interrupt_reaches_the_caller() -> None:
    store = MemoryCheckpointStore()
    runner = Runner(support(Ledger(), tool_calls(("refund", {"order_id": 7}))), checkpoint_store=store)
    async for event in runner.query("refund 7", checkpoint_id="t1"):
        if event.action is not None and event.action.interrupted is not None:
            assert await store.get("t1") is not None
    assert await store.get("t1") is not None


async def test_targeted_resume_continues_the_loop_and_deletes_the_finished_checkpoint() -> None:
    ledger = Ledger()
    agent = support(ledger, tool_calls(("refund", {"order_id": 7})), assistant("Your refund is done."))
    store = MemoryCheckpointStore()
    runner = Runner(agent, checkpoint_store=store)
    [root] = interrupt_of(await collect_events(runner.query("refund 7", checkpoint_id="t1"))).interrupt_contexts
    events = await collect_events(Runner(agent, checkpoint_store=store).resume("t1", targets={root.id: "approve"}))
    assert [e.message_output.message.content for e in events if e.message_output] == [  # type: ignore[union-attr]
        "order 7 refunded",
        "Your refund is done.",
    ]
    assert ledger.refunds == [7]
    model = agent.model
    assert isinstance(model, ScriptedModel)
    assert [m.role for m in model.requests[1].messages] == ["user", "assistant", "tool"]
    assert await store.get("t1") is None
    with pytest.raises(
        CheckpointNotFoundError, match=r"expected a pending checkpoint 't1' in the MemoryCheckpointStore, found none"
    ):
        await runner.resume("t1", targets={root.id: "approve"}).collect()
    assert ledger.refunds == [7]


async def test_parallel_interrupts_resume_one_by_one_and_finished_tools_never_rerun() -> None:
    ledger = Ledger()
    calls = tool_calls(("refund", {"order_id": 1}), ("lookup", {"order_id": 3}), ("refund", {"order_id": 2}))
    agent = support(ledger, calls, assistant("all done"))
    runner = Runner(agent, checkpoint_store=MemoryCheckpointStore())
    first = interrupt_of(await collect_events(runner.query("go", checkpoint_id="p")))
    ids = {c.address.rsplit(":", 1)[1]: c.id for c in first.interrupt_contexts}
    assert sorted(ids) == ["call_1", "call_3"]
    assert ledger.lookups == [3]

    second = interrupt_of(await collect_events(runner.resume("p", targets={ids["call_1"]: "approve"})))
    assert [c.id for c in second.interrupt_contexts] == [ids["call_3"]]  # the untargeted one keeps its id
    assert ledger.refunds == [1]

    events = await collect_events(runner.resume("p", targets={ids["call_3"]: "approve"}))
    assert ledger.refunds == [1, 2]
    assert ledger.lookups == [3]
    assert events[-1].message_output is not None
    model = agent.model
    assert isinstance(model, ScriptedModel)
    assert [m.content for m in model.requests[1].messages if m.role == "tool"] == [
        "order 1 refunded",
        "order 3: 30 EUR",
        "order 2 refunded",
    ]


async def test_resuming_several_interrupts_together() -> None:
    ledger = Ledger()
    agent = support(ledger, tool_calls(("refund", {"order_id": 1}), ("refund", {"order_id": 2})), assistant("ok"))
    runner = Runner(agent, checkpoint_store=MemoryCheckpointStore())
    info = interrupt_of(await collect_events(runner.query("go", checkpoint_id="p")))
    await collect_events(runner.resume("p", targets={c.id: "approve" for c in info.interrupt_contexts}))
    assert sorted(ledger.refunds) == [1, 2]


async def test_resume_without_targets_resumes_every_interrupted_component() -> None:
    @tool(threaded=False)
    def pause(ctx: ToolContext) -> str:
        """Pause once."""
        if not ctx.get_interrupt_state().was_interrupted:
            ctx.interrupt("paused")
        assert not ctx.get_resume_context().is_resume_target
        return "continued"

    agent = ChatModelAgent(name="a", model=ScriptedModel([tool_calls(("pause", {})), assistant("end")]), tools=[pause])
    runner = Runner(agent, checkpoint_store=MemoryCheckpointStore())
    await collect_events(runner.query("x", checkpoint_id="c"))
    events = await collect_events(runner.resume("c"))
    assert [e.message_output.message.content for e in events if e.message_output] == ["continued", "end"]  # type: ignore[union-attr]


async def test_resume_goes_down_the_transfer_path_and_keeps_the_history() -> None:
    ledger = Ledger()
    router_model = ScriptedModel([tool_calls(("transfer_to_agent", {"agent_name": "refunds"}))])
    router = ChatModelAgent(name="router", model=router_model)
    refunds = support(ledger, tool_calls(("refund", {"order_id": 9})), assistant("done"), name="refunds")
    runner = Runner(set_sub_agents(router, [refunds]), checkpoint_store=MemoryCheckpointStore())
    info = interrupt_of(await collect_events(runner.query("refund 9", checkpoint_id="r")))
    assert info.interrupt_contexts[0].address == "agent:router;agent:refunds;tool:refund:call_1"
    events = await collect_events(runner.resume("r", targets={info.interrupt_contexts[0].id: "approve"}))
    assert {tuple(str(s) for s in e.run_path) for e in events} == {("router", "refunds")}
    assert len(router_model.requests) == 1  # the router is not asked again
    model = refunds.model
    assert isinstance(model, ScriptedModel)
    assert model.requests[1].messages[1].content == "refund 9"
    assert model.requests[1].messages[2].content.startswith("For context: [router] called tool: `transfer_to_agent`")
    assert ledger.refunds == [9]


async def test_history_modifier_rewrites_the_agents_saved_messages() -> None:
    ledger = Ledger()
    agent = support(ledger, tool_calls(("refund", {"order_id": 7})), assistant("ok"))
    runner = Runner(agent, checkpoint_store=MemoryCheckpointStore())
    info = interrupt_of(await collect_events(runner.query("refund 7 please", checkpoint_id="h")))
    tool_ctx = info.interrupt_contexts[0]
    assert tool_ctx.parent is not None

    def redact(messages: list[Message]) -> list[Message]:
        return [Message(role=m.role, content="[redacted]") if m.role == "user" else m for m in messages]

    targets = {tool_ctx.id: "approve", tool_ctx.parent.id: ChatModelAgentResumeData(history_modifier=redact)}
    await collect_events(runner.resume("h", targets=targets))
    model = agent.model
    assert isinstance(model, ScriptedModel)
    assert model.requests[1].messages[0].content == "[redacted]"


async def test_streaming_mode_comes_from_the_checkpoint() -> None:
    ledger = Ledger()
    agent = support(ledger, tool_calls(("refund", {"order_id": 7})), assistant("streamed answer"))
    store = MemoryCheckpointStore()
    info = interrupt_of(
        await collect_events(Runner(agent, enable_streaming=True, checkpoint_store=store).query("x", checkpoint_id="s"))
    )
    events = await collect_events(
        Runner(agent, checkpoint_store=store).resume("s", {info.interrupt_contexts[0].id: "approve"})
    )
    last = events[-1].message_output
    assert last is not None
    assert last.is_streaming


async def test_two_resumes_at_once_one_proceeds_the_other_is_refused() -> None:
    ledger = Ledger()
    gate = asyncio.Event()

    @tool
    async def slow_answer() -> str:
        """Slow."""
        await gate.wait()
        return "slow"

    agent = ChatModelAgent(
        name="a",
        model=ScriptedModel([tool_calls(("refund", {"order_id": 5})), tool_calls(("slow_answer", {})), assistant("x")]),
        tools=[*approval_tools(ledger), slow_answer],
    )
    runner = Runner(agent, checkpoint_store=MemoryCheckpointStore())
    info = interrupt_of(await collect_events(runner.query("x", checkpoint_id="c")))
    targets = {info.interrupt_contexts[0].id: "approve"}
    first = asyncio.create_task(collect_events(runner.resume("c", targets)))
    await asyncio.sleep(0.05)
    with pytest.raises(ResumeConflictError, match=r"checkpoint\[c\] is being resumed by another runner"):
        await runner.resume("c", targets).collect()
    gate.set()
    await first
    assert ledger.refunds == [5]


class RecordingStore(MemoryCheckpointStore):
    """A memory store that notes the order of the calls a resume makes."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    async def get(self, checkpoint_id: str) -> bytes | None:
        self.calls.append("get")
        return await super().get(checkpoint_id)

    async def claim(self, checkpoint_id: str, owner: str, ttl: float) -> bool:
        self.calls.append("claim")
        return await super().claim(checkpoint_id, owner, ttl)

    async def delete(self, checkpoint_id: str) -> None:
        self.calls.append("delete")
        await super().delete(checkpoint_id)

    async def release(self, checkpoint_id: str, owner: str) -> None:
        self.calls.append("release")
        await super().release(checkpoint_id, owner)


async def test_a_resume_reads_the_checkpoint_only_once_it_holds_the_lease() -> None:
    # Read before the claim, a checkpoint that another resume finishes (and deletes) in between would be replayed.
    ledger = Ledger()
    store = RecordingStore()
    runner = Runner(support(ledger, tool_calls(("refund", {"order_id": 1})), assistant("ok")), checkpoint_store=store)
    info = interrupt_of(await collect_events(runner.query("x", checkpoint_id="c")))
    assert store.calls == ["claim", "get", "release"]  # the run made sure the id was free
    store.calls.clear()
    await collect_events(runner.resume("c", {info.interrupt_contexts[0].id: "approve"}))
    # The checkpoint, then its journal (none yet); at the end both go (the refund's batch wrote the journal).
    assert store.calls == ["claim", "get", "get", "delete", "delete", "release"]
    with pytest.raises(CheckpointNotFoundError):
        await runner.resume("c").collect()
    assert store.calls[-1] == "release"  # a resume that finds nothing gives the lease back
    assert ledger.refunds == [1]


async def test_a_call_may_use_a_checkpoint_store_of_its_own() -> None:
    ledger = Ledger()
    own, runners = MemoryCheckpointStore(), MemoryCheckpointStore()
    runner = Runner(support(ledger, tool_calls(("refund", {"order_id": 1})), assistant("ok")), checkpoint_store=runners)
    events = await collect_events(runner.run([user("x")], checkpoint_id="c", checkpoint_store=own))
    info = interrupt_of(events)
    assert await own.get("c") is not None
    assert await runners.get("c") is None
    await collect_events(runner.resume("c", {info.interrupt_contexts[0].id: "approve"}, checkpoint_store=own))
    assert ledger.refunds == [1]
    assert await own.get("c") is None
    storeless = Runner(support(Ledger()))  # a store given for the call is enough
    with pytest.raises(CheckpointNotFoundError):
        await storeless.resume("c", checkpoint_store=own).collect()


async def test_missing_store_and_unknown_targets_are_user_errors() -> None:
    agent = ChatModelAgent(name="a", model=ScriptedModel([]))
    with pytest.raises(UserError, match=r"expected Runner\(\.\.\., checkpoint_store=\.\.\.\), got no store"):
        Runner(agent).query("x", checkpoint_id="c")
    with pytest.raises(UserError, match="failed to resume"):
        Runner(agent).resume("c")
    ledger = Ledger()
    runner = Runner(support(ledger, tool_calls(("refund", {"order_id": 1}))), checkpoint_store=MemoryCheckpointStore())
    info = interrupt_of(await collect_events(runner.query("x", checkpoint_id="c")))
    with pytest.raises(UserError, match=r"got unknown \['nope'\]"):
        await runner.resume("c", targets={"nope": 1}).collect()
    # Nothing was lost: the lease is released and the checkpoint still resumes.
    await collect_events(runner.resume("c", targets={info.interrupt_contexts[0].id: "approve"}))
    assert ledger.refunds == [1]


class FailingStore(MemoryCheckpointStore):
    def __init__(self) -> None:
        super().__init__()
        self.fail = False

    async def set(self, checkpoint_id: str, data: bytes) -> None:
        if self.fail:
            raise ConnectionError("store unreachable")
        await super().set(checkpoint_id, data)


async def test_a_store_that_fails_gives_an_error_event_and_keeps_the_last_checkpoint() -> None:
    ledger = Ledger()
    store = FailingStore()
    agent = support(ledger, tool_calls(("refund", {"order_id": 1}), ("refund", {"order_id": 2})), assistant("ok"))
    runner = Runner(agent, checkpoint_store=store)
    info = interrupt_of(await collect_events(runner.query("x", checkpoint_id="c")))
    saved = await store.get("c")
    store.fail = True
    events = await collect_events(runner.resume("c", {info.interrupt_contexts[0].id: "approve"}))
    assert isinstance(events[-1].error, ConnectionError)
    assert await store.get("c") == saved


@dataclass
class Order:
    order_id: int
    amount: float


register_type(Order)


async def test_registered_user_types_in_session_values_survive_a_checkpoint() -> None:
    seen: list[Any] = []

    @tool(threaded=False)
    def check(ctx: ToolContext) -> str:
        """Check."""
        if not ctx.get_interrupt_state().was_interrupted:
            ctx.interrupt("wait")
        seen.append(ctx.get_session_value("order"))
        return "ok"

    agent = ChatModelAgent(name="a", model=ScriptedModel([tool_calls(("check", {})), assistant("x")]), tools=[check])
    runner = Runner(agent, checkpoint_store=MemoryCheckpointStore(), session_values={"order": Order(1, 9.5)})
    await collect_events(runner.query("x", checkpoint_id="c"))
    await collect_events(runner.resume("c"))
    assert seen == [Order(1, 9.5)]


class Approver:
    """A custom agent that interrupts itself with state and resumes from it."""

    name, description = "approver", ""

    async def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        assert ctx is not None
        yield stateful_interrupt(ctx, "need a yes", {"step": 1})

    async def resume(self, info: ResumeInfo, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        yield event_from_message(
            assistant(f"state={info.interrupt_state} target={info.is_resume_target} data={info.resume_data}")
        )


async def test_agent_level_stateful_interrupt_and_resume() -> None:
    runner = Runner(Approver(), checkpoint_store=MemoryCheckpointStore())
    info = interrupt_of(await collect_events(runner.query("x", checkpoint_id="c")))
    [root] = info.interrupt_contexts
    assert (root.address, root.info, root.parent) == ("agent:approver", "need a yes", None)
    events = await collect_events(runner.resume("c", {root.id: "yes"}))
    assert events[0].message_output is not None
    assert events[0].message_output.message == assistant("state={'step': 1} target=True data=yes")


class Stubborn:
    name, description = "stubborn", ""

    async def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        assert ctx is not None
        yield interrupt(ctx, "stop")


async def test_resuming_an_agent_that_cannot_resume_is_an_error_event() -> None:
    runner = Runner(FlowAgent(Stubborn()), checkpoint_store=MemoryCheckpointStore())
    await collect_events(runner.query("x", checkpoint_id="c"))
    events = await collect_events(runner.resume("c"))
    assert str(events[-1].error) == (
        "failed to resume agent: agent 'stubborn' is an interrupt point but is not a ResumableAgent"
    )


class Inspector:
    """A wrapper that looks at the interrupts of the agent it runs before passing them on."""

    name, description = "inspector", ""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seen: list[list[tuple[str, bool]]] = []

    async def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        async for event in self.inner.run(input, ctx):
            if event.action is not None and isinstance(event.action.interrupted, InterruptInfo):
                contexts = event.action.interrupted.interrupt_contexts
                self.seen.append([(c.address, c.is_root_cause) for c in contexts])
            yield event


@pytest.mark.parametrize(
    ("inner", "expected"),
    [
        (
            FlowAgent(support(Ledger(), tool_calls(("refund", {"order_id": 1})))),
            [("agent:inspector;agent:support;tool:refund:call_1", True)],
        ),
        (
            SequentialAgent(name="steps", sub_agents=[support(Ledger(), tool_calls(("refund", {"order_id": 1})))]),
            [("agent:inspector;agent:support;tool:refund:call_1", True)],
        ),
        (FlowAgent(Stubborn()), [("agent:inspector;agent:stubborn", True)]),
    ],
    ids=["tool", "workflow", "agent"],
)
async def test_an_interrupt_event_carries_its_contexts_before_the_runner_sees_it(
    inner: Any, expected: list[tuple[str, bool]]
) -> None:
    inspector = Inspector(inner)
    events = await collect_events(Runner(inspector).query("x"))
    assert inspector.seen == [expected]
    assert [(c.address, c.is_root_cause) for c in interrupt_of(events).interrupt_contexts] == expected

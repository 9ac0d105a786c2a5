import asyncio
from collections.abc import AsyncIterator

import pytest

from batonflow.adk import (
    AgentAction,
    AgentEvent,
    AgentInput,
    ChatModelAgent,
    FlowAgent,
    HistoryEntry,
    RunContext,
    Runner,
    RunStep,
    agent_with_options,
    collect_events,
    event_from_message,
    set_sub_agents,
    transfer_action,
)
from batonflow.errors import TransferError, UserError
from batonflow.schema import Message, assistant, user
from batonflow.store import MemoryCheckpointStore
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import ToolContext, tool


def transfer(name: str) -> Message:
    return tool_calls(("transfer_to_agent", {"agent_name": name}))


def agent(name: str, *responses: Message, description: str = "", **kw: object) -> ChatModelAgent:
    return ChatModelAgent(
        name=name, description=description or f"{name} agent", model=ScriptedModel(list(responses)), **kw
    )


def model_of(a: ChatModelAgent) -> ScriptedModel:
    assert isinstance(a.model, ScriptedModel)
    return a.model


def paths(events: list[AgentEvent]) -> list[list[str]]:
    return [[str(s) for s in e.run_path] for e in events]


async def test_transfer_runs_the_sub_agent_with_an_extended_run_path() -> None:
    refund = agent("refund", assistant("Refund issued."))
    router = agent("router", transfer("refund"))
    events = await collect_events(Runner(set_sub_agents(router, [refund])).query("money back"))
    assert paths(events) == [["router"], ["router"], ["router", "refund"]]
    assert [e.agent_name for e in events] == ["router", "router", "refund"]
    assert events[1].action == transfer_action("refund")
    assert events[-1].message_output is not None and events[-1].message_output.message == assistant("Refund issued.")


async def test_router_is_told_about_its_sub_agents_and_gets_the_transfer_tool() -> None:
    router = agent("router", transfer("refund"), instruction="Route requests.")
    tree = set_sub_agents(router, [agent("refund", assistant("ok"), description="Refunds money.")])
    await collect_events(Runner(tree).query("x"))
    request = model_of(router).requests[0]
    assert request.messages[0].content.startswith(
        "Route requests.\n\nAvailable other agents: \n- Agent name: refund\n  Agent description: Refunds money.\n\n"
    )
    assert [t.name for t in request.tools] == ["transfer_to_agent"]
    assert request.tools[0].parameters["properties"]["agent_name"]["enum"] == ["refund"]


async def test_transferred_agent_sees_others_messages_rewritten_and_its_own_verbatim() -> None:
    @tool(threaded=False)
    def lookup(order_id: int) -> str:
        """Look up."""
        return f"order {order_id} shipped"

    refund = agent("refund", tool_calls(("lookup", {"order_id": 7})), transfer("router"), tools=[lookup])
    router = agent(
        "router", assistant("Let me route you.", tool_calls=transfer("refund").tool_calls), assistant("Done.")
    )
    events = await collect_events(Runner(set_sub_agents(router, [refund])).query("money back"))
    assert paths(events)[-1] == ["router", "refund", "router"]
    assert [(m.role, m.content) for m in model_of(refund).requests[0].messages[1:]] == [
        ("user", "money back"),
        (
            "user",
            "For context: [router] said: Let me route you.. [router] called tool: `transfer_to_agent` with "
            'arguments: {"agent_name": "refund"}.',
        ),
        (
            "user",
            "For context: [router] `transfer_to_agent` tool returned result: successfully transferred to agent [refund].",
        ),
    ]
    # Back at the router: its own messages verbatim, refund's rewritten.
    back = model_of(router).requests[1].messages[1:]
    assert [m.role for m in back] == ["user", "assistant", "tool", "user", "user", "user", "user"]
    assert back[3].content == 'For context: [refund] called tool: `lookup` with arguments: {"order_id": 7}.'
    assert back[4].content == "For context: [refund] `lookup` tool returned result: order 7 shipped."


async def test_transfer_to_an_unknown_agent_is_an_error_event_and_the_run_ends() -> None:
    router = agent("router", transfer("nobody"))
    events = await collect_events(Runner(set_sub_agents(router, [agent("refund")])).query("x"))
    assert isinstance(events[-1].error, TransferError)
    assert str(events[-1].error) == "transfer failed: agent 'nobody' not found when transferring from 'router'"
    # What the run says of the transfer before the error is the same failure, never a success.
    said = [v.message.content for e in events if (v := e.message_output) is not None and v.message is not None]
    assert said == ["", "transfer failed: agent 'nobody' not found when transferring from 'router'"]


async def test_disallow_transfer_to_parent_hides_the_parent() -> None:
    child = agent_with_options(agent("refund", assistant("ok")), disallow_transfer_to_parent=True)
    router = agent("router", transfer("refund"))
    await collect_events(Runner(set_sub_agents(router, [child])).query("x"))
    inner = child.agent
    assert isinstance(inner, ChatModelAgent)
    assert model_of(inner).requests[0].tools == []  # no transfer tool: nowhere to go
    assert [m.role for m in model_of(inner).requests[0].messages] == ["user", "user", "user"]


async def test_transfer_to_a_disallowed_parent_is_refused() -> None:
    back = event_from_message(assistant("back"))
    back.action = transfer_action("router")
    child = agent_with_options(Scripted("refund", [back]), disallow_transfer_to_parent=True)
    events = await collect_events(Runner(set_sub_agents(agent("router", transfer("refund")), [child])).query("x"))
    assert str(events[-1].error) == "transfer failed: agent 'router' not found when transferring from 'refund'"


async def test_skip_transfer_messages_drops_the_transfer_call_and_result() -> None:
    refund = agent("refund", assistant("ok"))
    router = agent("router", transfer("refund"))
    runner = Runner(set_sub_agents(router, [refund]), skip_transfer_messages=True)
    await collect_events(runner.query("money back"))
    assert [m.content for m in model_of(refund).requests[0].messages[1:]] == ["money back"]


async def test_custom_history_rewriter_builds_the_input() -> None:
    seen: list[list[HistoryEntry]] = []

    def last_user_only(entries: list[HistoryEntry]) -> list[Message]:
        seen.append(entries)
        return [e.message for e in entries if e.is_user_input]

    refund = agent_with_options(agent("refund", assistant("ok")), history_rewriter=last_user_only)
    router = agent("router", transfer("refund"))
    await collect_events(Runner(set_sub_agents(router, [refund])).query("money back"))
    assert [m.content for m in model_of(refund.agent).requests[0].messages[1:]] == ["money back"]  # type: ignore[arg-type]
    assert [(e.agent_name, e.is_user_input) for e in seen[0]] == [("", True), ("router", False), ("router", False)]


async def test_setting_sub_agents_twice_is_refused() -> None:
    router = agent("router")
    tree = set_sub_agents(router, [agent("a")])
    with pytest.raises(UserError, match="agent's sub-agents has already been set"):
        set_sub_agents(tree, [agent("b")])
    with pytest.raises(UserError, match="agent's sub-agents has already been set"):
        set_sub_agents(router, [agent("c")])


async def test_an_agent_with_a_parent_cannot_get_another() -> None:
    child = agent("child")
    set_sub_agents(agent("p1"), [child])
    with pytest.raises(UserError, match="agent has already been set as a sub-agent of another agent"):
        set_sub_agents(agent("p2"), [child])


def test_wrappers_are_copied_and_inner_agents_shared() -> None:
    leaf = agent("leaf")
    middle = set_sub_agents(agent("middle"), [leaf])
    root = set_sub_agents(agent("root"), [middle])
    copied_middle = root.sub_agents[0]
    assert copied_middle is not middle
    assert copied_middle.agent is middle.agent
    assert copied_middle.sub_agents[0].agent is leaf
    assert copied_middle.sub_agents[0].parent is copied_middle
    assert copied_middle.parent is root


def test_duplicate_names_and_cycles_are_user_errors() -> None:
    with pytest.raises(UserError, match=r"expected names unique in the tree, got \['a'\]"):
        set_sub_agents(agent("root"), [agent("a"), agent("a")])
    with pytest.raises(UserError, match=r"got \['root'\]"):
        set_sub_agents(agent("root"), [agent("root")])
    tree = set_sub_agents(agent("root"), [agent("a")])
    with pytest.raises(UserError, match="'root' is above it in the tree, expected no cycle"):
        set_sub_agents(tree.sub_agents[0], [tree])
    deep = set_sub_agents(agent("top"), [set_sub_agents(agent("x"), [agent("dup")]), agent("dup")])
    with pytest.raises(UserError, match=r"expected unique agent names, got \['dup'\]"):
        Runner(deep)


class Scripted:
    """A custom agent yielding given events; proves the flow agent works with any Agent."""

    def __init__(self, name: str, events: list[AgentEvent], error: Exception | None = None) -> None:
        self.name, self.description = name, ""
        self.events, self.error = events, error

    async def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        for e in self.events:
            yield e
        if self.error is not None:
            raise self.error


async def test_only_the_last_action_of_own_events_counts() -> None:
    transfer_event = event_from_message(assistant("go"))
    transfer_event.action = transfer_action("b")
    later = event_from_message(assistant("changed my mind"))
    root = set_sub_agents(Scripted("a", [transfer_event, later]), [agent("b", assistant("never"))])
    events = await collect_events(Runner(root).query("x"))
    assert paths(events) == [["a"], ["a"]]


async def test_foreign_events_are_forwarded_but_neither_recorded_nor_acted_on() -> None:
    foreign = event_from_message(assistant("inner"))
    foreign.run_path = (RunStep("a"), RunStep("tool_agent"))
    foreign.agent_name = "tool_agent"
    foreign.action = transfer_action("b")
    b = agent("b", assistant("never"))
    ctx = RunContext()
    root = set_sub_agents(Scripted("a", [foreign]), [b])
    events = [e async for e in root.run(AgentInput(messages=[user("x")]), ctx)]
    assert paths(events) == [["a", "tool_agent"]]
    assert ctx.session.events == []


async def test_interrupt_events_are_not_recorded() -> None:
    interrupted = event_from_message(assistant("waiting for approval"))
    interrupted.action = AgentAction(interrupted={"reason": "approval"})
    ctx = RunContext()
    events = [e async for e in FlowAgent(Scripted("a", [interrupted])).run(AgentInput(messages=[user("x")]), ctx)]
    assert len(events) == 1
    assert ctx.session.events == []


async def test_an_exception_in_an_agent_becomes_an_error_event_and_the_stream_ends() -> None:
    root = FlowAgent(Scripted("a", [event_from_message(assistant("partial"))], error=KeyError("oops")))
    events = await collect_events(Runner(root).query("x"))
    assert len(events) == 2
    assert isinstance(events[-1].error, KeyError)
    assert paths(events)[-1] == ["a"]


async def test_a_consumer_that_stops_early_cancels_the_work_below() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    @tool
    async def wait_forever() -> str:
        """Wait."""
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    worker = agent("worker", tool_calls(("wait_forever", {}), ("wait_forever", {})), tools=[wait_forever])
    root = set_sub_agents(agent("router", transfer("worker")), [worker])
    before = asyncio.all_tasks()
    stream = Runner(root).query("x")

    async def consume() -> None:
        async for _ in stream:
            pass

    consumer = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 1)  # the worker's two tools are running
    consumer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await consumer
    await stream.aclose()
    assert cancelled.is_set()
    assert asyncio.all_tasks() - before == set()


async def test_closing_the_event_stream_between_events_stops_the_run() -> None:
    worker = agent("worker", assistant("never"))
    stream = Runner(set_sub_agents(agent("router", transfer("worker")), [worker])).query("x")
    await stream.__anext__()
    await stream.aclose()
    assert model_of(worker).requests == []


async def test_each_run_has_its_own_session() -> None:
    values = []

    a = agent("a", assistant("1"), assistant("2"), output_key="out")
    runner = Runner(a, session_values={"seed": 1})
    for text in ("first", "second"):
        ctx_events = await collect_events(runner.query(text))
        values.append(ctx_events[-1].message_output.message.content)  # type: ignore[union-attr]
    assert values == ["1", "2"]
    # The second run's model input holds only the second query: no history leaks between runs.
    assert [m.content for m in model_of(a).requests[1].messages] == ["second"]


async def test_a_custom_agents_streamed_message_is_joined_into_the_history() -> None:
    from batonflow.schema import Stream

    streamed = event_from_message(stream=Stream.from_list([assistant("part one, "), assistant("part two")]))
    handoff = event_from_message(assistant("over to b"))
    handoff.action = transfer_action("b")
    b = agent("b", assistant("done"))
    events = await collect_events(Runner(set_sub_agents(Scripted("a", [streamed, handoff]), [b])).query("x"))
    assert events[0].message_output is not None
    assert events[0].message_output.message == assistant("part one, part two")  # the caller still got every chunk
    assert isinstance(b.model, ScriptedModel)
    assert [m.content for m in b.model.requests[0].messages[1:3]] == [
        "x",
        "For context: [a] said: part one, part two.",
    ]


# -- a wrapper agent: another agent under its own name, with no sub-agents (Eino's "named agent") ---------------


class Named:
    """Runs ``inner`` (a flow agent, so with an address of its own below this one) under another name."""

    def __init__(self, name: str, inner: FlowAgent, *, resumable: bool = True) -> None:
        self.name, self.description, self.inner = name, f"{name} agent", inner
        if resumable:
            self.resume = lambda info, ctx=None: self.inner.resume(info, ctx)

    def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        return self.inner.run(input, ctx)


@tool(threaded=False)
def confirm(ctx: ToolContext) -> str:
    """Ask for a confirmation."""
    return f"confirmed: {ctx.ask('go ahead?')}"


def wrapped_asker(*, resumable: bool = True) -> tuple[Runner, ChatModelAgent]:
    inner = agent("asker", tool_calls(("confirm", {})), assistant("all set"), tools=[confirm])
    router = agent("router", transfer("project"))
    tree = set_sub_agents(router, [Named("project", FlowAgent(inner), resumable=resumable)])
    return Runner(tree, checkpoint_store=MemoryCheckpointStore()), inner


async def test_a_wrapper_agent_without_sub_agents_passes_the_resume_to_the_agent_it_wraps() -> None:
    runner, inner = wrapped_asker()
    events = await collect_events(runner.query("set it up", checkpoint_id="c"))
    action = events[-1].action
    assert action is not None and action.interrupted is not None
    [asked] = action.interrupted.interrupt_contexts
    assert asked.address == "agent:router;agent:project;agent:asker;tool:confirm:call_1"
    resumed = await collect_events(runner.resume("c", targets={asked.id: "yes"}))
    assert [e.error for e in resumed] == [None, None]
    assert [e.message_output.message.content for e in resumed if e.message_output] == [  # type: ignore[union-attr]
        "confirmed: yes",
        "all set",
    ]
    assert paths(resumed) == [["router", "project", "asker"]] * 2
    model_of(inner).assert_complete()


async def test_a_wrapper_that_cannot_resume_says_how_to_make_it_resumable() -> None:
    runner, _ = wrapped_asker(resumable=False)
    events = await collect_events(runner.query("set it up", checkpoint_id="c"))
    action = events[-1].action
    assert action is not None and action.interrupted is not None
    [asked] = action.interrupted.interrupt_contexts
    resumed = await collect_events(runner.resume("c", targets={asked.id: "yes"}))
    assert str(resumed[-1].error) == (
        "failed to resume agent: agent 'project' (type Named) has no sub-agents and does not implement "
        "ResumableAgent interface. To support resume, your custom agent wrapper must implement the ResumableAgent "
        "interface"
    )

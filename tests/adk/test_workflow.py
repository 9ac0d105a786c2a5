import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from batonflow.adk import (
    AgentAction,
    AgentEvent,
    AgentInput,
    BreakLoopAction,
    ChatModelAgent,
    InterruptCtx,
    InterruptInfo,
    LoopAgent,
    ParallelAgent,
    ResumeInfo,
    RunContext,
    Runner,
    RunStep,
    SequentialAgent,
    break_loop_action,
    collect_events,
    event_from_message,
    exit_action,
    set_sub_agents,
    stateful_interrupt,
    transfer_action,
)
from batonflow.errors import TransferError, UserError
from batonflow.schema import Message, assistant
from batonflow.store import CheckpointStore, MemoryCheckpointStore, SqliteCheckpointStore
from batonflow.testing import ScriptedModel, ScriptStep, tool_calls
from batonflow.tools import Tool, ToolContext, tool

# -- helpers ---------------------------------------------------------------------------------------------------------


def agent(name: str, *responses: ScriptStep, **kw: Any) -> ChatModelAgent:
    return ChatModelAgent(name=name, description=f"{name} agent", model=ScriptedModel(list(responses)), **kw)


def model_of(a: ChatModelAgent) -> ScriptedModel:
    assert isinstance(a.model, ScriptedModel)
    return a.model


def paths(events: list[AgentEvent]) -> list[list[str]]:
    return [[str(s) for s in e.run_path] for e in events]


def said(events: list[AgentEvent]) -> list[tuple[str, str]]:
    """(agent, text) of every event carrying a message."""
    found = []
    for e in events:
        variant = e.message_output
        if variant is not None:
            assert variant.message is not None  # collect_events joined any stream
            found.append((e.agent_name, variant.message.content))
    return found


def seen(a: ChatModelAgent, call: int = 0) -> list[tuple[str, str]]:
    """(role, content) of each message the agent's model was given in its ``call``-th request."""
    return [(m.role, m.content) for m in model_of(a).requests[call].messages]


def interrupts(events: list[AgentEvent]) -> list[AgentEvent]:
    return [e for e in events if e.action is not None and e.action.interrupted is not None]


def interrupt_of(events: list[AgentEvent]) -> InterruptInfo:
    [event] = interrupts(events)
    assert event is events[-1]
    assert event.action is not None and isinstance(event.action.interrupted, InterruptInfo)
    return event.action.interrupted


def chain(ctx: InterruptCtx) -> list[tuple[str, Any, bool]]:
    """A root cause and its parents, innermost first: (address, info, is_root_cause)."""
    found = []
    node: InterruptCtx | None = ctx
    while node is not None:
        found.append((node.address, node.info, node.is_root_cause))
        node = node.parent
    return found


def errors(events: list[AgentEvent]) -> list[BaseException]:
    return [e.error for e in events if e.error is not None]


class Desk:
    """Tools whose side effects are counted: ``approve`` interrupts until the resume targets it."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.approved: list[str] = []
        self.lookups: list[str] = []

    def tools(self) -> list[Tool]:
        @tool(threaded=False)
        def approve(item: str, ctx: ToolContext) -> str:
            """Ask a human to approve an item."""
            saved = ctx.get_interrupt_state()
            target = ctx.get_resume_context()
            if not saved.was_interrupted or not target.is_resume_target:
                self.asked.append(item)
                ctx.interrupt(f"approve {item}?", state=item)
            self.approved.append(item)
            return f"{item} approved with {target.data}"

        @tool(threaded=False)
        def lookup(item: str) -> str:
            """Look an item up."""
            self.lookups.append(item)
            return f"{item} found"

        return [approve, lookup]


def approve(item: str) -> Message:
    return tool_calls(("approve", {"item": item}))


class Step:
    """A custom agent that says '<name> <n>' on its n-th run; ``actions[n]`` builds the action of that run's event."""

    def __init__(self, name: str, actions: dict[int, Callable[[], AgentAction]] | None = None) -> None:
        self.name, self.description = name, f"{name} step"
        self.actions = actions or {}
        self.inputs: list[list[tuple[str, str]]] = []

    @property
    def runs(self) -> int:
        return len(self.inputs)

    async def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        await asyncio.sleep(0)  # a real suspension point: a loop that never ends still lets run_all's deadline fire
        self.inputs.append([(m.role, m.content) for m in input.messages])
        event = event_from_message(assistant(f"{self.name} {self.runs}"))
        make = self.actions.get(self.runs)
        if make is not None:
            event.action = make()
        yield event


def meeting(me: asyncio.Event, other: asyncio.Event, result: str) -> Tool:
    """A tool that only returns once the other branch's tool is running too (so the branches must overlap)."""

    @tool
    async def meet() -> str:
        """Meet the other branch."""
        me.set()
        await asyncio.wait_for(other.wait(), 2)
        return result

    return meet


async def run_all(stream: Any) -> list[AgentEvent]:
    """Every event of a run, within a deadline: a workflow that blocks fails the test instead of hanging it."""
    return await asyncio.wait_for(collect_events(stream), 10)


# -- Sequential ------------------------------------------------------------------------------------------------------


async def test_sequential_runs_sub_agents_in_order_with_an_accumulating_run_path() -> None:
    a, b, c = agent("a", assistant("A")), agent("b", assistant("B")), agent("c", assistant("C"))
    events = await run_all(Runner(SequentialAgent(name="seq", sub_agents=[a, b, c])).query("go"))
    assert said(events) == [("a", "A"), ("b", "B"), ("c", "C")]
    assert paths(events) == [["seq", "a"], ["seq", "a", "b"], ["seq", "a", "b", "c"]]
    assert all(e.run_path and isinstance(e.run_path[0], RunStep) for e in events)


async def test_sequential_sub_agents_cannot_transfer_back_to_the_workflow() -> None:
    a = agent("a", assistant("A"))
    await run_all(Runner(SequentialAgent(name="seq", sub_agents=[a])).query("go"))
    assert model_of(a).requests[0].tools == []  # no transfer tool: the parent is off limits, there are no children


async def test_transfer_from_a_sub_agent_to_its_workflow_fails() -> None:
    a, b = Step("a", {1: lambda: transfer_action("seq")}), Step("b")
    events = await run_all(Runner(SequentialAgent(name="seq", sub_agents=[a, b])).query("go"))
    assert str(events[-1].error) == "transfer failed: agent 'seq' not found when transferring from 'a'"
    assert b.runs == 0


@pytest.mark.parametrize(
    "make",
    [
        lambda subs: SequentialAgent(name="wf", sub_agents=subs),
        lambda subs: LoopAgent(name="wf", sub_agents=subs, max_iterations=1),
        lambda subs: ParallelAgent(name="wf", sub_agents=subs),
    ],
    ids=["sequential", "loop", "parallel"],
)
async def test_a_workflow_runs_on_its_own_without_a_runner(make: Callable[[list[Any]], Any]) -> None:
    a = agent("a", assistant("A"))
    events = [e async for e in make([a]).run(AgentInput(messages=[Message(role="user", content="hi")]))]
    assert said(events) == [("a", "A")]
    assert paths(events) == [["wf", "a"]]
    assert seen(a) == [("user", "hi")]


async def test_later_sequential_agent_sees_earlier_agents_messages_rewritten_as_context() -> None:
    desk = Desk()
    a = agent("a", tool_calls(("lookup", {"item": "order 7"})), assistant("order 7 shipped"), tools=desk.tools())
    b = agent("b", assistant("B"))
    c = agent("c", assistant("C"))
    await run_all(Runner(SequentialAgent(name="seq", sub_agents=[a, b, c])).query("where is my order?"))
    assert seen(b) == [
        ("user", "where is my order?"),
        ("user", 'For context: [a] called tool: `lookup` with arguments: {"item": "order 7"}.'),
        ("user", "For context: [a] `lookup` tool returned result: order 7 found."),
        ("user", "For context: [a] said: order 7 shipped."),
    ]
    assert seen(c)[-1] == ("user", "For context: [b] said: B.")
    assert len(seen(c)) == 5


async def test_sequential_history_of_streamed_messages_reaches_the_next_agent() -> None:
    a, b = agent("a", assistant("streamed words from a")), agent("b", assistant("B"))
    runner = Runner(SequentialAgent(name="seq", sub_agents=[a, b]), enable_streaming=True)
    events = await run_all(runner.query("go"))
    assert said(events) == [("a", "streamed words from a"), ("b", "B")]
    assert seen(b)[1:] == [("user", "For context: [a] said: streamed words from a.")]


async def test_sequential_error_event_is_forwarded_and_stops_the_sequence() -> None:
    a = agent("a", RuntimeError("model down"))
    b = agent("b", assistant("never"))
    events = await run_all(Runner(SequentialAgent(name="seq", sub_agents=[a, b])).query("go"))
    [error] = errors(events)
    assert isinstance(error, RuntimeError)
    assert str(error) == "model down"
    assert events[-1].error is error
    assert paths(events)[-1] == ["seq", "a"]
    assert model_of(b).requests == []


async def test_sequential_stops_after_an_exit_tool() -> None:
    a = agent("a", tool_calls(("exit", {"final_result": "bye"})), exit=True)
    b = agent("b", assistant("never"))
    events = await run_all(Runner(SequentialAgent(name="seq", sub_agents=[a, b])).query("go"))
    last = events[-1]
    assert last.action == exit_action()
    assert said(events)[-1] == ("a", "bye")
    assert model_of(b).requests == []


async def test_sequential_stops_after_a_custom_agents_exit_action() -> None:
    quitter, after = Step("quitter", {1: exit_action}), Step("after")
    events = await run_all(Runner(SequentialAgent(name="seq", sub_agents=[quitter, after])).query("go"))
    assert said(events) == [("quitter", "quitter 1")]
    assert after.runs == 0


async def test_sequential_forwards_a_sub_agents_transfer_and_carries_on() -> None:
    # The sub-agent transfers to its own sub-agent: its flow agent follows the transfer, the workflow does not.
    router = agent("router", tool_calls(("transfer_to_agent", {"agent_name": "helper"})))
    helper = agent("helper", assistant("helped"))
    b = agent("b", assistant("B"))
    seq = SequentialAgent(name="seq", sub_agents=[set_sub_agents(router, [helper]), b])
    events = await run_all(Runner(seq).query("go"))
    assert [t.name for t in model_of(router).requests[0].tools] == ["transfer_to_agent"]
    assert events[1].action == transfer_action("helper")
    assert paths(events) == [["seq", "router"], ["seq", "router"], ["seq", "router", "helper"], ["seq", "router", "b"]]
    assert said(events)[2:] == [("helper", "helped"), ("b", "B")]


class ForwardsTransfer:
    """Ends with an event forwarded from an inner agent (it has its own run path) whose action is a transfer:
    the flow agent neither records it nor acts on it, so the workflow sees a transfer as the last action."""

    name, description = "wrapper", "forwards an inner agent's events"

    async def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        assert ctx is not None
        inner = event_from_message(assistant("inner wants b"))
        inner.agent_name, inner.run_path = "inner", (*ctx.run_path, RunStep("inner"))
        inner.action = transfer_action("b")
        yield inner


async def test_sequential_ignores_a_transfer_as_the_last_action_of_a_sub_agent() -> None:
    b, c = Step("b"), Step("c")
    events = await run_all(Runner(SequentialAgent(name="seq", sub_agents=[ForwardsTransfer(), b, c])).query("go"))
    assert events[0].action == transfer_action("b")  # forwarded
    assert said(events) == [("inner", "inner wants b"), ("b", "b 1"), ("c", "c 1")]
    assert paths(events)[1:] == [["seq", "wrapper", "b"], ["seq", "wrapper", "b", "c"]]
    assert errors(events) == []


async def test_transfer_to_a_sibling_fails_and_stops_the_sequence() -> None:
    a, b, c = Step("a", {1: lambda: transfer_action("b")}), Step("b"), Step("c")
    events = await run_all(Runner(SequentialAgent(name="seq", sub_agents=[a, b, c])).query("go"))
    [error] = errors(events)
    assert isinstance(error, TransferError)
    assert str(error) == "transfer failed: agent 'b' not found when transferring from 'a'"
    assert events[-1].error is error
    assert paths(events)[-1] == ["seq", "a"]
    assert (b.runs, c.runs) == (0, 0)


async def test_interrupt_in_the_middle_of_a_sequence_and_resume_from_there() -> None:
    desk = Desk()
    a = agent("a", assistant("A"))
    b = agent(
        "b",
        tool_calls(("lookup", {"item": "order"}), ("approve", {"item": "refund"})),
        assistant("B"),
        tools=desk.tools(),
    )
    c = agent("c", assistant("C"))
    runner = Runner(SequentialAgent(name="seq", sub_agents=[a, b, c]), checkpoint_store=MemoryCheckpointStore())
    events = await run_all(runner.query("go", checkpoint_id="s"))

    info = interrupt_of(events)
    assert info.data == "Sequential workflow interrupted"
    [root] = info.interrupt_contexts
    # The address does not chain the sibling that ran before (the run path does).
    assert chain(root) == [
        ("agent:seq;agent:b;tool:approve:call_2", "approve refund?", True),
        ("agent:seq;agent:b", None, False),
        ("agent:seq", "Sequential workflow interrupted", False),
    ]
    assert (events[-1].agent_name, paths(events)[-1]) == ("b", ["seq", "a", "b"])
    assert said(events) == [("a", "A"), ("b", ""), ("b", "order found")]
    assert (desk.lookups, desk.asked, desk.approved) == (["order"], ["refund"], [])

    resumed = await run_all(runner.resume("s", targets={root.id: "yes"}))
    assert said(resumed) == [("b", "refund approved with yes"), ("b", "B"), ("c", "C")]
    assert paths(resumed) == [["seq", "a", "b"], ["seq", "a", "b"], ["seq", "a", "b", "c"]]
    assert (desk.lookups, desk.approved) == (["order"], ["refund"])  # the finished lookup was not run again
    assert len(model_of(a).requests) == 1
    assert [role for role, _ in seen(b, 1)] == ["user", "user", "assistant", "tool", "tool"]
    assert seen(c) == [
        ("user", "go"),
        ("user", "For context: [a] said: A."),
        (
            "user",
            'For context: [b] called tool: `lookup` with arguments: {"item": "order"}. '
            '[b] called tool: `approve` with arguments: {"item": "refund"}.',
        ),
        ("user", "For context: [b] `lookup` tool returned result: order found."),
        ("user", "For context: [b] `approve` tool returned result: refund approved with yes."),
        ("user", "For context: [b] said: B."),
    ]
    assert errors(resumed) == []


class Approver:
    """A custom agent that interrupts itself and reports, on resume, what it was told."""

    name, description = "approver", "asks for a yes"

    def __init__(self) -> None:
        self.resumed: list[ResumeInfo] = []

    async def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        assert ctx is not None
        yield stateful_interrupt(ctx, "need a yes", {"step": 1})

    async def resume(self, info: ResumeInfo, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        self.resumed.append(info)
        yield event_from_message(assistant(f"got {info.resume_data}"))


async def test_custom_agent_interrupting_in_a_sequence_gets_its_state_and_data_back() -> None:
    approver, before, after = Approver(), Step("before"), Step("after")
    runner = Runner(
        SequentialAgent(name="seq", sub_agents=[before, approver, after]), checkpoint_store=MemoryCheckpointStore()
    )
    [root] = interrupt_of(await run_all(runner.query("go", checkpoint_id="c"))).interrupt_contexts
    assert chain(root) == [
        ("agent:seq;agent:approver", "need a yes", True),
        ("agent:seq", "Sequential workflow interrupted", False),
    ]
    resumed = await run_all(runner.resume("c", {root.id: "yes"}))
    assert said(resumed) == [("approver", "got yes"), ("after", "after 1")]
    [info] = approver.resumed
    assert (info.was_interrupted, info.interrupt_state, info.is_resume_target) == (True, {"step": 1}, True)
    assert before.runs == 1
    assert after.inputs[0][1:] == [
        ("user", "For context: [before] said: before 1."),
        ("user", "For context: [approver] said: got yes."),
    ]


# -- Loop ------------------------------------------------------------------------------------------------------------


async def test_loop_runs_max_iterations_times_and_the_run_path_grows_across_iterations() -> None:
    a = agent("a", assistant("a1"), assistant("a2"), assistant("a3"))
    b = agent("b", assistant("b1"), assistant("b2"), assistant("b3"))
    events = await run_all(Runner(LoopAgent(name="loop", sub_agents=[a, b], max_iterations=3)).query("go"))
    assert said(events) == [("a", "a1"), ("b", "b1"), ("a", "a2"), ("b", "b2"), ("a", "a3"), ("b", "b3")]
    assert paths(events) == [
        ["loop", "a"],
        ["loop", "a", "b"],
        ["loop", "a", "b", "a"],
        ["loop", "a", "b", "a", "b"],
        ["loop", "a", "b", "a", "b", "a"],
        ["loop", "a", "b", "a", "b", "a", "b"],
    ]
    assert (len(model_of(a).requests), len(model_of(b).requests)) == (3, 3)
    # Each iteration sees the ones before: its own earlier answers verbatim, the other agent's rewritten.
    assert seen(b, 1) == [
        ("user", "go"),
        ("user", "For context: [a] said: a1."),
        ("assistant", "b1"),
        ("user", "For context: [a] said: a2."),
    ]


async def test_loop_without_max_iterations_runs_until_a_sub_agent_breaks_it() -> None:
    a = Step("a")
    breaker = Step("breaker", {3: lambda: AgentAction(break_loop=BreakLoopAction(from_agent="breaker"))})
    c = Step("c")
    events = await run_all(Runner(LoopAgent(name="loop", sub_agents=[a, breaker, c])).query("go"))
    assert [name for name, _ in said(events)] == ["a", "breaker", "c"] * 2 + ["a", "breaker"]
    assert (a.runs, breaker.runs, c.runs) == (3, 3, 2)  # the rest of the breaking iteration is skipped
    last = events[-1].action
    assert last is not None
    # Claimed by this loop (outer loops ignore it), in its third iteration (counted from 0).
    assert last.break_loop == BreakLoopAction(from_agent="breaker", done=True, current_iterations=2)


async def test_break_ends_the_loop_even_before_max_iterations() -> None:
    breaker = Step("breaker", {2: lambda: break_loop_action("breaker")})
    events = await run_all(Runner(LoopAgent(name="loop", sub_agents=[breaker], max_iterations=5)).query("go"))
    assert said(events) == [("breaker", "breaker 1"), ("breaker", "breaker 2")]
    assert events[-1].action is not None
    assert events[-1].action.break_loop == BreakLoopAction(from_agent="breaker", done=True, current_iterations=1)


async def test_break_in_a_nested_loop_ends_only_the_inner_loop() -> None:
    x, after = Step("x"), Step("after")
    breaker = Step("breaker", {n: (lambda: break_loop_action("breaker")) for n in (2, 4)})
    inner = LoopAgent(name="inner", sub_agents=[x, breaker])
    outer = LoopAgent(name="outer", sub_agents=[inner, after], max_iterations=2)
    events = await run_all(Runner(outer).query("go"))
    assert [name for name, _ in said(events)] == ["x", "breaker", "x", "breaker", "after"] * 2
    breaks = [e.action.break_loop for e in events if e.action is not None]
    assert breaks == [BreakLoopAction(from_agent="breaker", done=True, current_iterations=1)] * 2


async def test_exit_in_a_nested_loop_stops_every_loop() -> None:
    x, after = Step("x"), Step("after")
    quitter = Step("quitter", {2: exit_action})
    inner = LoopAgent(name="inner", sub_agents=[x, quitter], max_iterations=3)
    outer = LoopAgent(name="outer", sub_agents=[inner, after], max_iterations=3)
    events = await run_all(Runner(outer).query("go"))
    assert [name for name, _ in said(events)] == ["x", "quitter", "x", "quitter"]
    assert events[-1].action == exit_action()
    assert after.runs == 0


async def test_loop_error_event_stops_the_loop() -> None:
    a = agent("a", assistant("a1"), RuntimeError("model down"))
    b = Step("b")
    events = await run_all(Runner(LoopAgent(name="loop", sub_agents=[a, b], max_iterations=3)).query("go"))
    assert [str(e) for e in errors(events)] == ["model down"]
    assert events[-1].error is not None
    assert b.runs == 1


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_loop_interrupted_in_its_second_iteration_resumes_there(tmp_path: Path, backend: str) -> None:
    memory = MemoryCheckpointStore()

    def open_store() -> CheckpointStore:
        # SQLite: a new store object on the same file, as another process would open it.
        return memory if backend == "memory" else SqliteCheckpointStore(tmp_path / "x.db")

    desk = Desk()
    a = agent("a", assistant("a1"), assistant("a2"), assistant("a3"))
    b = agent("b", assistant("b1"), approve("second"), assistant("b2"), assistant("b3"), tools=desk.tools())
    loop = LoopAgent(name="loop", sub_agents=[a, b], max_iterations=3)
    store = open_store()
    events = await run_all(Runner(loop, checkpoint_store=store).query("go", checkpoint_id="l"))
    info = interrupt_of(events)
    assert info.data == "Loop workflow interrupted"
    [root] = info.interrupt_contexts
    assert chain(root) == [
        ("agent:loop;agent:b;tool:approve:call_1", "approve second?", True),
        ("agent:loop;agent:b", None, False),
        ("agent:loop", "Loop workflow interrupted", False),
    ]
    assert paths(events)[-1] == ["loop", "a", "b", "a", "b"]
    assert (len(model_of(a).requests), len(model_of(b).requests)) == (2, 2)
    if backend == "sqlite":
        await store.close()
    store = open_store()
    resumed = await run_all(Runner(loop, checkpoint_store=store).resume("l", {root.id: "ok"}))
    assert said(resumed) == [("b", "second approved with ok"), ("b", "b2"), ("a", "a3"), ("b", "b3")]
    # Rebuilt: one whole iteration, then the names before the interrupted index.
    assert paths(resumed) == [
        ["loop", "a", "b", "a", "b"],
        ["loop", "a", "b", "a", "b"],
        ["loop", "a", "b", "a", "b", "a"],
        ["loop", "a", "b", "a", "b", "a", "b"],
    ]
    assert (len(model_of(a).requests), len(model_of(b).requests)) == (3, 4)  # nothing before the interrupt re-ran
    assert desk.approved == ["second"]
    assert seen(a, 2)[-3:] == [
        ("user", 'For context: [b] called tool: `approve` with arguments: {"item": "second"}.'),
        ("user", "For context: [b] `approve` tool returned result: second approved with ok."),
        ("user", "For context: [b] said: b2."),
    ]
    assert errors(resumed) == []
    assert await store.get("l") is None
    await store.close()


async def test_resumed_interrupt_is_spent_and_the_next_iteration_interrupts_afresh() -> None:
    desk = Desk()
    b = agent("b", approve("first"), assistant("one"), approve("second"), assistant("two"), tools=desk.tools())
    runner = Runner(LoopAgent(name="loop", sub_agents=[b], max_iterations=2), checkpoint_store=MemoryCheckpointStore())
    [first] = interrupt_of(await run_all(runner.query("go", checkpoint_id="l"))).interrupt_contexts

    events = await run_all(runner.resume("l", {first.id: "yes"}))
    # Same agent, same tool call id, same address: a fresh interrupt all the same, not the resumed one's state.
    [second] = interrupt_of(events).interrupt_contexts
    assert second.address == first.address == "agent:loop;agent:b;tool:approve:call_1"
    assert second.info == "approve second?"
    assert second.id != first.id
    assert said(events) == [("b", "first approved with yes"), ("b", "one"), ("b", "")]
    assert (desk.asked, desk.approved) == (["first", "second"], ["first"])

    events = await run_all(runner.resume("l", {second.id: "sure"}))
    assert said(events) == [("b", "second approved with sure"), ("b", "two")]
    assert paths(events) == [["loop", "b", "b"]] * 2
    assert desk.approved == ["first", "second"]
    assert model_of(b).remaining == 0


# -- Parallel --------------------------------------------------------------------------------------------------------


async def test_parallel_branches_run_concurrently() -> None:
    x_in, y_in = asyncio.Event(), asyncio.Event()
    x = agent("x", tool_calls(("meet", {})), assistant("x done"), tools=[meeting(x_in, y_in, "x met y")])
    y = agent("y", tool_calls(("meet", {})), assistant("y done"), tools=[meeting(y_in, x_in, "y met x")])
    events = await run_all(Runner(ParallelAgent(name="par", sub_agents=[x, y])).query("go"))
    assert errors(events) == []
    assert sorted(said(events)) == [
        ("x", ""),
        ("x", "x done"),
        ("x", "x met y"),
        ("y", ""),
        ("y", "y done"),
        ("y", "y met x"),
    ]
    assert {tuple(path) for path in paths(events)} == {("par", "x"), ("par", "y")}


async def test_parallel_branch_sees_history_from_before_the_fork_but_not_its_siblings() -> None:
    x_in, y_in = asyncio.Event(), asyncio.Event()
    first = agent("first", assistant("plan ready"))
    x1 = agent("x1", tool_calls(("meet", {})), assistant("x1 done"), tools=[meeting(x_in, y_in, "x1 met y")])
    x2 = agent("x2", assistant("x2 done"))
    y = agent("y", tool_calls(("meet", {})), assistant("y done"), tools=[meeting(y_in, x_in, "y met x1")])
    last = agent("last", assistant("summary"))
    par = ParallelAgent(name="par", sub_agents=[SequentialAgent(name="xs", sub_agents=[x1, x2]), y])
    events = await run_all(Runner(SequentialAgent(name="seq", sub_agents=[first, par, last])).query("go"))
    assert errors(events) == []
    before_fork = [("user", "go"), ("user", "For context: [first] said: plan ready.")]
    assert seen(x1) == seen(y) == before_fork
    # x2 starts after y's tool call was recorded (the tools met), yet sees only its own branch.
    assert seen(x2) == [
        *before_fork,
        ("user", "For context: [x1] called tool: `meet` with arguments: {}."),
        ("user", "For context: [x1] `meet` tool returned result: x1 met y."),
        ("user", "For context: [x1] said: x1 done."),
    ]
    # After the join, everything: the branches' events merged by time, each branch's in its own order.
    joined = seen(last)[2:]
    x_part = [
        ("user", "For context: [x1] called tool: `meet` with arguments: {}."),
        ("user", "For context: [x1] `meet` tool returned result: x1 met y."),
        ("user", "For context: [x1] said: x1 done."),
        ("user", "For context: [x2] said: x2 done."),
    ]
    y_part = [
        ("user", "For context: [y] called tool: `meet` with arguments: {}."),
        ("user", "For context: [y] `meet` tool returned result: y met x1."),
        ("user", "For context: [y] said: y done."),
    ]
    assert seen(last)[:2] == before_fork
    assert sorted(joined) == sorted(x_part + y_part)
    assert [m for m in joined if m in x_part] == x_part
    assert [m for m in joined if m in y_part] == y_part
    assert paths(events)[-1] == ["seq", "first", "par", "last"]


class Turns:
    """A custom agent taking turns with another: before each line it waits for its cue, after it gives one."""

    def __init__(self, name: str, lines: list[tuple[asyncio.Event | None, str, asyncio.Event | None]]) -> None:
        self.name, self.description = name, f"{name} speaker"
        self.lines = lines

    async def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        for cue, text, then in self.lines:
            if cue is not None:
                await asyncio.wait_for(cue.wait(), 2)
            yield event_from_message(assistant(text))
            if then is not None:
                then.set()  # the event above is recorded by now: the flow agent records before it forwards


async def test_parallel_events_reach_the_caller_as_produced_and_join_the_history_by_time() -> None:
    e1, e2, e3 = asyncio.Event(), asyncio.Event(), asyncio.Event()
    x = Turns("x", [(None, "x1", e1), (e2, "x2", e3)])
    y = Turns("y", [(e1, "y1", e2), (e3, "y2", None)])
    last = agent("last", assistant("done"))
    seq = SequentialAgent(name="seq", sub_agents=[ParallelAgent(name="par", sub_agents=[x, y]), last])
    events = await run_all(Runner(seq).query("go"))
    assert said(events) == [("x", "x1"), ("y", "y1"), ("x", "x2"), ("y", "y2"), ("last", "done")]
    assert seen(last) == [
        ("user", "go"),
        ("user", "For context: [x] said: x1."),
        ("user", "For context: [y] said: y1."),
        ("user", "For context: [x] said: x2."),
        ("user", "For context: [y] said: y2."),
    ]


async def test_closing_the_event_stream_cancels_every_parallel_branch() -> None:
    started = {"x": asyncio.Event(), "y": asyncio.Event()}
    cancelled: list[str] = []

    def waiting(name: str) -> Tool:
        @tool
        async def wait() -> str:
            """Wait for a long time."""
            started[name].set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                cancelled.append(name)
                raise
            return "never"

        return wait

    x = agent("x", tool_calls(("wait", {})), tools=[waiting("x")])
    y = agent("y", tool_calls(("wait", {})), tools=[waiting("y")])
    before = asyncio.all_tasks()
    stream = Runner(ParallelAgent(name="par", sub_agents=[x, y])).query("go")
    await stream.__anext__()
    await asyncio.wait_for(asyncio.gather(started["x"].wait(), started["y"].wait()), 2)
    await stream.aclose()
    assert sorted(cancelled) == ["x", "y"]
    assert asyncio.all_tasks() - before == set()


def branches(desk: Desk) -> tuple[ChatModelAgent, ChatModelAgent, ChatModelAgent]:
    """Two branches that ask for approval and one that just answers."""
    p = agent("p", approve("p-item"), assistant("p done"), tools=desk.tools())
    q = agent("q", approve("q-item"), assistant("q done"), tools=desk.tools())
    r = agent("r", assistant("r done"))
    return p, q, r


async def test_parallel_interrupts_are_gathered_into_one_while_other_branches_finish() -> None:
    desk = Desk()
    p, q, r = branches(desk)
    runner = Runner(ParallelAgent(name="par", sub_agents=[p, q, r]), checkpoint_store=MemoryCheckpointStore())
    events = await run_all(runner.query("go", checkpoint_id="p"))
    info = interrupt_of(events)  # one interrupt event, the last
    assert info.data == "Parallel workflow interrupted"
    assert (events[-1].agent_name, paths(events)[-1]) == ("par", ["par"])
    assert sorted(chain(c) for c in info.interrupt_contexts) == [
        [
            ("agent:par;agent:p;tool:approve:call_1", "approve p-item?", True),
            ("agent:par;agent:p", None, False),
            ("agent:par", "Parallel workflow interrupted", False),
        ],
        [
            ("agent:par;agent:q;tool:approve:call_1", "approve q-item?", True),
            ("agent:par;agent:q", None, False),
            ("agent:par", "Parallel workflow interrupted", False),
        ],
    ]
    assert ("r", "r done") in said(events)
    assert sorted(desk.asked) == ["p-item", "q-item"]

    ids = [c.id for c in info.interrupt_contexts]
    resumed = await run_all(runner.resume("p", dict.fromkeys(ids, "ok")))
    assert sorted(said(resumed)) == [
        ("p", "p done"),
        ("p", "p-item approved with ok"),
        ("q", "q done"),
        ("q", "q-item approved with ok"),
    ]
    assert {tuple(path) for path in paths(resumed)} == {("par", "p"), ("par", "q")}
    assert len(model_of(r).requests) == 1  # the finished branch did not run again
    assert sorted(desk.approved) == ["p-item", "q-item"]
    assert errors(resumed) == []
    assert interrupts(resumed) == []


def pipeline(desk: Desk) -> tuple[SequentialAgent, dict[str, ChatModelAgent]]:
    first = agent("first", assistant("plan ready"))
    p, q, r = branches(desk)
    last = agent("last", assistant("summary"))
    seq = SequentialAgent(name="seq", sub_agents=[first, ParallelAgent(name="par", sub_agents=[p, q, r]), last])
    return seq, {"first": first, "p": p, "q": q, "r": r, "last": last}


JOINED = [
    'For context: [p] called tool: `approve` with arguments: {"item": "p-item"}.',
    "For context: [p] `approve` tool returned result: p-item approved with ok.",
    "For context: [p] said: p done.",
    'For context: [q] called tool: `approve` with arguments: {"item": "q-item"}.',
    "For context: [q] `approve` tool returned result: q-item approved with ok.",
    "For context: [q] said: q done.",
    "For context: [r] said: r done.",
]


async def test_parallel_resume_of_every_branch_joins_all_lanes_into_the_session() -> None:
    desk = Desk()
    seq, agents = pipeline(desk)
    runner = Runner(seq, checkpoint_store=MemoryCheckpointStore())
    info = interrupt_of(await run_all(runner.query("go", checkpoint_id="c")))
    assert info.data == "Sequential workflow interrupted"
    assert sorted(c.address for c in info.interrupt_contexts) == [
        "agent:seq;agent:par;agent:p;tool:approve:call_1",
        "agent:seq;agent:par;agent:q;tool:approve:call_1",
    ]
    assert [a for a, _, _ in chain(info.interrupt_contexts[0])[-2:]] == ["agent:seq;agent:par", "agent:seq"]
    assert [i for _, i, _ in chain(info.interrupt_contexts[0])[-2:]] == [
        "Parallel workflow interrupted",
        "Sequential workflow interrupted",
    ]
    resumed = await run_all(runner.resume("c", {c.id: "ok" for c in info.interrupt_contexts}))
    assert said(resumed)[-1] == ("last", "summary")
    assert paths(resumed)[-1] == ["seq", "first", "par", "last"]
    assert [len(model_of(agents[n]).requests) for n in ("first", "p", "q", "r")] == [1, 2, 2, 1]
    # The finished branch's lane was kept in the checkpoint and joined with the others.
    assert seen(agents["last"])[:2] == [("user", "go"), ("user", "For context: [first] said: plan ready.")]
    assert sorted(content for _, content in seen(agents["last"])[2:]) == sorted(JOINED)


async def test_parallel_resume_of_one_branch_reinterrupts_the_other_with_the_same_id() -> None:
    desk = Desk()
    seq, agents = pipeline(desk)
    runner = Runner(seq, checkpoint_store=MemoryCheckpointStore())
    info = interrupt_of(await run_all(runner.query("go", checkpoint_id="c")))
    ids = {c.address.split(";")[2]: c.id for c in info.interrupt_contexts}

    events = await run_all(runner.resume("c", {ids["agent:p"]: "ok"}))
    [again] = interrupt_of(events).interrupt_contexts
    assert (again.id, again.address) == (ids["agent:q"], "agent:seq;agent:par;agent:q;tool:approve:call_1")
    assert sorted(said(events)) == [("p", "p done"), ("p", "p-item approved with ok")]
    assert (sorted(desk.asked), desk.approved) == (["p-item", "q-item", "q-item"], ["p-item"])  # q asked again

    events = await run_all(runner.resume("c", {ids["agent:q"]: "ok"}))
    assert said(events) == [("q", "q-item approved with ok"), ("q", "q done"), ("last", "summary")]
    assert [len(model_of(agents[n]).requests) for n in ("first", "p", "q", "r")] == [1, 2, 2, 1]
    assert sorted(desk.approved) == ["p-item", "q-item"]
    assert sorted(content for _, content in seen(agents["last"])[2:]) == sorted(JOINED)


@pytest.mark.parametrize("streaming", [False, True], ids=["whole", "streamed"])
async def test_parallel_resume_across_an_sqlite_store(tmp_path: Path, streaming: bool) -> None:
    desk = Desk()
    seq, agents = pipeline(desk)
    async with SqliteCheckpointStore(tmp_path / "x.db") as store:
        runner = Runner(seq, checkpoint_store=store, enable_streaming=streaming)
        info = interrupt_of(await run_all(runner.query("go", checkpoint_id="c")))
    async with SqliteCheckpointStore(tmp_path / "x.db") as store:
        resumed = await run_all(
            Runner(seq, checkpoint_store=store).resume("c", {c.id: "ok" for c in info.interrupt_contexts})
        )
        assert errors(resumed) == []
        assert said(resumed)[-1] == ("last", "summary")
        assert [len(model_of(agents[n]).requests) for n in ("first", "p", "q", "r")] == [1, 2, 2, 1]
        assert sorted(content for _, content in seen(agents["last"])[2:]) == sorted(JOINED)
        assert await store.get("c") is None


# -- bad input -------------------------------------------------------------------------------------------------------


WORKFLOWS = [SequentialAgent, LoopAgent, ParallelAgent]


@pytest.mark.parametrize("kind", WORKFLOWS)
def test_duplicate_sub_agent_names_are_a_user_error(kind: type[SequentialAgent]) -> None:
    with pytest.raises(UserError, match=r"^sub-agents of 'wf': expected unique names, got \['a'\] more than once$"):
        kind(name="wf", sub_agents=[agent("a"), Step("a")])
    with pytest.raises(UserError, match=r"got \['wf'\] more than once"):
        kind(name="wf", sub_agents=[agent("wf")])


@pytest.mark.parametrize("kind", WORKFLOWS)
def test_a_workflow_needs_a_name(kind: type[SequentialAgent]) -> None:
    with pytest.raises(UserError, match="needs a name"):
        kind(name="", sub_agents=[])


def test_negative_max_iterations_is_a_user_error_and_leaves_the_sub_agents_free() -> None:
    a = agent("a")
    with pytest.raises(UserError, match=r"^max_iterations: expected 0 \(no limit\) or more, got -1$"):
        LoopAgent(name="loop", sub_agents=[a], max_iterations=-1)
    SequentialAgent(name="seq", sub_agents=[a])  # the failed loop did not claim it


def test_an_agent_already_placed_under_another_agent_is_refused() -> None:
    message = "^agent has already been set as a sub-agent of another agent$"
    # A custom agent has no hooks of its own: the workflow sees the parent on its flow wrapper.
    tree = set_sub_agents(Step("router"), [Step("child")])
    with pytest.raises(UserError, match=message):
        SequentialAgent(name="seq", sub_agents=[tree.sub_agents[0]])
    used = agent("used")
    LoopAgent(name="loop", sub_agents=[used], max_iterations=1)
    with pytest.raises(UserError, match=message):
        ParallelAgent(name="par", sub_agents=[used])
    child = agent("child2")
    set_sub_agents(agent("p"), [child])
    with pytest.raises(UserError, match=message):
        SequentialAgent(name="seq", sub_agents=[child])


async def test_a_parallel_branch_that_raises_is_reported_with_its_run_path_while_siblings_finish() -> None:
    @tool
    async def slow_ok() -> str:
        """Slow but fine."""
        await asyncio.sleep(0.02)
        return "fine"

    @tool(threaded=False)
    def broken() -> str:
        """Broken."""
        raise RuntimeError("branch failed")

    good = agent("good", tool_calls(("slow_ok", {})), assistant("good done"), tools=[slow_ok])
    bad = agent("bad", tool_calls(("broken", {})), tools=[broken])
    events = await collect_events(Runner(ParallelAgent(name="par", sub_agents=[good, bad])).query("go"))
    errors = [e for e in events if e.error is not None]
    assert [(paths([e])[0], str(e.error)) for e in errors] == [(["par", "bad"], "branch failed")]
    assert ("good", "good done") in said(events)

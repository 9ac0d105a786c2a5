"""The step log (``RunContext.steps``) and step recording (``recording_steps``): model replies and tool results are
recorded under keys that name the call by where it is in the run, and a run re-executed under the records replays
them instead of calling again — only the calls that had not finished run."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from batonflow.adk import AgentInput, ChatModelAgent, RunContext, Runner, collect_events
from batonflow.adk.loop import (
    ChainedSteps,
    RecordedSteps,
    ToolResult,
    chained_steps,
    installed_steps,
    recording_steps,
)
from batonflow.errors import StepRecordError
from batonflow.schema import AddressSegment, Message, assistant, user
from batonflow.testing import FunctionModel, tool_calls
from batonflow.tools import ToolContext, ToolInfo, tool


class Records:
    """A ``StepRecorder`` in a dict, counting what it was asked."""

    def __init__(self, held: dict[str, Any] | None = None) -> None:
        self.held: dict[str, Any] = dict(held or {})
        self.recalls: list[str] = []

    async def recall(self, key: str) -> Any:
        self.recalls.append(key)
        return self.held.get(key)

    async def record(self, key: str, value: Any) -> None:
        self.held[key] = value


class Shop:
    """Three tools of different duration, what each really did, and a model that calls them all at once."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.slow_gate = asyncio.Event()
        self.fast_done = asyncio.Event()

    def agent(self) -> ChatModelAgent:
        @tool
        async def fast(n: int) -> str:
            """Fast."""
            self.ran.append("fast")
            return f"fast {n}"

        @tool
        async def medium(n: int) -> str:
            """Medium."""
            await asyncio.sleep(0.01)
            self.ran.append("medium")
            self.fast_done.set()
            return f"medium {n}"

        @tool
        async def slow(n: int) -> str:
            """Slow."""
            await self.slow_gate.wait()
            self.ran.append("slow")
            return f"slow {n}"

        def answers(messages: list[Message], tools: list[ToolInfo]) -> Message:
            results = [m.content for m in messages if m.role == "tool"]
            if not results:
                return tool_calls(("fast", {"n": 1}), ("medium", {"n": 2}), ("slow", {"n": 3}))
            return assistant(" / ".join(results))

        self.model = FunctionModel(answers)
        return ChatModelAgent(name="shop", description="Shops.", model=self.model, tools=[fast, medium, slow])


def _answer(events: list[Any]) -> str:
    return next(e.message_output.message.content for e in reversed(events) if e.message_output is not None)


async def test_a_run_records_each_model_reply_and_tool_result_under_its_key() -> None:
    shop = Shop()
    shop.slow_gate.set()
    records = Records()
    with recording_steps(records):
        events = await collect_events(Runner(shop.agent()).query("go"))
    assert _answer(events) == "fast 1 / medium 2 / slow 3"
    assert sorted(records.held) == [
        "model|agent:shop|0",
        "model|agent:shop|1",
        "tool|agent:shop|1.1|call_1",
        "tool|agent:shop|1.1|call_2",
        "tool|agent:shop|1.1|call_3",
    ]
    assert records.held["model|agent:shop|0"].tool_calls[2].function.name == "slow"
    medium = records.held["tool|agent:shop|1.1|call_2"]
    assert isinstance(medium, ToolResult) and medium.message.content == "medium 2"


async def test_a_rerun_replays_what_finished_and_runs_only_the_call_in_flight() -> None:
    shop = Shop()
    records = Records()
    agent = shop.agent()
    with recording_steps(records):
        stream = Runner(agent).query("go")
        async for _ in stream:  # the crash: the slow call never finishes, the run is dropped mid-batch
            if shop.fast_done.is_set() and len(shop.ran) == 2:
                break
        await stream.aclose()
    assert shop.ran == ["fast", "medium"] and len(shop.model.requests) == 1
    assert "tool|agent:shop|1.1|call_3" not in records.held

    shop.slow_gate.set()
    with recording_steps(records):  # the re-run, counting model replies afresh
        events = await collect_events(Runner(agent).query("go"))
    assert _answer(events) == "fast 1 / medium 2 / slow 3"
    assert shop.ran == ["fast", "medium", "slow"]  # the two that finished did not run again
    assert len(shop.model.requests) == 2  # the reply that asked for the batch came from its record


async def test_a_recorded_stream_replays_as_one_chunk_and_is_recorded_joined() -> None:
    shop = Shop()
    shop.slow_gate.set()
    records = Records()
    agent = shop.agent()
    with recording_steps(records):
        first = await collect_events(Runner(agent, enable_streaming=True).query("go"))
    assert _answer(first) == "fast 1 / medium 2 / slow 3"
    final = records.held["model|agent:shop|1"]
    assert isinstance(final, Message) and final.content == "fast 1 / medium 2 / slow 3"  # the whole message

    calls = len(shop.model.requests)
    with recording_steps(records):
        stream = Runner(agent, enable_streaming=True).query("go")
        chunks: list[list[Message]] = []
        async for event in stream:
            output = event.message_output
            if output is not None and output.is_streaming and output.role == "assistant":
                chunks.append([chunk async for chunk in output.message_stream])
    assert len(shop.model.requests) == calls  # the model was not asked again
    assert [len(c) for c in chunks] == [1, 1] and chunks[-1][0].content == "fast 1 / medium 2 / slow 3"


async def test_an_interrupt_is_not_recorded_but_an_observed_tool_error_is() -> None:
    @tool
    def ask(ctx: ToolContext) -> str:
        """Ask a human."""
        return str(ctx.ask("may I?"))

    @tool
    def count(n: int) -> str:
        """Count."""
        return str(n)

    def answers(messages: list[Message], tools: list[ToolInfo]) -> Message:
        if messages[-1].role == "user":
            return tool_calls(("ask", {}), ("count", {"n": "not a number"}))
        return assistant("done")

    records = Records()
    agent = ChatModelAgent(name="asker", description="Asks.", model=FunctionModel(answers), tools=[ask, count])
    from batonflow.store import MemoryCheckpointStore

    runner = Runner(agent, checkpoint_store=MemoryCheckpointStore())
    with recording_steps(records):
        events = await collect_events(runner.run([Message(role="user", content="go")], checkpoint_id="c1"))
    assert any(e.action is not None and e.action.interrupted is not None for e in events)
    assert "tool|agent:asker|1.1|call_1" not in records.held  # the interrupt is no result
    observed = records.held["tool|agent:asker|1.1|call_2"]  # the refused arguments are, the model saw them
    assert isinstance(observed, ToolResult) and "n" in observed.message.content


async def test_a_tool_error_that_ends_the_run_is_not_recorded() -> None:
    @tool
    def broken() -> str:
        """Breaks."""
        raise RuntimeError("the disk is full")

    model = FunctionModel(lambda messages, tools: tool_calls(("broken", {})))
    records = Records()
    with recording_steps(records):
        events = await collect_events(
            Runner(ChatModelAgent(name="b", description="B.", model=model, tools=[broken])).query("go")
        )
    assert any(isinstance(e.error, RuntimeError) for e in events)
    assert sorted(records.held) == ["model|agent:b|0"]


async def test_a_record_of_the_wrong_kind_is_a_clear_error() -> None:
    shop = Shop()
    shop.slow_gate.set()
    records = Records({"model|agent:shop|0": ToolResult(message=assistant("a tool's result"))})
    with recording_steps(records):
        events = await collect_events(Runner(shop.agent()).query("go"))
    errors = [e.error for e in events if e.error is not None]
    assert len(errors) == 1 and isinstance(errors[0], StepRecordError)
    assert errors[0].key == "model|agent:shop|0"
    assert "expected a Message, got ToolResult" in str(errors[0])
    assert shop.model.requests == []  # a record that cannot be used is not taken for "not recorded"


async def test_without_a_recorder_nothing_is_consulted() -> None:
    assert installed_steps() is None
    records = Records()
    with recording_steps(records) as steps:
        assert installed_steps() is steps and steps.recorder is records
    assert installed_steps() is None
    shop = Shop()
    shop.slow_gate.set()
    await collect_events(Runner(shop.agent()).query("go"))
    assert records.recalls == [] and records.held == {}


@pytest.mark.parametrize("streaming", [False, True])
async def test_a_retried_resume_counts_the_replies_its_journal_replays(streaming: bool) -> None:
    """A resume cut short while the model was asked a third time, retried under the same records: the two replies
    its journal replays are counted, so the third call's key is its own (not the first reply's record)."""
    from batonflow.store import MemoryCheckpointStore

    gate, asked_last = asyncio.Event(), asyncio.Event()
    looked: list[int] = []

    @tool
    def ask(ctx: ToolContext) -> str:
        """Ask a human."""
        return str(ctx.ask("may I?"))

    @tool
    def lookup(n: int) -> str:
        """Look up."""
        looked.append(n)
        return f"found {n}"

    async def answers(messages: list[Message], tools: list[ToolInfo]) -> Message:
        results = [m.content for m in messages if m.role == "tool"]
        if len(results) < 3:
            return tool_calls(("ask", {}) if not results else ("lookup", {"n": len(results)}))
        asked_last.set()
        await gate.wait()
        return assistant(" / ".join(results))

    model = FunctionModel(answers)
    store = MemoryCheckpointStore()
    agent = ChatModelAgent(name="asker", description="Asks.", model=model, tools=[ask, lookup])
    runner = Runner(agent, checkpoint_store=store, enable_streaming=streaming)
    paused = await collect_events(runner.run([Message(role="user", content="go")], checkpoint_id="c2"))
    interrupt = next(e.action.interrupted for e in paused if e.action is not None and e.action.interrupted)
    target = interrupt.interrupt_contexts[0].id
    records = Records()
    with recording_steps(records):
        resuming = asyncio.ensure_future(collect_events(runner.resume("c2", {target: "yes"})))
    await asyncio.wait_for(asked_last.wait(), 5)
    resuming.cancel()  # cut short while the last call is under way (Ctrl-C): the journal keeps the two batches
    with pytest.raises(asyncio.CancelledError):
        await resuming
    assert looked == [1, 2] and sorted(k for k in records.held if k.startswith("model")) == [
        "model|agent:asker|0",
        "model|agent:asker|1",
    ]
    gate.set()
    with recording_steps(records):
        events = await collect_events(runner.resume("c2", {target: "yes"}))
    assert _answer(events) == "yes / found 1 / found 2"
    assert looked == [1, 2] and len(model.requests) == 5  # only the call in flight was made again
    assert records.held["model|agent:asker|2"].content == "yes / found 1 / found 2"


# -- the one step log: on the run context, a journal and a worker's records chained -------------------------------


async def test_the_steps_replay_and_record_through_the_log_on_the_run_context() -> None:
    """No recorder is installed: the log the context carries is the one the model and tool steps use."""
    shop = Shop()
    shop.slow_gate.set()
    records = Records()
    agent = shop.agent()
    ctx = RunContext(steps=RecordedSteps(records))
    first = [e async for e in agent.run(AgentInput(messages=[user("go")]), ctx)]
    assert _answer(first) == "fast 1 / medium 2 / slow 3"
    assert sum(key.startswith("model|") for key in records.held) == 2
    assert sum(key.startswith("tool|") for key in records.held) == 3

    again = [e async for e in agent.run(AgentInput(messages=[user("go")]), RunContext(steps=RecordedSteps(records)))]
    assert _answer(again) == "fast 1 / medium 2 / slow 3"
    assert len(shop.model.requests) == 2 and sorted(shop.ran) == ["fast", "medium", "slow"]  # all replayed


async def test_a_runner_puts_the_installed_recorder_on_the_context_its_tools_see() -> None:
    seen: list[object] = []

    @tool
    def look(ctx: ToolContext) -> str:
        """Look."""
        seen.append(ctx.run.steps if isinstance(ctx.run, RunContext) else "no run")
        return "seen"

    model = FunctionModel(lambda messages, tools: assistant("ok") if len(messages) > 1 else tool_calls(("look", {})))
    agent = ChatModelAgent(name="l", description="L.", model=model, tools=[look])
    with recording_steps(Records()) as steps:
        await collect_events(Runner(agent).query("go"))
    await collect_events(Runner(agent).query("go"))
    assert seen == [steps, None]


async def test_a_tool_record_of_the_wrong_kind_fails_the_round_and_runs_no_tool() -> None:
    shop = Shop()
    shop.slow_gate.set()
    records = Records({"tool|agent:shop|1.1|call_2": assistant("not a tool's result")})
    with recording_steps(records):
        events = await collect_events(Runner(shop.agent()).query("go"))
    errors = [e.error for e in events if e.error is not None]
    assert len(errors) == 1 and isinstance(errors[0], StepRecordError)
    assert errors[0].key == "tool|agent:shop|1.1|call_2"
    assert "expected a ToolResult, got Message" in str(errors[0])
    assert shop.ran == []  # a record that cannot be used is not taken for "not recorded", and nothing ran


async def test_a_chained_log_asks_the_second_store_only_for_what_the_first_lacks() -> None:
    first, then = Records({"model|agent:a|0": assistant("kept first")}), Records({"model|agent:a|1": assistant("b")})
    log = ChainedSteps(RecordedSteps(first), RecordedSteps(then))
    address = (AddressSegment("agent", "a"),)

    assert log.model_key(address) == "model|agent:a|0"
    reply = await log.recall(log.model_key(address), Message)
    assert reply is not None and reply.content == "kept first" and then.recalls == []
    log.replied(address)

    key = log.model_key(address)
    assert key == "model|agent:a|1"
    copied = await log.recall(key, Message)
    assert copied is not None and copied.content == "b" and first.held[key] is copied  # copied into the first
    log.replied(address)

    await log.record(log.model_key(address), assistant("new"))
    assert first.held["model|agent:a|2"] is then.held["model|agent:a|2"]  # a new step goes into both
    assert await log.recall("model|agent:a|9", Message) is None
    assert chained_steps(None, log) is log and chained_steps(log, None) is log and chained_steps(None, None) is None


async def test_a_step_only_the_records_hold_is_copied_into_the_journal_of_a_resume() -> None:
    """A resume in step mode replays a model reply from the worker's records; it fails later, and its retry
    without the records (on another worker, say) replays that reply from the journal rather than asking again."""
    from batonflow.store import MemoryCheckpointStore

    booms: list[int] = []

    @tool
    def ask(ctx: ToolContext) -> str:
        """Ask a human."""
        return str(ctx.ask("may I?"))

    @tool
    def boom() -> str:
        """Breaks."""
        booms.append(1)
        raise RuntimeError("the disk is full")

    model = FunctionModel(lambda messages, tools: tool_calls(("ask", {})))
    agent = ChatModelAgent(name="asker", description="Asks.", model=model, tools=[ask, boom])
    runner = Runner(agent, checkpoint_store=MemoryCheckpointStore())
    paused = await collect_events(runner.run([user("go")], checkpoint_id="c3"))
    target = next(e.action.interrupted for e in paused if e.action is not None and e.action.interrupted)
    yes = {target.interrupt_contexts[0].id: "yes"}

    records = Records({"model|agent:asker|0": tool_calls(("boom", {}))})
    with recording_steps(records):
        failed = await collect_events(runner.resume("c3", yes))
    assert any(isinstance(e.error, RuntimeError) for e in failed)
    assert len(model.requests) == 1 and booms == [1]  # the reply came from the records

    retried = await collect_events(runner.resume("c3", yes))
    assert any(isinstance(e.error, RuntimeError) for e in retried)
    assert len(model.requests) == 1 and booms == [1, 1]  # the journal held the reply: the model was not asked

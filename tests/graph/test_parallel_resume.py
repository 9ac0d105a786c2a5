"""Resuming a run whose parallel gateway ran its branches concurrently: a branch that finished before the run
stopped is walked through, not run again, whichever branch stopped (first, middle or last) and however many; in a
graph agent under a Runner (from SQLite, with new agents, as another process would) and in a plain ``eval``."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from batonflow import ChatModelAgent, Runner, SqliteCheckpointStore, ToolContext, tool
from batonflow.errors import CodecError
from batonflow.graph import FlowContext, FlowEngine, FlowInterceptor, Graph, GraphAgent, GraphSpec, Node
from batonflow.schema import Message, assistant
from batonflow.store import MemoryCheckpointStore
from batonflow.testing import FunctionModel, tool_calls

CITIES = ("oslo", "lima", "pune")

# -- a graph agent: three reporters in parallel, then a tally -------------------------------------------------------


def weather(runs: Counter[str], askers: Sequence[str]) -> Graph:
    """start -> fork -> oslo, lima, pune -> join -> sum -> end. Each reporter looks up the forecast (a tool) and
    reports; an asker first has a person confirm (a tool that asks). The tally counts the reports it sees."""

    @tool
    def forecast(city: str) -> str:
        """The forecast.

        Args:
            city: the city
        """
        runs[f"forecast:{city}"] += 1
        return f"{city}: sun"

    @tool
    def check(city: str, ctx: ToolContext) -> str:
        """Ask a person to confirm.

        Args:
            city: the city
        """
        runs[f"check:{city}"] += 1
        return f"{city}: checked" if ctx.ask({"check": city}) == "yes" else f"{city}: refused"

    def reporter(city: str) -> ChatModelAgent:
        def answer(messages: list[Message], tools: Any) -> Message:
            runs[f"model:{city}"] += 1
            seen = " ".join(m.text for m in messages if m.role == "tool")
            if f"{city}: sun" not in seen:
                return tool_calls(("forecast", {"city": city}))
            if city in askers and f"{city}: checked" not in seen:
                return tool_calls(("check", {"city": city}))
            return assistant(f"{city} is sunny")

        return ChatModelAgent(
            name=f"{city}_reporter", description="reports", model=FunctionModel(answer), tools=[forecast, check]
        )

    def count(messages: list[Message], tools: Any) -> Message:
        runs["model:tally"] += 1
        return assistant(f"{sum('is sunny' in m.text for m in messages)} reports seen")

    spec = GraphSpec("weather")
    spec.add_start("s").link_add("fork")
    fork = spec.add_parallel("fork")
    for city in CITIES:
        fork.link_add(city)
        spec.add_activity(city, task=reporter(city), meta={"output": city}).link_add("join")
    spec.add_parallel("join").link_add("sum")
    tally = ChatModelAgent(name="tally", description="counts", model=FunctionModel(count))
    spec.add_activity("sum", task=tally, meta={"output": "summary"}).link_add("e")
    spec.add_end("e")
    return spec.build()


def paths(events: Sequence[Any]) -> set[str]:
    return {"/".join(str(step) for step in event.run_path) for event in events}


@pytest.mark.parametrize("asker", CITIES)
async def test_a_resumed_graph_agent_runs_only_the_branch_that_asked(tmp_path: Path, asker: str) -> None:
    runs: Counter[str] = Counter()
    async with SqliteCheckpointStore(tmp_path / "c.db") as store:
        runner = Runner(GraphAgent(weather(runs, [asker])), checkpoint_store=store)
        paused = await runner.call("weather?", checkpoint_id="g1")
    assert len(paused.interrupt_ids) == 1
    assert runs["model:tally"] == 0  # the join waits for the branch that asked
    finished = [city for city in CITIES if city != asker]
    assert all(runs[f"model:{city}"] == 2 for city in finished)  # forecast, then the report

    async with SqliteCheckpointStore(tmp_path / "c.db") as store:  # a new store and new agents: a new process
        runner = Runner(GraphAgent(weather(runs, [asker])), checkpoint_store=store)
        done = await runner.call_resume("g1", targets={paused.interrupt_ids[0]: "yes"})
    assert done.text == "3 reports seen"
    assert paths(done.events) == {f"weather/{asker}/{asker}_reporter", "weather/sum/tally"}
    assert all(runs[f"forecast:{city}"] == 1 for city in CITIES)  # every finished tool ran once
    assert all(runs[f"model:{city}"] == 2 for city in finished)  # the finished branches did not run again
    assert runs[f"model:{asker}"] == 3 and runs[f"check:{asker}"] == 2  # the check reads its answer on resume
    assert runs["model:tally"] == 1


async def test_branches_that_ask_at_once_all_resume(tmp_path: Path) -> None:
    runs: Counter[str] = Counter()
    askers = ["oslo", "pune"]
    async with SqliteCheckpointStore(tmp_path / "c.db") as store:
        runner = Runner(GraphAgent(weather(runs, askers)), checkpoint_store=store)
        paused = await runner.call("weather?", checkpoint_id="g2")
        assert len(paused.interrupt_ids) == 2
        done = await runner.call_resume("g2", targets=dict.fromkeys(paused.interrupt_ids, "yes"))
    assert done.text == "3 reports seen"
    assert paths(done.events) == {"weather/oslo/oslo_reporter", "weather/pune/pune_reporter", "weather/sum/tally"}
    assert all(runs[f"forecast:{city}"] == 1 for city in CITIES)
    assert runs["model:lima"] == 2 and runs["check:oslo"] == runs["check:pune"] == 2


async def test_a_branch_that_asks_twice_resumes_twice_without_the_others() -> None:
    runs: Counter[str] = Counter()
    seen_questions: list[Any] = []

    @tool
    def confirm(step: int, ctx: ToolContext) -> str:
        """Ask a person.

        Args:
            step: which question
        """
        seen_questions.append(step)
        return f"step {step}: {ctx.ask({'step': step})}"

    def asker(messages: list[Message], tools: Any) -> Message:
        runs["model:asker"] += 1
        answered = sum(m.role == "tool" and m.text.startswith("step ") for m in messages)
        if answered < 2:
            return tool_calls(("confirm", {"step": answered + 1}))
        return assistant("asker is sunny")

    def quiet(messages: list[Message], tools: Any) -> Message:
        runs["model:quiet"] += 1
        return assistant("quiet is sunny")

    spec = GraphSpec("twice")
    spec.add_start("s").link_add("fork")
    spec.add_parallel("fork").link_add("asker").link_add("quiet")
    quiet_agent = ChatModelAgent(name="quiet", description="q", model=FunctionModel(quiet))
    asking_agent = ChatModelAgent(name="asker", description="a", model=FunctionModel(asker), tools=[confirm])
    spec.add_activity("quiet", task=quiet_agent, meta={"output": "q"}).link_add("join")
    spec.add_activity("asker", task=asking_agent, meta={"output": "a"}).link_add("join")
    spec.add_parallel("join").link_add("e")
    spec.add_end("e")
    runner = Runner(GraphAgent(spec.build()), checkpoint_store=MemoryCheckpointStore())
    first = await runner.call("go", checkpoint_id="t")
    second = await runner.call_resume("t", targets=dict.fromkeys(first.interrupt_ids, "yes"))
    assert len(second.interrupt_ids) == 1  # the second question: the run stops again
    third = await runner.call_resume("t", targets=dict.fromkeys(second.interrupt_ids, "yes"))
    assert third.interrupt_ids == [] and third.text == "asker is sunny"
    assert runs["model:quiet"] == 1  # neither resume ran the branch that had finished in the first run
    assert runs["model:asker"] == 3
    assert seen_questions == [1, 1, 2, 2]  # each question asked, then read with its answer on the resume


# -- plain eval: stop() and interrupt() in concurrent branches ----------------------------------------------------


class Tasks:
    """Branch tasks that log what ran: ``work`` yields to the other branches first, ``wait`` stops the run until
    the context holds ``approved``, after the other branches have finished their work."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    async def work(self, ctx: FlowContext, node: Node) -> None:
        await asyncio.sleep(0)
        self.ran.append(node.id)

    async def wait(self, ctx: FlowContext, node: Node) -> None:
        for _ in range(5):
            await asyncio.sleep(0)
        self.ran.append(node.id)
        if not ctx.get("approved"):
            ctx.stop()

    def log(self, ctx: FlowContext, node: Node) -> None:
        self.ran.append(node.id)


def fan(tasks: Tasks, waiting: str) -> Graph:
    """start -> p -> a, b, c (one of them waits for approval) -> join -> after -> end."""
    spec = GraphSpec("fan")
    spec.add_start("s").link_add("p")
    fork = spec.add_parallel("p")
    for node_id in "abc":
        fork.link_add(node_id)
        task: Callable[..., Any] = tasks.wait if node_id == waiting else tasks.work
        spec.add_activity(node_id, task=task).link_add("join")
    spec.add_parallel("join").link_add("after")
    spec.add_activity("after", task=tasks.log).link_add("e")
    spec.add_end("e")
    return spec.build()


@pytest.mark.parametrize("waiting", ["a", "b", "c"])
async def test_a_resumed_eval_runs_only_the_branch_that_stopped(waiting: str) -> None:
    tasks = Tasks()
    engine = FlowEngine()
    ctx = await engine.eval(fan(tasks, waiting))
    assert sorted(tasks.ran) == ["a", "b", "c"] and ctx.is_stopped
    # The journal: p fanned out, the waiting node was cut short, the others done, two arrivals at the join.
    branches = {node_id: "p" if node_id == waiting else "d" for node_id in "abc"}
    assert ctx.trace._visits == {"fan": {"s": "d", "p": "f", **branches, "join": "dd"}}
    resumed = FlowContext.from_json(ctx.to_json())
    resumed.put("approved", True)
    tasks.ran.clear()
    await engine.eval(fan(tasks, waiting), resumed)
    assert tasks.ran == [waiting, "after"]
    assert resumed.trace.is_end("fan")
    tasks.ran.clear()
    await engine.eval(fan(tasks, waiting), resumed)  # finished: nothing runs again
    assert tasks.ran == []


async def test_hooks_of_replayed_visits_do_not_run() -> None:
    started: list[str] = []

    class Starts(FlowInterceptor):
        def on_node_start(self, context: FlowContext, node: Node) -> None:
            started.append(node.id)

    tasks = Tasks()
    engine = FlowEngine()
    ctx = await engine.eval(fan(tasks, "a"))
    ctx.put("approved", True)
    await engine.eval(fan(tasks, "a"), ctx, interceptors=[Starts()])
    assert started == ["a", "join", "after", "e"]  # the third arrival at the join is the one that goes on


async def test_a_branch_cut_short_before_it_began_runs_on_resume() -> None:
    ran: list[str] = []

    def stop_now(ctx: FlowContext, node: Node) -> None:
        ran.append(node.id)
        if not ctx.get("approved"):
            ctx.stop()  # at once: the later branches never start

    spec = GraphSpec("g")
    spec.add_parallel("p").link_add("w").link_add("x")
    spec.add_activity("w", task=stop_now).link_add("join")
    spec.add_activity("x", task=lambda ctx, node: ran.append(node.id)).link_add("x2")
    spec.add_activity("x2", task=lambda ctx, node: ran.append(node.id)).link_add("join")
    spec.add_parallel("join")
    graph = spec.build()
    ctx = await FlowEngine().eval(graph)
    assert ran == ["w"]
    ctx.put("approved", True)
    ran.clear()
    await FlowEngine().eval(graph, ctx)
    assert ran == ["w", "x", "x2"]


async def test_a_resume_that_stops_again_keeps_what_the_other_branches_finished() -> None:
    ran: list[str] = []
    script = ["later", "now", "approve"]

    async def wait(ctx: FlowContext, node: Node) -> None:
        how = script.pop(0)
        ran.append(node.id)
        if how == "later":
            await asyncio.sleep(0)  # the first time, the other branches finish meanwhile
        if how != "approve":
            ctx.stop()

    spec = GraphSpec("g")
    spec.add_parallel("p").link_add("a").link_add("w").link_add("b")
    spec.add_activity("a").link_add("shared")
    spec.add_activity("w", task=wait)
    spec.add_activity("b").link_add("shared")
    spec.add_activity("shared", task=lambda ctx, node: ran.append(node.id))  # visited by a's branch and b's
    graph = spec.build()
    engine = FlowEngine()
    ctx = await engine.eval(graph)
    assert ran == ["shared", "w", "shared"]
    ran.clear()
    await engine.eval(graph, ctx)
    assert ran == ["w"]  # stopped at once: a's branch replayed its visit of shared, b's never got to its own
    ran.clear()
    await engine.eval(graph, ctx)
    assert ran == ["w"]  # b's visit of shared, finished in the first run, is still known


async def test_an_interrupted_branch_stays_ended_on_resume() -> None:
    ran: list[str] = []

    async def holds(ctx: FlowContext, node: Node) -> None:
        ran.append(node.id)
        ctx.interrupt()  # this branch ends here; its task is done

    async def wait(ctx: FlowContext, node: Node) -> None:
        await asyncio.sleep(0)
        ran.append(node.id)
        if not ctx.get("approved"):
            ctx.stop()

    spec = GraphSpec("g")
    spec.add_parallel("p").link_add("w").link_add("i")
    spec.add_activity("w", task=wait).link_add("w2")
    spec.add_activity("w2", task=lambda ctx, node: ran.append(node.id))
    spec.add_activity("i", task=holds).link_add("i2")
    spec.add_activity("i2", task=lambda ctx, node: ran.append(node.id))
    graph = spec.build()
    ctx = await FlowEngine().eval(graph)
    assert sorted(ran) == ["i", "w"] and ctx.trace._visits["g"]["i"] == "e"
    ctx.put("approved", True)
    ran.clear()
    await FlowEngine().eval(graph, ctx)
    assert ran == ["w", "w2"]  # i is not run again, and its branch does not go on to i2


async def test_a_sub_graph_in_a_branch_resumes_inside_by_the_journal() -> None:
    ran: list[str] = []

    async def wait(ctx: FlowContext, node: Node) -> None:
        await asyncio.sleep(0)
        ran.append(node.id)
        if not ctx.get("approved"):
            ctx.stop()

    async def step(ctx: FlowContext, node: Node) -> None:
        ran.append(node.id)
        await asyncio.sleep(0.01)  # still running when the other branch stops the run

    engine = FlowEngine()
    sub = GraphSpec("sub")
    sub.add_start("ss").link_add("s1")
    sub.add_activity("s1", task=step).link_add("s2")
    sub.add_activity("s2", task=step).link_add("se")
    sub.add_end("se")
    engine.load(sub.build())
    spec = GraphSpec("main")
    spec.add_parallel("p").link_add("w").link_add("call")
    spec.add_activity("w", task=wait).link_add("join")
    spec.add_activity("call", task="#sub").link_add("join")
    spec.add_parallel("join").link_add("after")
    spec.add_activity("after", task=lambda ctx, node: ran.append(node.id))
    graph = spec.build()
    ctx = await engine.eval(graph)
    assert sorted(ran) == ["s1", "w"]  # s1 finished after the stop; s2 never began
    ctx.put("approved", True)
    ran.clear()
    await engine.eval(graph, ctx)
    assert sorted(ran) == ["after", "s2", "w"]  # the sub-graph goes on after s1 instead of running it again


async def test_a_steps_limit_in_concurrent_branches_resumes_where_it_stopped() -> None:
    tasks = Tasks()
    spec = GraphSpec("g")
    spec.add_parallel("p").link_add("a").link_add("b")
    spec.add_activity("a", task=tasks.work).link_add("a2")
    spec.add_activity("a2", task=tasks.work).link_add("a3")
    spec.add_activity("a3", task=tasks.work)
    spec.add_activity("b", task=tasks.work)
    graph = spec.build()
    engine = FlowEngine()
    ctx = await engine.eval(graph, steps=4)  # p, a, b and a2 take the steps; a3 is cut
    assert sorted(tasks.ran) == ["a", "a2", "b"] and ctx.is_stopped
    tasks.ran.clear()
    await engine.eval(graph, ctx)
    assert tasks.ran == ["a3"]


# -- the journal in the context --------------------------------------------------------------------------------


async def test_recording_a_node_by_hand_forgets_the_journal() -> None:
    tasks = Tasks()
    graph = fan(tasks, "b")
    ctx = await FlowEngine().eval(graph)
    ctx.trace.record_node_id(graph, "c")  # resume at c, as the original would: replayed up to it, run from it
    ctx.put("approved", True)
    tasks.ran.clear()
    await FlowEngine().eval(graph, ctx)
    assert tasks.ran == ["c", "after"]  # a and b were passed by the replay before c, which runs, and so on
    ctx.trace.record(graph, None)
    tasks.ran.clear()
    await FlowEngine().eval(graph, ctx)
    assert sorted(tasks.ran) == ["a", "after", "b", "c"]  # a fresh run


async def test_a_graph_that_never_fans_out_resumes_at_its_recorded_node() -> None:
    """The original's rule, unchanged: no gateway fanned out, so the replay runs to the recorded node, not by the
    journal (which would run a node the saved run never reached; the original's replay never meets the recorded
    node and runs nothing)."""
    ran: list[str] = []

    def approve(ctx: FlowContext, node: Node) -> None:
        ran.append(node.id)
        if not ctx.get("approved"):
            ctx.stop()

    spec = GraphSpec("approval")
    spec.add_start("s").link_add("check")
    spec.add_exclusive("check").link_add("approve", when="amount > 100").link_add("pay")
    spec.add_activity("approve", task=approve).link_add("pay")
    spec.add_activity("pay", task=lambda ctx, node: ran.append(node.id)).link_add("e")
    spec.add_end("e")
    graph = spec.build()
    ctx = await FlowEngine().eval(graph, FlowContext(variables={"amount": 500}))
    assert ran == ["approve"] and ctx.trace._visits == {"approval": {"s": "d", "check": "d", "approve": "p"}}
    ctx.put("amount", 5)  # the replay now goes check -> pay
    ran.clear()
    await FlowEngine().eval(graph, ctx)
    assert ran == []


async def test_waiting_joins_are_journaled_as_done() -> None:
    spec = GraphSpec("g")
    spec.add_start("s").link_add("fork")
    spec.add_inclusive("fork").link_add("x").link_add("y")
    spec.add_activity("x").link_add("merge")
    spec.add_activity("y").link_add("merge")
    spec.add_inclusive("merge").link_add("rows")
    spec.add_loop("rows", meta={"$for": "i", "$in": [1, 2]}).link_add("row")
    spec.add_activity("row").link_add("rows_done")
    spec.add_loop("rows_done").link_add("e")
    spec.add_end("e")
    ctx = await FlowEngine().eval(spec.build())
    assert ctx.trace._visits["g"] == {
        "s": "d",
        "fork": "d",
        "x": "d",
        "y": "d",
        "merge": "dd",  # one arrival waited, the other went on
        "rows": "d",
        "row": "dd",
        "rows_done": "dd",  # the first item's arrival waited for the second's
        "e": "d",
    }


def test_a_context_keeps_its_journal_through_json_and_refuses_a_corrupt_one() -> None:
    ctx = FlowContext("x")
    ctx.trace._visits = {"g": {"a": "ddf", "b": "pe"}}
    back = FlowContext.from_json(ctx.to_json())
    assert back.trace._visits == {"g": {"a": "ddf", "b": "pe"}}
    text = ctx.to_json().replace('"pe"', '"pz"')
    with pytest.raises(CodecError) as caught:
        FlowContext.from_json(text)
    assert "the visits of node 'b' in graph 'g' are letters of defp, found 'z'" in str(caught.value)
    assert caught.value.path == "$.visits.g.b"
    # A context saved before contexts kept a journal resumes by its last node alone.
    old = FlowContext.from_json('{"$c":"FlowContext","instance_id":"x","stopped":true,"data":{"a":1}}')
    assert old.trace._visits == {} and old.get("a") == 1

"""The engine's rules, each with scripted tasks: node types, joins, loops, steps, stop and interrupt, sub-graphs,
components, conditions, interceptors, replay resume, and the guards."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from batonflow.errors import RunError
from batonflow.graph import (
    MAX_WALK_DEPTH,
    ComponentError,
    FlowContext,
    FlowEngine,
    FlowInterceptor,
    FlowInvocation,
    FlowRunError,
    Graph,
    GraphError,
    GraphSpec,
    LoopError,
    Node,
    NodeType,
    VisitLimitError,
)
from batonflow.graph import _engine as engine_module


class Log:
    """Tasks that append their node id (and the loop variable, where there is one) to a shared list."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    def __call__(self, ctx: FlowContext, node: Node) -> None:
        self.ran.append(node.id if "i" not in ctx else f"{node.id}:{ctx.get('i')}")


async def test_activities_follow_every_true_link_in_order_depth_first() -> None:
    log = Log()
    spec = GraphSpec("g")
    spec.add_start("s").link_add("a")
    spec.add_activity("a", task=log).link_add("b").link_add("c", when="x > 1").link_add("d", when="x > 5")
    spec.add_activity("b", task=log).link_add("b2")
    spec.add_activity("b2", task=log)
    spec.add_activity("c", task=log)
    spec.add_activity("d", task=log)
    await FlowEngine().eval(spec.build(), FlowContext(variables={"x": 2}))
    assert log.ran == ["a", "b", "b2", "c"]


@pytest.mark.parametrize(("x", "expected"), [(10, ["big"]), (3, ["mid"]), (0, ["other"])])
async def test_exclusive_takes_the_first_true_condition_else_the_default(x: int, expected: list[str]) -> None:
    log = Log()
    spec = GraphSpec("g")
    spec.add_exclusive("x").link_add("first_default").link_add("big", when="x > 5").link_add(
        "mid", when="x > 1"
    ).link_add("other")
    for node_id in ("first_default", "big", "mid", "other"):
        spec.add_activity(node_id, task=log)
    await FlowEngine().eval(spec.build(), FlowContext(variables={"x": x}))
    assert log.ran == expected  # the last unconditioned link is the default


async def test_exclusive_without_a_match_or_default_ends_the_branch() -> None:
    log = Log()
    spec = GraphSpec("g")
    spec.add_start("s").link_add("x")
    spec.add_exclusive("x").link_add("a", when="x > 5")
    spec.add_activity("a", task=log)
    ctx = await FlowEngine().eval(spec.build(), FlowContext(variables={"x": 1}))
    assert log.ran == [] and ctx.last_node_id == "x"


def _inclusive(log: Log) -> Graph:
    spec = GraphSpec("inc")
    spec.add_start("s").link_add("fork")
    spec.add_inclusive("fork").link_add("a", when="a == 1").link_add("b", when="b == 1").link_add("c", when="c == 1")
    for node_id in "abc":
        spec.add_activity(node_id, task=log).link_add("join")
    spec.add_inclusive("join", task=log).link_add("after")
    spec.add_activity("after", task=log)
    return spec.build()


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ({"a": 1, "b": 1, "c": 1}, ["a", "b", "c", "join", "after"]),
        ({"a": 1, "c": 1}, ["a", "c", "join", "after"]),
        ({"b": 1}, ["b", "join", "after"]),
        ({}, []),
    ],
)
async def test_inclusive_forks_by_condition_and_joins_by_counted_arrivals(
    flags: dict[str, int], expected: list[str]
) -> None:
    log = Log()
    await FlowEngine().eval(_inclusive(log), FlowContext(variables=flags))
    assert log.ran == expected


async def test_an_inclusive_join_inside_a_cycle_joins_again_each_pass() -> None:
    log = Log()
    spec = GraphSpec("inc")
    spec.add_start("s").link_add("fork")
    spec.add_inclusive("fork").link_add("a").link_add("b")
    spec.add_activity("a", task=log).link_add("join")
    spec.add_activity("b", task=log).link_add("join")

    def count(ctx: FlowContext, node: Node) -> None:
        ctx.put("n", ctx.get("n", 0) + 1)
        log(ctx, node)

    spec.add_inclusive("join", task=count).link_add("again")
    spec.add_exclusive("again").link_add("fork", when="n < 2").link_add("end")
    spec.add_end("end")
    await FlowEngine().eval(spec.build())
    assert log.ran == ["a", "b", "join", "a", "b", "join"]


def _parallel(a: Any, b: Any, join: Any = None) -> Graph:
    spec = GraphSpec("par")
    spec.add_start("s").link_add("p")
    spec.add_parallel("p").link_add("a", when="never == 1").link_add("b")  # conditions are ignored
    spec.add_activity("a", task=a).link_add("j")
    spec.add_activity("b", task=b).link_add("j")
    spec.add_parallel("j", task=join).link_add("e")
    spec.add_end("e")
    return spec.build()


async def test_parallel_branches_run_concurrently_and_join_once() -> None:
    a_waiting = asyncio.Event()
    b_done = asyncio.Event()
    joined: list[str] = []

    async def a(ctx: FlowContext, node: Node) -> None:
        a_waiting.set()
        await asyncio.wait_for(b_done.wait(), 2)  # a sequential run would never get here

    async def b(ctx: FlowContext, node: Node) -> None:
        await asyncio.wait_for(a_waiting.wait(), 2)  # b starts while a is still running
        b_done.set()

    ctx = await FlowEngine().eval(_parallel(a, b, lambda ctx, node: joined.append(node.id)))
    assert joined == ["j"]
    assert ctx.trace.is_end("par")


async def test_parallel_first_error_cancels_the_other_branches_and_is_raised() -> None:
    cancelled: list[str] = []

    async def slow(ctx: FlowContext, node: Node) -> None:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.append(node.id)
            raise

    async def fail(ctx: FlowContext, node: Node) -> None:
        await asyncio.sleep(0)
        raise ValueError("broken")

    ctx = FlowContext(variables={"kept": 1})
    with pytest.raises(FlowRunError) as caught:
        await FlowEngine().eval(_parallel(slow, fail), ctx)
    assert (caught.value.graph_id, caught.value.node_id) == ("par", "b")
    assert isinstance(caught.value.__cause__, ValueError)
    assert "the task failed: ValueError: broken" in str(caught.value)
    assert cancelled == ["a"]
    assert ctx.get("kept") == 1


async def test_interrupt_ends_only_the_current_branch() -> None:
    log = Log()

    async def a(ctx: FlowContext, node: Node) -> None:
        ctx.interrupt()
        await asyncio.sleep(0)
        log(ctx, node)

    spec = GraphSpec("g")
    spec.add_start("s").link_add("p")
    spec.add_parallel("p").link_add("a").link_add("b")
    spec.add_activity("a", task=a).link_add("a2")
    spec.add_activity("a2", task=log)
    spec.add_activity("b", task=log).link_add("b2")
    spec.add_activity("b2", task=log)
    ctx = await FlowEngine().eval(spec.build())
    assert sorted(log.ran) == ["a", "b", "b2"]  # a's task finished, its branch went no further
    assert not ctx.is_stopped


async def test_interrupt_in_a_sequential_branch_lets_the_next_link_run() -> None:
    log = Log()
    spec = GraphSpec("g")
    spec.add_activity("a").link_add("x").link_add("y")
    spec.add_activity("x", task=lambda ctx, node: ctx.interrupt()).link_add("x2")
    spec.add_activity("x2", task=log)
    spec.add_activity("y", task=log)
    await FlowEngine().eval(spec.build())
    assert log.ran == ["y"]


async def test_stop_ends_every_branch_and_is_reset_by_the_next_eval() -> None:
    log = Log()
    spec = GraphSpec("g")
    spec.add_activity("a").link_add("x").link_add("y")
    spec.add_activity("x", task=lambda ctx, node: ctx.stop()).link_add("x2")
    spec.add_activity("x2", task=log)
    spec.add_activity("y", task=log)
    graph = spec.build()
    engine = FlowEngine()
    ctx = await engine.eval(graph)
    assert log.ran == [] and ctx.is_stopped and ctx.last_node_id == "x"
    seen: list[bool] = []
    ctx2 = await engine.eval(graph, FlowContext(), interceptors=[_Probe(seen)])
    assert seen[0] is False and ctx2.is_stopped


class _Probe(FlowInterceptor):
    def __init__(self, seen: list[bool]) -> None:
        self.seen = seen

    def on_node_start(self, context: FlowContext, node: Node) -> None:
        self.seen.append(context.is_stopped)


async def test_stop_in_one_parallel_branch_stops_the_others() -> None:
    log = Log()

    async def stopper(ctx: FlowContext, node: Node) -> None:
        await asyncio.sleep(0)  # b's task has started by now
        ctx.stop()

    async def other(ctx: FlowContext, node: Node) -> None:
        await asyncio.sleep(0.001)
        log(ctx, node)

    spec = GraphSpec("g")
    spec.add_parallel("p").link_add("a").link_add("b")
    spec.add_activity("a", task=stopper)
    spec.add_activity("b", task=other).link_add("b2")
    spec.add_activity("b2", task=log)
    ctx = await FlowEngine().eval(spec.build())
    assert log.ran == ["b"] and ctx.is_stopped  # b's task ran to its end; nothing after it


async def test_node_when_guards_only_the_task() -> None:
    log = Log()
    spec = GraphSpec("g")
    spec.add_activity("a", task=log, when="go == 1").link_add("b")
    spec.add_activity("b", task=log)
    await FlowEngine().eval(spec.build())
    assert log.ran == ["b"]


async def test_a_node_when_is_tested_without_a_task_as_in_solon_flow() -> None:
    tested: list[str] = []

    def when(node_id: str) -> Any:
        def test(ctx: FlowContext) -> bool:
            tested.append(node_id)
            return False  # the flow goes on either way

        return test

    spec = GraphSpec("g")
    spec.add(NodeType.START, "s", when=when("s")).link_add("a")
    spec.add(NodeType.ACTIVITY, "a", when=when("a")).link_add("x")
    spec.add(NodeType.EXCLUSIVE, "x", when=when("x")).link_add("p")
    spec.add(NodeType.PARALLEL, "p", when=when("p")).link_add("i")
    spec.add(NodeType.INCLUSIVE, "i", when=when("i")).link_add("rows")
    spec.add(NodeType.LOOP, "rows", when=when("rows"), meta={"$for": "n", "$in": [1]}).link_add("done")
    spec.add(NodeType.LOOP, "done", when=when("done")).link_add("e")
    spec.add(NodeType.END, "e", when=when("e"))
    context = await FlowEngine().eval(spec.build())
    assert tested == ["a", "x", "p", "i", "rows", "done"]  # start and end have no task to guard, in Solon too
    assert context.trace.is_end("g")

    unknown = Graph.from_yaml("id: g\nlayout: [{id: a, when: '@missing'}]")
    with pytest.raises(ComponentError, match="'missing' not exist") as caught:
        await FlowEngine().eval(unknown)
    assert (caught.value.name, caught.value.node_id) == ("missing", "a")


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ([3, 1, 2], ["body:3", "body:1", "body:2", "after:2"]),
        ("items", ["body:x", "body:y", "after:y"]),
        ("1...4", ["body:1", "body:2", "body:3", "after:3"]),
        ("1:10:4", ["body:1", "body:5", "body:9", "after:9"]),
        ("5...5", []),  # as the original: an empty loop never reaches its join
    ],
)
async def test_loops_over_every_in_form_and_join_after_the_last_item(source: Any, expected: list[str]) -> None:
    log = Log()
    spec = GraphSpec("loop")
    spec.add_start("s").link_add("for")
    spec.add_loop("for", meta={"$for": "i", "$in": source}).link_add("body")
    spec.add_activity("body", task=log).link_add("done")
    spec.add_loop("done").link_add("after")
    spec.add_activity("after", task=log)
    ctx = await FlowEngine().eval(spec.build(), FlowContext(variables={"items": ("x", "y")}))
    assert log.ran == expected
    assert ctx.trace.last_node_id("loop") == ("after" if expected else "for")


async def test_nested_loops_from_yaml() -> None:
    log: list[str] = []
    engine = FlowEngine()
    engine.register("cell", lambda ctx, node: log.append(f"{ctx.get('row')}{ctx.get('col')}"))
    graph = Graph.from_yaml(
        """
id: grid
layout:
  - {type: start}
  - {id: rows, type: loop, meta: {"$for": row, "$in": [a, b]}}
  - {id: cols, type: loop, meta: {"$for": col, "$in": "1...3"}}
  - {task: "@cell"}
  - {id: cols_end, type: loop}
  - {id: rows_end, type: loop}
  - {type: end}
"""
    )
    ctx = await engine.eval(graph)
    assert log == ["a1", "a2", "b1", "b2"]
    assert ctx.trace.is_end("grid")


@pytest.mark.parametrize("value", [None, 5, "text", {"k": 1}])
async def test_a_loop_variable_that_is_not_a_collection_is_a_loop_error(value: Any) -> None:
    spec = GraphSpec("g")
    spec.add_start("s").link_add("l")
    spec.add_loop("l", meta={"$for": "i", "$in": "things"})
    ctx = FlowContext(variables={"things": value, "kept": True})
    with pytest.raises(LoopError) as caught:
        await FlowEngine().eval(spec.build(), ctx)
    assert (caught.value.graph_id, caught.value.node_id) == ("g", "l")
    assert "'things' is not a collection" in str(caught.value)
    assert ctx.get("kept") is True and ctx.last_node_id == "l"


STEPFLOW = """
id: stepflow
layout:
  - {id: s, type: start, title: start, link: [{nextId: a1}]}
  - {id: a1, title: activity 1, link: [{nextId: x1}]}
  - id: x1
    type: exclusive
    title: gateway 1
    link:
      - {nextId: a2, title: ''}
      - {nextId: a3, title: '', condition: a > 3}
  - {id: a2, title: activity 2, link: [{nextId: e}]}
  - {id: a3, title: activity 3, task: "#stepflow_sub", link: [{nextId: x2}]}
  - id: x2
    type: exclusive
    title: gateway 2
    link:
      - {nextId: a1, condition: b > 5}
      - {nextId: e}
  - {id: e, type: end, title: end}
"""


async def test_steps_move_one_node_per_eval_through_a_sub_graph_and_back() -> None:
    engine = FlowEngine()
    engine.load(Graph.from_yaml(STEPFLOW))
    sub = STEPFLOW.replace('task: "#stepflow_sub", ', "").replace("stepflow", "stepflow_sub")
    engine.load(Graph.from_yaml(sub.replace("title: ", "title: sub ")))
    ctx = FlowContext("x1", {"a": 4, "b": 5})
    seen: list[tuple[str, str | None]] = []
    for _ in range(10):
        await engine.eval("stepflow", ctx, steps=1)
        sub_record = ctx.trace.last_record("stepflow_sub")
        assert ctx.last_record is not None
        seen.append((ctx.last_record.title, None if sub_record is None else sub_record.title))
        ctx = FlowContext.from_json(ctx.to_json())  # and across a save and a load
    assert seen == [
        ("activity 1", None),
        ("gateway 1", None),
        ("activity 3", None),
        ("activity 3", "sub activity 1"),
        ("activity 3", "sub gateway 1"),
        ("activity 3", "sub activity 3"),
        ("activity 3", "sub gateway 2"),
        ("activity 3", "sub end"),
        ("gateway 2", "sub end"),
        ("end", "sub end"),
    ]


async def test_a_steps_limit_counts_visits_and_stops_the_run() -> None:
    log = Log()
    spec = GraphSpec("g")
    for index in range(5):
        spec.add_activity(f"a{index}", task=log).link_add(f"a{index + 1}")
    spec.add_end("a5")
    ctx = await FlowEngine().eval(spec.build(), steps=3)
    # a0 (the start, which a fresh run does not record), a1 and a2 take the three steps; a3 is recorded and stops
    assert log.ran == ["a0", "a1", "a2"]
    assert ctx.is_stopped and ctx.last_node_id == "a3"


async def test_an_unfinished_sub_graph_interrupts_the_calling_branch() -> None:
    log = Log()
    engine = FlowEngine()
    sub = GraphSpec("sub")
    sub.add_start("s").link_add("wait")
    sub.add_activity("wait", task=lambda ctx, node: ctx.interrupt())  # the sub-graph ends without its end node
    sub.add_end("e")
    engine.load(sub.build())
    spec = GraphSpec("main")
    spec.add_activity("call", task="#sub").link_add("next")
    spec.add_activity("next", task=log)
    ctx = await engine.eval(spec.build())
    assert log.ran == [] and not ctx.is_stopped
    assert ctx.trace.last_node_id("sub") == "wait"

    finished = GraphSpec("sub")
    finished.add_start("s").link_add("ok")
    finished.add_activity("ok").link_add("e")
    finished.add_end("e")
    engine.load(finished.build())
    await engine.eval(spec.build())
    assert log.ran == ["next"]


async def test_tasks_callables_objects_components_async_and_meta_paths() -> None:
    calls: list[str] = []

    class Obj:
        async def run(self, ctx: FlowContext, node: Node) -> None:
            calls.append(f"obj:{node.meta.get('say')}")

    async def coro(ctx: FlowContext, node: Node) -> None:
        calls.append("coro")

    engine = FlowEngine()
    engine.register("obj", Obj())
    engine.register("fn", lambda ctx, node: calls.append("fn"))
    graph = Graph.from_yaml(
        """
id: tasks
meta: {aliases: {greet: "@obj"}}
layout:
  - {task: "@fn"}
  - {task: "$aliases.greet", meta: {say: hi}}
  - {task: "@obj", meta: {say: there}}
"""
    )
    spec = graph.to_spec()
    spec.add_activity("py", task=coro)
    spec.nodes["n-3"].link_add("py")
    await engine.eval(spec.build())
    assert calls == ["fn", "obj:hi", "obj:there", "coro"]


async def test_unknown_and_wrong_components_name_themselves() -> None:
    engine = FlowEngine()
    engine.register("plain", 42)
    with pytest.raises(ComponentError) as caught:
        await engine.eval(Graph.from_yaml("id: g\nlayout: [{id: a, task: '@missing'}]"))
    assert (caught.value.name, caught.value.graph_id, caught.value.node_id) == ("missing", "g", "a")
    assert "'missing' not exist" in str(caught.value)
    with pytest.raises(ComponentError, match="is not a task component"):
        await engine.eval(Graph.from_yaml("id: g\nlayout: [{id: a, task: '@plain'}]"))
    with pytest.raises(ComponentError, match="'cond' not exist"):
        await engine.eval(Graph.from_yaml("id: g\nlayout: [{id: a, link: [{nextId: b, when: '@cond'}]}, {id: b}]"))
    with pytest.raises(GraphError, match="sub-graph '#nope' is not loaded"):
        await engine.eval(Graph.from_yaml("id: g\nlayout: [{id: a, task: '#nope'}]"))
    with pytest.raises(GraphError, match="Flow graph not found: nope"):
        await engine.eval("nope")


async def test_conditions_callables_components_and_async() -> None:
    log = Log()

    class Even:
        def test(self, ctx: FlowContext) -> bool:
            return ctx.get("n") % 2 == 0

    async def positive(ctx: FlowContext) -> bool:
        return bool(ctx.get("n") > 0)

    engine = FlowEngine()
    engine.register("even", Even())
    spec = GraphSpec("g")
    spec.add_activity("a").link_add("even", when="@even").link_add("pos", when=positive).link_add(
        "big", when=lambda ctx: ctx.get("n") > 100
    )
    for node_id in ("even", "pos", "big"):
        spec.add_activity(node_id, task=log)
    await engine.eval(spec.build(), FlowContext(variables={"n": 4}))
    assert log.ran == ["even", "pos"]


async def test_a_failing_condition_is_a_run_error_naming_graph_and_node() -> None:
    spec = GraphSpec("g")
    spec.add_activity("a").link_add("b", when=lambda ctx: 1 / 0)
    spec.add_activity("b")
    with pytest.raises(FlowRunError, match="graph 'g', node 'a': the condition of the link to 'b' failed"):
        await FlowEngine().eval(spec.build())


class Recorder(FlowInterceptor):
    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.log = log

    async def intercept_flow(self, invocation: FlowInvocation) -> None:
        self.log.append(f"{self.name}:in:{invocation.graph.id}:{invocation.start_node.id}")
        await invocation.invoke()
        self.log.append(f"{self.name}:out:{invocation.context.last_node_id}")

    async def on_node_start(self, context: FlowContext, node: Node) -> None:
        self.log.append(f"{self.name}:start:{node.id}")

    def on_node_end(self, context: FlowContext, node: Node) -> None:
        self.log.append(f"{self.name}:end:{node.id}")


async def test_interceptors_wrap_the_flow_and_nodes_ordered_by_rank() -> None:
    log: list[str] = []
    engine = FlowEngine()
    engine.add_interceptor(Recorder("engine", log), rank=5)
    spec = GraphSpec("g")
    spec.add_start("s").link_add("a")
    spec.add_activity("a", task=lambda ctx, node: log.append("task:a")).link_add("e")
    spec.add_end("e")
    await engine.eval(spec.build(), interceptors=[(Recorder("late", log), 9), Recorder("call", log)])
    assert log[:3] == ["call:in:g:s", "engine:in:g:s", "late:in:g:s"]
    assert log[3:8] == ["call:start:s", "engine:start:s", "late:start:s", "call:end:s", "engine:end:s"]
    assert "task:a" in log and log.index("late:start:a") < log.index("task:a") < log.index("call:end:a")
    assert log[-3:] == ["late:out:e", "engine:out:e", "call:out:e"]
    engine.remove_interceptor(engine._interceptors[0][1])
    log.clear()
    await engine.eval(spec.build())
    assert log == ["task:a"]


async def test_an_interceptor_that_does_not_invoke_skips_the_flow() -> None:
    ran: list[str] = []

    class Gate(FlowInterceptor):
        async def intercept_flow(self, invocation: FlowInvocation) -> None:
            return None

    spec = GraphSpec("g")
    spec.add_activity("a", task=lambda ctx, node: ran.append("a"))
    await FlowEngine().eval(spec.build(), interceptors=[Gate()])
    assert ran == []


def _approval(log: Log) -> Graph:
    def approve(ctx: FlowContext, node: Node) -> None:
        log(ctx, node)
        if not ctx.get("approved"):
            ctx.stop()

    spec = GraphSpec("approval")
    spec.add_start("s").link_add("draft")
    spec.add_activity("draft", task=log).link_add("check")
    spec.add_exclusive("check").link_add("approve", when="amount > 100").link_add("pay")
    spec.add_activity("approve", task=approve).link_add("pay")
    spec.add_activity("pay", task=log).link_add("e")
    spec.add_end("e")
    return spec.build()


async def test_resume_replays_to_the_recorded_node_and_runs_its_task_again() -> None:
    log = Log()
    hooks: list[str] = []
    graph = _approval(log)
    engine = FlowEngine()
    ctx = await engine.eval(graph, FlowContext(variables={"amount": 500}))
    assert log.ran == ["draft", "approve"] and ctx.is_stopped and ctx.last_node_id == "approve"
    ctx.put("approved", True)
    log.ran.clear()
    await engine.eval(graph, ctx, interceptors=[Recorder("r", hooks)])
    assert log.ran == ["approve", "pay"]  # draft is not run again; approve is
    assert hooks[0] == "r:in:approval:approve"
    assert "r:start:draft" not in hooks and "r:start:s" not in hooks  # no hooks while replaying
    assert ctx.trace.is_end("approval")
    log.ran.clear()
    await engine.eval(graph, ctx)  # a finished context replays to its end node and runs nothing
    assert log.ran == []


async def test_clearing_the_record_restarts_from_the_start() -> None:
    log = Log()
    graph = _approval(log)
    ctx = await FlowEngine().eval(graph, FlowContext(variables={"amount": 500, "approved": True}))
    ctx.trace.record(graph, None)
    log.ran.clear()
    await FlowEngine().eval(graph, ctx)
    assert log.ran == ["draft", "approve", "pay"]
    ctx.trace.record_node_id(graph, "pay")
    log.ran.clear()
    await FlowEngine().eval(graph, ctx)
    assert log.ran == ["pay"]
    with pytest.raises(GraphError, match="no such node"):
        ctx.trace.record_node_id(graph, "ghost")


async def test_replay_evaluates_conditions() -> None:
    log = Log()
    graph = _approval(log)
    ctx = await FlowEngine().eval(graph, FlowContext(variables={"amount": 500}))
    ctx.put("amount", 5)  # the replay now goes check -> pay and never meets the recorded node
    log.ran.clear()
    await FlowEngine().eval(graph, ctx)
    assert log.ran == []


async def test_an_endless_cycle_without_steps_is_a_visit_limit_error() -> None:
    spec = GraphSpec("cycle")
    spec.add_start("s").link_add("a")
    spec.add_activity("a", task=lambda ctx, node: ctx.put("n", ctx.get("n", 0) + 1)).link_add("x")
    spec.add_exclusive("x").link_add("a")
    graph = spec.build()
    ctx = FlowContext()
    with pytest.raises(VisitLimitError) as caught:
        await FlowEngine(max_visits=50).eval(graph, ctx)
    assert isinstance(caught.value, RunError)
    assert (caught.value.graph_id, caught.value.node_id, caught.value.visits) == ("cycle", "a", 51)
    assert ctx.get("n") == 50
    stepped = await FlowEngine(max_visits=50).eval(graph, FlowContext(), steps=500)
    assert stepped.is_stopped and stepped.get("n") == 250  # a steps limit stops it instead


async def test_long_chains_and_long_cycles_do_not_grow_the_stack() -> None:
    spec = GraphSpec("long")
    for index in range(3000):
        spec.add_activity(f"a{index}").link_add(f"a{index + 1}")
    spec.add_end("a3000")
    ctx = await FlowEngine().eval(spec.build())
    assert ctx.trace.is_end("long")
    cycle = GraphSpec("cycle")
    cycle.add_start("s").link_add("a")
    cycle.add_activity("a", task=lambda ctx, node: ctx.put("n", ctx.get("n", 0) + 1)).link_add("x")
    cycle.add_exclusive("x").link_add("a", when="n < 5000").link_add("e")
    cycle.add_end("e")
    ctx = await FlowEngine().eval(cycle.build())
    assert ctx.get("n") == 5000


async def test_eval_refuses_bad_arguments() -> None:
    engine = FlowEngine()
    with pytest.raises(GraphError, match="eval expects a Graph or a graph id"):
        await engine.eval(42)  # type: ignore[arg-type]
    with pytest.raises(GraphError, match="an interceptor must be a FlowInterceptor"):
        await engine.eval(_approval(Log()), interceptors=[object()])  # type: ignore[list-item]
    with pytest.raises(GraphError, match="max_visits must be a positive int"):
        FlowEngine(max_visits=0)
    with pytest.raises(GraphError, match="a component name must be non-empty"):
        engine.register("@x", object())


async def test_registry_load_unload_and_graph_files(tmp_path: Any) -> None:
    path = tmp_path / "flow.yml"
    path.write_text("id: from_file\nlayout: [{type: start}, {type: end}]\n", encoding="utf-8")
    engine = FlowEngine()
    graph = engine.load(path)
    assert engine.get_graph("from_file") is graph and engine.graphs == (graph,)
    ctx = await engine.eval("from_file")
    assert ctx.trace.is_end("from_file")
    assert graph.start.type is NodeType.START
    engine.unload("from_file")
    assert engine.get_graph("from_file") is None


async def test_an_expression_reaching_outside_plain_data_at_run_time_is_an_error_naming_graph_and_node() -> None:
    from batonflow.graph import ExpressionError

    class Secret:
        token = "hidden"

    spec = GraphSpec("g")
    spec.add_start("s").link_add("x")
    spec.add_exclusive("x").link_add("a", when="obj.token == 'hidden'").link_add("b")
    spec.add_activity("a")
    spec.add_activity("b")
    ctx = FlowContext(variables={"obj": Secret(), "kept": 1})
    with pytest.raises(ExpressionError) as caught:
        await FlowEngine().eval(spec.build(), ctx)
    assert (caught.value.graph_id, caught.value.node_id) == ("g", "x")
    assert ctx.get("kept") == 1 and ctx.last_node_id == "x"


async def test_solon_java_style_conditions_route_as_written() -> None:
    log = Log()
    graph = Graph.from_yaml(
        """
id: leave
layout:
  - { type: start }
  - id: route
    type: exclusive
    link:
      - { nextId: long, when: "day >= 7" }
      - { nextId: medium, condition: "day>=3 && day<7" }
      - { nextId: vip, when: '"gold".equals(level) && !blocked' }
      - { nextId: short }
  - { id: long, task: "@log", link: end }
  - { id: medium, task: "@log", link: end }
  - { id: vip, task: "@log", link: end }
  - { id: short, task: "@log", link: end }
  - { id: end, type: end }
"""
    )
    engine = FlowEngine()
    engine.register("log", log)
    for variables in ({"day": 9}, {"day": 4}, {"day": 1, "level": "gold", "blocked": False}, {"day": 1}):
        await engine.eval(graph, FlowContext(variables=variables))
    assert log.ran == ["long", "medium", "vip", "short"]


async def test_per_call_interceptors_see_sub_graph_runs_and_nodes() -> None:
    log: list[str] = []
    engine = FlowEngine()
    sub = GraphSpec("sub")
    sub.add_start("s2").link_add("e2")
    sub.add_end("e2")
    engine.load(sub.build())
    spec = GraphSpec("main")
    spec.add_start("s").link_add("call")
    spec.add_activity("call", task="#sub").link_add("e")
    spec.add_end("e")
    await engine.eval(spec.build(), interceptors=[Recorder("r", log)])
    assert log == [
        "r:in:main:s",
        "r:start:s",
        "r:end:s",
        "r:start:call",
        "r:in:sub:s2",
        "r:start:s2",
        "r:end:s2",
        "r:start:e2",
        "r:end:e2",
        "r:out:call",  # the context's last node is the root graph's
        "r:end:call",
        "r:start:e",
        "r:end:e",
        "r:out:e",
    ]


def test_load_all_from_a_folder_or_a_glob(tmp_path: Any) -> None:
    for name in ("b", "a"):
        (tmp_path / f"{name}.yml").write_text(f"id: {name}\nlayout: [{{type: start}}]\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not a graph", encoding="utf-8")
    engine = FlowEngine()
    assert [graph.id for graph in engine.load_all(tmp_path)] == ["a", "b"]
    assert [graph.id for graph in FlowEngine().load_all(tmp_path / "b*.yml")] == ["b"]
    with pytest.raises(GraphError, match="no graph files found"):
        engine.load_all(tmp_path / "*.json")


async def test_a_disabled_trace_records_nothing_and_every_eval_starts_afresh() -> None:
    log = Log()
    graph = _approval(log)
    ctx = FlowContext(variables={"amount": 500})
    ctx.trace.enabled = False
    await FlowEngine().eval(graph, ctx)
    assert ctx.last_record is None and ctx.trace.records() == ()
    await FlowEngine().eval(graph, ctx)
    assert log.ran == ["draft", "approve", "draft", "approve"]


def test_spec_node_lookup_and_removal() -> None:
    spec = GraphSpec("g")
    node = spec.add_activity("a")
    assert spec.get_node("a") is node and spec.get_node("b") is None
    assert spec.remove_node("a") is node and spec.remove_node("a") is None


async def test_a_long_run_of_tasks_that_never_await_lets_other_tasks_run_meanwhile() -> None:
    from batonflow.graph import YIELD_EVERY

    seen: list[int] = []

    def row(context: FlowContext, node: Node) -> None:
        seen.append(context.get("i"))

    spec = GraphSpec("rows")
    spec.add_start("s").link_add("rows")
    spec.add_loop("rows", meta={"$for": "i", "$in": f"0...{YIELD_EVERY * 10}"}).link_add("row")
    spec.add_activity("row", task=row).link_add("rows_done")
    spec.add_loop("rows_done").link_add("end")
    spec.add_end("end")
    other = asyncio.create_task(asyncio.sleep(0))
    await FlowEngine().eval(spec.build())
    # Without a yield the other task would not even have started before the run's last visit.
    assert other.done()
    assert seen == list(range(YIELD_EVERY * 10))


SELF_LINK = """
id: g
layout:
  - {id: s, type: start, link: a}
  - id: a
    task: "@count"
    link: [{nextId: a, when: "n < 5"}, b]
  - {id: b, task: "@after"}
"""


def _counting(after: list[int]) -> FlowEngine:
    engine = FlowEngine()
    engine.register("count", lambda context, node: context.put("n", context.get("n", 0) + 1))
    engine.register("after", lambda context, node: after.append(context.get("n")))
    return engine


async def test_a_self_link_that_is_not_the_last_recurses_as_the_original_while_its_condition_holds() -> None:
    after: list[int] = []

    await _counting(after).eval(Graph.from_yaml(SELF_LINK))

    # solon-flow walks every link in turn: each of the five visits of 'a' goes on to 'b' once its inner walk is done.
    assert after == [5, 5, 5, 5, 5]


async def test_an_endless_self_link_that_is_not_the_last_ends_at_max_walk_depth_naming_the_node() -> None:
    after: list[int] = []
    context = FlowContext()

    with pytest.raises(FlowRunError) as caught:
        await _counting(after).eval(Graph.from_yaml(SELF_LINK.replace(', when: "n < 5"', "")), context)

    assert caught.value.node_id == "a" and "expected walks nested at most 100 deep (MAX_WALK_DEPTH)" in str(
        caught.value
    )
    assert context.get("n") == MAX_WALK_DEPTH and after == []  # every visit up to there ran and is kept
    assert context.last_node_id == "a"


async def test_walks_deeper_than_python_s_stack_are_a_flow_run_error_not_a_recursion_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(engine_module, "MAX_WALK_DEPTH", 1_000_000)

    # Python's stack ends in the engine's walk (or, as it may, in a task, whose failure names it).
    with pytest.raises(FlowRunError, match=r"less deeply than Python's stack allows|RecursionError"):
        await _counting([]).eval(Graph.from_yaml(SELF_LINK.replace(', when: "n < 5"', "")))

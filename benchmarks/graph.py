"""The graph engines: ``python -m benchmarks.graph [--quick] [--json]``.

Two graphs, each run by batonflow's ``FlowEngine`` and by LangGraph's ``StateGraph``, the same shape on both:

* **chain**: start → 100 activities → end;
* **fan-out**: start → parallel → 10 activities → parallel join → end (LangGraph: a node that fans out to the 10
  and a node they all join at, since LangGraph has no gateway without a node).

Every activity is the same trivial ``async`` task: it adds one to a counter (batonflow: a context variable;
LangGraph: a state key with an adding reducer), and each run checks the count. A batonflow run is counted in node
visits: every node entered, and each arrival at a join (102 in the chain, 23 in the fan-out); a LangGraph run in
supersteps (the rounds of nodes that run together: 100 and 3) and node runs (100 and 12). Both counts are checked
once per graph before the timing, not assumed: a ``steps`` limit (which counts every visit but the start node's)
one short must stop the batonflow run before its end, and LangGraph's debug stream names each task's superstep.

Each framework runs in its own subprocess, in two rounds (one with ``--quick``), and each graph keeps its better
round, as ``python -m benchmarks`` does; the ratio is batonflow's time per run over LangGraph's, both measured in
this run. It is context for the engine's cost, with no target, like the growth curve.
"""

# No ``from __future__ import annotations``: LangGraph reads the state's annotations at run time, and the state
# class is defined inside ``build_langgraph``.
import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from ._common import Run, check, side_in_subprocess
from ._worker import Plan, measure

CHAIN = 100
"""Activities in the chain."""
BRANCHES = 10
"""Activities between the fan-out and the join."""
GRAPHS = {"chain": f"chain of {CHAIN} activities", "fan_out": f"{BRANCHES}-way fan-out and join"}
"""Graph key → how the table names it."""

# graph key -> (the run, what one run is made of: {"visits": n} or {"supersteps": n, "nodes": n})
Side = dict[str, tuple[Run, dict[str, int]]]


def build_batonflow() -> Side:
    from batonflow.graph import FlowContext, FlowEngine, GraphSpec, Node

    async def step(context: FlowContext, node: Node) -> None:
        context.put("count", context.get("count", 0) + 1)

    chain = GraphSpec("chain")
    chain.add_start("s").link_add("n1")
    for i in range(1, CHAIN + 1):
        chain.add_activity(f"n{i}", task=step).link_add(f"n{i + 1}" if i < CHAIN else "e")
    chain.add_end("e")

    fan = GraphSpec("fan_out")
    fan.add_start("s").link_add("fork")
    fork = fan.add_parallel("fork")
    for i in range(BRANCHES):
        fork.link_add(f"b{i}")
        fan.add_activity(f"b{i}", task=step).link_add("join")
    fan.add_parallel("join").link_add("e")
    fan.add_end("e")

    engine = FlowEngine()
    side: Side = {}
    for key, spec, count, visits in (("chain", chain, CHAIN, CHAIN + 2), ("fan_out", fan, BRANCHES, 2 * BRANCHES + 3)):
        graph = spec.build()

        async def run(graph: Any = graph, count: int = count) -> None:
            context = await engine.eval(graph)
            check(context.get("count") == count, "{} ran {} activities", graph.id, context.get("count"))

        side[key] = (run, {"visits": visits})

        async def visits_are(graph: Any = graph, visits: int = visits) -> None:
            # A steps limit counts every visit but the start node's: the run needs them all, and one fewer stops it
            # short of its end.
            steps = visits - 1
            check((await engine.eval(graph, steps=steps)).trace.is_end(graph.id), "{} not done", graph.id)
            check(not (await engine.eval(graph, steps=steps - 1)).trace.is_end(graph.id), "{} done", graph.id)

        asyncio.run(visits_are())
    return side


def build_langgraph() -> Side:
    import operator
    from typing import Annotated, TypedDict

    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        count: Annotated[int, operator.add]

    async def step(state: State) -> dict[str, int]:
        return {"count": 1}

    async def gateway(state: State) -> dict[str, int]:
        return {}

    chain = StateGraph(State)
    previous = START
    for i in range(1, CHAIN + 1):
        chain.add_node(f"n{i}", step)
        chain.add_edge(previous, f"n{i}")
        previous = f"n{i}"
    chain.add_edge(previous, END)

    fan = StateGraph(State)
    fan.add_node("fork", gateway)
    fan.add_edge(START, "fork")
    for i in range(BRANCHES):
        fan.add_node(f"b{i}", step)
        fan.add_edge("fork", f"b{i}")
    fan.add_node("join", gateway)
    fan.add_edge([f"b{i}" for i in range(BRANCHES)], "join")
    fan.add_edge("join", END)

    config: Any = {"recursion_limit": CHAIN + 10}  # LangGraph's default stops a run at 25 supersteps
    side: Side = {}
    for key, builder, count in (("chain", chain, CHAIN), ("fan_out", fan, BRANCHES)):
        graph = builder.compile()

        async def run(graph: Any = graph, count: int = count, key: str = key) -> None:
            state = await graph.ainvoke({"count": 0}, config)
            check(state["count"] == count, "{} ran {} activities", key, state["count"])

        async def shape(graph: Any = graph) -> dict[str, int]:
            steps: set[int] = set()
            nodes = 0
            async for event in graph.astream({"count": 0}, config, stream_mode="debug"):
                if event["type"] == "task":
                    nodes += 1
                    steps.add(event["step"])
            return {"supersteps": len(steps), "nodes": nodes}

        side[key] = (run, asyncio.run(shape()))
    return side


SIDES: dict[str, tuple[str, str, Callable[[], Side]]] = {
    "batonflow": ("batonflow", "batonflow", build_batonflow),
    "langgraph": ("LangGraph", "langgraph", build_langgraph),
}
"""Side key → its name in the table, its distribution, and what builds its graphs."""


def run_side(key: str, quick: bool) -> dict[str, Any]:
    """One side's graphs, timed in this process: µs per run, and what a run is made of."""
    name, distribution, build = SIDES[key]
    try:
        installed = version(distribution)
    except PackageNotFoundError:
        return {"name": name, "status": "not installed", "detail": f"pip install {distribution}"}
    side = build()
    plan = Plan.for_mode(quick)

    async def timed() -> dict[str, Any]:
        return {graph: {**await measure(run, units=1, plan=plan), **shape} for graph, (run, shape) in side.items()}

    return {"name": name, "status": "ok", "version": installed, "results": asyncio.run(timed())}


def collect(quick: bool) -> dict[str, dict[str, Any]]:
    """Every side in its own subprocess, in rounds; each graph keeps its round of lowest wall-clock median (and
    the lowest CPU median of all rounds)."""
    reports: dict[str, dict[str, Any]] = {}
    for _ in range(1 if quick else 2):
        for key in SIDES:
            report = side_in_subprocess("graph", key, SIDES[key][0], quick)
            if key not in reports or report["status"] != "ok":
                reports[key] = {**report, "rounds": [report.get("results")]}
            elif reports[key]["status"] == "ok":
                reports[key]["rounds"].append(report["results"])
    for report in reports.values():
        if report["status"] == "ok":
            rounds = report.pop("rounds")
            report["results"] = {
                graph: {
                    **min((r[graph] for r in rounds), key=lambda result: result["wall_median"]),
                    "cpu_median": min(r[graph]["cpu_median"] for r in rounds),
                }
                for graph in GRAPHS
            }
        else:
            report.pop("rounds")
    return reports


def _cell(report: dict[str, Any], graph: str, clock: str, per: str | None = None) -> str:
    if report["status"] != "ok":
        return str(report["status"])
    result = report["results"][graph]
    figure = result[f"{clock}_median"] / (result[per] if per else 1)
    return f"{figure:,.2f}" + (f" ({result[per]})" if per else "")


def render(reports: dict[str, dict[str, Any]]) -> list[str]:
    """A Markdown table per clock: each side's µs per run and per unit, and batonflow ÷ LangGraph per run."""
    bf, lg = reports["batonflow"], reports["langgraph"]
    lines: list[str] = []
    for clock, title in (("wall", "wall-clock"), ("cpu", "CPU time")):
        lines += [f"Graph engines, {title} µs (medians; a unit's count in brackets):", ""]
        header = ["graph", "batonflow /run", "/node visit", "LangGraph /run", "/superstep", "/node run"]
        lines += ["| " + " | ".join([*header, "batonflow ÷ LangGraph"]) + " |", "|---" + "|---:" * 6 + "|"]
        for graph, label in GRAPHS.items():
            cells = [label, _cell(bf, graph, clock), _cell(bf, graph, clock, "visits")]
            cells += [_cell(lg, graph, clock), _cell(lg, graph, clock, "supersteps"), _cell(lg, graph, clock, "nodes")]
            both = bf["status"] == lg["status"] == "ok"
            ratio = bf["results"][graph][f"{clock}_median"] / lg["results"][graph][f"{clock}_median"] if both else None
            lines.append("| " + " | ".join([*cells, f"{ratio:.3f}" if ratio is not None else ""]) + " |")
        lines.append("")
    versions = ", ".join(f"{r['name']} {r.get('version', r['status'])}" for r in reports.values())
    notes = [f"{r['name']}: {r['status']} ({r['detail']})" for r in reports.values() if "detail" in r]
    return [*lines, f"Versions: {versions}.", *notes]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.graph", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round, two short repetitions")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    parser.add_argument("--side", choices=list(SIDES), help="time one side in this process (what the rounds run)")
    args = parser.parse_args(argv)
    if args.side:
        print(json.dumps(run_side(args.side, args.quick)))
        return
    reports = collect(args.quick)
    print(json.dumps(reports) if args.json else "\n".join(render(reports)))


if __name__ == "__main__":
    main(sys.argv[1:])

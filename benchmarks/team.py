"""Teams: ``python -m benchmarks.team [--quick] [--json]``.

One supervisor run, on batonflow's ``TeamAgent`` (the ``hierarchical`` protocol: its graph, the supervisor's
prompt and dashboard, ``commit_route``, the members on the one loop) and on a LangGraph supervisor graph (a
``StateGraph`` whose supervisor node asks its model for the next worker and routes by a conditional edge, each
worker node asking its own model and going back to the supervisor, as LangGraph's supervisor tutorial builds it).

A run is ``TURNS`` member turns, two members taking turns, and a last supervisor turn that finishes: ``TURNS + 1``
supervisor turns and ``TURNS`` member turns, every one a call to a zero-latency fake model. The supervisor's fake
answers by the turn number its last message carries (batonflow's prompt says ``Current Iteration: N``; the
LangGraph graph writes ``turn N``), so both fakes are stateless and cheap. The figure is µs per supervisor turn (a
run ÷ ``TURNS + 1``), framework overhead only; each run checks the members that ran and the final answer.

Each side runs in its own subprocess, two rounds (one with ``--quick``), keeping its better round; the ratio is
batonflow's time over LangGraph's in the same run, context with no target.
"""

# No ``from __future__ import annotations``: LangGraph reads the state's annotations at run time.
import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from ._common import Run, check, side_in_subprocess
from ._worker import Plan, measure

TURNS = 6
"""Member turns per run; the supervisor decides once more, to finish."""
MEMBERS = ("alpha", "beta")
FINAL = "all done"


def _route(turn: int) -> str:
    """Who the supervisor names at ``turn`` (1-based): the members in turn, then the finish."""
    return MEMBERS[(turn - 1) % len(MEMBERS)] if turn <= TURNS else "FINISH"


def build_batonflow() -> Run:
    from batonflow import ChatModelAgent, Runner
    from batonflow.schema import Message, assistant
    from batonflow.team import TeamAgent

    marker = "[TEAM_AGENT_FINISH]"
    decisions = {turn: assistant(_route(turn) if turn <= TURNS else f"{marker} {FINAL}") for turn in range(1, 99)}
    reply = assistant('work done {"status": "done"}')
    tag = "Current Iteration: "

    class Supervisor:
        """Names the member of the turn its last message gives."""

        model_name = "fake-supervisor"

        async def generate(self, messages: Sequence[Message], **_: Any) -> Message:
            text = messages[-1].content
            start = text.rindex(tag) + len(tag)
            return decisions[int(text[start : text.index("\n", start)])]

    class Worker:
        model_name = "fake-worker"

        async def generate(self, messages: Sequence[Message], **_: Any) -> Message:
            return reply

    members = [ChatModelAgent(name=name, description=f"the {name}", model=Worker()) for name in MEMBERS]
    runner = Runner(TeamAgent(model=Supervisor(), members=members, max_turns=TURNS + 2))  # type: ignore[arg-type]
    expected = [_route(turn) for turn in range(1, TURNS + 1)]

    async def run() -> None:
        result = await runner.call("Do the work", metrics=False)
        trace = result.session_values["__team_agent"]
        check(result.text == FINAL, "answer {!r}", result.text)
        check([r.source for r in trace.records] == expected, "members {}", [r.source for r in trace.records])

    return run


def build_langgraph() -> Run:
    import operator
    from typing import Annotated, TypedDict

    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langgraph.graph import END, START, StateGraph

    decisions = {
        turn: ChatResult(generations=[ChatGeneration(message=AIMessage(_route(turn)))]) for turn in range(1, 99)
    }
    reply = ChatResult(generations=[ChatGeneration(message=AIMessage('work done {"status": "done"}'))])

    class Supervisor(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "fake-supervisor"

        def _generate(self, messages: list[BaseMessage], stop: Any = None, **kwargs: Any) -> ChatResult:
            raise NotImplementedError("async only")

        async def _agenerate(self, messages: list[BaseMessage], stop: Any = None, **kwargs: Any) -> ChatResult:
            return decisions[int(str(messages[-1].content).rsplit(" ", 1)[1])]

    class Worker(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "fake-worker"

        def _generate(self, messages: list[BaseMessage], stop: Any = None, **kwargs: Any) -> ChatResult:
            raise NotImplementedError("async only")

        async def _agenerate(self, messages: list[BaseMessage], stop: Any = None, **kwargs: Any) -> ChatResult:
            return reply

    class State(TypedDict):
        messages: Annotated[list[BaseMessage], operator.add]
        next: str
        turn: int
        ran: Annotated[list[str], operator.add]

    supervisor_model, worker_model = Supervisor(), Worker()
    prompt = SystemMessage(f"You are a supervisor of the workers {list(MEMBERS)}. Name the next one, or FINISH.")

    async def supervisor(state: State) -> dict[str, Any]:
        turn = state["turn"] + 1
        decision = await supervisor_model.ainvoke([prompt, *state["messages"], HumanMessage(f"turn {turn}")])
        route = str(decision.content).strip()
        return {"next": route if route in MEMBERS else END, "turn": turn}

    def worker(name: str) -> Callable[[State], Any]:
        async def node(state: State) -> dict[str, Any]:
            answer = await worker_model.ainvoke(state["messages"])
            return {"messages": [AIMessage(str(answer.content), name=name)], "ran": [name]}

        return node

    builder = StateGraph(State)
    builder.add_node("supervisor", supervisor)
    for name in MEMBERS:
        builder.add_node(name, worker(name))
        builder.add_edge(name, "supervisor")
    builder.add_edge(START, "supervisor")
    builder.add_conditional_edges("supervisor", lambda state: state["next"], [*MEMBERS, END])
    graph = builder.compile()
    config: Any = {"recursion_limit": 4 * TURNS}
    expected = [_route(turn) for turn in range(1, TURNS + 1)]

    async def run() -> None:
        state = await graph.ainvoke({"messages": [HumanMessage("Do the work")], "turn": 0, "ran": []}, config)
        check(
            state["ran"] == expected and state["turn"] == TURNS + 1, "ran {} in {} turns", state["ran"], state["turn"]
        )

    return run


SIDES: dict[str, tuple[str, str, Callable[[], Run]]] = {
    "batonflow": ("batonflow", "batonflow", build_batonflow),
    "langgraph": ("LangGraph", "langgraph", build_langgraph),
}


def run_side(key: str, quick: bool) -> dict[str, Any]:
    """One side's supervisor run, timed in this process: µs per supervisor turn."""
    name, distribution, build = SIDES[key]
    try:
        installed = version(distribution)
    except PackageNotFoundError:
        return {"name": name, "status": "not installed", "detail": f"pip install {distribution}"}
    run = build()
    result = asyncio.run(measure(run, units=TURNS + 1, plan=Plan.for_mode(quick)))
    return {"name": name, "status": "ok", "version": installed, "results": result}


def collect(quick: bool) -> dict[str, dict[str, Any]]:
    """Each side in its own subprocess, in rounds; each keeps its round of lowest wall-clock median (and the lowest
    CPU median of all rounds)."""
    reports: dict[str, dict[str, Any]] = {}
    for _ in range(1 if quick else 2):
        for key in SIDES:
            report = side_in_subprocess("team", key, SIDES[key][0], quick)
            previous = reports.get(key)
            if previous is None or report["status"] != "ok":
                reports[key] = report
            elif previous["status"] == "ok":
                best = min(previous["results"], report["results"], key=lambda r: r["wall_median"])
                cpu = min(previous["results"]["cpu_median"], report["results"]["cpu_median"])
                previous["results"] = {**best, "cpu_median": cpu}
    return reports


def render(reports: dict[str, dict[str, Any]]) -> list[str]:
    """A Markdown table: µs per supervisor turn on each side, wall-clock and CPU, and batonflow ÷ LangGraph."""
    bf, lg = reports["batonflow"], reports["langgraph"]
    lines = [
        f"Teams, µs per supervisor turn ({TURNS + 1} per run, {TURNS} member turns; medians):",
        "",
        "| clock | batonflow TeamAgent | LangGraph supervisor graph | batonflow ÷ LangGraph |",
        "|---|---:|---:|---:|",
    ]
    for clock in ("wall", "cpu"):
        cells = [r["results"][f"{clock}_median"] if r["status"] == "ok" else None for r in (bf, lg)]
        shown = [f"{c:,.1f}" if c is not None else str(r["status"]) for c, r in zip(cells, (bf, lg), strict=True)]
        ratio = f"{cells[0] / cells[1]:.2f}" if cells[0] is not None and cells[1] is not None else ""
        lines.append(f"| {clock} | {shown[0]} | {shown[1]} | {ratio} |")
    versions = ", ".join(f"{r['name']} {r.get('version', r['status'])}" for r in reports.values())
    notes = [f"{r['name']}: {r['status']} ({r['detail']})" for r in reports.values() if "detail" in r]
    return [*lines, "", f"Versions: {versions}.", *notes]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.team", description=__doc__.splitlines()[0])
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

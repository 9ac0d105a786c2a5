"""Ways to compose agents: ``python -m benchmarks.composition [--quick] [--json]``.

"A then B then C", written each way batonflow offers, each step one call to a zero-latency fake model, run by a
``Runner`` on the same question:

* **sequential**: a ``SequentialAgent`` of three ``ChatModelAgent``s;
* **transfer**: three ``ChatModelAgent``s handing over with ``transfer_to_agent`` (``set_sub_agents``), the last
  answering (five model calls: two transfers, one answer, counted as three steps);
* **graph**: a ``GraphAgent`` whose graph has three agent nodes in a chain;
* **team**: a ``TeamAgent`` on the ``sequential`` protocol with three members (no supervisor model);
* **flow**: a ``GraphAgent`` whose graph has three ``@ChatModel`` nodes in a chain.

The figure is µs per step (a run ÷ 3), framework overhead only, in this process; context for
``docs/composition.md``, with no target. Each run checks its answer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ._worker import Plan, measure

STEPS = 3
ANSWER = "done"


def build() -> dict[str, Callable[[], Awaitable[None]]]:
    from batonflow.adk import ChatModelAgent, Runner, SequentialAgent, set_sub_agents
    from batonflow.flow import AiFlowEngine
    from batonflow.graph import Graph, GraphAgent, GraphSpec
    from batonflow.schema import FunctionCall, Message, Stream, ToolCall, assistant
    from batonflow.team import TeamAgent

    class FakeModel:
        """A ``ChatModel`` that always gives the same message."""

        model_name = "fake"

        def __init__(self, message: Message) -> None:
            self._message = message

        async def generate(self, messages: Sequence[Message], **_: Any) -> Message:
            return self._message

        def stream(self, messages: Sequence[Message], **_: Any) -> Stream[Message]:
            return Stream.from_list([self._message])

    def agent(name: str, message: Message | None = None) -> ChatModelAgent:
        model = FakeModel(message if message is not None else assistant(ANSWER))
        return ChatModelAgent(name=name, description=f"agent {name}", model=model)

    def transfer(to: str) -> Message:
        call = ToolCall(
            index=0,
            id=f"t_{to}",
            function=FunctionCall(name="transfer_to_agent", arguments=f'{{"agent_name": "{to}"}}'),
        )
        return assistant(tool_calls=[call])

    names = [f"step{i}" for i in range(STEPS)]
    sequential = Runner(SequentialAgent(name="seq", sub_agents=[agent(n) for n in names]))
    last = agent(names[-1])
    middle = set_sub_agents(agent(names[1], transfer(names[-1])), [last])
    chain = Runner(set_sub_agents(agent(names[0], transfer(names[1])), [middle]))
    spec = GraphSpec("chain")
    spec.add_start("start").link_add(names[0])
    for i, name in enumerate(names):
        spec.add_activity(name, task=agent(name)).link_add(names[i + 1] if i + 1 < STEPS else "end")
    spec.add_end("end")
    graph = Runner(GraphAgent(spec.build()))
    team = Runner(TeamAgent(protocol="sequential", members=[agent(n) for n in names]))
    engine = AiFlowEngine()
    engine.register("fake", FakeModel(assistant(ANSWER)))
    nodes = "".join(f"  - {{id: {n}, task: '@ChatModel', meta: {{chatConfig: {{model: fake}}}}}}\n" for n in names)
    flow = Runner(GraphAgent(Graph.from_yaml("id: flow\nlayout:\n" + nodes), engine=engine))

    def answered(runner: Runner) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            result = await runner.call("go")
            if result.text != ANSWER:
                raise RuntimeError(f"expected the answer {ANSWER!r}, got {result.text!r}")

        return run

    return {
        "sequential": answered(sequential),
        "transfer": answered(chain),
        "graph": answered(graph),
        "team": answered(team),
        "flow": answered(flow),
    }


async def collect(quick: bool) -> dict[str, dict[str, Any]]:
    plan = Plan.for_mode(quick)
    return {name: await measure(run, units=STEPS, plan=plan) for name, run in build().items()}


def render(results: dict[str, dict[str, Any]]) -> list[str]:
    lines = ["Compositions, µs per step (3 steps a run; medians):", "", "| way | wall | CPU |", "|---|---:|---:|"]
    for name, result in results.items():
        lines.append(f"| {name} | {result['wall_median']:.0f} | {result['cpu_median']:.0f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.composition", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short warm-up and two short repetitions")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args()
    results = asyncio.run(collect(args.quick))
    print(json.dumps(results) if args.json else "\n".join(render(results)))


if __name__ == "__main__":
    main()

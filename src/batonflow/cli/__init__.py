"""The ``batonflow`` command: thin over the library, it parses arguments, calls, and prints."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from ..errors import BatonflowError

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="batonflow", description="Multi-agent LLM applications.")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo",
        help="a customer-service team of agents (router, refunds, complaints, products) answering a few requests",
    )
    demo.add_argument(
        "--model",
        default="local:smollm2",
        help="model URI: local:smollm2 (default, offline), openai:gpt-4o-mini, "
        "openai-compatible:http://host:port/v1#model, ollama:llama3.2, "
        "scripted (a deterministic replay without any model)",
    )
    demo.add_argument(
        "--approve",
        choices=["auto", "ask", "yes", "no"],
        default="auto",
        help="refund approvals: ask on a terminal, else approve the first and reject the rest (auto, the "
        "default); always ask; approve all; reject all",
    )
    run = commands.add_parser("run", help="run a graph flow (YAML or JSON) and print where it ended, as JSON")
    run.add_argument("flow", metavar="FLOW.yml", help="the graph file (.yml, .yaml or .json)")
    run.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a context variable; a value that reads as JSON (4, true, [1,2]) is that value, else text",
    )
    run.add_argument(
        "--graph",
        action="append",
        default=[],
        metavar="PATH",
        help="other graphs the flow calls as '#id': a file, a folder or a glob pattern",
    )
    run.add_argument("--steps", type=int, default=-1, help="stop after this many node visits (default: no limit)")
    args = parser.parse_args(argv)

    try:
        if args.command == "run":
            from ._run import parse_vars, run_flow

            variables = parse_vars(args.var)
            asyncio.run(run_flow(args.flow, variables=variables, graphs=args.graph, steps=args.steps, out=sys.stdout))
        else:
            from .demo import run_demo  # on first use: the demo pulls in the agents and a model

            asyncio.run(run_demo(args.model, out=sys.stdout, approve=args.approve))
    except BatonflowError as error:
        print(f"batonflow: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nbatonflow: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

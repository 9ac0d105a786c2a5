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
    args = parser.parse_args(argv)
    from .demo import run_demo  # on first use: the demo pulls in the agents and a model

    try:
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

"""Every script in examples/ runs, offline, and prints what its docstring promises.

Each script is run as a user would run it, in a process of its own; its output is compared line by line with the
expected lines below (a pattern where the line holds a random interrupt id). A script with no entry here fails, so
that no example goes untested.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import batonflow

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SRC = Path(batonflow.__file__).resolve().parent.parent
ID = "[0-9a-f]{32}"

EXPECTED: dict[str, list[str]] = {
    "tools_agent.py": [
        "orders (assistant): lookup",
        "orders (tool): order 7 shipped on Monday",
        "orders (assistant): Order 7 shipped on Monday.",
    ],
    "transfer.py": [
        "[router] transfer to refunds",
        "[router → refunds] refunds: I have refunded order 42.",
    ],
    "approval.py": [
        "waiting for orders [1, 2]",
        "refund: refunded",
        "still waiting for orders [2]",
        "refund: not refunded",
        "answer: Order 1 is refunded; order 2 was not.",
    ],
    "checkpoint_process.py": [
        f"process 1: waiting for approval, checkpoint refund-42, interrupt {ID}",
        "process 2: Order 42 is refunded.",
    ],
    "conversation.py": [
        "window 2: turn 1: Answer 1. (fed 1 messages, some left out: False)",
        "window 2: turn 2: Answer 2. (fed 3 messages, some left out: False)",
        "window 2: turn 3: Answer 3. (fed 3 messages, some left out: True)",
        "window 2: turn 4: Answer 4. (fed 3 messages, some left out: True)",
        "window None: turn 1: Answer 1. (fed 1 messages, some left out: False)",
        "window None: turn 2: Answer 2. (fed 3 messages, some left out: False)",
        "window None: turn 3: Answer 3. (fed 5 messages, some left out: False)",
        "window None: turn 4: Answer 4. (fed 7 messages, some left out: False)",
    ],
    "react_hitl.py": [
        "pending: 2 operations await confirmation",
        '  call_1: refund({"order_id": 1})',
        '  call_2: refund({"order_id": 2})',
        "call_1: order 1 refunded",
        "call_2: A refund of order 2 needs a manager.",
        "answer: Order 1 is refunded; order 2 needs a manager.",
    ],
    "final_answer.py": [
        "interrupted; resume by 1 id(s) at checkpoint run-2",
        "text: Order 42 is refunded.",
        "session values: {'refunded': 42}",
        "tokens: 36 model calls: 1",
    ],
    "team_research.py": [
        "[team_agent > supervisor] researcher",
        "[team_agent > researcher] 1. Bees pollinate crops. 2. Bees make honey from nectar.",
        "[team_agent > supervisor] next: writer",
        "[team_agent > writer] Honey bees pollinate crops and make honey from nectar.",
        "[team_agent > supervisor] route to reviewer",
        "[team_agent > reviewer] APPROVED: Honey bees pollinate crops and make honey from nectar.",
        "[team_agent > supervisor] [TEAM_AGENT_FINISH] Honey bees pollinate crops and make honey from nectar.",
        "[team_agent] Honey bees pollinate crops and make honey from nectar.",
        "turns: 4, members: ['researcher', 'writer', 'reviewer']",
    ],
    "observability.py": [
        '[router] router calls transfer_to_agent(agent_name="orders")',
        "[router] router → transfer to orders",
        "[router → orders] orders calls lookup(order_id=7)",
        "[router → orders] orders ← lookup: order 7 shipped on Monday",
        "[router → orders] orders: Order 7 shipped on Monday.",
        "spans: ['chat scripted', 'execute_tool lookup', 'execute_tool transfer_to_agent', 'invoke_agent orders', "
        "'invoke_agent router', 'run router']",
        "orders: 2 model call(s), 1 tool call(s)",
        "router: 1 model call(s), 1 tool call(s)",
    ],
}


def test_every_example_has_its_expected_output() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_example_runs_and_prints_what_it_should(name: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, f"{name} failed:\n{done.stderr}"
    lines = done.stdout.splitlines()
    assert len(lines) == len(EXPECTED[name]), f"{name} printed:\n{done.stdout}"
    for line, expected in zip(lines, EXPECTED[name], strict=True):
        pattern = re.escape(expected).replace(re.escape(ID), ID)
        assert re.fullmatch(pattern, line), f"{name}: expected {expected!r}, got {line!r}"

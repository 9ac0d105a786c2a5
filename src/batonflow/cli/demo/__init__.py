"""The demo: a customer-service team of agents, run on a real model.

A ``router`` hands each customer request to ``refund_agent``, ``complaint_agent`` or ``product_agent``; they
work on a small in-memory shop through tools (look up and refund orders, file complaints, search products).
Every event of each run is printed as it arrives, streamed text chunk by chunk, and the shop's changes at the
end show that the tools really ran.

A refund needs a person: ``issue_refund`` is a sensitive tool (``human_approval``), so a run that would refund
stops with the pending call, saved in the Runner's checkpoint store. The demo shows it, asks for a decision
(``[y/n]`` on a terminal) and resumes the run with it. Without a terminal (CI, a pipe) it approves the first
refund and rejects the later ones, so one run shows both outcomes.

It runs on the offline SmolLM2-135M model by default, so what it shows is what a 135M-parameter model does:
fluent but not always right. Three things keep it on track: the router's transfer is a forced tool call whose
``agent_name`` is an enum of the sub-agents, the router sees a few example routings, and each specialist is
told when to call its tool and when to answer (``batonflow.models.ToolThenAnswer``, the default of
``local:smollm2``). ``--model scripted`` replays the whole flow
without any model.

The shop and its tools are in ``_shop``, the agents, the guide for small models and the scripted model in
``_agents``, the runs, approvals and printing (``batonflow.observe.ConsoleRenderer``) in ``_run``. ``_team`` is
``batonflow demo --team``: a research team of three members (``batonflow.team``).
"""

from ._agents import ROUTING_EXAMPLES as ROUTING_EXAMPLES
from ._agents import build_system as build_system
from ._agents import scripted_model as scripted_model
from ._run import TURNS as TURNS
from ._run import Approval as Approval
from ._run import Approver as Approver
from ._run import run_demo as run_demo
from ._shop import Shop as Shop
from ._shop import print_changes as print_changes
from ._team import run_team_demo as run_team_demo

__all__ = [
    "ROUTING_EXAMPLES",
    "TURNS",
    "Approval",
    "Approver",
    "Shop",
    "build_system",
    "print_changes",
    "run_demo",
    "run_team_demo",
    "scripted_model",
]

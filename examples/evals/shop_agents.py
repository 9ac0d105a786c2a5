"""The demo's customer-service agents (``batonflow demo``) for the eval set ``shop.yaml``, as factories: each case
gets a fresh tree over a fresh shop, so that one case's refund does not change the next one's orders.

``scripted`` runs on the demo's scripted model (offline, the same on every run); ``local`` on SmolLM2-135M in
process (``batonflow[local]``), as ``batonflow demo`` runs it::

    batonflow eval examples/evals/shop.yaml examples/evals/shop_agents.py:scripted
    batonflow eval examples/evals/shop.yaml examples/evals/shop_agents.py:local --concurrency 1
"""

from __future__ import annotations

from functools import cache

from batonflow import FlowAgent
from batonflow.cli.demo import Shop, build_system, scripted_model
from batonflow.models import ChatModel, load_model


def scripted() -> FlowAgent:
    """The tree on the scripted model, over a new shop."""
    return build_system(scripted_model(), Shop())


@cache
def _local_models() -> tuple[ChatModel, ChatModel]:
    # Loaded once and shared by the cases; the router has a model of its own, as in the demo, so that llama.cpp
    # keeps its long prompt cached between turns.
    return load_model("local:smollm2"), load_model("local:smollm2")


def local() -> FlowAgent:
    """The tree on SmolLM2 (its specialists guided by the model itself, the router routing by examples), over a
    new shop."""
    model, router_model = _local_models()
    return build_system(model, Shop(), guided=not getattr(model, "guided", False), router_model=router_model)

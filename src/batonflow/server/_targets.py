"""The answer to a paused run's interrupts, checked: ``targets`` name interrupts the run paused on, and an
approval's answer is a decision for each of its tool calls (``HITLDecision``). Anything else is a 422 that says
what was expected.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from ..agents import HITLDecision, parse_decisions
from ..errors import UserError
from ._errors import ApiError, shown

__all__ = ["check_targets"]


def check_targets(interrupts: Sequence[Mapping[str, Any]], targets: Mapping[str, Any]) -> dict[str, Any]:
    """``targets`` checked against the interrupts they answer, an approval's decisions made ``HITLDecision``s."""
    known = {i["id"]: i for i in interrupts}
    unknown = sorted(set(targets) - set(known))
    if unknown:
        raise ApiError(
            422,
            "unknown_targets",
            f"targets: expected interrupt ids among {list(known)}, got {[shown(u) for u in unknown]}, which match no "
            "interrupt",
            expected=list(known),
            found=unknown,
        )
    return {
        key: _decisions(key, known[key], value) if known[key].get("kind") == "approval" else value
        for key, value in targets.items()
    }


def _decisions(key: str, interrupt: Mapping[str, Any], value: Any) -> dict[str, HITLDecision]:
    """An approval's answer (``batonflow.agents.parse_decisions``: one action or decision for every call, or a
    decision per call id), refused as a 422 naming the target."""
    calls = [task["call_id"] for task in interrupt["info"]["tasks"]]
    try:
        return parse_decisions(value, calls, where=f"targets[{key!r}]")
    except UserError as error:
        raise ApiError(
            422, "invalid_decision", str(error), expected=f"decisions for {calls}", found=shown(value)
        ) from None

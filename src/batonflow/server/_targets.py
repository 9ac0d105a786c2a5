"""The answer to a paused run's interrupts, checked: ``targets`` name interrupts the run paused on, and an
approval's answer is a decision for each of its tool calls (``HITLDecision``). Anything else is a 422 that says
what was expected.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from ..agents import HITLDecision
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


_ACTIONS = ("approve", "reject", "skip")


def _decisions(key: str, interrupt: Mapping[str, Any], value: Any) -> dict[str, HITLDecision]:
    """An approval's answer: one action for every call (``"approve"``), or a decision per call id
    (``{"call_1": {"action": "reject", "comment": "too much"}}``)."""
    calls = [task["call_id"] for task in interrupt["info"]["tasks"]]
    if isinstance(value, str):
        value = {call: {"action": value} for call in calls}
    expected = (
        f"one of {list(_ACTIONS)}, or a decision per call id {calls} "
        "({'action': ..., 'comment'?, 'modified_args'?, 'always_allow'?})"
    )
    if not isinstance(value, dict) or not set(value) <= set(calls):
        raise ApiError(
            422,
            "invalid_decision",
            f"targets[{key!r}]: expected {expected}, got {shown(value)}",
            expected=expected,
            found=shown(value),
        )
    decisions = {}
    for call_id, decision in value.items():
        fields_ = {"action", "comment", "modified_args", "always_allow"}
        if (
            not isinstance(decision, dict)
            or decision.get("action") not in _ACTIONS
            or not set(decision) <= fields_
            or not isinstance(decision.get("modified_args") or {}, dict)
        ):
            raise ApiError(
                422,
                "invalid_decision",
                f"targets[{key!r}][{call_id!r}]: expected {expected}, got {shown(decision)}",
                expected=expected,
                found=shown(decision),
            )
        decisions[call_id] = HITLDecision(
            action=decision["action"],
            comment=None if decision.get("comment") is None else str(decision["comment"]),
            modified_args=decision.get("modified_args"),
            always_allow=bool(decision.get("always_allow", False)),
        )
    return decisions

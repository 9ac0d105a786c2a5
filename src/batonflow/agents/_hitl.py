"""Human in the loop: Solon's HITL interceptor on batonflow's interrupts (reference §B.2, DESIGN §2.3).

Register the tools that need a person (``on_tool`` with a strategy, or ``on_sensitive_tool``). When a model turn
calls any of them, the **whole batch** of that turn's calls waits, nothing run, as an interrupt whose info is a
``HITLPending`` listing the tasks. Resume with decisions for the tasks, keyed by call id:
``runner.resume(checkpoint_id, targets={interrupt_id: {call_id: HITL.approve()}})``. The batch then goes straight
to the tools — the model is not asked again: approved calls run (with modified arguments if given), skipped ones
get the skip text, rejected ones the reject text; when the only sensitive call is rejected the run ends with it.
Built on interrupts and checkpoints, a pending approval survives a restart with a persistent store.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..adk._builtin import get_language
from ..adk._chatmodel import AgentMiddleware, ToolBatch
from ..adk._context import RunContext
from ..errors import UserError
from ..schema import FunctionCall, ToolCall
from ..store import register_type

__all__ = ["HITL", "HITLDecision", "HITLPending", "PendingTask"]

_TEXTS = {
    "sensitive": {"en": "Sensitive operation: a person must confirm it", "zh": "敏感操作，需要人工介入确认"},
    "skipped": {"en": "Operation skipped: please continue with the next step.", "zh": "操作跳过：请继续下一步。"},
    "rejected": {"en": "Operation rejected: human approval was not granted.", "zh": "操作拒绝：人工审批未通过。"},
}


def _text(key: str) -> str:
    return _TEXTS[key][get_language()]


@dataclass(frozen=True, slots=True, kw_only=True)
class HITLDecision:
    """A person's decision on one pending call."""

    action: Literal["approve", "reject", "skip"]
    comment: str | None = None
    modified_args: Mapping[str, Any] | None = None
    always_allow: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingTask:
    call_id: str
    tool_name: str
    arguments: str
    comment: str


@dataclass(frozen=True, slots=True, kw_only=True)
class HITLPending:
    """The info of a HITL interrupt: the calls waiting for a decision."""

    tasks: tuple[PendingTask, ...] = field(default_factory=tuple)

    def __str__(self) -> str:
        return "; ".join(f"{t.tool_name}({t.arguments}): {t.comment}" for t in self.tasks)


HITLStrategy = Callable[[dict[str, Any], RunContext], str | None]
"""Given a call's arguments, the reason a person must look at it, or None to let it through."""


class HITL:
    """The approval interceptor. ``middleware()`` gives the ``AgentMiddleware`` to put on a ``ChatModelAgent``."""

    def __init__(self) -> None:
        self._strategies: dict[str, HITLStrategy] = {}
        self._on_approved: Callable[[str, dict[str, Any]], None] | None = None

    def on_tool(self, name: str, strategy: HITLStrategy) -> HITL:
        self._strategies[name] = strategy
        return self

    def on_sensitive_tool(self, *names: str, comment: str | None = None) -> HITL:
        """These tools always need a person; ``comment`` tells them why (a default text otherwise)."""
        for name in names:
            self._strategies[name] = lambda _args, _ctx: comment or _text("sensitive")
        return self

    def on_approved(self, callback: Callable[[str, dict[str, Any]], None]) -> HITL:
        """Called with the tool name and arguments of each approval marked ``always_allow``."""
        self._on_approved = callback
        return self

    def middleware(self) -> AgentMiddleware:
        return AgentMiddleware(before_tools=self._before_tools)

    # -- decisions, for the resume data ------------------------------------------------------------------------

    @staticmethod
    def approve(
        comment: str | None = None, *, modified_args: Mapping[str, Any] | None = None, always_allow: bool = False
    ) -> HITLDecision:
        return HITLDecision(action="approve", comment=comment, modified_args=modified_args, always_allow=always_allow)

    @staticmethod
    def reject(comment: str | None = None) -> HITLDecision:
        return HITLDecision(action="reject", comment=comment)

    @staticmethod
    def skip(comment: str | None = None) -> HITLDecision:
        return HITLDecision(action="skip", comment=comment)

    # -- the batch hook ----------------------------------------------------------------------------------------

    def _before_tools(self, batch: ToolBatch) -> None:
        sensitive = [(call, reason) for call in batch.calls if (reason := self._reason(call, batch.ctx)) is not None]
        if not sensitive:
            return
        data = batch.get_resume_context().data
        decisions: Mapping[str, Any] = data if isinstance(data, Mapping) else {}
        for call_id, decision in decisions.items():
            if not isinstance(decision, HITLDecision):
                raise UserError(
                    f"HITL resume data: expected a HITLDecision for call {call_id!r}, got {type(decision).__name__}"
                )
        if any(call.id not in decisions for call, _ in sensitive):
            tasks = tuple(
                PendingTask(call_id=c.id, tool_name=c.function.name, arguments=c.function.arguments, comment=reason)
                for c, reason in sensitive
            )
            batch.interrupt(HITLPending(tasks=tasks))
        rejected = [call for call, _ in sensitive if decisions[call.id].action == "reject"]
        if rejected and len(sensitive) == 1:
            batch.final_answer = _text("rejected")
            return
        for index, call in enumerate(batch.calls):
            decision = decisions.get(call.id)
            if decision is None:
                continue
            if decision.action == "skip":
                batch.results[call.id] = _text("skipped")
            elif decision.action == "reject":
                batch.results[call.id] = _text("rejected")
            else:
                batch.calls[index] = self._approved(call, decision)

    def _approved(self, call: ToolCall, decision: HITLDecision) -> ToolCall:
        arguments = _arguments(call)
        if decision.modified_args:
            arguments = {**arguments, **decision.modified_args}
            call = replace(call, function=FunctionCall(name=call.function.name, arguments=json.dumps(arguments)))
        if decision.always_allow and self._on_approved is not None:
            self._on_approved(call.function.name, arguments)
        return call

    def _reason(self, call: ToolCall, ctx: RunContext) -> str | None:
        strategy = self._strategies.get(call.function.name)
        return None if strategy is None else strategy(_arguments(call), ctx)


def _arguments(call: ToolCall) -> dict[str, Any]:
    try:
        parsed = json.loads(call.function.arguments or "{}")
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


for _cls in (HITLPending, PendingTask, HITLDecision):
    register_type(_cls, name=f"hitl.{_cls.__name__}")
del _cls

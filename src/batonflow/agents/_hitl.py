"""Human in the loop: Solon's HITL interceptor on batonflow's interrupts.

``human_approval(sensitive_tools=[...], strategies={...})`` is a ``ChatModelAgent`` middleware (``HITLInterceptor``
under Solon's class name) that names the tools needing a person: always, or when a strategy says so for a call's
arguments. When a model turn calls any of them, the **whole batch** of that turn's calls waits, nothing run, as an
interrupt whose info is a ``HITLPending`` listing the tasks. Resume with decisions for the tasks, keyed by call id:
``runner.resume(checkpoint_id, targets={interrupt_id: {call_id: HITL.approve()}})`` (``HITL`` makes the decisions,
as Solon's static helper does); one decision for the interrupt decides every call, and a decision may be given in its
JSON form (``"approve"``, ``{"action": "reject", "comment": "…"}``), as a command line or an HTTP body sends it. The batch then goes straight to the tools — the model is not asked again: approved
calls run (with modified arguments if given, and the approval's comment noted in their result), skipped and
rejected ones get the decision's comment as their result, or else the skip or reject text; when the only sensitive
call is rejected, that text is the run's answer. Built on
interrupts and checkpoints, a pending approval survives a restart with a persistent store. With trace callbacks, the
suspension and each decision applied are trace events.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .. import trace as trace_events
from ..adk import AgentMiddleware, RunContext, ToolBatch, get_language
from ..codec import register_type
from ..errors import ModelJSONError, UserError
from ..schema import FunctionCall, ToolCall
from ..tools import parse_model_json

__all__ = ["HITL", "HITLDecision", "HITLInterceptor", "HITLPending", "HITLStrategy", "PendingTask", "human_approval"]

_TEXTS = {
    "sensitive": {"en": "Sensitive operation: a person must confirm it", "zh": "敏感操作，需要人工介入确认"},
    "skipped": {"en": "Operation skipped: please continue with the next step.", "zh": "操作跳过：请继续下一步。"},
    "rejected": {"en": "Operation rejected: human approval was not granted.", "zh": "操作拒绝：人工审批未通过。"},
    "pending": {"en": "{count} operations await confirmation", "zh": "有 {count} 项操作待人工确认"},
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
    """The info of a HITL interrupt: the calls waiting for a decision.

    ``str()`` is its ``summary``, Solon's pending reason: the comment of a single task, or "N operations await
    confirmation". A ``ReActAgent`` says it as its answer before it waits, and a conversation keeps it as the
    session's pending reason.
    """

    tasks: tuple[PendingTask, ...] = field(default_factory=tuple)

    @property
    def summary(self) -> str:
        if len(self.tasks) == 1:
            return self.tasks[0].comment
        return _text("pending").format(count=len(self.tasks))

    def __str__(self) -> str:
        return self.summary


@dataclass(frozen=True, slots=True, kw_only=True)
class _Waiting:
    """What a HITL interrupt saves: every task the person was shown, and the decisions given so far."""

    tasks: tuple[PendingTask, ...]
    decided: dict[str, HITLDecision] = field(default_factory=dict)


HITLStrategy = Callable[[dict[str, Any], RunContext], str | None]
"""Given a call's arguments, the reason a person must look at it, or None to let it through."""


class HITL:
    """The decisions a person gives on resume: ``{call_id: HITL.approve()}`` (Solon's static ``HITL`` helper)."""

    @staticmethod
    def approve(
        comment: str | None = None, *, modified_args: Mapping[str, Any] | None = None, always_allow: bool = False
    ) -> HITLDecision:
        """Run the call; ``modified_args`` are merged into its arguments, ``comment`` is noted in its result."""
        return HITLDecision(action="approve", comment=comment, modified_args=modified_args, always_allow=always_allow)

    @staticmethod
    def reject(comment: str | None = None) -> HITLDecision:
        return HITLDecision(action="reject", comment=comment)

    @staticmethod
    def skip(comment: str | None = None) -> HITLDecision:
        return HITLDecision(action="skip", comment=comment)


def human_approval(
    *,
    sensitive_tools: Iterable[str] | Mapping[str, str | None] = (),
    strategies: Mapping[str, HITLStrategy] | None = None,
    on_approved: Callable[[str, dict[str, Any]], None] | None = None,
) -> AgentMiddleware:
    """A middleware that makes a person approve calls of the given tools before they run (Solon's HITL).

    ``sensitive_tools`` always need a person: a list of tool names, or a mapping of names to the comment the person
    is shown (None for the default text). ``strategies`` decide call by call: a tool name mapped to a function of
    the call's arguments and the run context that returns the reason a person must look, or None to let the call
    through. ``on_approved`` is called with the tool name and arguments of each approval marked ``always_allow``.
    These are Solon's ``onSensitiveTool``, ``onTool`` and ``onApproved``. The middleware holds configuration only,
    so one serves any number of agents and runs.
    """
    return AgentMiddleware(before_tools=_Approvals(sensitive_tools, strategies, on_approved).before_tools)


class HITLInterceptor(AgentMiddleware):
    """``human_approval(...)`` as a middleware class (Solon's ``HITLInterceptor``)."""

    __slots__ = ("_tools",)

    def __init__(
        self,
        *,
        sensitive_tools: Iterable[str] | Mapping[str, str | None] = (),
        strategies: Mapping[str, HITLStrategy] | None = None,
        on_approved: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> None:
        approvals = _Approvals(sensitive_tools, strategies, on_approved)
        super().__init__(before_tools=approvals.before_tools)
        self._tools = sorted(approvals.strategies)

    def __repr__(self) -> str:
        return f"HITLInterceptor(tools={self._tools})"


class _Approvals:
    """The configuration of one HITL middleware and its batch hook."""

    __slots__ = ("on_approved", "strategies")

    def __init__(
        self,
        sensitive_tools: Iterable[str] | Mapping[str, str | None],
        strategies: Mapping[str, HITLStrategy] | None,
        on_approved: Callable[[str, dict[str, Any]], None] | None,
    ) -> None:
        self.strategies: dict[str, HITLStrategy] = {
            name: _sensitive(comment) for name, comment in _comments(sensitive_tools).items()
        }
        for name, strategy in (strategies or {}).items():
            _check_name(name, "strategies")
            if not callable(strategy):
                raise UserError(
                    f"HITL strategies[{name!r}]: expected a function of (arguments, ctx), got {type(strategy).__name__}"
                )
            if name in self.strategies:
                raise UserError(f"HITL tool {name!r}: expected it in sensitive_tools or in strategies, got it in both")
            self.strategies[name] = strategy
        if on_approved is not None and not callable(on_approved):
            raise UserError(f"HITL on_approved: expected a function of (tool name, arguments), got {on_approved!r}")
        self.on_approved = on_approved

    def __repr__(self) -> str:
        return f"human_approval(tools={sorted(self.strategies)})"

    # -- the batch hook ----------------------------------------------------------------------------------------

    async def before_tools(self, batch: ToolBatch) -> None:
        tasks, decided = self._pending_tasks(batch)
        if not tasks:
            return
        decisions = {**decided, **_decisions(batch, tasks)}
        trace = batch.ctx.trace
        waiting = tuple(t for t in tasks if t.call_id not in decisions)
        if waiting:
            if trace is not None:
                await trace.event(trace_events.HITLPending, tasks=waiting)
            # The tasks are saved with the interrupt: on resume the decisions are checked against what the person
            # was shown, even if a strategy would now judge the calls differently. Decisions given for some of
            # them are kept: the next resume needs only the others.
            batch.interrupt(HITLPending(tasks=waiting), state=_Waiting(tasks=tasks, decided=decisions))
        if trace is not None:
            for task in tasks:
                await trace.event(
                    trace_events.HITLDecided,
                    call_id=task.call_id,
                    tool_name=task.tool_name,
                    decision=decisions[task.call_id],
                )
        if len(tasks) == 1 and decisions[tasks[0].call_id].action == "reject":
            # Solon ends the run when its only sensitive call is rejected; the comment, if any, is the answer.
            batch.final_answer = decisions[tasks[0].call_id].comment or _text("rejected")
            return
        for index, call in enumerate(batch.calls):
            decision = decisions.get(call.id)
            if decision is None:
                continue
            if decision.action == "skip":
                batch.results[call.id] = decision.comment or _text("skipped")
            elif decision.action == "reject":
                batch.results[call.id] = decision.comment or _text("rejected")
            else:
                batch.calls[index] = self._approved(call, decision)
                if decision.comment:
                    batch.notes[call.id] = f" (Note: {decision.comment})"

    def _pending_tasks(self, batch: ToolBatch) -> tuple[tuple[PendingTask, ...], dict[str, HITLDecision]]:
        """The tasks of this batch and the decisions already given: saved by an earlier interrupt, or new."""
        saved = batch.get_interrupt_state()
        if saved.was_interrupted and isinstance(saved.state, _Waiting):
            return saved.state.tasks, dict(saved.state.decided)
        tasks = tuple(
            PendingTask(call_id=c.id, tool_name=c.function.name, arguments=c.function.arguments, comment=reason)
            for c in batch.calls
            if (reason := self._reason(c, batch.ctx)) is not None
        )
        return tasks, {}

    def _approved(self, call: ToolCall, decision: HITLDecision) -> ToolCall:
        arguments = _arguments(call)
        if decision.modified_args:
            arguments = {**arguments, **decision.modified_args}
            call = replace(call, function=FunctionCall(name=call.function.name, arguments=json.dumps(arguments)))
        if decision.always_allow and self.on_approved is not None:
            self.on_approved(call.function.name, arguments)
        return call

    def _reason(self, call: ToolCall, ctx: RunContext) -> str | None:
        strategy = self.strategies.get(call.function.name)
        return None if strategy is None else strategy(_arguments(call), ctx)


def _decisions(batch: ToolBatch, tasks: tuple[PendingTask, ...]) -> dict[str, HITLDecision]:
    """The resume's decisions, checked: a mapping of pending call ids to decisions (empty if none given)."""
    data = batch.get_resume_context().data
    return {} if data is None else parse_decisions(data, [t.call_id for t in tasks])


_ACTIONS = ("approve", "reject", "skip")
_FIELDS = frozenset(("action", "comment", "modified_args", "always_allow"))


def parse_decisions(
    data: object, call_ids: Sequence[str], *, where: str = "HITL resume data"
) -> dict[str, HITLDecision]:
    """An approval's answer as decisions per call id. It may be ``HITLDecision``s or their JSON form (what a command
    line or an HTTP body sends): one action for every call (``"approve"``), one decision for every call
    (``{"action": "reject", "comment": "too much"}``), or a mapping of call ids to either. An error message starts
    with ``where``."""
    if isinstance(data, str | HITLDecision) or (
        isinstance(data, Mapping) and "action" in data and "action" not in call_ids
    ):
        return dict.fromkeys(call_ids, _decision(data, where))
    if not isinstance(data, Mapping):
        raise UserError(
            f"{where}: expected a mapping of call ids to HITLDecisions (or one of {list(_ACTIONS)}), "
            f"got {type(data).__name__}"
        )
    unknown = sorted(str(key) for key in data if key not in call_ids)
    if unknown:
        raise UserError(
            f"{where}: expected decisions for the pending call ids {list(call_ids)}, "
            f"got {sorted(map(str, data))} (unknown: {unknown})"
        )
    return {call_id: _decision(value, f"{where} for call {call_id!r}") for call_id, value in data.items()}


def _decision(value: object, where: str) -> HITLDecision:
    """One decision: a ``HITLDecision``, an action, or its JSON form ``{"action": ..., "comment"?, ...}``."""
    if isinstance(value, HITLDecision):
        return value
    if isinstance(value, str):
        value = {"action": value}
    expected = (
        f"a HITLDecision, one of {list(_ACTIONS)}, or {{'action', 'comment'?, 'modified_args'?, 'always_allow'?}}"
    )
    if not isinstance(value, Mapping):
        raise UserError(f"{where}: expected {expected}, got {type(value).__name__}")
    action, comment, arguments = value.get("action"), value.get("comment"), value.get("modified_args")
    extra = sorted(str(key) for key in value if key not in _FIELDS)
    if action not in _ACTIONS or extra:
        found = f"the fields {extra}" if extra else f"the action {repr(action)[:80]}"
        raise UserError(f"{where}: expected {expected}, got {found}")
    if comment is not None and not isinstance(comment, str):
        raise UserError(f"{where}: expected a comment string, got {type(comment).__name__}")
    if arguments is not None and not isinstance(arguments, Mapping):
        raise UserError(
            f"{where}: expected modified_args as a mapping of argument names, got {type(arguments).__name__}"
        )
    return HITLDecision(
        action=action, comment=comment, modified_args=arguments, always_allow=value.get("always_allow") is True
    )


def _comments(sensitive_tools: Iterable[str] | Mapping[str, str | None]) -> dict[str, str | None]:
    if isinstance(sensitive_tools, str):
        raise UserError(f"HITL sensitive_tools: expected a list of tool names, got the string {sensitive_tools!r}")
    comments = dict(sensitive_tools) if isinstance(sensitive_tools, Mapping) else dict.fromkeys(sensitive_tools)
    for name, comment in comments.items():
        _check_name(name, "sensitive_tools")
        if comment is not None and not isinstance(comment, str):
            raise UserError(f"HITL sensitive_tools[{name!r}]: expected a comment string or None, got {comment!r}")
    return comments


def _sensitive(comment: str | None) -> HITLStrategy:
    # The default text is looked up on each call, so set_language after construction still applies.
    return lambda _args, _ctx: comment or _text("sensitive")


def _check_name(name: object, where: str) -> None:
    if not isinstance(name, str) or not name:
        raise UserError(f"HITL {where}: expected tool names, got {name!r}")


def _arguments(call: ToolCall) -> dict[str, Any]:
    try:
        parsed = parse_model_json(call.function.arguments or "{}")
    except ModelJSONError:
        return {}  # the call itself refuses them, with the reason, when it runs
    return parsed if isinstance(parsed, dict) else {}


register_type(HITLPending, name="hitl.HITLPending")
register_type(PendingTask, name="hitl.PendingTask")
register_type(HITLDecision, name="hitl.HITLDecision")
register_type(_Waiting, name="hitl.Waiting")

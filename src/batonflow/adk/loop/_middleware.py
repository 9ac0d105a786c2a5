"""What middlewares plug into the loop: their hooks, the tool batch they may change, and instruction templates."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from ...errors import UserError
from ...schema import ToolCall
from ...tools import Address, InterruptSignal, InterruptState, ResumeContext, Tool, ToolContext
from .._context import RunContext
from ._state import ReactState

__all__ = [
    "AgentMiddleware",
    "BatchHook",
    "ModelErrorHook",
    "StateHook",
    "ToolBatch",
    "ToolCallHandler",
    "render_instruction",
]

ToolCallHandler = Callable[[ToolCall, ToolContext], Awaitable[str]]
"""Runs one tool call and returns its observation; ``AgentMiddleware.wrap_tool_call`` wraps one."""


StateHook = Callable[[ReactState, RunContext], Awaitable[None] | None]
"""Sees (and may change) the loop state: the messages the next model call is sent, and the tools it is offered."""
ModelErrorHook = Callable[[ReactState, Exception, int, RunContext], Awaitable[bool] | bool]
BatchHook = Callable[["ToolBatch"], Awaitable[None] | None]


@dataclass(slots=True, kw_only=True)
class AgentMiddleware:
    """Extends an agent on the loop (``ChatModelAgent``, ``ReActAgent``): extra instruction and tools, hooks around
    the run, each model call and each round of tool calls, and tool-call wrapping (Solon's interceptor hooks:
    agent start/end, reason start/end, action start/end, and wrap tool, which sees each call's start and end).

    The state hooks get the loop's own ``ReactState``: what they change is what the loop goes on with.
    ``after_chat_model`` finds the model's message last in ``state.messages``; a message put in its place is what
    the loop acts on, as in Eino: its tool calls are the ones that run, and without calls it is the answer. The
    caller's event shows the model's own message, which may have been streamed already.

    ``before_agent`` runs once, before a run's first model call (not on resume); ``after_agent`` when the agent
    finishes (not when it is interrupted, nor when it ends with an error). ``before_tools`` sees a round's calls
    before any runs (see ``ToolBatch``), ``after_tools`` the same batch once they have run, with ``results``
    holding every call's observation. ``on_model_error(state, error, attempt, ctx)`` is Solon's reason retry: when
    a model call fails (``attempt`` counts the failures of this turn) it may change ``state`` — narrow the context
    after a prompt-too-long error, say — and return True to make the call again; a streamed call is not made
    again once its stream reached the caller. Several middlewares apply in order; for ``wrap_tool_call`` the first
    is the outermost wrapper.
    """

    additional_instruction: str = ""
    additional_tools: Sequence[Tool] = ()
    before_agent: StateHook | None = None
    after_agent: StateHook | None = None
    before_chat_model: StateHook | None = None
    after_chat_model: StateHook | None = None
    wrap_tool_call: Callable[[ToolCallHandler], ToolCallHandler] | None = None
    before_tools: BatchHook | None = None
    after_tools: BatchHook | None = None
    on_model_error: ModelErrorHook | None = None


@dataclass(slots=True, kw_only=True, eq=False)
class ToolBatch:
    """The tool calls of one model turn, before any of them runs: what ``AgentMiddleware.before_tools`` sees.

    A middleware may change a call's arguments (replace it in ``calls``), answer a call without running it
    (``results[call_id] = text``), end the run with an answer instead (``final_answer``; every call then gets that
    answer as its result, so the transcript stays valid), append text to a call's result once it has run
    (``notes[call_id] = text``), or suspend the whole batch with ``interrupt`` — nothing runs, and on resume the
    batch comes back here, where ``get_interrupt_state``/``get_resume_context`` tell what was saved and decided
    (human-in-the-loop approval works this way).
    """

    calls: list[ToolCall]
    ctx: RunContext
    address: Address
    results: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    final_answer: str | None = None
    # What the batch found at its address on resume, taken once (as a tool call's ``ToolContext`` does).
    _entry: tuple[InterruptState, ResumeContext, str | None] | None = field(default=None, init=False, repr=False)

    def interrupt(self, info: Any, state: Any = None) -> NoReturn:
        raise InterruptSignal(info, address=self.address, state=state, id=self._entered()[2])

    def get_interrupt_state(self) -> InterruptState:
        return self._entered()[0]

    def get_resume_context(self) -> ResumeContext:
        return self._entered()[1]

    def _entered(self) -> tuple[InterruptState, ResumeContext, str | None]:
        if self._entry is None:
            self._entry = self.ctx.enter(self.address)
        return self._entry


_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}|\{[^{}]*\}")


def render_instruction(template: str, values: Mapping[str, Any]) -> str:
    """Fill ``{name}`` placeholders from session values (``{{`` and ``}}`` for literal braces).

    Only plain names are looked up — no attribute or index access — so a template cannot reach into objects.
    """

    def fill(match: re.Match[str]) -> str:
        text = match.group(0)
        if text in ("{{", "}}"):
            return text[0]
        key = match.group(1)
        if key is None:
            raise UserError(
                f"failed to format instruction: expected '{{name}}' placeholders or '{{{{'/'}}}}' for braces, got {text!r}"
            )
        if key not in values:
            raise UserError(
                f"failed to format instruction: expected a session value named {key!r}, got only {sorted(values)}"
            )
        return str(values[key])

    return _PLACEHOLDER.sub(fill, template)

"""``ModelAgent``: an agent whose chat model runs in the loop engine under a ``LoopPolicy``.

It holds what every such agent has — a model, tools, middlewares, a turn budget, its place in an agent tree —
and builds its ``AgentSetup`` once, on its first run, when the tree is fixed (transfer targets and the exit tool
become tools then). ``ChatModelAgent`` is a ModelAgent with Eino's options and ``EinoPolicy``; Solon's
``ReActAgent`` is one with Solon's options and policy. Any other policy makes another kind of agent.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import ResumeError, UserError
from ...models import ChatModel, ModelSettings, ToolChoice, as_model
from ...schema import Message, ToolCall
from ...tools import Tool, ToolContext, ToolLike, as_tools
from .._builtin import ExitTool, TransferToAgentTool, transfer_instruction
from .._context import RunContext
from .._events import AgentEvent, AgentInput
from .._interrupt import ResumeInfo
from ._engine import run_loop
from ._middleware import AgentMiddleware, ToolCallHandler
from ._model_step import ModelRetryConfig, ModelStep
from ._policy import AgentSetup, LoopPolicy
from ._state import ReactState

__all__ = ["ChatModelAgentResumeData", "ModelAgent"]


@dataclass(slots=True, kw_only=True)
class ChatModelAgentResumeData:
    """Resume data for a loop agent itself: ``history_modifier`` rewrites its saved messages first."""

    history_modifier: Callable[[list[Message]], Sequence[Message]] | None = None


class ModelAgent:
    """A chat model in a loop with tools, deciding as ``policy`` says; see the module doc.

    ``max_turns`` model calls at most per run (what happens then is the policy's). Tools of one round run
    concurrently unless ``execute_sequentially``. ``model_retry`` retries failed model calls, each attempt traced
    and counted as a model call of its own.
    """

    def __init__(
        self,
        *,
        name: str,
        model: ChatModel | str,
        policy: LoopPolicy,
        description: str = "",
        instruction: str = "",
        tools: Sequence[ToolLike] = (),
        return_directly: Sequence[str] = (),
        execute_sequentially: bool = False,
        exit: bool | Tool = False,
        max_turns: int = 20,
        model_retry: ModelRetryConfig | None = None,
        model_settings: ModelSettings | None = None,
        tool_choice: ToolChoice | None = None,
        middlewares: Sequence[AgentMiddleware] = (),
        answer_self: bool = False,
    ) -> None:
        kind = type(self).__name__
        if not name:
            raise UserError(f"{kind} needs a name: expected a non-empty string, got ''")
        self.name = name
        self.description = description
        self.instruction = instruction
        self.model = as_model(model, f"{kind} '{name}' model")
        self.policy = policy
        self.tools = as_tools(tools, owner=f"{kind} '{name}'")
        self.return_directly = frozenset(return_directly)
        self.execute_sequentially = execute_sequentially
        self.exit: Tool | None = ExitTool() if exit is True else exit or None
        self.max_turns = max_turns
        self.model_retry = model_retry
        self.model_settings = model_settings
        self.tool_choice = tool_choice
        self.middlewares = list(middlewares)
        self.answer_self = answer_self
        names = [t.info.name for t in self.tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise UserError(f"agent '{name}': expected unique tool names, got {duplicates} more than once")
        # Set through the flow agent (set_sub_agents); frozen after the first run, as in Eino.
        self._sub_agents: list[tuple[str, str]] = []
        self._parent: tuple[str, str] | None = None
        self._disallow_transfer_to_parent = False
        self._setup: AgentSetup | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, model={self.model.model_name!r})"

    # -- the tree hooks (called by set_sub_agents) ----------------------------------------------------------------

    def on_set_sub_agents(self, agents: Sequence[Any]) -> None:
        self._check_not_frozen()
        if self._sub_agents:
            raise UserError("agent's sub-agents has already been set")
        self._sub_agents = [(a.name, a.description) for a in agents]

    def on_set_as_sub_agent(self, parent: Any) -> None:
        self._check_not_frozen()
        if self._parent is not None:
            raise UserError("agent has already been set as a sub-agent of another agent")
        self._parent = (parent.name, parent.description)

    def on_disallow_transfer_to_parent(self) -> None:
        self._check_not_frozen()
        self._disallow_transfer_to_parent = True

    def _check_not_frozen(self) -> None:
        if self._setup is not None:
            raise UserError("agent has been frozen after run")

    # -- running --------------------------------------------------------------------------------------------------

    def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncGenerator[AgentEvent, None]:
        ctx = ctx if ctx is not None else RunContext(enable_streaming=input.enable_streaming)
        return run_loop(self.setup(), self.policy, input, ctx, streaming=input.enable_streaming)

    def resume(self, info: ResumeInfo, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        """Continue where the last run stopped: tools that finished are not run again."""
        ctx = ctx if ctx is not None else RunContext(enable_streaming=info.enable_streaming)
        setup = self.setup()
        state = info.interrupt_state
        if not isinstance(state, ReactState):
            error = ResumeError(
                f"agent '{self.name}' cannot resume: expected its saved loop state, got {type(state).__name__}"
            )
            return _failed(error)
        data = info.resume_data
        if isinstance(data, ChatModelAgentResumeData) and data.history_modifier is not None:
            state.messages = list(data.history_modifier(state.messages))
        return run_loop(setup, self.policy, state, ctx, streaming=info.enable_streaming)

    def setup(self) -> AgentSetup:
        """What the loop runs with: built on the first run, after which the agent's place in a tree is fixed."""
        setup = self._setup
        if setup is None:
            setup = self._setup = self._build_setup()
        return setup

    def _build_setup(self) -> AgentSetup:
        instruction = self.instruction
        tools = list(self.tools)
        actions: set[str] = set()
        targets = list(self._sub_agents)
        if self._parent is not None and not self._disallow_transfer_to_parent:
            targets.append(self._parent)
        if targets:
            instruction = _joined(instruction, transfer_instruction(targets))
            names = [name for name, _ in targets]
            transfer = TransferToAgentTool(names, source=self.name, answer_self=self.answer_self)
            tools.append(transfer)
            actions.add(transfer.info.name)
        if self.exit is not None:
            tools.append(self.exit)
            actions.add(self.exit.info.name)
        mws = self.middlewares
        for mw in mws:
            instruction = _joined(instruction, mw.additional_instruction)
            tools.extend(mw.additional_tools)
        by_name = {t.info.name: t for t in tools}
        handler = _invoker(by_name)
        for mw in reversed(mws):
            if mw.wrap_tool_call is not None:
                handler = mw.wrap_tool_call(handler)
        retry = self.model_retry.rule(repr(self.model.model_name)) if self.model_retry is not None else None
        return AgentSetup(
            name=self.name,
            instruction=instruction,
            tools=by_name,
            infos=[t.info for t in by_name.values()],
            return_directly=frozenset(self.return_directly | actions),
            actions=frozenset(actions),
            handler=handler,
            step=ModelStep(self.model, settings=self.model_settings, tool_choice=self.tool_choice, retry=retry),
            max_turns=self.max_turns,
            sequential=self.execute_sequentially,
            emits=any(getattr(t, "emits_events", False) for t in by_name.values()),
            before_agent=tuple(mw.before_agent for mw in mws if mw.before_agent is not None),
            after_agent=tuple(mw.after_agent for mw in mws if mw.after_agent is not None),
            before_model=tuple(mw.before_chat_model for mw in mws if mw.before_chat_model is not None),
            after_model=tuple(mw.after_chat_model for mw in mws if mw.after_chat_model is not None),
            before_tools=tuple(mw.before_tools for mw in mws if mw.before_tools is not None),
            after_tools=tuple(mw.after_tools for mw in mws if mw.after_tools is not None),
            model_error=tuple(mw.on_model_error for mw in mws if mw.on_model_error is not None),
        )


def _joined(instruction: str, more: str) -> str:
    if not more:
        return instruction
    return f"{instruction}\n\n{more}" if instruction else more


def _invoker(tools: dict[str, Tool]) -> ToolCallHandler:
    async def invoke(call: ToolCall, ctx: ToolContext) -> str:
        return await tools[call.function.name].invoke(call.function.arguments, ctx)

    return invoke


async def _failed(error: BaseException) -> AsyncIterator[AgentEvent]:
    yield AgentEvent(error=error)

"""Loop policies: what differs between Eino's ChatModelAgent and Solon's ReActAgent, and nothing else.

The engine runs every loop the same way — model step, route, tool step — and asks its ``LoopPolicy`` at each point
where the two originals differ: the model's input, what happens before a turn (a turn limit), what the model is
sent, what its message means, which tool result ends a round, and what a failed or unknown tool tells the model.
``EinoPolicy`` is Eino's ChatModelAgent behaviour; ``batonflow.agents`` has Solon's.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeAlias

from ...errors import MaxIterationsError, ToolArgumentsError
from ...schema import Message, ToolCall, system
from ...tools import InterruptSignal, Tool, ToolInfo
from .._context import RunContext
from .._events import AgentInput
from ._middleware import BatchHook, ModelErrorHook, StateHook, ToolCallHandler, render_instruction
from ._model_step import ModelStep
from ._outcomes import Answer, CallTools, Fail, Routed
from ._state import ReactState, ToolResult

__all__ = ["AgentSetup", "EinoPolicy", "GenModelInput", "LoopPolicy", "ModelRequest", "last_call_to"]

ModelRequest: TypeAlias = tuple[Sequence[Message], Sequence[ToolInfo] | None]
"""The messages a model call is sent and the tools it is offered (None: no tools)."""

GenModelInput: TypeAlias = Callable[[str, AgentInput, RunContext], Sequence[Message] | Awaitable[Sequence[Message]]]
"""Builds an agent's first model input from its instruction, its input and the run context."""


@dataclass(slots=True, kw_only=True)
class AgentSetup:
    """What an agent's loop runs with once its place in the tree is fixed (built once, on its first run).

    The full instruction (transfer and middleware additions included), the tools by name, the return-directly
    and built-in action tools, the wrapped tool handler, the model step, the model calls a run may make, and the
    middlewares' hooks by kind.
    """

    name: str
    instruction: str
    tools: dict[str, Tool]
    infos: list[ToolInfo]
    return_directly: frozenset[str]
    actions: frozenset[str]  # the built-in tools that act on the run: transfer, exit
    handler: ToolCallHandler
    step: ModelStep
    max_turns: int
    sequential: bool = False
    emits: bool = False  # some tool sends events while it runs (an agent tool)
    before_agent: tuple[StateHook, ...] = ()
    after_agent: tuple[StateHook, ...] = ()
    before_model: tuple[StateHook, ...] = ()
    after_model: tuple[StateHook, ...] = ()
    before_tools: tuple[BatchHook, ...] = ()
    after_tools: tuple[BatchHook, ...] = ()
    model_error: tuple[ModelErrorHook, ...] = ()
    _system: Message | None = None

    def system_message(self) -> Message:
        """The instruction as a system message, made once."""
        if self._system is None:
            self._system = system(self.instruction)
        return self._system


class LoopPolicy(Protocol):
    """The decisions of a loop; see the module doc. Policies hold options, never run state: one serves many runs."""

    async def model_input(self, setup: AgentSetup, input: AgentInput, ctx: RunContext) -> list[Message]:
        """The transcript a run starts from."""
        ...

    def before_turn(self, state: ReactState) -> Answer | Fail | None:
        """Before a model call: None to make it, or an answer or a failure instead."""
        ...

    def request(self, state: ReactState) -> ModelRequest:
        """The messages and tools the model is sent."""
        ...

    def route(self, message: Message, state: ReactState, setup: AgentSetup) -> Routed:
        """What the model's message means: tool calls to run, an answer, or a reason to ask again."""
        ...

    def direct_call(self, calls: Sequence[ToolCall], setup: AgentSetup) -> str | None:
        """The id of the call whose result ends the run, held back to be the last event; None for none."""
        ...

    def round_answer(
        self, calls: Sequence[ToolCall], results: Mapping[str, ToolResult], setup: AgentSetup
    ) -> Message | None:
        """A final answer made of a round's results, ending the run; None to go on."""
        ...

    def interrupt_messages(self, signals: Sequence[InterruptSignal]) -> list[Message]:
        """Messages said to the caller before a round's interrupt is passed on."""
        ...

    def tool_failure(self, call: ToolCall, error: Exception, setup: AgentSetup) -> str | None:
        """The observation for a call that raised, or None when the failure ends the run."""
        ...

    def tool_not_found(self, name: str, setup: AgentSetup) -> str:
        """The observation for a call to a tool the agent does not have."""
        ...

    def save_output(self, message: Message, ctx: RunContext) -> None:
        """Store the final answer where the run keeps it (``output_key``)."""
        ...


class EinoPolicy:
    """Eino's ChatModelAgent: ``max_iterations`` model calls, then ``MaxIterationsError``; tool calls are run and
    anything else is the answer; the last return-directly call ends the run; arguments the tool refuses and
    unknown tools are observations, other tool errors end the run; ``output_key`` gets the answer's text."""

    __slots__ = ("gen_model_input", "output_key")

    def __init__(self, *, output_key: str | None = None, gen_model_input: GenModelInput | None = None) -> None:
        self.output_key = output_key
        self.gen_model_input = gen_model_input

    async def model_input(self, setup: AgentSetup, input: AgentInput, ctx: RunContext) -> list[Message]:
        instruction = setup.instruction
        if self.gen_model_input is not None:
            result = self.gen_model_input(instruction, input, ctx)
            if inspect.isawaitable(result):
                result = await result
            return list(result)
        if not instruction:
            return list(input.messages)
        if ctx.session.values:
            return [system(render_instruction(instruction, ctx.session.values)), *input.messages]
        # Nothing to render: the same system message every run (messages in a transcript are never changed in
        # place, only replaced).
        return [setup.system_message(), *input.messages]

    def before_turn(self, state: ReactState) -> Answer | Fail | None:
        return Fail(MaxIterationsError()) if state.remaining <= 0 else None

    def request(self, state: ReactState) -> ModelRequest:
        return state.messages, state.tools or None

    def route(self, message: Message, state: ReactState, setup: AgentSetup) -> Routed:
        return CallTools(message) if message.tool_calls else _OWN_ANSWER

    def direct_call(self, calls: Sequence[ToolCall], setup: AgentSetup) -> str | None:
        return last_call_to(calls, setup.return_directly)

    def round_answer(
        self, calls: Sequence[ToolCall], results: Mapping[str, ToolResult], setup: AgentSetup
    ) -> Message | None:
        return None

    def interrupt_messages(self, signals: Sequence[InterruptSignal]) -> list[Message]:
        return []

    def tool_failure(self, call: ToolCall, error: Exception, setup: AgentSetup) -> str | None:
        return str(error) if isinstance(error, ToolArgumentsError) else None

    def tool_not_found(self, name: str, setup: AgentSetup) -> str:
        # An observation, not an error: the model can correct itself (small models do misname tools).
        return f"tool [{name}] not found: expected one of {sorted(setup.tools)}"

    def save_output(self, message: Message, ctx: RunContext) -> None:
        if self.output_key:
            ctx.add_session_value(self.output_key, message.content)


def last_call_to(calls: Sequence[ToolCall], names: frozenset[str]) -> str | None:
    """The id of the last call to one of ``names`` (the last matching call wins, as in Eino), or None."""
    found = None
    for call in calls:
        if call.function.name in names:
            found = call.id
    return found


_OWN_ANSWER = Answer()  # never changed: the engine only reads it

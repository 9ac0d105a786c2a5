"""``ChatModelAgent``: Eino's ReAct agent — a chat model in the loop engine with Eino's options and policy.

model → tools → model … until the model answers without tool calls, a return-directly tool was called, or
``max_iterations`` model calls were made (then ``MaxIterationsError``). Tools of one turn run concurrently unless
``execute_sequentially``; their events come out in completion order, the return-directly one last.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import UserError
from ..models import ChatModel, ModelSettings, ToolChoice
from ..tools import Tool, ToolLike
from .loop import AgentMiddleware, EinoPolicy, GenModelInput, ModelAgent, ModelRetryConfig

__all__ = ["ChatModelAgent"]


class ChatModelAgent(ModelAgent):
    """An agent driven by a chat model that may call tools, transfer to other agents, or exit.

    ``instruction`` is a template over the run's session values (``{name}``; ``{{``/``}}`` for braces), rendered
    when the session has values; ``gen_model_input`` replaces the default input (the instruction as a system
    message, then the agent's input). ``output_key`` stores the final answer's text in the session. ``tools`` takes
    tools and plain typed functions, which become tools as ``@tool`` makes them.

    ``answer_self`` offers the agent's own name in ``transfer_to_agent``'s choice of agents: naming it transfers
    nothing, and the agent answers itself on its next model call (see ``docs/transfer.md``).
    """

    def __init__(
        self,
        *,
        name: str,
        model: ChatModel | str,
        description: str = "",
        instruction: str = "",
        tools: Sequence[ToolLike] = (),
        return_directly: Sequence[str] = (),
        execute_sequentially: bool = False,
        exit: bool | Tool = False,
        output_key: str | None = None,
        max_iterations: int = 20,
        model_retry: ModelRetryConfig | None = None,
        model_settings: ModelSettings | None = None,
        tool_choice: ToolChoice | None = None,
        gen_model_input: GenModelInput | None = None,
        middlewares: Sequence[AgentMiddleware] = (),
        answer_self: bool = False,
    ) -> None:
        if max_iterations < 1:
            raise UserError(f"max_iterations: expected a positive number of model calls, got {max_iterations}")
        super().__init__(
            name=name,
            model=model,
            policy=EinoPolicy(output_key=output_key, gen_model_input=gen_model_input),
            description=description,
            instruction=instruction,
            tools=tools,
            return_directly=return_directly,
            execute_sequentially=execute_sequentially,
            exit=exit,
            max_turns=max_iterations,
            model_retry=model_retry,
            model_settings=model_settings,
            tool_choice=tool_choice,
            middlewares=middlewares,
            answer_self=answer_self,
        )
        self.output_key = output_key
        self.gen_model_input = gen_model_input

    @property
    def max_iterations(self) -> int:
        return self.max_turns

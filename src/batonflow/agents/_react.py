"""``ReActAgent``: Solon-AI's ReAct agent — the loop engine with Solon's options and ``ReActPolicy``.

It runs on the same loop as ``ChatModelAgent``; what changes is the policy:

- **Turns.** At most ``max_turns`` model calls (8); the call after that is not made and the run ends with the answer
  ``Agent error: Maximum turns reached (8).``. With ``auto_rethink`` the run never ends that way: from the turn
  ``max(limit - 1, int(limit * 0.8))`` on, the limit grows by ``max(10, max_turns // 2)`` and the model is asked to
  reflect on its progress.
- **Answers.** Reasoning in ``<think>…</think>`` (or an unclosed ``<think>``) is not an answer. An empty answer (no
  text, no tool calls) gets Solon's self-reflection prompt, a reply of thinking only is kept and gets its format
  correction (each naming the turn and the attempt), twice; the third ends the run with an apology. With
  ``output_schema`` an answer that does not fit is sent back with the validation error, until the turns run out;
  calls where no tool call can follow ask for the schema through the provider's structured output as well.
- **Failures.** A model that still fails after its retries ends the run with Solon's apology for the kind of
  failure (a timeout, a connection, an HTTP status, anything else) as the answer, not an error event; the error is
  logged and stays in the trace. ``model_failure="error"`` ends with the error event instead.
- **Tools** run one after another. A tool the agent does not have, arguments the tool refuses and an exception the
  tool raises are observations the model can recover from (``Tool [x] not found.``, ``Invalid arguments for [x].
  Expected Schema: …. Error: …``, ``Execution error in tool [x]: …``), never errors that end the run.
- **Return-directly** tools end the run only when every call of the round is one and succeeded with a non-empty
  result: the results, joined with newlines, are the answer. A call that failed (its observation is one of the
  failure texts above) goes back to the model like any other. Transfer and exit still end it at once.
- **Styles.** ``"native"`` sends tools to the model's function calling. ``"text"`` sends none: the system prompt
  lists them, the model writes ``Thought:``/``Action: {"name": …, "arguments": {…}}``, the agent runs the parsed
  actions and tells the model ``Observation: …``, and the answer is what follows the finish marker (a bare
  ``Action: name`` calls a tool of the agent without arguments; any other name is no valid action). Whatever the
  model writes after its action (a forged observation) is cut off. The transcript keeps the calls and results as
  tool calls and tool messages either way, so events, checkpoints and HITL work the same.
- **Planning** (``planning=True``) adds the plan tools and the progress board; **feedback** (``feedback=True``) adds
  ``__ask_for_feedback``: the agent says why it cannot go on and the run is interrupted (a pending session) until
  the caller resumes it with the missing information.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ..adk import AgentEvent, AgentInput, ResumeInfo, RunContext, parse_tool_argument
from ..adk.loop import (
    AgentMiddleware,
    AgentSetup,
    Answer,
    AskAgain,
    CallTools,
    EinoPolicy,
    ModelAgent,
    ModelRequest,
    ModelRetryConfig,
    ModelStep,
    ReactState,
    Routed,
    ToolResult,
    last_call_to,
    render_instruction,
)
from ..codec import register_type
from ..errors import ToolArgumentsError, UserError
from ..models import ChatModel, ModelSettings
from ..schema import Message, ToolCall, assistant, system, user
from ..tools import InterruptSignal, Tool, ToolContext, ToolInfo, ToolLike
from ._hitl import HITLPending
from ._member_instruction import member_instructions
from ._output import OutputSchema, Schema
from ._planning import planning as planning_middleware
from ._react_failure import FailureTagging, answering, check_model_failure
from ._react_prompt import parse_actions, system_prompt
from ._react_texts import (
    EXECUTION_ERROR,
    INVALID_ARGUMENTS,
    MAX_TURNS_ANSWER,
    NOT_FOUND,
    RETRY_INVALID_ARGUMENTS,
    text,
    without_thinking,
)
from ._simple import windowed

__all__ = ["FEEDBACK_TOOL_NAME", "MAX_TURNS_ANSWER", "FeedbackRequest", "ReActAgent", "ReActPolicy", "ReActStyle"]

ReActStyle = Literal["native", "text"]
FEEDBACK_TOOL_NAME = "__ask_for_feedback"


# -- feedback ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FeedbackRequest:
    """The info of the interrupt made by ``__ask_for_feedback``: why the agent cannot go on.

    Resume with the missing information as the resume data (text); it becomes the tool's result.
    """

    reason: str

    def __str__(self) -> str:
        return self.reason


register_type(FeedbackRequest, name="react.FeedbackRequest")


class _FeedbackTool:
    def __init__(self, description: str | None, reason_description: str | None) -> None:
        self.info = ToolInfo(
            name=FEEDBACK_TOOL_NAME,
            description=description or text("feedback"),
            parameters={
                "type": "object",
                "properties": {
                    "reason": {"type": "string", "description": reason_description or text("feedback_reason")}
                },
                "required": ["reason"],
            },
        )

    async def invoke(self, arguments: str, ctx: ToolContext | None = None) -> str:
        if ctx is None:
            raise UserError(f"{FEEDBACK_TOOL_NAME} needs a tool context: expected it to run inside an agent, got none")
        resumed = ctx.get_resume_context()
        if resumed.is_resume_target and resumed.has_data and resumed.data is not None:
            return str(resumed.data)
        ctx.interrupt(FeedbackRequest(parse_tool_argument(FEEDBACK_TOOL_NAME, arguments, "reason")))


def _mode_middlewares(
    planning: bool,
    planning_instruction: str | None,
    feedback: bool,
    feedback_description: str | None,
    feedback_reason_description: str | None,
) -> list[AgentMiddleware]:
    """The middlewares of planning mode and feedback mode, those that are on."""
    extra = [planning_middleware(instruction=planning_instruction)] if planning else []
    if feedback:
        tool = _FeedbackTool(feedback_description, feedback_reason_description)
        extra.append(AgentMiddleware(additional_tools=[tool]))
    return extra


# -- the agent ---------------------------------------------------------------------------------------------------


class ReActAgent(ModelAgent):
    """Solon's ReAct agent: the loop with Solon's options and ``ReActPolicy`` (see the module doc for what differs
    from ``ChatModelAgent``).

    The system prompt is Solon's: the role (``role``, or a default), the style's rules, then ``instruction`` under
    "Core Task Instructions" (a template over session values, as ``ChatModelAgent``'s), the tools in the text
    style, and the output-schema instruction. English by default, Chinese after ``set_language("zh")``. The input
    is cut to the current prompt and the ``history_window`` messages before it. Model calls are retried as
    ``model_retry`` says: by default 2 retries from 1 s, so 3 calls in all, as Solon's ``retryConfig(3)`` makes
    (``ModelRetryConfig.max_retries`` counts retries after the first call, as Eino's does); when they still fail, the run ends with Solon's apology
    as the answer (``model_failure="answer"``) or with the error event (``"error"``). ``output_key`` gets the
    answer's text, or with ``output_schema`` the parsed value.
    """

    def __init__(
        self,
        *,
        model: ChatModel | str,
        name: str = "react_agent",
        description: str = "",
        role: str | None = None,
        instruction: str = "",
        tools: Sequence[ToolLike] = (),
        style: ReActStyle = "native",
        max_turns: int = 8,
        auto_rethink: bool = False,
        finish_marker: str | None = None,
        return_directly: Sequence[str] = (),
        planning: bool = False,
        planning_instruction: str | None = None,
        feedback: bool = False,
        feedback_description: str | None = None,
        feedback_reason_description: str | None = None,
        output_key: str | None = None,
        output_schema: OutputSchema | None = None,
        history_window: int | None = 8,
        model_retry: ModelRetryConfig | None = ModelRetryConfig(max_retries=2, base_delay=1.0),  # noqa: B008
        model_settings: ModelSettings | None = None,
        exit: bool | Tool = False,
        middlewares: Sequence[AgentMiddleware] = (),
        model_failure: Literal["answer", "error"] = "answer",
    ) -> None:
        extra = _mode_middlewares(
            planning, planning_instruction, feedback, feedback_description, feedback_reason_description
        )
        policy = ReActPolicy(
            name=name,
            style=style,
            role=role,
            max_turns=max_turns,
            auto_rethink=auto_rethink,
            finish_marker=finish_marker or f"[{name.upper()}_FINISH]",
            history_window=history_window,
            output_key=output_key,
            output_schema=output_schema,
        )
        super().__init__(
            name=name,
            model=model,
            policy=policy,
            description=description,
            instruction=instruction,
            tools=tools,
            return_directly=return_directly,
            execute_sequentially=True,
            exit=exit,
            max_turns=max_turns,
            model_retry=model_retry,
            model_settings=model_settings,
            middlewares=[*extra, *middlewares],
        )
        self.policy: ReActPolicy = policy
        self.output_schema = output_schema
        self.model_failure = check_model_failure(model_failure)

    # -- running: a model that keeps failing is answered with an apology -----------------------------------------

    def setup(self) -> AgentSetup:
        setup = super().setup()
        step = setup.step
        model, settings = step.model, step.settings
        if self.model_failure == "answer" and not isinstance(model, FailureTagging):
            model = FailureTagging(model)
        schema = self.policy.schema
        asks = settings is not None and settings.response_format is not None  # a format of its own, or done already
        if schema is not None and not asks and (self.style == "native" or not setup.infos):
            # The provider's structured output for the answer. Calls that offer tools are made without it
            # (``answer_format``); the text style offers none, its tools are in the prompt, and a JSON grammar
            # would leave the model no way to write an action.
            settings = schema.settings(settings)
        if model is not step.model or settings is not step.settings:
            setup.step = ModelStep(model, settings=settings, tool_choice=step.tool_choice, retry=step.retry)
        return setup

    def run(self, input: AgentInput, ctx: RunContext | None = None) -> AsyncGenerator[AgentEvent, None]:
        ctx = ctx if ctx is not None else RunContext(enable_streaming=input.enable_streaming)
        events = super().run(input, ctx)
        return events if self.model_failure == "error" else answering(events, self.name, ctx, self.policy.save_output)

    def resume(self, info: ResumeInfo, ctx: RunContext | None = None) -> AsyncIterator[AgentEvent]:
        ctx = ctx if ctx is not None else RunContext(enable_streaming=info.enable_streaming)
        events = super().resume(info, ctx)
        return events if self.model_failure == "error" else answering(events, self.name, ctx, self.policy.save_output)

    @property
    def style(self) -> ReActStyle:
        return self.policy.style

    @property
    def finish_marker(self) -> str:
        return self.policy.finish_marker

    @property
    def history_window(self) -> int | None:
        return self.policy.history_window

    @property
    def auto_rethink(self) -> bool:
        return self.policy.auto_rethink

    def __repr__(self) -> str:
        return f"ReActAgent(name={self.name!r}, model={self.model.model_name!r}, style={self.style!r})"


# -- the policy --------------------------------------------------------------------------------------------------


class ReActPolicy(EinoPolicy):
    """Solon's ReAct decisions on the loop: the prompt, the turn limit and rethinking, empty-answer corrections,
    the text style's actions, failures as observations, and whole rounds of return-directly tools."""

    __slots__ = ("auto_rethink", "finish_marker", "history_window", "max_turns", "name", "role", "schema", "style")

    def __init__(
        self,
        *,
        name: str,
        style: ReActStyle = "native",
        role: str | None = None,
        max_turns: int = 8,
        auto_rethink: bool = False,
        finish_marker: str,
        history_window: int | None = 8,
        output_key: str | None = None,
        output_schema: OutputSchema | None = None,
    ) -> None:
        if style not in ("native", "text"):
            raise UserError(f"ReActAgent style: expected 'native' or 'text', got {style!r}")
        if max_turns < 1:
            raise UserError(f"max_turns: expected a positive number of model calls, got {max_turns}")
        if history_window is not None and history_window < 0:
            raise UserError(f"history_window: expected 0 or more messages (None for all), got {history_window}")
        super().__init__(output_key=output_key)
        self.name = name
        self.style: ReActStyle = style
        self.role = role
        self.max_turns = max_turns
        self.auto_rethink = auto_rethink
        self.finish_marker = finish_marker
        self.history_window = history_window
        self.schema = Schema.of(output_schema) if output_schema is not None else None

    # -- the request ----------------------------------------------------------------------------------------------

    async def model_input(self, setup: AgentSetup, input: AgentInput, ctx: RunContext) -> list[Message]:
        if not input.messages:
            raise UserError(f"react agent '{self.name}': expected at least one input message, got none")
        instruction = setup.instruction
        if instruction and ctx.session.values:
            instruction = render_instruction(instruction, ctx.session.values)
        # A team's instruction is appended to the whole prompt (Solon's order), and is not rendered.
        prompt = self.system_prompt(instruction, setup.infos) + member_instructions(input.messages)
        return [system(prompt), *windowed(input.messages, self.history_window)]

    def system_prompt(self, instruction: str, tools: Sequence[ToolInfo]) -> str:
        schema = self.schema.instruction() if self.schema is not None else None
        return system_prompt(self.style, self.role, self.finish_marker, instruction, tools, schema)

    def request(self, state: ReactState) -> ModelRequest:
        if self.style == "native":
            return state.messages, state.tools or None
        # The text style keeps calls and results as tool calls and tool messages; the model sees them as it wrote
        # and read them.
        request = []
        for message in state.messages:
            if message.role == "assistant" and message.tool_calls:
                request.append(assistant(message.content))
            elif message.role == "tool":
                request.append(user(f"Observation: {message.content}"))
            else:
                request.append(message)
        return request, None

    # -- the loop -------------------------------------------------------------------------------------------------

    def before_turn(self, state: ReactState) -> Answer | None:
        if self.auto_rethink:
            turn, limit = state.turn + 1, state.turn + state.remaining
            if turn >= max(limit - 1, int(limit * 0.8)):
                state.remaining += max(10, self.max_turns // 2)
                state.messages.append(user(text("reflection") % turn))
            return None
        if state.remaining <= 0:
            return Answer(assistant(MAX_TURNS_ANSWER % self.max_turns))
        return None

    def route(self, message: Message, state: ReactState, setup: AgentSetup) -> Routed:
        if message.tool_calls:
            state.corrections = 0
            return CallTools(message)
        content = without_thinking(message.content).strip()
        if not content and not message.parts:
            if state.corrections >= 2:
                state.corrections = 0
                return Answer(assistant(text("apology")), show=False)
            state.corrections += 1
            if message.content.strip():
                # Thinking and nothing else: kept (some providers refuse an empty message, and the model reads
                # its own thinking), and the model is told to act or answer.
                said = text("format_correction") % (state.turn, state.corrections)
                return AskAgain([user(said)], keep=True, show=False)
            said = text("empty_reflection") % (state.turn, state.corrections)
            return AskAgain([user(said)], keep=False, show=False)
        state.corrections = 0
        if self.style == "text":
            acting = parse_actions(message, content, state.turn, setup.tools)
            if isinstance(acting, Message):
                return CallTools(acting)
            if acting is not None:
                return AskAgain(acting)
        answer = _after_marker(content, self.finish_marker)
        if self.schema is not None and not message.parts:
            try:
                self.schema.parse(answer)
            except Exception as error:
                return AskAgain([user(text("schema_retry") % error)])
        if answer != message.content.strip():
            return Answer(assistant(answer))
        return Answer()

    def direct_call(self, calls: Sequence[ToolCall], setup: AgentSetup) -> str | None:
        # Only the built-in actions end a round at once; other return-directly tools need the whole round.
        return last_call_to(calls, setup.actions)

    def round_answer(
        self, calls: Sequence[ToolCall], results: Mapping[str, ToolResult], setup: AgentSetup
    ) -> Message | None:
        if not calls or any(c.function.name not in setup.return_directly for c in calls):
            return None
        contents = [results[c.id].message.content for c in calls]
        if not all(_delivered(c.function.name, text) for c, text in zip(calls, contents, strict=True)):
            return None
        return assistant("\n".join(contents))

    def interrupt_messages(self, signals: Sequence[InterruptSignal]) -> list[Message]:
        # What the run waits for is said to the user as the pending run's answer, as Solon's final answer: the
        # reason of a request for feedback, the summary of the calls awaiting approval.
        return [assistant(str(s.info)) for s in signals if isinstance(s.info, FeedbackRequest | HITLPending)]

    def tool_failure(self, call: ToolCall, error: Exception, setup: AgentSetup) -> str | None:
        name = call.function.name
        if isinstance(error, ToolArgumentsError):
            detail = str(error).removeprefix(f"Invalid arguments for tool [{name}]: ")
            schema = json.dumps(setup.tools[name].info.parameters, ensure_ascii=False)
            return f"{INVALID_ARGUMENTS % name}{schema}. Error: {detail}"
        return f"{EXECUTION_ERROR % name}{str(error) or type(error).__name__}"

    def tool_not_found(self, name: str, setup: AgentSetup) -> str:
        return NOT_FOUND % name

    def save_output(self, message: Message, ctx: RunContext) -> None:
        if not self.output_key:
            return
        if self.schema is None:
            ctx.add_session_value(self.output_key, message.content)
            return
        try:
            ctx.add_session_value(self.output_key, self.schema.parse(message.content))
        except Exception:
            return  # an answer made by the loop (out of turns, apology) is not the schema's


def _delivered(name: str, content: str) -> bool:
    """Whether a return-directly call's result is something to deliver. Solon marks a call return-directly only
    once the tool succeeded with a non-empty result: a failure's observation — this policy's, or ``tool_retry``'s,
    which starts the same way — goes back to the model instead."""
    if not content or content == NOT_FOUND % name:
        return False
    return not content.startswith((EXECUTION_ERROR % name, INVALID_ARGUMENTS % name, RETRY_INVALID_ARGUMENTS % name))


def _after_marker(content: str, marker: str) -> str:
    """The answer in a reply: the text after the finish marker, else after ``Final Answer:``, else all of it."""
    at = content.rfind(marker)
    if at >= 0:
        return content[at + len(marker) :].strip()
    at = content.rfind("Final Answer:")
    if at >= 0:
        return content[at + len("Final Answer:") :].strip()
    return content.strip()

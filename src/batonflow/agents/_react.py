"""``ReActAgent``: Solon-AI's ReAct agent as a ``ChatModelAgent`` with Solon's defaults (reference §B.2, DESIGN §2.1).

One loop runs both. What changes is policy, through the loop's seams:

- **Turns.** At most ``max_turns`` model calls (8); the call after that is not made and the run ends with the answer
  ``Agent error: Maximum turns reached (8).``. With ``auto_rethink`` the run never ends that way: from the turn
  ``max(limit - 1, int(limit * 0.8))`` on, the limit grows by ``max(10, max_turns // 2)`` and the model is asked to
  reflect on its progress.
- **Answers.** An empty answer (no text, no tool calls) is sent back with a format correction, twice; the third
  empty answer ends the run with an apology. With ``output_schema`` an answer that does not fit is sent back with
  the validation error, until the turns run out.
- **Tools** run one after another. A tool the agent does not have, arguments the tool refuses and an exception the
  tool raises are observations the model can recover from (``Tool [x] not found.``, ``Invalid arguments for [x].
  Expected Schema: … Error: …``, ``Execution error in tool [x]: …``), never errors that end the run.
- **Return-directly** tools end the run only when every call of the round is one: the results, joined with
  newlines, are the answer. Transfer and exit still end it at once.
- **Styles.** ``"native"`` sends tools to the model's function calling. ``"text"`` sends none: the system prompt
  lists them, the model writes ``Thought:``/``Action: {"name": …, "arguments": {…}}``, the agent runs the parsed
  actions and tells the model ``Observation: …``, and the answer is what follows the finish marker. Whatever the
  model writes after its action (a forged observation) is cut off. The transcript keeps the calls and results as
  tool calls and tool messages either way, so events, checkpoints and HITL work the same.
- **Planning** (``planning=True``) adds the plan tools and the progress board; **feedback** (``feedback=True``) adds
  ``__ask_for_feedback``: the agent says why it cannot go on and the run is interrupted (a pending session) until
  the caller resumes it with the missing information.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..adk._builtin import _parse_arguments, get_language
from ..adk._chatmodel import ChatModelAgent, ModelRetryConfig, ReactState, Route, _Plan
from ..adk._context import RunContext
from ..adk._events import AgentInput
from ..adk._middleware import AgentMiddleware, ChatModelAgentState, render_instruction
from ..errors import ToolArgumentsError, UserError
from ..models import ChatModel, ModelSettings
from ..schema import FunctionCall, Message, ToolCall, assistant, system, user
from ..store import register_type
from ..tools import InterruptSignal, Tool, ToolContext, ToolInfo
from ._output import OutputSchema, _Schema
from ._simple import windowed

__all__ = ["FEEDBACK_TOOL_NAME", "FeedbackRequest", "ReActAgent", "ReActStyle"]

ReActStyle = Literal["native", "text"]
FEEDBACK_TOOL_NAME = "__ask_for_feedback"

# -- texts -------------------------------------------------------------------------------------------------------

_TEXTS: dict[str, dict[str, str]] = {
    "role": {
        "en": "Professional task expert with autonomous action capabilities",
        "zh": "具备自主行动能力的专业任务专家",
    },
    "native": {
        "en": """You follow a rigorous ReAct (Reasoning and Acting) logic.

## Core Rules
1. **Direct Action**: If a tool is needed, trigger **Function Calling** directly.
2. **Result-Oriented**: All conclusions MUST be based on real data returned by tools (Observation).
3. **Prohibit Forgery**: Strictly forbidden to simulate tool execution or forge results in your response.
4. **Natural Response**: Once the task is finished, respond directly in natural language without tags like `Final Answer:`.""",
        "zh": """你遵循严谨的 ReAct（推理与行动）逻辑。

## 核心规则
1. **直接行动**：需要工具时，直接发起 **Function Calling**。
2. **结果导向**：所有结论必须基于工具返回的真实数据（Observation）。
3. **禁止伪造**：严禁在回复中模拟工具执行或伪造结果。
4. **自然回复**：任务完成后，直接用自然语言回答，不要使用 `Final Answer:` 之类的标签。""",
    },
    "text": {
        "en": """You MUST use the ReAct pattern to solve the task, step by step: Thought -> Action -> Observation.

## Output Format (Strictly Follow)
Thought: what you know so far and what to do next.
Action: the tool to call, as a single JSON object: {"name": "tool_name", "arguments": {...}}
(Stop after the Action. The system runs the tool and replies with `Observation: ...`; never write it yourself.)

When you have the answer:
Thought: I now know the final answer.
Final Answer: start with %(marker)s, then the answer for the user.

## Example
User: What is the weather in Paris?
Thought: I need the current weather in Paris.
Action: {"name": "get_weather", "arguments": {"city": "Paris"}}
Observation: 18°C, light rain
Thought: I now know the final answer.
Final Answer: %(marker)s It is 18°C in Paris, with light rain.""",
        "zh": """你必须使用 ReAct 模式逐步解决任务：Thought -> Action -> Observation。

## 输出格式（严格遵守）
Thought: 目前已知的信息以及下一步要做什么。
Action: 要调用的工具，写成单个 JSON 对象：{"name": "tool_name", "arguments": {...}}
（写完 Action 就停下。系统会执行工具并回复 `Observation: ...`，不要自己编写。）

得到答案时：
Thought: 我已经知道最终答案了。
Final Answer: 以 %(marker)s 开头，然后给出给用户的答案。

## 示例
User: 巴黎的天气怎么样？
Thought: 我需要查询巴黎当前的天气。
Action: {"name": "get_weather", "arguments": {"city": "Paris"}}
Observation: 18°C，小雨
Thought: 我已经知道最终答案了。
Final Answer: %(marker)s 巴黎现在 18°C，有小雨。""",
    },
    "role_line": {"en": "## Your Role\n%s. ", "zh": "## 你的角色\n%s。"},
    "task": {"en": "## Core Task Instructions\n", "zh": "## 核心任务指令\n"},
    "tools": {"en": "## Available Tools\n", "zh": "## 可用工具\n"},
    "tool_line": {"en": "- %s: %s Input Schema: %s", "zh": "- %s: %s 输入 Schema: %s"},
    "no_tools": {
        "en": "> Note: No tools available. Answer from your own knowledge and reasoning.",
        "zh": "> 注意：当前没有可用工具。请基于自身知识和推理作答。",
    },
    "reflection": {
        "en": "【System Instruction: Self-Reflection】\nThe task has reached turn %d. Stop and review what the "
        "observations so far have achieved: if the current approach is not making progress, change it; if you "
        "already have enough to answer, give the final answer now.",
        "zh": "【系统指令：自我反思 (Self-Reflection)】\n当前任务已执行至第 %d 回合。请暂停并审视目前的 Observation "
        "取得了哪些进展：如果当前思路没有进展，请更换思路；如果已有足够的信息，请立即给出最终答案。",
    },
    "correction": {
        "en": "【Format Correction】Your last reply was empty. Either call a tool or answer the task.",
        "zh": "【格式纠正】你上一次的回复为空。请调用工具，或直接回答任务。",
    },
    "text_correction": {
        "en": "【Format Correction】Your last reply was empty. Reply with `Thought:` followed by an `Action:` JSON "
        "object, or with `Final Answer: %s ...`.",
        "zh": "【格式纠正】你上一次的回复为空。请以 `Thought:` 开头并给出 `Action:` JSON 对象，"
        "或以 `Final Answer: %s ...` 作答。",
    },
    "apology": {
        "en": "Sorry, the model returned no valid content several times. Please try again later.",
        "zh": "抱歉，模型多次未返回有效内容。请稍后重试。",
    },
    "schema_retry": {
        "en": "Your answer does not match the required output format: %s\nAnswer again, with only the JSON.",
        "zh": "你的回答不符合要求的输出格式：%s\n请重新回答，只输出 JSON。",
    },
    "feedback": {
        "en": "When the task lacks a required parameter, condition or outside feedback and cannot go on, you must "
        "call this tool to ask for it, and tell the user why.",
        "zh": "当任务缺失必要参数、条件或外部反馈而无法继续时，必须调用此工具反馈，并向用户说明原因。",
    },
    "feedback_reason": {
        "en": "What is missing and why it is needed, addressed to the user.",
        "zh": "向用户说明缺少什么以及为什么需要。",
    },
}


def _text(key: str) -> str:
    return _TEXTS[key][get_language()]


MAX_TURNS_ANSWER = "Agent error: Maximum turns reached (%d)."
_NO_ACTION = 'Observation: No valid Action format detected. Use JSON: {"name": "...", "arguments": {}}'
_ACTION = "Action:"
_OBSERVATION = re.compile(r"^\s*Observation:", re.MULTILINE)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)


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
            description=description or _text("feedback"),
            parameters={
                "type": "object",
                "properties": {
                    "reason": {"type": "string", "description": reason_description or _text("feedback_reason")}
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
        ctx.interrupt(FeedbackRequest(_parse_arguments(FEEDBACK_TOOL_NAME, arguments, "reason")))


# -- the agent ---------------------------------------------------------------------------------------------------


class ReActAgent(ChatModelAgent):
    """Solon's ReAct agent: a ``ChatModelAgent`` with Solon's loop policy (see the module doc for what differs).

    The system prompt is Solon's: the role (``role``, or a default), the style's rules, then ``instruction`` under
    "Core Task Instructions" (a template over session values, as ``ChatModelAgent``'s), the tools in the text
    style, and the output-schema instruction. English by default, Chinese after ``set_language("zh")``. The input
    is cut to the current prompt and the ``history_window`` messages before it. Model calls are retried as
    ``model_retry`` says (3 retries from 1 s by default); ``output_key`` gets the answer's text, or with
    ``output_schema`` the parsed value.
    """

    def __init__(
        self,
        *,
        model: ChatModel,
        name: str = "react_agent",
        description: str = "",
        role: str | None = None,
        instruction: str = "",
        tools: Sequence[Tool] = (),
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
        model_retry: ModelRetryConfig | None = ModelRetryConfig(max_retries=3, base_delay=1.0),  # noqa: B008
        model_settings: ModelSettings | None = None,
        exit: bool | Tool = False,
        middlewares: Sequence[AgentMiddleware] = (),
    ) -> None:
        if style not in ("native", "text"):
            raise UserError(f"ReActAgent style: expected 'native' or 'text', got {style!r}")
        if max_turns < 1:
            raise UserError(f"max_turns: expected a positive number of model calls, got {max_turns}")
        if history_window is not None and history_window < 0:
            raise UserError(f"history_window: expected 0 or more messages (None for all), got {history_window}")
        extra: list[AgentMiddleware] = []
        if planning:
            from ._planning import planning as planning_middleware

            extra.append(planning_middleware(instruction=planning_instruction))
        if feedback:
            extra.append(
                AgentMiddleware(additional_tools=[_FeedbackTool(feedback_description, feedback_reason_description)])
            )
        super().__init__(
            name=name,
            model=model,
            description=description,
            instruction=instruction,
            tools=tools,
            return_directly=return_directly,
            execute_sequentially=True,
            exit=exit,
            output_key=output_key,
            max_iterations=max_turns,
            model_retry=model_retry,
            model_settings=model_settings,
            middlewares=[*extra, *middlewares],
        )
        self.role = role
        self.style: ReActStyle = style
        self.max_turns = max_turns
        self.auto_rethink = auto_rethink
        self.finish_marker = finish_marker or f"[{name.upper()}_FINISH]"
        self.history_window = history_window
        self.output_schema = output_schema
        self._schema = _Schema.of(output_schema) if output_schema is not None else None

    def __repr__(self) -> str:
        return f"ReActAgent(name={self.name!r}, model={self.model.model_name!r}, style={self.style!r})"

    # -- the request ----------------------------------------------------------------------------------------------

    async def _model_input(self, instruction: str, input: AgentInput, ctx: RunContext) -> list[Message]:
        if not input.messages:
            raise UserError(f"react agent '{self.name}': expected at least one input message, got none")
        if instruction and ctx.session.values:
            instruction = render_instruction(instruction, ctx.session.values)
        assert self._plan is not None
        return [
            system(self._system_prompt(instruction, self._plan.infos)),
            *windowed(input.messages, self.history_window),
        ]

    def _system_prompt(self, instruction: str, tools: Sequence[ToolInfo]) -> str:
        rules = _text(self.style) % {"marker": self.finish_marker} if self.style == "text" else _text("native")
        parts = [_text("role_line") % (self.role or _text("role")) + rules]
        if instruction:
            parts.append(_text("task") + instruction)
        if self.style == "text" and tools:
            lines = (
                _text("tool_line") % (t.name, t.description, json.dumps(t.parameters, ensure_ascii=False))
                for t in tools
            )
            parts.append(_text("tools") + "\n".join(lines))
        if not tools:
            parts.append(_text("no_tools"))
        if self._schema is not None:
            parts.append(self._schema.instruction())
        return "\n\n".join(parts)

    def _request(self, state: ChatModelAgentState) -> tuple[list[Message], list[ToolInfo] | None]:
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

    # -- the loop's policy ----------------------------------------------------------------------------------------

    def _next_turn(self, loop: ReactState) -> Message | BaseException | None:
        if self.auto_rethink:
            turn, limit = loop.turn + 1, loop.turn + loop.remaining
            if turn >= max(limit - 1, int(limit * 0.8)):
                loop.remaining += max(10, self.max_turns // 2)
                loop.messages.append(user(_text("reflection") % turn))
            return None
        if loop.remaining <= 0:
            return assistant(MAX_TURNS_ANSWER % self.max_turns)
        return None

    def _route(self, message: Message, loop: ReactState, plan: _Plan) -> Route:
        if message.tool_calls:
            loop.corrections = 0
            return Route(act=message)
        content = _THINK.sub("", message.content).strip()
        if not content and not message.parts:
            if loop.corrections >= 2:
                loop.corrections = 0
                return Route(answer=assistant(_text("apology")), keep=False, show=False)
            loop.corrections += 1
            text = _text("text_correction") % self.finish_marker if self.style == "text" else _text("correction")
            return Route(feedback=[user(text)], keep=False, show=False)
        loop.corrections = 0
        if self.style == "text":
            acting = self._parse_actions(message, content, loop.turn)
            if acting is not None:
                return acting
        answer = _after_marker(content, self.finish_marker)
        if self._schema is not None and not message.parts:
            try:
                self._schema.parse(answer)
            except Exception as error:
                return Route(feedback=[user(_text("schema_retry") % error)])
        if answer != message.content.strip():
            return Route(answer=assistant(answer))
        return Route()

    def _parse_actions(self, message: Message, content: str, turn: int) -> Route | None:
        """The text style's ``Action:``: the calls it names, an observation that it could not be read, or None
        when there is no action (an answer)."""
        at = content.find(_ACTION)
        if at < 0 or not content[at + len(_ACTION) :].strip():
            return None
        forged = _OBSERVATION.search(content, at)
        written = content[: forged.start()].rstrip() if forged else content
        rest = written[at + len(_ACTION) :].strip()
        calls: list[ToolCall] = []
        if rest.startswith("{"):
            decoder = json.JSONDecoder()
            position = 0
            while position < len(rest):
                if rest[position] in " \t\r\n,":
                    position += 1
                    continue
                if rest[position] != "{":
                    break
                try:
                    value, position = decoder.raw_decode(rest, position)
                except ValueError as error:
                    return Route(feedback=[user(f"Observation: Error parsing Action JSON: {error}")])
                name = value.get("name") if isinstance(value, dict) else None
                arguments = value.get("arguments", {}) if isinstance(value, dict) else None
                if not isinstance(name, str) or not name or not isinstance(arguments, dict):
                    return Route(feedback=[user(_NO_ACTION)])
                calls.append(_call(name, arguments, turn, len(calls)))
        else:
            match = re.match(r"[A-Za-z_][\w.-]*", rest)
            if match is None:
                return Route(feedback=[user(_NO_ACTION)])
            calls.append(_call(match.group(0), {}, turn, 0))
        if not calls:
            return Route(feedback=[user(_NO_ACTION)])
        return Route(act=assistant(written, tool_calls=calls))

    def _direct_call(self, calls: list[ToolCall], plan: _Plan) -> str | None:
        # Only the built-in actions end a round at once; other return-directly tools need the whole round.
        found = None
        for call in calls:
            if call.function.name in plan.actions:
                found = call.id
        return found

    def _round_answer(self, calls: list[ToolCall], results: Mapping[str, Any], plan: _Plan) -> Message | None:
        if not calls or any(c.function.name not in plan.return_directly for c in calls):
            return None
        contents = [results[c.id].message.content for c in calls]
        if not all(contents):
            return None
        return assistant("\n".join(contents))

    def _interrupt_messages(self, interrupts: list[InterruptSignal]) -> list[Message]:
        # Asking for feedback is said to the user: the reason is the answer of the pending run.
        return [assistant(s.info.reason) for s in interrupts if isinstance(s.info, FeedbackRequest)]

    def _tool_failure(self, call: ToolCall, error: Exception, plan: _Plan) -> str | None:
        name = call.function.name
        if isinstance(error, ToolArgumentsError):
            detail = str(error).removeprefix(f"Invalid arguments for tool [{name}]: ")
            schema = json.dumps(plan.tools[name].info.parameters, ensure_ascii=False)
            return f"Invalid arguments for [{name}]. Expected Schema: {schema} Error: {detail}"
        return f"Execution error in tool [{name}]: {str(error) or type(error).__name__}"

    def _tool_not_found(self, name: str, plan: _Plan) -> str:
        return f"Tool [{name}] not found."

    def _save_output(self, message: Message, ctx: RunContext) -> None:
        if not self.output_key:
            return
        if self._schema is None:
            ctx.add_session_value(self.output_key, message.content)
            return
        try:
            ctx.add_session_value(self.output_key, self._schema.parse(message.content))
        except Exception:
            return  # an answer made by the loop (out of turns, apology) is not the schema's


def _call(name: str, arguments: dict[str, Any], turn: int, index: int) -> ToolCall:
    # Solon numbers a round's actions name-0, name-1…; the turn is added so that ids stay unique in a run, as
    # targeted resume needs.
    return ToolCall(
        id=f"{name}-{turn}-{index}",
        function=FunctionCall(name=name, arguments=json.dumps(arguments, ensure_ascii=False)),
    )


def _after_marker(content: str, marker: str) -> str:
    """The answer in a reply: the text after the finish marker, else after ``Final Answer:``, else all of it."""
    at = content.rfind(marker)
    if at >= 0:
        return content[at + len(marker) :].strip()
    at = content.rfind("Final Answer:")
    if at >= 0:
        return content[at + len("Final Answer:") :].strip()
    return content.strip()

"""Solon-AI's ReAct interceptors (stop-loop, tool retry, tool sanitizer) as ``ChatModelAgent`` middlewares.

``stop_loop`` reminds a model that keeps making the same tool calls, ``tool_retry`` retries a failing tool call and
turns what still fails into an observation, ``tool_sanitizer`` keeps observations non-empty and short. Each factory
returns an ``AgentMiddleware``. None keeps state of its own — ``stop_loop`` reads what it counts from the transcript
— so one middleware can serve any number of agents and concurrent runs, and a resumed run counts on where it stopped.
The texts the model sees are the originals', word for word.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

from ..adk import AgentMiddleware, ChatModelAgentState, RunContext, ToolCallHandler
from ..errors import ModelJSONError, ToolArgumentsError, UserError
from ..schema import Message, ToolCall, user
from ..tools import ToolContext, parse_model_json

__all__ = [
    "StopLoopInterceptor",
    "ToolRetryInterceptor",
    "ToolSanitizerInterceptor",
    "stop_loop",
    "tool_retry",
    "tool_sanitizer",
]

# -- stop_loop (Solon: StopLoopInterceptor) ----------------------------------------------------------------------

_LOOP_HEADLINE = "【系统提示：检测到潜在循环 (Loop Detected)】"


def _loop_reminder(count: int) -> str:
    # The original fills both numbers with the same count.
    return (
        f"{_LOOP_HEADLINE}\n"
        f'系统检测到您最近 {count} 次（连续 {count} 次相同）执行了高度相似的操作，可能存在"原地打转"的情况。\n\n'
        "请立即暂停当前操作思路，审视历史 Observation 并执行以下步骤：\n"
        "1. **有效性评估**：如果最近的尝试没有带来有效新线索，说明当前策略已失效，请必须更换思路或换个角度切入。\n"
        "2. **强制收敛**：若已有足够信息供用户参考，请直接输出 Final Answer 结束任务。\n"
        "3. **避免重复**：不要重复执行已经执行过且未产生新信息的操作。"
    )


def stop_loop(*, max_repeat_count: int = 3, window_size: int = 8, match_arguments: bool = False) -> AgentMiddleware:
    """Remind the model when it keeps making the same tool call(s).

    Each assistant turn with tool calls has a fingerprint: Solon's, its calls' tool names in order (``tool:a`` then
    ``tool:b``), the arguments left out, so that reading one different file after another also counts as a loop.
    When the latest turn's fingerprint occurs ``max_repeat_count`` times among the last ``window_size`` turns, the
    loop reminder is appended as a user message before the next model call — after the tool results, where a
    transcript may hold it. The repeated calls themselves still run.

    If the loop persists: counting starts afresh after each reminder, so every ``max_repeat_count`` further repeats
    bring another reminder. Like the original, this middleware never stops or suspends a run; ``max_iterations``
    ends one that never converges.

    ``match_arguments=True`` fingerprints each call with its arguments normalised (JSON with sorted keys, so key
    order and spacing do not matter), as a set, so parallel calls may come in any order: an agent that pages
    through different records, one call each, is then making progress, not looping.
    """
    # Solon's StopLoopInterceptor raises maxRepeatCount (default 3) to at least 2 and windowSize (default 8) to 4.
    max_repeat_count = max(2, max_repeat_count)
    window_size = max(4, window_size)

    def before_chat_model(state: ChatModelAgentState, ctx: RunContext) -> None:
        window: list[str] = []
        for message in reversed(state.messages):
            if message.role == "user" and message.content.startswith(_LOOP_HEADLINE):
                break  # the original clears its window after a reminder
            if message.role == "assistant" and message.tool_calls:
                window.append(_fingerprint(message, match_arguments))
                if len(window) == window_size:
                    break
        if window:
            count = window.count(window[0])
            if count >= max_repeat_count:
                state.messages.append(user(_loop_reminder(count)))

    return AgentMiddleware(before_chat_model=before_chat_model)


def _fingerprint(message: Message, match_arguments: bool) -> str:
    calls = [call.function for call in message.tool_calls]
    if not match_arguments:
        return "".join(f"tool:{f.name}" for f in calls)  # Solon's, word for word
    return "\n".join(sorted({f"tool:{f.name}{_normalised(f.arguments)}" for f in calls}))


def _normalised(arguments: str) -> str:
    text = arguments.strip()
    try:
        value = parse_model_json(text) if text else {}  # models send "" for a tool without parameters
    except ModelJSONError:
        return text
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# -- tool_retry (Solon: ToolRetryInterceptor) --------------------------------------------------------------------


def tool_retry(
    *,
    max_attempts: int = 3,
    delay: float = 1.0,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> AgentMiddleware:
    """Call a failing tool again, waiting ``delay`` seconds times the attempt number in between (linear backoff).

    After ``max_attempts`` failed calls the observation is ``Execution error in tool [<name>]: <error>`` and the run
    goes on, so the model can recover. Arguments the tool refuses (``ToolArgumentsError``) are not retried: the
    model gets ``Invalid arguments for tool [<name>]: <detail>. Please fix the arguments and try again.`` An
    interrupt (``ToolContext.interrupt``) and cancellation pass through untouched. ``sleep`` is for tests.
    """
    # Solon's ToolRetryInterceptor raises maxRetries (default 3) to at least 1 and retryDelayMs (default 1000) to
    # 500; its maxRetries counts attempts, as max_attempts does here.
    max_attempts = max(1, max_attempts)
    delay = max(0.5, delay)

    def wrap_tool_call(handler: ToolCallHandler) -> ToolCallHandler:
        async def call(tool_call: ToolCall, ctx: ToolContext) -> str:
            name = tool_call.function.name
            attempt = 1
            while True:
                try:
                    return await handler(tool_call, ctx)
                except ToolArgumentsError as error:
                    return _invalid_arguments(name, error)
                except Exception as error:
                    if attempt >= max_attempts:
                        return f"Execution error in tool [{name}]: {_describe(error)}"
                await sleep(delay * attempt)
                attempt += 1

        return call

    return AgentMiddleware(wrap_tool_call=wrap_tool_call)


def _invalid_arguments(name: str, error: ToolArgumentsError) -> str:
    prefix = f"Invalid arguments for tool [{name}]: "
    # batonflow's own argument errors already start with the original's prefix: say it once.
    detail = str(error).removeprefix(prefix)
    return f"{prefix}{detail}. Please fix the arguments and try again."


def _describe(error: Exception) -> str:
    # Java would print "null" for an exception without a message; the type's name tells the model more.
    return str(error) or type(error).__name__


# -- tool_sanitizer (Solon: ToolSanitizerInterceptor) ------------------------------------------------------------

_NO_OUTPUT = "[No output from tool]"
_TRUNCATED = "... [Content Truncated due to length]"


def tool_sanitizer(*, max_length: int | None = 2000, sanitize: Callable[[str], str] | None = None) -> AgentMiddleware:
    """Keep tool observations usable: never empty, cleaned by ``sanitize``, at most ``max_length`` characters.

    An empty result becomes ``[No output from tool]`` (and is returned as it is). Otherwise ``sanitize`` runs first
    (to mask secrets, say), then a result longer than ``max_length`` is cut there and
    ``... [Content Truncated due to length]`` is appended, so the model knows it did not see everything.
    ``max_length=None`` turns truncation off.
    """
    if max_length is not None and max_length < 1:
        raise UserError(
            f"tool_sanitizer max_length: expected a positive number of characters or None, got {max_length}"
        )

    def wrap_tool_call(handler: ToolCallHandler) -> ToolCallHandler:
        async def call(tool_call: ToolCall, ctx: ToolContext) -> str:
            result = await handler(tool_call, ctx)
            if not result:
                return _NO_OUTPUT
            if sanitize is not None:
                result = sanitize(result)
            if max_length is not None and len(result) > max_length:
                result = result[:max_length] + _TRUNCATED
            return result

        return call

    return AgentMiddleware(wrap_tool_call=wrap_tool_call)


# -- the same, under Solon's class names -------------------------------------------------------------------------


class StopLoopInterceptor(AgentMiddleware):
    """``stop_loop(...)`` as a middleware class (Solon's ``StopLoopInterceptor``)."""

    def __init__(self, *, max_repeat_count: int = 3, window_size: int = 8, match_arguments: bool = False) -> None:
        made = stop_loop(max_repeat_count=max_repeat_count, window_size=window_size, match_arguments=match_arguments)
        super().__init__(before_chat_model=made.before_chat_model)


class ToolRetryInterceptor(AgentMiddleware):
    """``tool_retry(...)`` as a middleware class (Solon's ``ToolRetryInterceptor``)."""

    def __init__(
        self, *, max_attempts: int = 3, delay: float = 1.0, sleep: Callable[[float], Awaitable[object]] = asyncio.sleep
    ) -> None:
        super().__init__(wrap_tool_call=tool_retry(max_attempts=max_attempts, delay=delay, sleep=sleep).wrap_tool_call)


class ToolSanitizerInterceptor(AgentMiddleware):
    """``tool_sanitizer(...)`` as a middleware class (Solon's ``ToolSanitizerInterceptor``)."""

    def __init__(self, *, max_length: int | None = 2000, sanitize: Callable[[str], str] | None = None) -> None:
        super().__init__(wrap_tool_call=tool_sanitizer(max_length=max_length, sanitize=sanitize).wrap_tool_call)

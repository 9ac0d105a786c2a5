"""Claude models over Anthropic's Messages API, on the official ``anthropic`` SDK (the ``anthropic`` extra).

The SDK's own retries are off: ``RetryingModel`` retries, honouring the ``retry-after`` Anthropic sends with a 429
or a 529 (overloaded). The answers are read as plain dicts (``_anthropic_format``), as the OpenAI provider reads
its own, so that a body that is not the API's is told apart from an answer.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Sequence
from typing import Any

from ..errors import ModelConnectionError, ModelError, ModelTimeoutError, UserError
from ..schema import Message, MessageStream, Stream, ToolInfo
from ._anthropic_format import StreamState, anthropic_request, message_from_anthropic
from ._base import JSONSchemaFormat, ModelSettings, ToolChoice, check_tool_choice, merge_settings
from ._provider import http_error, not_the_api

try:
    import anthropic
except ImportError as exc:  # pragma: no cover - the extra is installed where batonflow is tested
    raise UserError("AnthropicChatModel needs the 'anthropic' package: pip install 'batonflow[anthropic]'") from exc

__all__ = ["AnthropicChatModel"]

DEFAULT_MAX_TOKENS = 4096

_SAMPLING = ("temperature", "top_p")

# The status an error that arrives inside a stream (an ``error`` event, after a 200) would have had.
_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


class AnthropicChatModel:
    """A Claude model (``"claude-sonnet-4-5"``) through Anthropic's Messages API.

    ``api_key`` falls back to ``ANTHROPIC_API_KEY``. Anthropic requires ``max_tokens`` on every call:
    ``ModelSettings.max_tokens`` when set, else this model's ``max_tokens``. A ``JSONSchemaFormat`` answer is asked
    for as a forced tool with the schema as its input (Anthropic has no JSON mode), and its input is the answer.
    A ``client`` you pass is used with this model's ``timeout`` and no SDK retries.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        timeout: float = 60.0,
        client: anthropic.AsyncAnthropic | None = None,
        default_settings: ModelSettings | None = None,
    ) -> None:
        self.model_name = model
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.default_settings = default_settings
        if client is None:
            api_key = api_key or os.environ.get("ANTHROPIC_API_KEY")
            if not api_key:
                raise UserError(
                    f"AnthropicChatModel({model!r}) needs an API key: expected api_key=... or ANTHROPIC_API_KEY in "
                    "the environment, got neither"
                )
            client = anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url)
        self._client = client.with_options(timeout=timeout, max_retries=0)

    def __repr__(self) -> str:
        return f"AnthropicChatModel({self.model_name!r}, base_url={str(self._client.base_url)!r})"

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> Message:
        body, answer = self._request(messages, tools, tool_choice, settings)
        try:
            response = await self._client.messages.with_raw_response.create(**body, stream=False)
            text = await response.text()
        except anthropic.AnthropicError as exc:
            raise self._error(exc) from exc
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if not isinstance(data, dict) or data.get("type") != "message" or not isinstance(data.get("content"), list):
            content_type = response.headers.get("content-type", "")
            raise not_the_api(
                self.model_name, response.status_code, str(response.url), content_type, text, "a message object"
            )
        return message_from_anthropic(data, answer)

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> MessageStream:
        body, answer = self._request(messages, tools, tool_choice, settings)
        return Stream.from_async_iter(self._chunks(body, answer))

    async def _chunks(self, body: dict[str, Any], answer: JSONSchemaFormat | None) -> AsyncIterator[Message]:
        state = StreamState(answer)
        try:
            events = await self._client.messages.create(**body, stream=True)
            async with events:
                http = events.response
                if "text/event-stream" not in http.headers.get("content-type", ""):
                    text = (await http.aread()).decode(errors="replace")
                    raise not_the_api(
                        self.model_name,
                        http.status_code,
                        str(http.url),
                        http.headers.get("content-type", ""),
                        text,
                        "an event stream",
                    )
                async for event in events:
                    chunk = state.chunk(event.model_dump())
                    if chunk is not None:
                        yield chunk
        except anthropic.AnthropicError as exc:
            raise self._error(exc) from exc
        except ValueError as exc:  # an event whose data is not JSON
            raise ModelError(
                f"model {self.model_name!r} request failed: the stream sent an event that is not JSON: {exc}",
                model=self.model_name,
            ) from exc
        if not state.finished:
            raise ModelError(
                f"model {self.model_name!r} request failed: the stream ended without a stop reason",
                model=self.model_name,
            )

    def _request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolInfo] | None,
        tool_choice: ToolChoice | None,
        settings: ModelSettings | None,
    ) -> tuple[dict[str, Any], JSONSchemaFormat | None]:
        check_tool_choice(tools, tool_choice)
        merged = merge_settings(self.default_settings, settings)
        body, answer = anthropic_request(
            messages, tools=tools, tool_choice=tool_choice, settings=merged, max_tokens=self.max_tokens
        )
        body["model"] = self.model_name
        # The SDK's create() no longer takes the sampling fields (newer Claude models refuse some of them), so they
        # travel in the JSON body as they are, with the provider-specific fields of ``extra``.
        extra = {key: body.pop(key) for key in _SAMPLING if key in body}
        extra.update(merged.extra or {})
        if extra:
            body["extra_body"] = extra
        return body, answer

    def _error(self, exc: anthropic.AnthropicError) -> ModelError:
        prefix = f"model {self.model_name!r} request failed"
        if isinstance(exc, anthropic.APITimeoutError):
            return ModelTimeoutError(f"{prefix}: no answer within {self.timeout} s", model=self.model_name)
        if isinstance(exc, anthropic.APIConnectionError):
            reason = f"{exc.__cause__}" if exc.__cause__ is not None else exc.message
            return ModelConnectionError(
                f"{prefix}: connection to {self._client.base_url} failed: {reason}", model=self.model_name
            )
        if isinstance(exc, anthropic.APIStatusError):
            status = exc.status_code
            if status < 400:  # an error event inside a stream that began with a 200
                status = _ERROR_STATUS.get(str(exc.type or ""), 500)
            said = exc.api_message or (exc.body if isinstance(exc.body, str) and exc.body else exc.message)
            if exc.type:
                said = f"{exc.type}: {said}"
            return http_error(
                self.model_name,
                status,
                " ".join(str(said).split())[:500],
                body=exc.body,
                url=str(exc.response.url),
                headers=exc.response.headers,
            )
        return ModelError(f"{prefix}: {exc}", model=self.model_name)

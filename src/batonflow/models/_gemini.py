"""Gemini models over the Gemini API, on the official ``google-genai`` SDK (the ``gemini`` extra).

The SDK retries nothing unless asked, and batonflow does not ask: ``RetryingModel`` retries, honouring the
``retry-after`` of a 429. Requests go as the SDK's dicts and responses are read dumped to dicts
(``_gemini_format``), so that an answer that is not the API's is told apart.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence

import pydantic

from ..errors import ModelConnectionError, ModelError, ModelResponseError, ModelTimeoutError, UserError
from ..schema import Message, MessageStream, Stream, ToolInfo
from ._base import ModelSettings, ToolChoice, check_tool_choice, merge_settings
from ._gemini_format import check_shape, gemini_config, gemini_contents, message_from_gemini
from ._provider import http_error

try:
    import httpx2
    from google import genai
    from google.genai import errors as genai_errors
    from google.genai import types as genai_types
except ImportError as exc:  # pragma: no cover - the extra is installed where batonflow is tested
    raise UserError("GeminiChatModel needs the 'google-genai' package: pip install 'batonflow[gemini]'") from exc

__all__ = ["GeminiChatModel"]


class GeminiChatModel:
    """A Gemini model (``"gemini-2.5-flash"``) through the Gemini API.

    ``api_key`` falls back to ``GEMINI_API_KEY``, then ``GOOGLE_API_KEY``. ``base_url`` points the SDK elsewhere (a
    proxy, a fake in tests). A ``JSONSchemaFormat`` answer is asked for with ``response_mime_type`` JSON and the
    schema as ``response_json_schema``. ``ModelSettings.extra`` holds ``GenerateContentConfig`` fields
    (``{"top_k": 20}``). A ``client`` you pass (a ``google.genai.Client``) is used as it is.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        client: genai.Client | None = None,
        default_settings: ModelSettings | None = None,
    ) -> None:
        self.model_name = model
        self.timeout = timeout
        self.default_settings = default_settings
        if client is None:
            api_key = api_key or os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
            if not api_key:
                raise UserError(
                    f"GeminiChatModel({model!r}) needs an API key: expected api_key=... or GEMINI_API_KEY (or "
                    "GOOGLE_API_KEY) in the environment, got none"
                )
            options = genai_types.HttpOptions(base_url=base_url, timeout=int(timeout * 1000))
            client = genai.Client(api_key=api_key, http_options=options)
        self._client = client
        self.base_url = base_url or "https://generativelanguage.googleapis.com"

    def __repr__(self) -> str:
        return f"GeminiChatModel({self.model_name!r}, base_url={self.base_url!r})"

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> Message:
        contents, config = self._request(messages, tools, tool_choice, settings)
        try:
            response = await self._client.aio.models.generate_content(
                model=self.model_name,
                contents=contents,
                config=config,
            )
        except Exception as exc:
            raise self._error(exc) from exc
        return self._message(response)

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> MessageStream:
        contents, config = self._request(messages, tools, tool_choice, settings)
        return Stream.from_async_iter(self._chunks(contents, config))

    async def _chunks(
        self, contents: list[genai_types.Content], config: genai_types.GenerateContentConfig
    ) -> AsyncIterator[Message]:
        calls, finished = 0, False
        try:
            chunks = await self._client.aio.models.generate_content_stream(
                model=self.model_name,
                contents=contents,
                config=config,
            )
            async for chunk in chunks:
                message = self._message(chunk, calls)
                calls += len(message.tool_calls)
                finished = finished or bool(message.response_meta and message.response_meta.finish_reason)
                yield message
        except (ModelError, UserError):
            raise
        except Exception as exc:
            raise self._error(exc) from exc
        if not finished:
            raise ModelError(
                f"model {self.model_name!r} request failed: the stream ended without a finish reason",
                model=self.model_name,
            )

    def _message(self, response: genai_types.GenerateContentResponse, first_call: int = 0) -> Message:
        data = response.model_dump(exclude_none=True)
        if not check_shape(data):
            raise ModelResponseError(
                f"model {self.model_name!r} request failed: expected a GenerateContentResponse with candidates, "
                f"got {str(data)[:200]}",
                url=self.base_url,
                status_code=200,
                content_type="application/json",
                body=str(data),
                model=self.model_name,
            )
        return message_from_gemini(data, first_call)

    def _request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolInfo] | None,
        tool_choice: ToolChoice | None,
        settings: ModelSettings | None,
    ) -> tuple[list[genai_types.Content], genai_types.GenerateContentConfig]:
        check_tool_choice(tools, tool_choice)
        merged = merge_settings(self.default_settings, settings)
        config = gemini_config(messages, tools=tools, tool_choice=tool_choice, settings=merged)
        try:
            # Through the SDK's own types, which spell every field the way the API reads it (the SDK passes a
            # plain dict's nested keys on as they are).
            checked = genai_types.GenerateContentConfig.model_validate(config)
        except pydantic.ValidationError as exc:
            raise UserError(
                f"GeminiChatModel({self.model_name!r}): expected settings that make a GenerateContentConfig "
                f"(ModelSettings.extra holds its fields), got {exc.error_count()} errors: {exc}"
            ) from exc
        return [genai_types.Content.model_validate(turn) for turn in gemini_contents(messages)], checked

    def _error(self, exc: Exception) -> Exception:
        prefix = f"model {self.model_name!r} request failed"
        if isinstance(exc, genai_errors.APIError):
            said = " ".join(str(exc.message or exc.details or "").split())[:500]
            if exc.status:
                said = f"{exc.status}: {said}"
            response = exc.response
            headers = getattr(response, "headers", None)
            url = str(getattr(response, "url", "") or self.base_url)
            return http_error(self.model_name, int(exc.code or 500), said, body=exc.details, url=url, headers=headers)
        if isinstance(exc, httpx2.TimeoutException):
            return ModelTimeoutError(f"{prefix}: no answer within {self.timeout} s", model=self.model_name)
        if isinstance(exc, httpx2.TransportError):
            return ModelConnectionError(f"{prefix}: connection to {self.base_url} failed: {exc}", model=self.model_name)
        if isinstance(exc, ValueError):  # the SDK's UnknownApiResponseError, or a body it could not decode
            return ModelResponseError(
                f"{prefix}: expected the API's JSON, got {' '.join(str(exc).split())[:200]}",
                url=self.base_url,
                status_code=200,
                content_type="",
                body=str(exc),
                model=self.model_name,
            )
        if isinstance(exc, ModelError | UserError):
            return exc
        return ModelError(f"{prefix}: {type(exc).__name__}: {exc}", model=self.model_name)

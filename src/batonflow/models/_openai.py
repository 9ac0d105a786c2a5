"""Chat models served over the OpenAI chat completions API: OpenAI, vLLM, Ollama's /v1, llama.cpp server…

Built on the official ``openai`` SDK with its own retries switched off: ``RetryingModel`` retries, so a
failure surfaces once, typed, and the caller decides.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal, Protocol, TypeAlias

import openai
from openai.types.chat import ChatCompletion

from ..errors import (
    ModelConnectionError,
    ModelError,
    ModelHTTPError,
    ModelResponseError,
    ModelTimeoutError,
    UserError,
)
from ..schema import Message, MessageStream, Stream, ToolInfo
from ._base import ModelSettings, ToolChoice, check_tool_choice, merge_settings
from ._provider import retry_after_of
from .openai_format import chat_request, chunk_to_message, completion_to_message, response_format_to_openai

__all__ = ["OpenAIChatModel", "openai_client"]


def openai_client(
    client: openai.AsyncOpenAI | None, api_key: str | None, base_url: str | None, timeout: float, owner: str
) -> openai.AsyncOpenAI:
    """``client``, or one made for ``base_url`` with ``api_key`` (``OPENAI_API_KEY`` when None; none is needed for a
    local server), with ``timeout`` and the SDK's own retries off (batonflow's retry wrapper retries)."""
    if client is None:
        api_key = api_key or os.environ.get("OPENAI_API_KEY") or ("not-needed" if base_url else None)
        if api_key is None:
            raise UserError(
                f"{owner} needs an API key: expected api_key=... or OPENAI_API_KEY in the environment (or a "
                "base_url for a local server), got neither"
            )
        client = openai.AsyncOpenAI(api_key=api_key, base_url=base_url)
    return client.with_options(timeout=timeout, max_retries=0)


StructuredOutput: TypeAlias = Literal["json_schema", "json_object"] | None
"""How a server takes ``ModelSettings.response_format``: OpenAI's ``json_schema`` (OpenAI, vLLM, llama.cpp's
``llama-server``, Ollama), llama-cpp-python's ``json_object`` with the schema beside it, or None: not sent."""


class OpenAIChatModel:
    """A model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    ``api_key`` falls back to ``OPENAI_API_KEY``, then to a placeholder when ``base_url`` points at a local
    server that needs none. A ``client`` you pass is used with this model's ``timeout`` and no SDK retries.

    A stream asks for its token usage (``stream_options.include_usage``, which OpenAI, vLLM, llama.cpp's
    ``llama-server`` and Ollama answer with a last chunk of usage). A server that refuses the field with a 400
    naming it is asked again without it, and this model stops sending it; ``stream_usage=False`` never sends it.
    A server that ignores it (llama-cpp-python's ``llama_cpp.server``) streams no usage: the answer's
    ``usage`` is then None, unknown rather than zero.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        client: openai.AsyncOpenAI | None = None,
        default_settings: ModelSettings | None = None,
        structured_output: StructuredOutput = "json_schema",
        stream_usage: bool = True,
    ) -> None:
        if structured_output not in ("json_schema", "json_object", None):
            raise UserError(
                f"OpenAIChatModel structured_output: expected 'json_schema', 'json_object' or None, "
                f"got {structured_output!r}"
            )
        self.model_name = model
        self.structured_output: StructuredOutput = structured_output
        self.stream_usage = stream_usage
        self.default_settings = default_settings
        self.timeout = timeout
        self._client = openai_client(client, api_key, base_url, timeout, f"OpenAIChatModel({model!r})")

    def __repr__(self) -> str:
        return f"OpenAIChatModel({self.model_name!r}, base_url={str(self._client.base_url)!r})"

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> Message:
        request = self._request(messages, tools, tool_choice, settings)
        try:
            response = await self._client.chat.completions.with_raw_response.create(**request, stream=False)
            completion = response.parse()
        except openai.OpenAIError as exc:
            raise self._error(exc) from exc
        if not isinstance(completion, ChatCompletion):  # the SDK hands back the text of what is not JSON
            raise self._not_the_api(response, response.text)
        return completion_to_message(completion.model_dump())

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> MessageStream:
        request = self._request(messages, tools, tool_choice, settings)
        return Stream.from_async_iter(self._chunks(request))

    async def _open_stream(self, request: dict[str, Any]) -> Any:
        if not self.stream_usage:
            return await self._client.chat.completions.create(**request, stream=True)
        try:
            return await self._client.chat.completions.create(
                **request, stream=True, stream_options={"include_usage": True}
            )
        except openai.BadRequestError as exc:
            if "stream_options" not in f"{exc.message} {exc.body}":
                raise
            self.stream_usage = False  # the server does not know the field: ask without it from now on
            return await self._client.chat.completions.create(**request, stream=True)

    async def _chunks(self, request: dict[str, Any]) -> AsyncIterator[Message]:
        try:
            response = await self._open_stream(request)
            finished = False
            async with response:
                if "html" in response.response.headers.get("content-type", ""):
                    raise self._not_the_api(
                        response.response, (await response.response.aread()).decode(errors="replace")
                    )
                async for chunk in response:
                    message = chunk_to_message(chunk.model_dump())
                    if message is not None:
                        finished = finished or bool(message.response_meta and message.response_meta.finish_reason)
                        yield message
        except openai.OpenAIError as exc:
            raise self._error(exc) from exc
        if not finished:
            # A server that fails after sending its headers can only close the stream: llama_cpp.server does
            # that, for one. A truncated answer must not pass for a complete one.
            raise ModelError(
                f"model {self.model_name!r} request failed: the stream ended without a finish reason",
                model=self.model_name,
            )

    def _request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolInfo] | None,
        tool_choice: ToolChoice | None,
        settings: ModelSettings | None,
    ) -> dict[str, Any]:
        check_tool_choice(tools, tool_choice)
        merged = merge_settings(self.default_settings, settings)
        request = chat_request(messages, tools=tools, tool_choice=tool_choice, settings=merged)
        request["model"] = self.model_name
        if "response_format" in request and self.structured_output != "json_schema":
            del request["response_format"]
            if self.structured_output is not None and merged.response_format is not None:
                request["response_format"] = response_format_to_openai(merged.response_format, "json_object")
        if merged.extra:
            # Fields the SDK does not know travel in the JSON body as they are.
            request["extra_body"] = merged.extra
        return request

    def _error(self, exc: openai.OpenAIError) -> ModelError:
        prefix = f"model {self.model_name!r} request failed"
        if isinstance(exc, openai.APITimeoutError):
            return ModelTimeoutError(f"{prefix}: no answer within {self.timeout} s", model=self.model_name)
        if isinstance(exc, openai.APIConnectionError):
            reason = f"{exc.__cause__}" if exc.__cause__ is not None else exc.message
            return ModelConnectionError(
                f"{prefix}: connection to {self._client.base_url} failed: {reason}", model=self.model_name
            )
        if isinstance(exc, openai.APIStatusError):
            url = str(exc.response.url)
            if _is_html(exc.response.headers.get("content-type", ""), exc.body):
                said = f"HTTP {exc.status_code} from {url}: {_expected_the_api(exc.body)}"
            else:
                said = f"HTTP {exc.status_code}: {_provider_message(exc)}"
            return ModelHTTPError(
                f"{prefix}: {said}",
                status_code=exc.status_code,
                model=self.model_name,
                body=exc.body,
                url=url,
                retry_after=retry_after_of(exc.response.headers),
            )
        return ModelError(f"{prefix}: {exc}", model=self.model_name)

    def _not_the_api(self, response: _Answer, body: str) -> ModelResponseError:
        """A success status with a body that is not the API's: a web page where the API should be, say."""
        content_type = response.headers.get("content-type", "")
        url = str(response.url)
        return ModelResponseError(
            f"model {self.model_name!r} request failed: HTTP {response.status_code} from {url}: "
            f"{_expected_the_api(body, content_type)} (is base_url the API's address?)",
            url=url,
            status_code=response.status_code,
            content_type=content_type,
            body=body,
            model=self.model_name,
        )


class _Answer(Protocol):
    """What the SDK's responses and the HTTP responses below them both tell of an answer."""

    @property
    def headers(self) -> Any: ...
    @property
    def status_code(self) -> int: ...
    @property
    def url(self) -> Any: ...


_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


def _is_html(content_type: str, body: object) -> bool:
    return "html" in content_type or (
        isinstance(body, str) and body.lstrip()[:15].lower().startswith(("<!doctype", "<html"))
    )


def _expected_the_api(body: object, content_type: str = "") -> str:
    """What came back instead of the API's JSON, in a few words: an HTML page and its title, or the first words."""
    text = body if isinstance(body, str) else ""
    if _is_html(content_type, text):
        match = _TITLE.search(text[:10_000])
        title = " ".join(html.unescape(match.group(1)).split())[:100] if match else ""
        return "expected the API's JSON, got an HTML page" + (f" titled {title!r}" if title else "")
    what = f"a {content_type} body" if content_type else "a body"
    return f"expected the API's JSON, got {what} starting {' '.join(text.split())[:100]!r}"


def _provider_message(exc: openai.APIStatusError) -> str:
    """The provider's own words: the SDK has already unwrapped ``{"error": {...}}`` into ``body``."""
    body = exc.body
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    if isinstance(body, str) and body:
        return body
    return exc.message

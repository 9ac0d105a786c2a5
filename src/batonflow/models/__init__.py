"""Chat and embedding models: the ``ChatModel`` and ``EmbeddingModel`` interfaces, the OpenAI-compatible
providers, Anthropic's (``AnthropicChatModel``, ``batonflow[anthropic]``) and Gemini's (``GeminiChatModel``,
``batonflow[gemini]``), retries and model URIs (``load_model``, ``load_embedding_model``).

The in-process llama.cpp models (``LlamaCppChatModel``, ``LlamaCppEmbeddingModel``) live in ``batonflow.models.local`` (optional extra ``batonflow[local]``), the OpenAI
wire format in ``batonflow.models.openai_format``. ``check_tool_choice`` and ``merge_settings`` are for writing a
``ChatModel`` of your own: they refuse and merge what the built-in providers do, and ``answer_format`` says when
a call's ``ModelSettings.response_format`` (a ``JSONSchemaFormat``) applies. ``ToolThenAnswer`` makes a small model
call a tool and then answer (the default of ``local:smollm2``).
"""

from typing import TYPE_CHECKING, Any

from ._base import ChatModel as ChatModel
from ._base import ForcedTool as ForcedTool
from ._base import JSONSchemaFormat as JSONSchemaFormat
from ._base import ModelSettings as ModelSettings
from ._base import ToolChoice as ToolChoice
from ._base import answer_format as answer_format
from ._base import check_tool_choice as check_tool_choice
from ._base import merge_settings as merge_settings
from ._embedding import EmbeddingModel as EmbeddingModel
from ._embedding import load_embedding_model as load_embedding_model
from ._guided import ANSWER_PROMPT as ANSWER_PROMPT
from ._guided import ToolThenAnswer as ToolThenAnswer
from ._guided import answer_from_tool_results as answer_from_tool_results
from ._load import as_model as as_model
from ._load import load_model as load_model
from ._retry import RetryingModel as RetryingModel
from ._retry import is_retryable_error as is_retryable_error
from ._retry import with_retry as with_retry
from ._routing import RouteByExamples as RouteByExamples
from ._routing import TextScorer as TextScorer

if TYPE_CHECKING:
    from ._anthropic import AnthropicChatModel as AnthropicChatModel
    from ._gemini import GeminiChatModel as GeminiChatModel
    from ._openai import OpenAIChatModel as OpenAIChatModel
    from ._openai_embedding import OpenAIEmbeddingModel as OpenAIEmbeddingModel


def __getattr__(name: str) -> Any:
    # The SDKs take up to a second each to import (and the native ones are extras): load one when a program first
    # asks for its provider.
    if name == "AnthropicChatModel":
        from ._anthropic import AnthropicChatModel

        return AnthropicChatModel
    if name == "GeminiChatModel":
        from ._gemini import GeminiChatModel

        return GeminiChatModel
    if name == "OpenAIChatModel":
        from ._openai import OpenAIChatModel

        return OpenAIChatModel
    if name == "OpenAIEmbeddingModel":
        from ._openai_embedding import OpenAIEmbeddingModel

        return OpenAIEmbeddingModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ANSWER_PROMPT",
    "AnthropicChatModel",
    "ChatModel",
    "EmbeddingModel",
    "ForcedTool",
    "GeminiChatModel",
    "JSONSchemaFormat",
    "ModelSettings",
    "OpenAIChatModel",
    "OpenAIEmbeddingModel",
    "RetryingModel",
    "RouteByExamples",
    "TextScorer",
    "ToolChoice",
    "ToolThenAnswer",
    "answer_format",
    "answer_from_tool_results",
    "as_model",
    "check_tool_choice",
    "is_retryable_error",
    "load_embedding_model",
    "load_model",
    "merge_settings",
    "with_retry",
]

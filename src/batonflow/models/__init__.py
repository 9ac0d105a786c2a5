"""Chat models: the ``ChatModel`` interface, the OpenAI-compatible provider, retries and model URIs.

The in-process llama.cpp model lives in ``batonflow.models.local`` (optional extra ``batonflow[local]``).
"""

from ._base import ChatModel as ChatModel
from ._base import ForcedTool as ForcedTool
from ._base import ModelSettings as ModelSettings
from ._base import ToolChoice as ToolChoice
from ._load import load_model as load_model
from ._openai import OpenAIChatModel as OpenAIChatModel
from ._retry import RetryingModel as RetryingModel
from ._retry import is_retryable_error as is_retryable_error
from ._retry import with_retry as with_retry

__all__ = [
    "ChatModel",
    "ForcedTool",
    "ModelSettings",
    "OpenAIChatModel",
    "RetryingModel",
    "ToolChoice",
    "is_retryable_error",
    "load_model",
    "with_retry",
]

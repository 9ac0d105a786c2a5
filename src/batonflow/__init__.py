"""batonflow: multi-agent LLM applications — agents as event streams that call tools, hand control to each other,
pause for a human and resume later.

The names here are the public API; subpackages hold the rest (``batonflow.schema``, ``batonflow.models``,
``batonflow.tools``, ``batonflow.testing``).
"""

from .errors import BatonflowError as BatonflowError
from .errors import ConcatError as ConcatError
from .errors import ModelConnectionError as ModelConnectionError
from .errors import ModelError as ModelError
from .errors import ModelHTTPError as ModelHTTPError
from .errors import ModelTimeoutError as ModelTimeoutError
from .errors import RunError as RunError
from .errors import StreamClosedError as StreamClosedError
from .errors import ToolArgumentsError as ToolArgumentsError
from .errors import ToolNotFoundError as ToolNotFoundError
from .errors import UserError as UserError
from .models import ChatModel as ChatModel
from .models import ForcedTool as ForcedTool
from .models import ModelSettings as ModelSettings
from .models import OpenAIChatModel as OpenAIChatModel
from .models import ToolChoice as ToolChoice
from .models import load_model as load_model
from .models import with_retry as with_retry
from .schema import FunctionCall as FunctionCall
from .schema import Message as Message
from .schema import MessageStream as MessageStream
from .schema import ResponseMeta as ResponseMeta
from .schema import Stream as Stream
from .schema import ToolCall as ToolCall
from .schema import Usage as Usage
from .schema import assistant as assistant
from .schema import concat_message_stream as concat_message_stream
from .schema import concat_messages as concat_messages
from .schema import system as system
from .schema import tool_message as tool_message
from .schema import user as user
from .tools import Tool as Tool
from .tools import ToolContext as ToolContext
from .tools import ToolInfo as ToolInfo
from .tools import tool as tool

__version__ = "0.1.0"

__all__ = [
    "BatonflowError",
    "ChatModel",
    "ConcatError",
    "ForcedTool",
    "FunctionCall",
    "Message",
    "MessageStream",
    "ModelConnectionError",
    "ModelError",
    "ModelHTTPError",
    "ModelSettings",
    "ModelTimeoutError",
    "OpenAIChatModel",
    "ResponseMeta",
    "RunError",
    "Stream",
    "StreamClosedError",
    "Tool",
    "ToolArgumentsError",
    "ToolCall",
    "ToolChoice",
    "ToolContext",
    "ToolInfo",
    "ToolNotFoundError",
    "Usage",
    "UserError",
    "assistant",
    "concat_message_stream",
    "concat_messages",
    "load_model",
    "system",
    "tool",
    "tool_message",
    "user",
    "with_retry",
]

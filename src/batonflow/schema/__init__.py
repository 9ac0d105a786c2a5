"""Messages and streams, tool descriptions, run paths and addresses: the data every other layer passes around."""

from ._concat import concat_message_stream as concat_message_stream
from ._concat import concat_messages as concat_messages
from ._messages import ROLES as ROLES
from ._messages import AudioPart as AudioPart
from ._messages import ContentPart as ContentPart
from ._messages import FunctionCall as FunctionCall
from ._messages import ImagePart as ImagePart
from ._messages import Message as Message
from ._messages import ResponseMeta as ResponseMeta
from ._messages import Role as Role
from ._messages import TextPart as TextPart
from ._messages import ToolCall as ToolCall
from ._messages import Usage as Usage
from ._messages import assistant as assistant
from ._messages import system as system
from ._messages import tool_message as tool_message
from ._messages import user as user
from ._paths import Address as Address
from ._paths import AddressSegment as AddressSegment
from ._paths import RunStep as RunStep
from ._paths import format_address as format_address
from ._stream import Stream as Stream
from ._stream import StreamWriter as StreamWriter
from ._stream import Tap as Tap
from ._tool_info import ToolInfo as ToolInfo

MessageStream = Stream[Message]
"""A stream of message chunks, as models produce them."""

__all__ = [
    "ROLES",
    "Address",
    "AddressSegment",
    "AudioPart",
    "ContentPart",
    "FunctionCall",
    "ImagePart",
    "Message",
    "MessageStream",
    "ResponseMeta",
    "Role",
    "RunStep",
    "Stream",
    "StreamWriter",
    "Tap",
    "TextPart",
    "ToolCall",
    "ToolInfo",
    "Usage",
    "assistant",
    "concat_message_stream",
    "concat_messages",
    "format_address",
    "system",
    "tool_message",
    "user",
]

"""Tools: what a model can call, ``@tool`` to make one from a typed Python function, and ``MCPToolProvider`` for
the tools of an MCP server (``batonflow.tools.mcp``; the SDK is the optional extra ``batonflow[mcp]``, imported
when a provider first connects)."""

# A tool's description and interrupt addresses are plain data that models and traces need too; they live in
# batonflow.schema and are re-exported here, where a tool author looks for them.
from ..schema import Address as Address
from ..schema import AddressSegment as AddressSegment
from ..schema import ToolInfo as ToolInfo
from ..schema import format_address as format_address
from ._context import ToolContext as ToolContext
from ._function import FunctionTool as FunctionTool
from ._function import StreamingFunctionTool as StreamingFunctionTool
from ._function import ToolLike as ToolLike
from ._function import as_tool as as_tool
from ._function import as_tools as as_tools
from ._function import check_arguments as check_arguments
from ._function import tool as tool
from ._interrupt import InterruptSignal as InterruptSignal
from ._interrupt import InterruptState as InterruptState
from ._interrupt import ResumeContext as ResumeContext
from ._json import MAX_JSON_CHARS as MAX_JSON_CHARS
from ._json import MAX_JSON_DEPTH as MAX_JSON_DEPTH
from ._json import check_model_json as check_model_json
from ._json import decode_model_json as decode_model_json
from ._json import parse_model_json as parse_model_json
from ._protocols import StreamingTool as StreamingTool
from ._protocols import Tool as Tool
from .mcp import MCPServerError as MCPServerError
from .mcp import MCPTool as MCPTool
from .mcp import MCPToolProvider as MCPToolProvider

__all__ = [
    "MAX_JSON_CHARS",
    "MAX_JSON_DEPTH",
    "Address",
    "AddressSegment",
    "FunctionTool",
    "InterruptSignal",
    "InterruptState",
    "MCPServerError",
    "MCPTool",
    "MCPToolProvider",
    "ResumeContext",
    "StreamingFunctionTool",
    "StreamingTool",
    "Tool",
    "ToolContext",
    "ToolInfo",
    "ToolLike",
    "as_tool",
    "as_tools",
    "check_arguments",
    "check_model_json",
    "decode_model_json",
    "format_address",
    "parse_model_json",
    "tool",
]

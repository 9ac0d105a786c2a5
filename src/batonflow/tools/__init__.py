"""Tools: what a model can call, and ``@tool`` to make one from a typed Python function."""

from ._context import ToolContext as ToolContext
from ._function import FunctionTool as FunctionTool
from ._function import StreamingFunctionTool as StreamingFunctionTool
from ._function import tool as tool
from ._info import ToolInfo as ToolInfo
from ._protocols import StreamingTool as StreamingTool
from ._protocols import Tool as Tool

__all__ = [
    "FunctionTool",
    "StreamingFunctionTool",
    "StreamingTool",
    "Tool",
    "ToolContext",
    "ToolInfo",
    "tool",
]

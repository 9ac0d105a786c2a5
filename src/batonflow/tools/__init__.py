"""Tools: what a model can call, and ``@tool`` to make one from a typed Python function."""

from ._context import ToolContext as ToolContext
from ._function import FunctionTool as FunctionTool
from ._function import StreamingFunctionTool as StreamingFunctionTool
from ._function import tool as tool
from ._info import ToolInfo as ToolInfo
from ._interrupt import Address as Address
from ._interrupt import AddressSegment as AddressSegment
from ._interrupt import InterruptSignal as InterruptSignal
from ._interrupt import InterruptState as InterruptState
from ._interrupt import ResumeContext as ResumeContext
from ._interrupt import format_address as format_address
from ._protocols import StreamingTool as StreamingTool
from ._protocols import Tool as Tool

__all__ = [
    "Address",
    "AddressSegment",
    "FunctionTool",
    "InterruptSignal",
    "InterruptState",
    "ResumeContext",
    "StreamingFunctionTool",
    "StreamingTool",
    "Tool",
    "ToolContext",
    "ToolInfo",
    "format_address",
    "tool",
]

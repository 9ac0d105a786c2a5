"""Solon-AI's ReAct interceptors under their original names, as ``ChatModelAgent``/``ReActAgent`` middlewares."""

from ._hitl import HITLInterceptor as HITLInterceptor
from ._interceptors import StopLoopInterceptor as StopLoopInterceptor
from ._interceptors import ToolRetryInterceptor as ToolRetryInterceptor
from ._interceptors import ToolSanitizerInterceptor as ToolSanitizerInterceptor
from .compression import ContextCompressionInterceptor as ContextCompressionInterceptor

__all__ = [
    "ContextCompressionInterceptor",
    "HITLInterceptor",
    "StopLoopInterceptor",
    "ToolRetryInterceptor",
    "ToolSanitizerInterceptor",
]

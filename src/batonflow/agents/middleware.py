"""Solon-AI's ReAct interceptors under their original class names.

Each is the middleware its factory in ``batonflow.agents`` makes (``HITLInterceptor(...)`` is
``human_approval(...)``, ``StopLoopInterceptor(...)`` is ``stop_loop(...)``, and so on), for code written against
Solon's names; new code can use either.
"""

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

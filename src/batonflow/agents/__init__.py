"""Solon-AI's agent kinds, interceptors and conversation sessions, on the runtime of ``batonflow.adk``."""

from ._interceptors import stop_loop as stop_loop
from ._interceptors import tool_retry as tool_retry
from ._interceptors import tool_sanitizer as tool_sanitizer
from ._session import Session as Session
from ._simple import SimpleAgent as SimpleAgent
from ._simple import parse_output as parse_output

__all__ = ["Session", "SimpleAgent", "parse_output", "stop_loop", "tool_retry", "tool_sanitizer"]

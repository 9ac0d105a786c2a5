"""Solon-AI's agent kinds, interceptors and conversation sessions, on the runtime of ``batonflow.adk``."""

__all__: list[str] = []

"""Framework-overhead benchmarks: batonflow against LangGraph, Google ADK, the OpenAI Agents
SDK, Microsoft Agent Framework and Pydantic AI.

Every framework runs the same workloads on a zero-latency scripted model, so what is measured is the framework
itself. ``python -m benchmarks`` (``make bench``) prints the table; ``--quick`` is a smoke run.
"""

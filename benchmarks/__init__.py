"""Framework-overhead benchmarks: batonflow against LangGraph, Google ADK and the OpenAI Agents SDK.

Every framework runs the same workloads on a zero-latency scripted model, so what is measured is the framework
itself. ``python -m benchmarks`` (``make bench``) prints the table; ``--quick`` is a smoke run.
"""

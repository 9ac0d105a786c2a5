"""The solon-flow graph engine."""

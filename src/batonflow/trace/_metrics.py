"""Run metrics: tokens, calls and durations, per run and per agent (Solon's ``Metrics``).

Counting rule: every model call and tool call counts once in the run total and once in the entry of the agent
that made it; an agent used as a tool (``AgentTool``) counts in its own entry *and* in its caller's, the way
Solon adds a child's metrics to its parent team. An agent reached by transfer, or run by a workflow agent, is
an entry of its own and is not added to the agent before it. So the run total is the sum over the agents that
were not run as tools.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..schema import Usage

__all__ = ["Metrics", "RunMetrics"]


@dataclass(slots=True, kw_only=True)
class Metrics:
    """Counts for one agent or one run. Durations are wall-clock milliseconds."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    model_duration_ms: float = 0.0
    tool_duration_ms: float = 0.0
    # The agent's (or run's) own wall time; not added up from children, as in the original.
    duration_ms: float = 0.0

    def add_usage(self, usage: Usage) -> None:
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        self.total_tokens += usage.total_tokens or usage.prompt_tokens + usage.completion_tokens
        self.cached_tokens += usage.cached_tokens

    def add(self, other: Metrics) -> None:
        """Add ``other``'s counts (everything but ``duration_ms``)."""
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.total_tokens += other.total_tokens
        self.cached_tokens += other.cached_tokens
        self.model_calls += other.model_calls
        self.tool_calls += other.tool_calls
        self.model_duration_ms += other.model_duration_ms
        self.tool_duration_ms += other.tool_duration_ms

    @property
    def cache_rate(self) -> float:
        """Cached prompt tokens as a percentage of prompt tokens, to two decimals and at most 100 (Solon's
        ``getCacheRate``: a provider may count cached tokens that the prompt count leaves out)."""
        if not self.prompt_tokens:
            return 0.0
        return round(min(100.0, 100.0 * self.cached_tokens / self.prompt_tokens), 2)


@dataclass(slots=True, kw_only=True)
class RunMetrics:
    """The metrics of one run: ``total``, and ``agents`` by agent name (an agent run twice has one entry)."""

    run_id: str
    total: Metrics = field(default_factory=Metrics)
    agents: dict[str, Metrics] = field(default_factory=dict)

    def agent(self, name: str) -> Metrics:
        """The entry of agent ``name``, created empty if needed."""
        found = self.agents.get(name)
        if found is None:
            found = self.agents[name] = Metrics()
        return found

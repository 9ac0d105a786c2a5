"""Solon-AI's context compression (its ``ContextCompressionInterceptor``) as a ``ChatModelAgent`` middleware.

Before each model call the transcript is brought back under two limits — a message count and a share of the model's
context length — so that a long ReAct loop keeps going instead of failing on a prompt that grew too long. The
messages the run started from (its first chain: the system prompt, the history it was fed, the current prompt) are
never touched; of the rest:

1. every message is capped at ``max(2000, threshold // 2)`` tokens, its head and tail kept (MicroCompact), except
   an assistant message that calls tools;
2. with more than ``max_messages`` of them or more than ``threshold`` tokens, the older ones are replaced by one
   summary message that a ``CompressionStrategy`` writes (or just dropped, without one); the latest
   ``max_messages`` stay, with the thought before them, and a tool call always stays together with its results;
3. calls without all their results, tool results whose call is gone, and empty assistant messages are removed, so
   that strict providers accept the transcript.

A ``ContextSize`` trace event gives the size of every model call's context. The interceptor keeps no state of its
own: what a strategy carries from one compression to the next (a rolling summary, the key of an archive) lives in
the run's session values, which a checkpoint saves, so one interceptor serves any number of agents and runs.

The token estimate is in ``_tokens``, the summary message in ``_summary``, where a cut may fall in ``_window``, the
strategies in ``_strategies`` and ``_archive`` (a vector store the agent can search), the middleware in
``_interceptor``.
"""

from ._archive import Embedder as Embedder
from ._archive import InMemoryVectorStore as InMemoryVectorStore
from ._archive import VectorStore as VectorStore
from ._archive import VectorStoreArchiveStrategy as VectorStoreArchiveStrategy
from ._interceptor import ContextCompressionInterceptor as ContextCompressionInterceptor
from ._interceptor import context_compression as context_compression
from ._strategies import CompositeStrategy as CompositeStrategy
from ._strategies import CompressionStrategy as CompressionStrategy
from ._strategies import HierarchicalSummaryStrategy as HierarchicalSummaryStrategy
from ._strategies import KeyInfoExtractionStrategy as KeyInfoExtractionStrategy
from ._strategies import LLMSummaryStrategy as LLMSummaryStrategy
from ._tokens import estimate_tokens as estimate_tokens

__all__ = [
    "CompositeStrategy",
    "CompressionStrategy",
    "ContextCompressionInterceptor",
    "Embedder",
    "HierarchicalSummaryStrategy",
    "InMemoryVectorStore",
    "KeyInfoExtractionStrategy",
    "LLMSummaryStrategy",
    "VectorStore",
    "VectorStoreArchiveStrategy",
    "context_compression",
    "estimate_tokens",
]

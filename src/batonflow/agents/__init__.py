"""Solon-AI's agent kinds, middlewares and conversation sessions, on the runtime of ``batonflow.adk``.

``ConversationRunner`` is the runtime's Runner, with every option of it, plus conversations across runs
(``session_store=``, ``run(..., session_id=)``); ``Runner`` and ``batonflow.Runner`` are other names of it.

Middlewares are made by factories (``human_approval``, ``context_compression``, ``stop_loop``, ``tool_retry``,
``tool_sanitizer``, ``planning``) that return an ``AgentMiddleware``; ``batonflow.agents.middleware`` has the same
under Solon's interceptor class names.
"""

from ._conversation import ConversationRunner as ConversationRunner
from ._conversation import Runner as Runner
from ._hitl import HITL as HITL
from ._hitl import HITLDecision as HITLDecision
from ._hitl import HITLPending as HITLPending
from ._hitl import HITLStrategy as HITLStrategy
from ._hitl import PendingTask as PendingTask
from ._hitl import human_approval as human_approval
from ._hitl import parse_decisions as parse_decisions
from ._interceptors import stop_loop as stop_loop
from ._interceptors import tool_retry as tool_retry
from ._interceptors import tool_sanitizer as tool_sanitizer
from ._member_instruction import member_instruction as member_instruction
from ._planning import planning as planning
from ._react import FeedbackRequest as FeedbackRequest
from ._react import ReActAgent as ReActAgent
from ._session import Session as Session
from ._simple import SimpleAgent as SimpleAgent
from ._simple import parse_output as parse_output
from .compression import CompositeStrategy as CompositeStrategy
from .compression import CompressionStrategy as CompressionStrategy
from .compression import HierarchicalSummaryStrategy as HierarchicalSummaryStrategy
from .compression import InMemoryVectorStore as InMemoryVectorStore
from .compression import KeyInfoExtractionStrategy as KeyInfoExtractionStrategy
from .compression import LLMSummaryStrategy as LLMSummaryStrategy
from .compression import VectorStore as VectorStore
from .compression import VectorStoreArchiveStrategy as VectorStoreArchiveStrategy
from .compression import context_compression as context_compression
from .compression import estimate_tokens as estimate_tokens

__all__ = [
    "HITL",
    "CompositeStrategy",
    "CompressionStrategy",
    "ConversationRunner",
    "FeedbackRequest",
    "HITLDecision",
    "HITLPending",
    "HITLStrategy",
    "HierarchicalSummaryStrategy",
    "InMemoryVectorStore",
    "KeyInfoExtractionStrategy",
    "LLMSummaryStrategy",
    "PendingTask",
    "ReActAgent",
    "Runner",
    "Session",
    "SimpleAgent",
    "VectorStore",
    "VectorStoreArchiveStrategy",
    "context_compression",
    "estimate_tokens",
    "human_approval",
    "member_instruction",
    "parse_decisions",
    "parse_output",
    "planning",
    "stop_loop",
    "tool_retry",
    "tool_sanitizer",
]

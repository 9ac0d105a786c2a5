"""batonflow: multi-agent LLM applications — agents as event streams that call tools, hand control to each other,
pause for a human and resume later.

The names here are the public API; subpackages hold the rest (``batonflow.adk``, ``batonflow.schema``,
``batonflow.models``, ``batonflow.tools``, ``batonflow.testing``, ``batonflow.graph``, ``batonflow.flow``,
``batonflow.team``, ``batonflow.server``, ``batonflow.distributed``).

``import batonflow`` loads the agent core only. The names of the team package, ``OpenAIChatModel`` and the
subpackages ``graph``, ``flow`` and ``team`` load when first used (the module's ``__getattr__``), so that a program
that runs agents pays neither for the graph engine, its template engine nor the openai SDK. A checkpoint that holds
a graph's, a flow's or a team's saved types still decodes: the codec imports the package that registers a type it
does not know yet (``batonflow.store``'s deferred names).
"""

from typing import TYPE_CHECKING, Any

# -- the agent runtime (Eino's ADK) -------------------------------------------------------------------------------
from .adk import EXIT_TOOL_NAME as EXIT_TOOL_NAME
from .adk import TRANSFER_TOOL_NAME as TRANSFER_TOOL_NAME
from .adk import Agent as Agent
from .adk import AgentAction as AgentAction
from .adk import AgentEvent as AgentEvent
from .adk import AgentInput as AgentInput
from .adk import AgentMiddleware as AgentMiddleware
from .adk import AgentOutput as AgentOutput
from .adk import AgentTool as AgentTool
from .adk import BreakLoopAction as BreakLoopAction
from .adk import ChatModelAgent as ChatModelAgent
from .adk import ChatModelAgentResumeData as ChatModelAgentResumeData
from .adk import ChatModelAgentState as ChatModelAgentState
from .adk import ExitTool as ExitTool
from .adk import FlowAgent as FlowAgent
from .adk import HistoryEntry as HistoryEntry
from .adk import HistoryPolicy as HistoryPolicy
from .adk import HistoryRewriter as HistoryRewriter
from .adk import HistoryStep as HistoryStep
from .adk import InterruptCtx as InterruptCtx
from .adk import InterruptInfo as InterruptInfo
from .adk import LoopAgent as LoopAgent
from .adk import MessageVariant as MessageVariant
from .adk import ModelRetryConfig as ModelRetryConfig
from .adk import ParallelAgent as ParallelAgent
from .adk import ResumableAgent as ResumableAgent
from .adk import ResumeInfo as ResumeInfo
from .adk import RunContext as RunContext
from .adk import RunHistory as RunHistory
from .adk import RunResult as RunResult
from .adk import RunState as RunState
from .adk import RunStep as RunStep
from .adk import SequentialAgent as SequentialAgent
from .adk import TransferToAgentAction as TransferToAgentAction
from .adk import agent_with_options as agent_with_options
from .adk import break_loop_action as break_loop_action
from .adk import collect_events as collect_events
from .adk import composite_interrupt as composite_interrupt
from .adk import event_from_message as event_from_message
from .adk import exit_action as exit_action
from .adk import interrupt as interrupt
from .adk import new_executor as new_executor
from .adk import new_planner as new_planner
from .adk import new_replanner as new_replanner
from .adk import plan_execute_replan as plan_execute_replan
from .adk import set_language as set_language
from .adk import set_sub_agents as set_sub_agents
from .adk import stateful_interrupt as stateful_interrupt
from .adk import supervisor as supervisor
from .adk import transfer_action as transfer_action
from .adk import with_deterministic_transfer as with_deterministic_transfer

# -- Solon-AI's agent kinds and conversations ---------------------------------------------------------------------
from .agents import HITL as HITL
from .agents import ConversationRunner as ConversationRunner
from .agents import HITLDecision as HITLDecision
from .agents import ReActAgent as ReActAgent
from .agents import Runner as Runner
from .agents import Session as Session
from .agents import SimpleAgent as SimpleAgent
from .agents.middleware import ContextCompressionInterceptor as ContextCompressionInterceptor
from .agents.middleware import HITLInterceptor as HITLInterceptor
from .agents.middleware import StopLoopInterceptor as StopLoopInterceptor
from .agents.middleware import ToolRetryInterceptor as ToolRetryInterceptor
from .agents.middleware import ToolSanitizerInterceptor as ToolSanitizerInterceptor
from .codec import register_type as register_type

# -- errors -------------------------------------------------------------------------------------------------------
from .errors import BatonflowError as BatonflowError
from .errors import CheckpointExistsError as CheckpointExistsError
from .errors import CheckpointNotFoundError as CheckpointNotFoundError
from .errors import CodecError as CodecError
from .errors import ConcatError as ConcatError
from .errors import LeaseLostError as LeaseLostError
from .errors import MaxIterationsError as MaxIterationsError
from .errors import ModelConnectionError as ModelConnectionError
from .errors import ModelError as ModelError
from .errors import ModelHTTPError as ModelHTTPError
from .errors import ModelJSONError as ModelJSONError
from .errors import ModelResponseError as ModelResponseError
from .errors import ModelTimeoutError as ModelTimeoutError
from .errors import ReplayMismatchError as ReplayMismatchError
from .errors import ResumeConflictError as ResumeConflictError
from .errors import ResumeError as ResumeError
from .errors import RunError as RunError
from .errors import RunHistoryError as RunHistoryError
from .errors import StoreError as StoreError
from .errors import StreamClosedError as StreamClosedError
from .errors import ToolArgumentsError as ToolArgumentsError
from .errors import ToolNotFoundError as ToolNotFoundError
from .errors import TransferError as TransferError
from .errors import UserError as UserError

# -- models -------------------------------------------------------------------------------------------------------
from .models import ChatModel as ChatModel
from .models import EmbeddingModel as EmbeddingModel
from .models import ForcedTool as ForcedTool
from .models import ModelSettings as ModelSettings
from .models import ToolChoice as ToolChoice
from .models import load_embedding_model as load_embedding_model
from .models import load_model as load_model
from .models import with_retry as with_retry

# -- messages and streams -----------------------------------------------------------------------------------------
from .schema import FunctionCall as FunctionCall
from .schema import Message as Message
from .schema import MessageStream as MessageStream
from .schema import ResponseMeta as ResponseMeta
from .schema import Stream as Stream
from .schema import ToolCall as ToolCall
from .schema import Usage as Usage
from .schema import assistant as assistant
from .schema import concat_message_stream as concat_message_stream
from .schema import concat_messages as concat_messages
from .schema import system as system
from .schema import tool_message as tool_message
from .schema import user as user

# -- checkpoints and conversation stores --------------------------------------------------------------------------
from .store import CheckpointStore as CheckpointStore
from .store import FileSessionStore as FileSessionStore
from .store import HistoryRetention as HistoryRetention
from .store import MemoryCheckpointStore as MemoryCheckpointStore
from .store import MemorySessionStore as MemorySessionStore
from .store import PostgresCheckpointStore as PostgresCheckpointStore
from .store import PostgresSessionStore as PostgresSessionStore
from .store import RedisCheckpointStore as RedisCheckpointStore
from .store import RedisSessionStore as RedisSessionStore
from .store import SessionStore as SessionStore
from .store import SqliteCheckpointStore as SqliteCheckpointStore
from .store import SqliteSessionStore as SqliteSessionStore

# -- tools --------------------------------------------------------------------------------------------------------
from .tools import Tool as Tool
from .tools import ToolContext as ToolContext
from .tools import ToolInfo as ToolInfo
from .tools import tool as tool

if TYPE_CHECKING:
    from . import flow as flow
    from . import graph as graph
    from . import team as team
    from .models import OpenAIChatModel as OpenAIChatModel
    from .team import LoopingTeamInterceptor as LoopingTeamInterceptor
    from .team import Member as Member
    from .team import TeamAgent as TeamAgent
    from .team import TeamInterceptor as TeamInterceptor
    from .team import TeamProtocol as TeamProtocol
    from .team import TeamTrace as TeamTrace

__version__ = "0.1.0"

# Re-exported classes keep the __module__ of the module that defines them (httpx rewrites it to its package name):
# the codec reads a registered class's field types with typing.get_type_hints, which resolves the class's string
# annotations in the namespace of its __module__, and most of those names are not in this facade.

# Name -> the module it is imported from on first use.
_LAZY: dict[str, str] = {
    "OpenAIChatModel": ".models",  # the openai SDK is slow to import
    "LoopingTeamInterceptor": ".team",
    "Member": ".team",
    "TeamAgent": ".team",
    "TeamInterceptor": ".team",
    "TeamProtocol": ".team",
    "TeamTrace": ".team",
}
_SUBPACKAGES = frozenset(("flow", "graph", "team"))


def __getattr__(name: str) -> Any:
    import importlib

    if name in _SUBPACKAGES:
        return importlib.import_module(f".{name}", __name__)
    source = _LAZY.get(name)
    if source is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(source, __name__), name)
    globals()[name] = value  # the next lookup is a plain one
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_SUBPACKAGES})


__all__ = [  # noqa: RUF022 (grouped by topic, sorted within a group)
    # Agents and their runs
    "EXIT_TOOL_NAME",
    "HITL",
    "TRANSFER_TOOL_NAME",
    "Agent",
    "AgentAction",
    "AgentEvent",
    "AgentInput",
    "AgentMiddleware",
    "AgentOutput",
    "AgentTool",
    "BreakLoopAction",
    "ChatModelAgent",
    "ChatModelAgentResumeData",
    "ChatModelAgentState",
    "ContextCompressionInterceptor",
    "ConversationRunner",
    "ExitTool",
    "FlowAgent",
    "HITLDecision",
    "HITLInterceptor",
    "HistoryEntry",
    "HistoryPolicy",
    "HistoryRetention",
    "HistoryStep",
    "HistoryRewriter",
    "InterruptCtx",
    "InterruptInfo",
    "LoopAgent",
    "MessageVariant",
    "ModelRetryConfig",
    "ParallelAgent",
    "ReActAgent",
    "ResumableAgent",
    "ResumeInfo",
    "RunContext",
    "RunHistory",
    "RunResult",
    "RunState",
    "RunStep",
    "Runner",
    "SequentialAgent",
    "Session",
    "SimpleAgent",
    "StopLoopInterceptor",
    "ToolRetryInterceptor",
    "ToolSanitizerInterceptor",
    "TransferToAgentAction",
    "agent_with_options",
    "break_loop_action",
    "collect_events",
    "composite_interrupt",
    "event_from_message",
    "exit_action",
    "interrupt",
    "new_executor",
    "new_planner",
    "new_replanner",
    "plan_execute_replan",
    "set_language",
    "set_sub_agents",
    "stateful_interrupt",
    "supervisor",
    "transfer_action",
    "with_deterministic_transfer",
    # Teams (loaded on first use)
    "LoopingTeamInterceptor",
    "Member",
    "TeamAgent",
    "TeamInterceptor",
    "TeamProtocol",
    "TeamTrace",
    # Messages and streams
    "FunctionCall",
    "Message",
    "MessageStream",
    "ResponseMeta",
    "Stream",
    "ToolCall",
    "Usage",
    "assistant",
    "concat_message_stream",
    "concat_messages",
    "system",
    "tool_message",
    "user",
    # Models
    "ChatModel",
    "EmbeddingModel",
    "ForcedTool",
    "ModelSettings",
    "OpenAIChatModel",
    "ToolChoice",
    "load_embedding_model",
    "load_model",
    "with_retry",
    # Tools
    "Tool",
    "ToolContext",
    "ToolInfo",
    "tool",
    # Checkpoints and conversations
    "CheckpointStore",
    "FileSessionStore",
    "MemoryCheckpointStore",
    "MemorySessionStore",
    "PostgresCheckpointStore",
    "PostgresSessionStore",
    "RedisCheckpointStore",
    "RedisSessionStore",
    "SessionStore",
    "SqliteCheckpointStore",
    "SqliteSessionStore",
    "register_type",
    # Errors
    "BatonflowError",
    "CheckpointExistsError",
    "CheckpointNotFoundError",
    "CodecError",
    "ConcatError",
    "LeaseLostError",
    "MaxIterationsError",
    "ModelConnectionError",
    "ModelError",
    "ModelHTTPError",
    "ModelJSONError",
    "ModelResponseError",
    "ModelTimeoutError",
    "ResumeConflictError",
    "ReplayMismatchError",
    "ResumeError",
    "RunHistoryError",
    "RunError",
    "StoreError",
    "StreamClosedError",
    "ToolArgumentsError",
    "ToolNotFoundError",
    "TransferError",
    "UserError",
]

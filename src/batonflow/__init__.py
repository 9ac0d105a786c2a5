"""batonflow: multi-agent LLM applications — agents as event streams that call tools, hand control to each other,
pause for a human and resume later.

The names here are the public API; subpackages hold the rest (``batonflow.adk``, ``batonflow.schema``,
``batonflow.models``, ``batonflow.tools``, ``batonflow.testing``).
"""

from typing import TYPE_CHECKING, Any

# Not part of this facade yet, but imported so that their checkpointed types (a graph agent's saved flow, an AI
# flow's chat session) are registered wherever batonflow is, as every other package's are.
from . import flow as flow
from . import graph as graph
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
from .adk import InterruptCtx as InterruptCtx
from .adk import InterruptInfo as InterruptInfo
from .adk import LoopAgent as LoopAgent
from .adk import MessageVariant as MessageVariant
from .adk import ModelRetryConfig as ModelRetryConfig
from .adk import ParallelAgent as ParallelAgent
from .adk import ResumableAgent as ResumableAgent
from .adk import ResumeInfo as ResumeInfo
from .adk import RunContext as RunContext
from .adk import RunResult as RunResult
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
from .agents import HITL as HITL
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
from .errors import ResumeConflictError as ResumeConflictError
from .errors import ResumeError as ResumeError
from .errors import RunError as RunError
from .errors import StoreError as StoreError
from .errors import StreamClosedError as StreamClosedError
from .errors import ToolArgumentsError as ToolArgumentsError
from .errors import ToolNotFoundError as ToolNotFoundError
from .errors import TransferError as TransferError
from .errors import UserError as UserError
from .models import ChatModel as ChatModel
from .models import EmbeddingModel as EmbeddingModel
from .models import ForcedTool as ForcedTool
from .models import ModelSettings as ModelSettings
from .models import ToolChoice as ToolChoice
from .models import load_embedding_model as load_embedding_model
from .models import load_model as load_model
from .models import with_retry as with_retry
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
from .store import CheckpointStore as CheckpointStore
from .store import FileSessionStore as FileSessionStore
from .store import MemoryCheckpointStore as MemoryCheckpointStore
from .store import MemorySessionStore as MemorySessionStore
from .store import PostgresCheckpointStore as PostgresCheckpointStore
from .store import PostgresSessionStore as PostgresSessionStore
from .store import RedisCheckpointStore as RedisCheckpointStore
from .store import RedisSessionStore as RedisSessionStore
from .store import SessionStore as SessionStore
from .store import SqliteCheckpointStore as SqliteCheckpointStore
from .store import SqliteSessionStore as SqliteSessionStore
from .team import LoopingTeamInterceptor as LoopingTeamInterceptor
from .team import Member as Member
from .team import TeamAgent as TeamAgent
from .team import TeamInterceptor as TeamInterceptor
from .team import TeamProtocol as TeamProtocol
from .team import TeamTrace as TeamTrace
from .tools import Tool as Tool
from .tools import ToolContext as ToolContext
from .tools import ToolInfo as ToolInfo
from .tools import tool as tool

if TYPE_CHECKING:
    from .models import OpenAIChatModel as OpenAIChatModel

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "OpenAIChatModel":  # imported on first use: the openai SDK is slow to import
        from .models import OpenAIChatModel

        return OpenAIChatModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
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
    "BatonflowError",
    "BreakLoopAction",
    "ChatModel",
    "ChatModelAgent",
    "ChatModelAgentResumeData",
    "ChatModelAgentState",
    "CheckpointExistsError",
    "CheckpointNotFoundError",
    "CheckpointStore",
    "CodecError",
    "ConcatError",
    "ContextCompressionInterceptor",
    "EmbeddingModel",
    "ExitTool",
    "FileSessionStore",
    "FlowAgent",
    "ForcedTool",
    "FunctionCall",
    "HITLDecision",
    "HITLInterceptor",
    "HistoryEntry",
    "HistoryPolicy",
    "HistoryRewriter",
    "InterruptCtx",
    "InterruptInfo",
    "LeaseLostError",
    "LoopAgent",
    "LoopingTeamInterceptor",
    "MaxIterationsError",
    "Member",
    "MemoryCheckpointStore",
    "MemorySessionStore",
    "Message",
    "MessageStream",
    "MessageVariant",
    "ModelConnectionError",
    "ModelError",
    "ModelHTTPError",
    "ModelJSONError",
    "ModelResponseError",
    "ModelRetryConfig",
    "ModelSettings",
    "ModelTimeoutError",
    "OpenAIChatModel",
    "ParallelAgent",
    "PostgresCheckpointStore",
    "PostgresSessionStore",
    "ReActAgent",
    "RedisCheckpointStore",
    "RedisSessionStore",
    "ResponseMeta",
    "ResumableAgent",
    "ResumeConflictError",
    "ResumeError",
    "ResumeInfo",
    "RunContext",
    "RunError",
    "RunResult",
    "RunStep",
    "Runner",
    "SequentialAgent",
    "Session",
    "SessionStore",
    "SimpleAgent",
    "SqliteCheckpointStore",
    "SqliteSessionStore",
    "StopLoopInterceptor",
    "StoreError",
    "Stream",
    "StreamClosedError",
    "TeamAgent",
    "TeamInterceptor",
    "TeamProtocol",
    "TeamTrace",
    "Tool",
    "ToolArgumentsError",
    "ToolCall",
    "ToolChoice",
    "ToolContext",
    "ToolInfo",
    "ToolNotFoundError",
    "ToolRetryInterceptor",
    "ToolSanitizerInterceptor",
    "TransferError",
    "TransferToAgentAction",
    "Usage",
    "UserError",
    "agent_with_options",
    "assistant",
    "break_loop_action",
    "collect_events",
    "composite_interrupt",
    "concat_message_stream",
    "concat_messages",
    "event_from_message",
    "exit_action",
    "interrupt",
    "load_embedding_model",
    "load_model",
    "new_executor",
    "new_planner",
    "new_replanner",
    "plan_execute_replan",
    "register_type",
    "set_language",
    "set_sub_agents",
    "stateful_interrupt",
    "supervisor",
    "system",
    "tool",
    "tool_message",
    "transfer_action",
    "user",
    "with_deterministic_transfer",
    "with_retry",
]

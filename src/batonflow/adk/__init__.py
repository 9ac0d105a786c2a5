"""The agent runtime, after CloudWeGo Eino's ADK: agents as event streams, transfer, run paths, the Runner."""

from ..schema import RunStep as RunStep
from ._agent import Agent as Agent
from ._agent import ResumableAgent as ResumableAgent
from ._agent_tool import AgentTool as AgentTool
from ._builtin import EXIT_TOOL_NAME as EXIT_TOOL_NAME
from ._builtin import TRANSFER_TOOL_NAME as TRANSFER_TOOL_NAME
from ._builtin import ExitTool as ExitTool
from ._builtin import Language as Language
from ._builtin import TransferToAgentTool as TransferToAgentTool
from ._builtin import get_language as get_language
from ._builtin import parse_tool_argument as parse_tool_argument
from ._builtin import set_language as set_language
from ._chatmodel import ChatModelAgent as ChatModelAgent
from ._checkpoint import PendingCheckpoint as PendingCheckpoint
from ._checkpoint import read_pending as read_pending
from ._context import RunContext as RunContext
from ._context import RunScope as RunScope
from ._context import RunSession as RunSession
from ._context import SessionEvent as SessionEvent
from ._deterministic import with_deterministic_transfer as with_deterministic_transfer
from ._events import AgentAction as AgentAction
from ._events import AgentEvent as AgentEvent
from ._events import AgentInput as AgentInput
from ._events import AgentOutput as AgentOutput
from ._events import BreakLoopAction as BreakLoopAction
from ._events import MessageVariant as MessageVariant
from ._events import TransferToAgentAction as TransferToAgentAction
from ._events import break_loop_action as break_loop_action
from ._events import event_from_message as event_from_message
from ._events import exit_action as exit_action
from ._events import transfer_action as transfer_action
from ._fanout import Branch as Branch
from ._fanout import BranchDispatcher as BranchDispatcher
from ._fanout import BranchEvent as BranchEvent
from ._fanout import BranchHost as BranchHost
from ._fanout import BranchResult as BranchResult
from ._fanout import branch_of as branch_of
from ._fanout import check_branch as check_branch
from ._fanout import current_dispatcher as current_dispatcher
from ._fanout import dispatch as dispatch
from ._fanout import dispatching as dispatching
from ._fanout import run_branch as run_branch
from ._flow import FlowAgent as FlowAgent
from ._flow import agent_with_options as agent_with_options
from ._flow import set_sub_agents as set_sub_agents
from ._history import FENCE_NOTE as FENCE_NOTE
from ._history import FENCE_REMINDER as FENCE_REMINDER
from ._history import HistoryEntry as HistoryEntry
from ._history import HistoryRewriter as HistoryRewriter
from ._history import default_history_rewriter as default_history_rewriter
from ._history import fence_message as fence_message
from ._history import fenced_history_rewriter as fenced_history_rewriter
from ._history import rewrite_message as rewrite_message
from ._history_policy import HistoryPolicy as HistoryPolicy
from ._history_policy import pair_tool_calls as pair_tool_calls
from ._interrupt import InterruptCtx as InterruptCtx
from ._interrupt import InterruptInfo as InterruptInfo
from ._interrupt import ResumeInfo as ResumeInfo
from ._interrupt import composite_interrupt as composite_interrupt
from ._interrupt import interrupt as interrupt
from ._interrupt import stateful_interrupt as stateful_interrupt
from ._lease import LeaseHolder as LeaseHolder
from ._lease import break_lease as break_lease
from ._lease import fenced_by as fenced_by
from ._lease import installed_fence as installed_fence
from ._parts import PART_EVENTS as PART_EVENTS
from ._plan_execute import new_executor as new_executor
from ._plan_execute import new_planner as new_planner
from ._plan_execute import new_replanner as new_replanner
from ._plan_execute import plan_execute_replan as plan_execute_replan
from ._prebuilt import supervisor as supervisor
from ._result import Capture as Capture
from ._result import RunResult as RunResult
from ._result import collect_events as collect_events
from ._run_history import HistoryStep as HistoryStep
from ._run_history import RunHistory as RunHistory
from ._run_history import RunState as RunState
from ._run_history import read_history as read_history
from ._runner import Runner as Runner
from ._workflow import LoopAgent as LoopAgent
from ._workflow import ParallelAgent as ParallelAgent
from ._workflow import SequentialAgent as SequentialAgent
from .loop import AgentMiddleware as AgentMiddleware
from .loop import ChatModelAgentResumeData as ChatModelAgentResumeData
from .loop import ChatModelAgentState as ChatModelAgentState
from .loop import ModelAgent as ModelAgent
from .loop import ModelRetryConfig as ModelRetryConfig
from .loop import ReactState as ReactState
from .loop import ToolBatch as ToolBatch
from .loop import ToolCallHandler as ToolCallHandler
from .loop import render_instruction as render_instruction

__all__ = [
    "EXIT_TOOL_NAME",
    "FENCE_NOTE",
    "FENCE_REMINDER",
    "PART_EVENTS",
    "TRANSFER_TOOL_NAME",
    "Agent",
    "AgentAction",
    "AgentEvent",
    "AgentInput",
    "AgentMiddleware",
    "AgentOutput",
    "AgentTool",
    "Branch",
    "BranchDispatcher",
    "BranchEvent",
    "BranchHost",
    "BranchResult",
    "BreakLoopAction",
    "Capture",
    "ChatModelAgent",
    "ChatModelAgentResumeData",
    "ChatModelAgentState",
    "ExitTool",
    "FlowAgent",
    "HistoryEntry",
    "HistoryPolicy",
    "HistoryRewriter",
    "HistoryStep",
    "InterruptCtx",
    "InterruptInfo",
    "Language",
    "LoopAgent",
    "MessageVariant",
    "ModelAgent",
    "ModelRetryConfig",
    "ParallelAgent",
    "PendingCheckpoint",
    "ReactState",
    "ResumableAgent",
    "ResumeInfo",
    "RunContext",
    "RunHistory",
    "RunResult",
    "RunScope",
    "RunSession",
    "RunState",
    "RunStep",
    "Runner",
    "SequentialAgent",
    "SessionEvent",
    "ToolBatch",
    "ToolCallHandler",
    "TransferToAgentAction",
    "TransferToAgentTool",
    "agent_with_options",
    "branch_of",
    "break_loop_action",
    "check_branch",
    "collect_events",
    "composite_interrupt",
    "current_dispatcher",
    "default_history_rewriter",
    "dispatch",
    "dispatching",
    "event_from_message",
    "exit_action",
    "fence_message",
    "fenced_by",
    "fenced_history_rewriter",
    "get_language",
    "installed_fence",
    "interrupt",
    "new_executor",
    "new_planner",
    "new_replanner",
    "pair_tool_calls",
    "parse_tool_argument",
    "plan_execute_replan",
    "read_history",
    "read_pending",
    "render_instruction",
    "rewrite_message",
    "run_branch",
    "set_language",
    "set_sub_agents",
    "stateful_interrupt",
    "supervisor",
    "transfer_action",
    "with_deterministic_transfer",
]

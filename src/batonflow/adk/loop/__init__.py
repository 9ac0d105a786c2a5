"""The one loop engine that every model-driven agent runs on, with its public seams.

- ``ReactState``: where a loop stands (its transcript, turn budget, tool calls under way); what middlewares see.
- ``LoopPolicy``: the decisions where Eino's ChatModelAgent and Solon's ReActAgent differ; ``EinoPolicy``.
- ``Outcome``: how a turn ends — ``CallTools | Answer | AskAgain | Fail | Retry | Interrupt``.
- ``ModelStep``: the one place that calls a ``ChatModel`` (traced, counted, retried).
- ``run_loop``: model step → route → tool step; ``ModelAgent``: an agent built on it.
- ``AgentMiddleware`` and ``ToolBatch``: the hooks around the loop.
- ``StepLog``: a run's finished model replies and tool results, on its context (``RunContext.steps``), which the
  model and tool steps replay and record; ``StepRecorder`` and ``recording_steps``: a durable worker's store of them
  (``RecordedSteps``), chained after a resume's journal (``ChainedSteps``).
"""

from ._agent import ChatModelAgentResumeData as ChatModelAgentResumeData
from ._agent import ModelAgent as ModelAgent
from ._engine import MAX_MODEL_RETRIES as MAX_MODEL_RETRIES
from ._engine import run_loop as run_loop
from ._middleware import AgentMiddleware as AgentMiddleware
from ._middleware import BatchHook as BatchHook
from ._middleware import ModelErrorHook as ModelErrorHook
from ._middleware import StateHook as StateHook
from ._middleware import ToolBatch as ToolBatch
from ._middleware import ToolCallHandler as ToolCallHandler
from ._middleware import render_instruction as render_instruction
from ._model_step import ModelRetry as ModelRetry
from ._model_step import ModelRetryConfig as ModelRetryConfig
from ._model_step import ModelStep as ModelStep
from ._model_step import StreamedReply as StreamedReply
from ._model_step import is_empty_answer as is_empty_answer
from ._outcomes import Answer as Answer
from ._outcomes import AskAgain as AskAgain
from ._outcomes import CallTools as CallTools
from ._outcomes import Fail as Fail
from ._outcomes import Interrupt as Interrupt
from ._outcomes import Outcome as Outcome
from ._outcomes import Retry as Retry
from ._outcomes import Routed as Routed
from ._policy import AgentSetup as AgentSetup
from ._policy import EinoPolicy as EinoPolicy
from ._policy import GenModelInput as GenModelInput
from ._policy import LoopPolicy as LoopPolicy
from ._policy import ModelRequest as ModelRequest
from ._policy import last_call_to as last_call_to
from ._state import ChatModelAgentState as ChatModelAgentState
from ._state import ReactState as ReactState
from ._state import ToolResult as ToolResult
from ._steps import ChainedSteps as ChainedSteps
from ._steps import FenceSteps as FenceSteps
from ._steps import RecordedSteps as RecordedSteps
from ._steps import Replies as Replies
from ._steps import StepLog as StepLog
from ._steps import StepRecorder as StepRecorder
from ._steps import chained_steps as chained_steps
from ._steps import installed_steps as installed_steps
from ._steps import model_key as model_key
from ._steps import recording_steps as recording_steps
from ._steps import tool_key as tool_key

__all__ = [
    "MAX_MODEL_RETRIES",
    "AgentMiddleware",
    "AgentSetup",
    "Answer",
    "AskAgain",
    "BatchHook",
    "CallTools",
    "ChainedSteps",
    "ChatModelAgentResumeData",
    "ChatModelAgentState",
    "EinoPolicy",
    "Fail",
    "FenceSteps",
    "GenModelInput",
    "Interrupt",
    "LoopPolicy",
    "ModelAgent",
    "ModelErrorHook",
    "ModelRequest",
    "ModelRetry",
    "ModelRetryConfig",
    "ModelStep",
    "Outcome",
    "ReactState",
    "RecordedSteps",
    "Replies",
    "Retry",
    "Routed",
    "StateHook",
    "StepLog",
    "StepRecorder",
    "StreamedReply",
    "ToolBatch",
    "ToolCallHandler",
    "ToolResult",
    "chained_steps",
    "installed_steps",
    "is_empty_answer",
    "last_call_to",
    "model_key",
    "recording_steps",
    "render_instruction",
    "run_loop",
    "tool_key",
]

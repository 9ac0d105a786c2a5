"""Plan-Execute-Replan (Eino's ``planexecute``): a planner makes a plan, an executor carries out its first step, a
replanner either revises the plan or responds, in a loop. Its prompts, tools and session keys live here; the
constructors are also in ``batonflow.adk``.
"""

from ._plan import EXECUTED_STEP as EXECUTED_STEP
from ._plan import EXECUTED_STEPS as EXECUTED_STEPS
from ._plan import EXECUTOR_PROMPT as EXECUTOR_PROMPT
from ._plan import PLAN as PLAN
from ._plan import PLAN_TOOL as PLAN_TOOL
from ._plan import PLANNER_PROMPT as PLANNER_PROMPT
from ._plan import REPLANNER_PROMPT as REPLANNER_PROMPT
from ._plan import RESPOND_TOOL as RESPOND_TOOL
from ._plan import USER_INPUT as USER_INPUT
from ._plan import ExecutedStep as ExecutedStep
from ._plan import ExecutionContext as ExecutionContext
from ._plan import MessagesPlaceholder as MessagesPlaceholder
from ._plan import Plan as Plan
from ._plan import PlanLike as PlanLike
from ._plan import PromptTemplate as PromptTemplate
from ._plan_execute import new_executor as new_executor
from ._plan_execute import new_planner as new_planner
from ._plan_execute import new_replanner as new_replanner
from ._plan_execute import plan_execute_replan as plan_execute_replan

__all__ = [
    "EXECUTED_STEP",
    "EXECUTED_STEPS",
    "EXECUTOR_PROMPT",
    "PLAN",
    "PLANNER_PROMPT",
    "PLAN_TOOL",
    "REPLANNER_PROMPT",
    "RESPOND_TOOL",
    "USER_INPUT",
    "ExecutedStep",
    "ExecutionContext",
    "MessagesPlaceholder",
    "Plan",
    "PlanLike",
    "PromptTemplate",
    "new_executor",
    "new_planner",
    "new_replanner",
    "plan_execute_replan",
]

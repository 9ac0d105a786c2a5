import json
import subprocess
import sys
import typing

import pytest

import batonflow
from batonflow.store import registered_types


def test_public_api_is_pinned() -> None:
    assert sorted(batonflow.__all__) == sorted(
        [
            "Agent",
            "LoopingTeamInterceptor",
            "Member",
            "TeamAgent",
            "TeamInterceptor",
            "TeamProtocol",
            "TeamTrace",
            "EXIT_TOOL_NAME",
            "TRANSFER_TOOL_NAME",
            "ContextCompressionInterceptor",
            "ConversationRunner",
            "HITL",
            "HITLDecision",
            "HITLInterceptor",
            "ReActAgent",
            "Session",
            "SimpleAgent",
            "StopLoopInterceptor",
            "ToolRetryInterceptor",
            "ToolSanitizerInterceptor",
            "FileSessionStore",
            "MemorySessionStore",
            "PostgresSessionStore",
            "RedisSessionStore",
            "SessionStore",
            "SqliteSessionStore",
            "AgentAction",
            "AgentEvent",
            "AgentInput",
            "AgentMiddleware",
            "AgentOutput",
            "AgentTool",
            "BatonflowError",
            "BreakLoopAction",
            "ChatModel",
            "EmbeddingModel",
            "ChatModelAgent",
            "ChatModelAgentResumeData",
            "ChatModelAgentState",
            "CheckpointExistsError",
            "CheckpointNotFoundError",
            "CheckpointStore",
            "CodecError",
            "ConcatError",
            "LeaseLostError",
            "ExitTool",
            "FlowAgent",
            "ForcedTool",
            "FunctionCall",
            "HistoryEntry",
            "HistoryPolicy",
            "HistoryRewriter",
            "InterruptCtx",
            "InterruptInfo",
            "LoopAgent",
            "MaxIterationsError",
            "MemoryCheckpointStore",
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
            "RedisCheckpointStore",
            "ResponseMeta",
            "ResumableAgent",
            "ResumeConflictError",
            "ResumeError",
            "ReplayMismatchError",
            "RunHistory",
            "RunHistoryError",
            "RunState",
            "HistoryStep",
            "HistoryRetention",
            "ResumeInfo",
            "RunContext",
            "RunResult",
            "RunError",
            "RunStep",
            "Runner",
            "SequentialAgent",
            "SqliteCheckpointStore",
            "StoreError",
            "Stream",
            "StreamClosedError",
            "Tool",
            "ToolArgumentsError",
            "ToolCall",
            "ToolChoice",
            "ToolContext",
            "ToolInfo",
            "ToolNotFoundError",
            "TransferError",
            "TransferToAgentAction",
            "Usage",
            "UserError",
            "agent_with_options",
            "assistant",
            "collect_events",
            "composite_interrupt",
            "concat_message_stream",
            "concat_messages",
            "event_from_message",
            "interrupt",
            "load_embedding_model",
            "load_model",
            "break_loop_action",
            "new_executor",
            "exit_action",
            "new_planner",
            "new_replanner",
            "transfer_action",
            "plan_execute_replan",
            "register_type",
            "set_language",
            "set_sub_agents",
            "stateful_interrupt",
            "supervisor",
            "system",
            "tool",
            "tool_message",
            "user",
            "with_deterministic_transfer",
            "with_retry",
        ]
    )
    for name in batonflow.__all__:
        assert getattr(batonflow, name) is not None, name


def test_evals_api_is_pinned() -> None:
    import batonflow.evals

    assert batonflow.evals.__all__ == [
        "MAX_EVAL_SET_CHARS",
        "AgentSource",
        "AnswerCheck",
        "CaseResult",
        "CheckResult",
        "Comparison",
        "ComparisonRow",
        "EvalCase",
        "EvalFailure",
        "EvalReport",
        "EvalSet",
        "EvalSetError",
        "JudgeError",
        "JudgeVerdict",
        "LLMJudge",
        "Progress",
        "RunnerOptions",
        "ToolUse",
        "Trajectory",
        "TurnResult",
        "assert_case",
        "assert_eval_set",
        "check_answer",
        "check_trajectory",
        "compare",
        "evaluate",
        "load_eval_set",
        "parse_eval_set",
        "parse_verdict",
        "rouge1_f1",
        "run_case",
        "tool_uses",
    ]
    for name in batonflow.evals.__all__:
        assert getattr(batonflow.evals, name) is not None, name
    assert issubclass(batonflow.evals.EvalSetError, batonflow.UserError)
    assert issubclass(batonflow.evals.JudgeError, batonflow.errors.RunError)
    assert issubclass(batonflow.evals.EvalFailure, AssertionError)


def test_errors_form_one_tree() -> None:
    from batonflow import errors

    assert issubclass(errors.UserError, errors.BatonflowError)
    assert issubclass(errors.ConcatError, errors.UserError)
    assert issubclass(errors.StreamClosedError, errors.UserError)
    for run_error in (
        errors.ModelHTTPError,
        errors.ModelTimeoutError,
        errors.ToolArgumentsError,
        errors.CheckpointExistsError,
        errors.LeaseLostError,
    ):
        assert issubclass(run_error, errors.RunError)
        assert not issubclass(run_error, errors.UserError)
    assert issubclass(errors.LeaseLostError, errors.ResumeConflictError)  # a conflict, caught where conflicts are


def run_python(code: str) -> str:
    """What ``code`` prints in a fresh interpreter on this checkout's code (PYTHONPATH is inherited)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout


# `import batonflow` loaded 105 of batonflow's modules when this bound was set (150 while the facade imported the
# graph and flow packages, which brought jinja2 and yaml with them); run history (keep_history, replay, fork) added
# two to the Runner's.
MAX_CORE_MODULES = 112


def test_interop_api_is_pinned_and_imported_on_first_use() -> None:
    code = (
        "import sys\n"
        "import batonflow.interop as interop\n"
        "loaded = [name for name in ('mcp', 'ag_ui', 'a2a') if name in sys.modules]\n"
        "print(sorted(interop.__all__), loaded)\n"
        "from batonflow.interop._mcp import create_mcp_server\n"
        "print(interop.create_mcp_server is create_mcp_server)\n"
    )
    listed, same = run_python(code).splitlines()
    names = "'A2AHost', 'AguiHost', 'AguiTranslator', 'RemoteA2AAgent', 'a2a_router', 'agent_card', 'agui_router', "
    assert listed == f"[{names}'create_mcp_server'] []"
    assert same == "True"
    import batonflow.interop

    with pytest.raises(AttributeError, match="has no attribute 'NoSuchThing'"):
        batonflow.interop.NoSuchThing  # noqa: B018


def test_importing_batonflow_loads_the_core_only() -> None:
    code = "import json, sys\nimport batonflow\nprint(json.dumps(sorted(sys.modules)))"
    modules = json.loads(run_python(code))
    ours = [m for m in modules if m == "batonflow" or m.startswith("batonflow.")]
    assert len(ours) <= MAX_CORE_MODULES
    later = ("graph", "flow", "team", "server", "distributed", "cli", "observe", "evals")
    assert [m for m in ours if m.split(".")[1:2] and m.split(".")[1] in later] == []
    assert [
        m
        for m in modules
        if m.split(".")[0] in ("jinja2", "yaml", "openai", "anthropic", "google", "starlette", "dbos")
    ] == []


def test_names_of_packages_loaded_on_first_use_resolve_to_their_objects() -> None:
    code = (
        "import sys\n"
        "import batonflow\n"
        "listed = {'TeamAgent', 'OpenAIChatModel', 'graph', 'flow', 'team'} <= set(dir(batonflow))\n"
        "before = 'batonflow.team' in sys.modules\n"
        "agent = batonflow.TeamAgent\n"
        "from batonflow.team import TeamAgent\n"
        "print(listed, before, agent is TeamAgent, batonflow.graph is sys.modules['batonflow.graph'])\n"
    )
    assert run_python(code).split() == ["True", "False", "True", "True"]


def test_an_unknown_name_of_the_facade_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchThing'"):
        batonflow.NoSuchThing  # noqa: B018


def test_the_facades_classes_keep_their_module_so_their_annotations_resolve() -> None:
    # The codec reads registered classes' field types with get_type_hints, which looks the string annotations up
    # in the namespace of the class's __module__: rewriting it to "batonflow" (as httpx does) would break that.
    registered = set(registered_types().values())
    checked = [getattr(batonflow, name) for name in batonflow.__all__ if getattr(batonflow, name) in registered]
    assert len(checked) >= 10  # Message, ToolCall, Usage, AgentAction, ...
    for cls in checked:
        assert cls.__module__ != "batonflow", cls
        typing.get_type_hints(cls)

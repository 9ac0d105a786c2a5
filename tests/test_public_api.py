import batonflow


def test_public_api_is_pinned() -> None:
    assert sorted(batonflow.__all__) == sorted(
        [
            "Agent",
            "AgentAction",
            "AgentEvent",
            "AgentInput",
            "AgentMiddleware",
            "AgentOutput",
            "BatonflowError",
            "BreakLoopAction",
            "ChatModel",
            "ChatModelAgent",
            "ChatModelAgentState",
            "ConcatError",
            "ExitTool",
            "FlowAgent",
            "ForcedTool",
            "FunctionCall",
            "HistoryEntry",
            "HistoryRewriter",
            "MaxIterationsError",
            "Message",
            "MessageStream",
            "MessageVariant",
            "ModelConnectionError",
            "ModelError",
            "ModelHTTPError",
            "ModelRetryConfig",
            "ModelSettings",
            "ModelTimeoutError",
            "OpenAIChatModel",
            "ResponseMeta",
            "RunContext",
            "RunError",
            "RunStep",
            "Runner",
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
            "concat_message_stream",
            "concat_messages",
            "event_from_message",
            "load_model",
            "new_break_loop_action",
            "new_exit_action",
            "new_transfer_to_agent_action",
            "set_language",
            "set_sub_agents",
            "system",
            "tool",
            "tool_message",
            "user",
            "with_retry",
        ]
    )
    for name in batonflow.__all__:
        assert getattr(batonflow, name) is not None, name


def test_errors_form_one_tree() -> None:
    from batonflow import errors

    assert issubclass(errors.UserError, errors.BatonflowError)
    assert issubclass(errors.ConcatError, errors.UserError)
    assert issubclass(errors.StreamClosedError, errors.UserError)
    for run_error in (errors.ModelHTTPError, errors.ModelTimeoutError, errors.ToolArgumentsError):
        assert issubclass(run_error, errors.RunError)
        assert not issubclass(run_error, errors.UserError)

import batonflow


def test_public_api_is_pinned() -> None:
    assert sorted(batonflow.__all__) == sorted(
        [
            "BatonflowError",
            "ChatModel",
            "ConcatError",
            "ForcedTool",
            "FunctionCall",
            "Message",
            "MessageStream",
            "ModelConnectionError",
            "ModelError",
            "ModelHTTPError",
            "ModelSettings",
            "ModelTimeoutError",
            "OpenAIChatModel",
            "ResponseMeta",
            "RunError",
            "Stream",
            "StreamClosedError",
            "Tool",
            "ToolArgumentsError",
            "ToolCall",
            "ToolChoice",
            "ToolContext",
            "ToolInfo",
            "ToolNotFoundError",
            "Usage",
            "UserError",
            "assistant",
            "concat_message_stream",
            "concat_messages",
            "load_model",
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

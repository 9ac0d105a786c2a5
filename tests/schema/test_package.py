"""The public face of batonflow.schema."""

import batonflow.adk
import batonflow.schema


def test_public_names_of_the_schema_package() -> None:
    assert sorted(batonflow.schema.__all__) == [
        "Address",
        "AddressSegment",
        "AudioPart",
        "ContentPart",
        "FunctionCall",
        "ImagePart",
        "Message",
        "MessageStream",
        "ROLES",
        "ResponseMeta",
        "Role",
        "RunStep",
        "Stream",
        "StreamWriter",
        "Tap",
        "TextPart",
        "ToolCall",
        "ToolInfo",
        "Usage",
        "assistant",
        "concat_message_stream",
        "concat_messages",
        "format_address",
        "system",
        "tool_message",
        "user",
    ]
    assert all(hasattr(batonflow.schema, name) for name in batonflow.schema.__all__)


def test_run_steps_are_the_same_class_from_the_runtime() -> None:
    assert batonflow.adk.RunStep is batonflow.schema.RunStep

import pytest

from batonflow.errors import BatonflowError, UserError
from batonflow.schema import (
    FunctionCall,
    ImagePart,
    Message,
    TextPart,
    ToolCall,
    assistant,
    system,
    tool_message,
    user,
)


def test_helpers_build_messages_with_their_roles() -> None:
    assert system("be brief") == Message(role="system", content="be brief")
    assert user("hi", name="ann") == Message(role="user", content="hi", name="ann")
    call = ToolCall(index=0, id="c1", function=FunctionCall(name="f", arguments="{}"))
    assert assistant(tool_calls=[call]).tool_calls == [call]
    assert tool_message("42", tool_call_id="c1", tool_name="f") == Message(
        role="tool", content="42", tool_call_id="c1", tool_name="f"
    )


def test_user_with_parts_is_multimodal_and_text_joins_text_parts() -> None:
    msg = user([TextPart(text="what is this?"), ImagePart(url="data:image/png;base64,AAAA")])
    assert msg.content == ""
    assert [p.type for p in msg.parts] == ["text", "image_url"]
    assert msg.text == "what is this?"


def test_unknown_role_is_a_user_error_naming_expected_and_found() -> None:
    with pytest.raises(UserError) as info:
        Message(role="robot")  # type: ignore[arg-type]
    assert str(info.value) == (
        "unknown message role: expected one of 'system', 'user', 'assistant', 'tool', got 'robot'"
    )
    assert isinstance(info.value, BatonflowError)


def test_messages_do_not_share_mutable_defaults() -> None:
    a, b = assistant("x"), assistant("y")
    a.tool_calls.append(ToolCall(index=0))
    a.extra["k"] = 1
    assert b.tool_calls == []
    assert b.extra == {}

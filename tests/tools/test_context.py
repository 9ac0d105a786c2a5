from batonflow.tools import ToolContext


def test_tool_context_starts_with_its_own_empty_session_values() -> None:
    first = ToolContext(tool_name="a", call_id="1")
    second = ToolContext(tool_name="b", call_id="2")
    first.add_session_value("k", 1)
    assert first.session_values == {"k": 1}
    assert second.session_values == {}
    assert first.run is None


def test_tool_context_call_id_defaults_to_empty() -> None:
    assert ToolContext(tool_name="a").call_id == ""


def test_session_values_are_shared_with_the_run_dict() -> None:
    run_values: dict[str, object] = {"user": "ann"}
    ctx = ToolContext(tool_name="a", call_id="1", session_values=run_values)
    ctx.add_session_value("seen", True)
    ctx.add_session_values({"x": 1, "user": "bob"})
    assert run_values == {"user": "bob", "seen": True, "x": 1}


def test_get_session_value_returns_the_value_or_the_default() -> None:
    ctx = ToolContext(tool_name="a", session_values={"k": "v", "none": None})
    assert ctx.get_session_value("k") == "v"
    assert ctx.get_session_value("none", "d") is None
    assert ctx.get_session_value("missing") is None
    assert ctx.get_session_value("missing", 7) == 7


def test_get_session_values_returns_a_copy() -> None:
    ctx = ToolContext(tool_name="a", session_values={"k": "v"})
    values = ctx.get_session_values()
    values["k"] = "changed"
    assert values == {"k": "changed"}
    assert ctx.session_values == {"k": "v"}


def test_tool_context_repr_names_the_call_but_not_the_session_values() -> None:
    ctx = ToolContext(tool_name="search", call_id="c1", session_values={"secret": "s3cr3t"})
    assert repr(ctx) == "ToolContext(tool_name='search', call_id='c1')"

import batonflow.tools


def test_public_names_of_the_tools_package() -> None:
    assert sorted(batonflow.tools.__all__) == [
        "Address",
        "AddressSegment",
        "FunctionTool",
        "InterruptSignal",
        "InterruptState",
        "MAX_JSON_CHARS",
        "MAX_JSON_DEPTH",
        "MCPServerError",
        "MCPTool",
        "MCPToolProvider",
        "ResumeContext",
        "StreamingFunctionTool",
        "StreamingTool",
        "Tool",
        "ToolContext",
        "ToolInfo",
        "ToolLike",
        "as_tool",
        "as_tools",
        "check_arguments",
        "check_model_json",
        "decode_model_json",
        "format_address",
        "parse_model_json",
        "tool",
    ]
    assert all(hasattr(batonflow.tools, name) for name in batonflow.tools.__all__)


def test_any_object_with_info_and_invoke_is_a_tool() -> None:
    class Echo:
        info = batonflow.tools.ToolInfo(name="echo", description="Echo the arguments.")

        async def invoke(self, arguments: str, ctx: batonflow.tools.ToolContext | None = None) -> str:
            return arguments

    assert isinstance(Echo(), batonflow.tools.Tool)
    assert not isinstance(Echo(), batonflow.tools.StreamingTool)
    assert not isinstance(object(), batonflow.tools.Tool)


def test_tool_descriptions_and_addresses_are_the_schemas_own() -> None:
    import batonflow.schema

    for name in ("Address", "AddressSegment", "ToolInfo", "format_address"):
        assert getattr(batonflow.tools, name) is getattr(batonflow.schema, name)


def test_the_mcp_names_import_without_the_mcp_sdk() -> None:
    # The SDK is an optional extra: importing batonflow.tools must not need it (it is loaded on first connect).
    import subprocess
    import sys

    code = "import sys, batonflow.tools; assert batonflow.tools.MCPToolProvider; print('mcp' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"

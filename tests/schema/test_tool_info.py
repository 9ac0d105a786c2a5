import dataclasses

import pytest

from batonflow.errors import UserError
from batonflow.schema import ToolInfo


@pytest.mark.parametrize("name", ["get_weather", "a", "search-web", "Tool_2", "x" * 64])
def test_tool_info_accepts_names_providers_accept(name: str) -> None:
    assert ToolInfo(name=name, description="d").name == name


@pytest.mark.parametrize("name", ["", "get weather", "x" * 65, "café", "a.b", "<lambda>"])
def test_tool_info_rejects_an_invalid_name_saying_expected_and_found(name: str) -> None:
    with pytest.raises(UserError) as caught:
        ToolInfo(name=name, description="d")
    assert str(caught.value) == (
        f"Invalid tool name: expected 1 to 64 characters from a-z, A-Z, 0-9, '_' and '-', got {name!r}"
    )


def test_tool_info_parameters_default_to_an_empty_object_schema() -> None:
    assert ToolInfo(name="t", description="").parameters == {"type": "object", "properties": {}}


def test_tool_info_rejects_parameters_that_are_not_an_object_schema() -> None:
    with pytest.raises(UserError, match=r'^Invalid parameters for tool \[t\]: expected a JSON Schema with "type"'):
        ToolInfo(name="t", description="", parameters={"type": "string"})


def test_tool_info_is_frozen() -> None:
    info = ToolInfo(name="t", description="")
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.name = "u"  # type: ignore[misc]

import asyncio
import contextvars
import dataclasses
import enum
import functools
import threading
from typing import Annotated, Any, Literal, Optional

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from batonflow.errors import UserError
from batonflow.tools import FunctionTool, StreamingTool, Tool, ToolContext, ToolInfo, as_tool, as_tools, tool


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Address(BaseModel):
    street: str
    zip_code: str | None = None


class Point(TypedDict):
    x: float
    y: float


@dataclasses.dataclass
class Window:
    start: int
    end: int = 10


# -- schema ------------------------------------------------------------------------------------------------------


def test_schema_of_scalar_and_container_parameters() -> None:
    @tool
    def f(text: str, count: int, ratio: float, flag: bool, tags: list[str], scores: dict[str, int]) -> str:
        return ""

    assert f.info.parameters == {
        "type": "object",
        "properties": {
            "text": {"type": "string"},
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "flag": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "scores": {"type": "object", "additionalProperties": {"type": "integer"}},
        },
        "required": ["text", "count", "ratio", "flag", "tags", "scores"],
        "additionalProperties": False,
    }


def test_schema_of_enum_literal_optional_and_constrained_parameters_with_defaults_not_required() -> None:
    @tool
    def f(
        color: Color,
        unit: Literal["c", "f"] = "c",
        note: Optional[str] = None,  # noqa: UP045 - the old spelling must work too
        limit: Annotated[int, Field(ge=1, le=10)] = 5,
    ) -> str:
        return ""

    assert f.info.parameters == {
        "type": "object",
        "$defs": {"Color": {"enum": ["red", "green"], "type": "string"}},
        "properties": {
            "color": {"$ref": "#/$defs/Color"},
            "unit": {"default": "c", "enum": ["c", "f"], "type": "string"},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "limit": {"default": 5, "maximum": 10, "minimum": 1, "type": "integer"},
        },
        "required": ["color"],
        "additionalProperties": False,
    }


def test_schema_of_model_typeddict_and_dataclass_parameters_uses_defs() -> None:
    @tool
    def f(address: Address, point: Point, window: Window) -> str:
        return ""

    assert f.info.parameters == {
        "type": "object",
        "$defs": {
            "Address": {
                "type": "object",
                "properties": {
                    "street": {"type": "string"},
                    "zip_code": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
                },
                "required": ["street"],
            },
            "Point": {
                "type": "object",
                "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                "required": ["x", "y"],
                "additionalProperties": False,
            },
            "Window": {
                "type": "object",
                "properties": {"start": {"type": "integer"}, "end": {"default": 10, "type": "integer"}},
                "required": ["start"],
                "additionalProperties": False,
            },
        },
        "properties": {
            "address": {"$ref": "#/$defs/Address"},
            "point": {"$ref": "#/$defs/Point"},
            "window": {"$ref": "#/$defs/Window"},
        },
        "required": ["address", "point", "window"],
        "additionalProperties": False,
    }


def test_schema_of_a_function_without_parameters_is_an_empty_object() -> None:
    @tool
    def now() -> str:
        return "noon"

    assert now.info.parameters == {"type": "object", "properties": {}, "additionalProperties": False}


def test_only_pydantic_titles_are_stripped_not_properties_or_defaults_named_title() -> None:
    @tool
    def f(title: str, meta: dict[str, str] | None = None) -> str:
        return ""

    @tool
    def g(meta: dict[str, str] = {"title": "x"}) -> str:  # noqa: B006 - never mutated
        return ""

    assert f.info.parameters["properties"]["title"] == {"type": "string"}
    assert f.info.parameters["required"] == ["title"]
    assert g.info.parameters["properties"]["meta"]["default"] == {"title": "x"}
    assert "title" not in f.info.parameters


def test_docstring_gives_tool_description_and_parameter_descriptions() -> None:
    @tool
    def get_weather(city: str, days: int = 1) -> str:
        """Get the weather forecast.

        Args:
            city: The city name.
            days: How many days.

        Returns:
            The forecast.
        """
        return ""

    assert get_weather.info == ToolInfo(
        name="get_weather",
        description="Get the weather forecast.",
        parameters={
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city name."},
                "days": {"type": "integer", "default": 1, "description": "How many days."},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
    )


def test_sphinx_docstring_gives_parameter_descriptions() -> None:
    @tool
    def search(query: str) -> str:
        """Search the web.

        :param query: What to look for.
        """
        return ""

    assert search.info.description == "Search the web."
    assert search.info.parameters["properties"]["query"] == {"type": "string", "description": "What to look for."}


def test_field_description_in_the_signature_wins_over_the_docstring() -> None:
    @tool
    def f(a: int = Field(1, description="from Field")) -> str:
        """F.

        Args:
            a: from docstring
        """
        return ""

    assert f.info.parameters["properties"]["a"] == {"type": "integer", "default": 1, "description": "from Field"}


def test_name_and_description_can_be_given() -> None:
    @tool(name="lookup", description="Look a word up.")
    def f(word: str) -> str:
        """Ignored summary."""
        return word

    assert (f.info.name, f.info.description) == ("lookup", "Look a word up.")


def test_tool_context_parameter_is_absent_from_the_schema() -> None:
    @tool
    def f(city: str, ctx: ToolContext, other: ToolContext | None = None) -> str:
        return ""

    assert f.info.parameters == {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    }


async def test_parameter_names_that_clash_with_pydantic_still_work() -> None:
    @tool
    def f(json: str, copy: int, _private: bool = False, model_config: str = "") -> dict[str, Any]:
        return {"json": json, "copy": copy, "private": _private, "model_config": model_config}

    assert list(f.info.parameters["properties"]) == ["json", "copy", "_private", "model_config"]
    assert await f.invoke('{"json": "j", "copy": 2, "_private": true}') == (
        '{"json":"j","copy":2,"private":true,"model_config":""}'
    )


# -- invoking ------------------------------------------------------------------------------------------------------


async def test_invoke_validates_and_converts_arguments() -> None:
    @tool
    def describe(address: Address, color: Color, window: Window, point: Point) -> str:
        return f"{type(address).__name__} {color} {window} {point}"

    result = await describe.invoke(
        '{"address": {"street": "Main"}, "color": "red", "window": {"start": "3"}, "point": {"x": 1, "y": 2.5}}'
    )
    assert result == "Address Color.RED Window(start=3, end=10) {'x': 1.0, 'y': 2.5}"


async def test_defaults_fill_omitted_arguments() -> None:
    @tool(threaded=False)
    def f(a: int, b: int = 10) -> int:
        return a + b

    assert await f.invoke('{"a": 1}') == "11"


@pytest.mark.parametrize("arguments", ["", "   ", "\n"])
async def test_empty_arguments_mean_no_arguments(arguments: str) -> None:
    @tool
    def ping() -> str:
        return "pong"

    assert await ping.invoke(arguments) == "pong"


async def test_positional_only_parameters_are_passed_by_position() -> None:
    @tool
    def f(a: int, /, b: int) -> str:
        return f"{a}-{b}"

    assert await f.invoke('{"a": 1, "b": 2}') == "1-2"


async def test_tool_context_given_to_invoke_is_injected() -> None:
    seen: list[ToolContext] = []

    @tool
    def remember(note: str, ctx: ToolContext) -> str:
        seen.append(ctx)
        ctx.add_session_value("note", note)
        return "ok"

    ctx = ToolContext(tool_name="remember", call_id="call-1")
    assert await remember.invoke('{"note": "hi"}', ctx) == "ok"
    assert seen == [ctx]
    assert ctx.get_session_value("note") == "hi"


async def test_a_fresh_tool_context_is_injected_when_invoke_gets_none() -> None:
    seen: list[ToolContext | None] = []

    @tool
    async def f(ctx: ToolContext | None = None) -> str:
        seen.append(ctx)
        return ""

    await f.invoke("{}")
    await f.invoke("{}")
    first, second = seen
    assert isinstance(first, ToolContext)
    assert isinstance(second, ToolContext)
    assert (first.tool_name, first.call_id, first.session_values) == ("f", "", {})
    assert first is not second


async def test_sync_tool_runs_in_a_worker_thread_by_default() -> None:
    @tool
    def where() -> int:
        return threading.get_ident()

    assert await where.invoke("") != str(threading.get_ident())


async def test_sync_tool_with_threaded_false_runs_inline() -> None:
    @tool(threaded=False)
    def where() -> int:
        return threading.get_ident()

    assert await where.invoke("") == str(threading.get_ident())


async def test_threaded_tool_sees_the_callers_contextvars() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    var.set("caller")

    @tool
    def read() -> str:
        return var.get()

    assert await read.invoke("") == "caller"


async def test_async_tool_is_awaited_on_the_event_loop_thread() -> None:
    @tool
    async def where(delay: float) -> int:
        await asyncio.sleep(delay)
        return threading.get_ident()

    assert await where.invoke('{"delay": 0}') == str(threading.get_ident())


async def test_sync_function_returning_an_awaitable_is_awaited() -> None:
    async def inner(x: int) -> int:
        return x * 2

    @tool(threaded=False)
    def f(x: int) -> Any:
        return inner(x)

    assert await f.invoke('{"x": 4}') == "8"


@pytest.mark.parametrize("threaded", [True, False])
async def test_exceptions_from_the_function_propagate_unchanged(threaded: bool) -> None:
    error = LookupError("no such city")

    @tool(threaded=threaded)
    def f() -> str:
        raise error

    with pytest.raises(LookupError) as caught:
        await f.invoke("")
    assert caught.value is error


async def test_exceptions_from_an_async_function_propagate_unchanged() -> None:
    @tool
    async def f() -> str:
        raise KeyError("k")

    with pytest.raises(KeyError):
        await f.invoke("")


# -- return values -------------------------------------------------------------------------------------------------


class Reading(BaseModel):
    city: str
    temp: float


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("plain text", "plain text"),
        ('{"already": "json"}', '{"already": "json"}'),
        (None, ""),
        (3, "3"),
        (True, "true"),
        ({"a": [1, 2]}, '{"a":[1,2]}'),
        (["x", None], '["x",null]'),
        (Window(start=1), '{"start":1,"end":10}'),
        (Reading(city="Zürich", temp=1.5), '{"city":"Zürich","temp":1.5}'),
        ({"when": Color.GREEN}, '{"when":"green"}'),
    ],
)
async def test_return_values_become_text(value: Any, text: str) -> None:
    @tool(threaded=False)
    def f() -> Any:
        return value

    assert await f.invoke("") == text


async def test_values_json_cannot_express_fall_back_to_str() -> None:
    class Opaque:
        def __str__(self) -> str:
            return "opaque!"

    @tool(threaded=False)
    def f() -> Any:
        return {"v": Opaque()}

    assert await f.invoke("") == '{"v":"opaque!"}'


# -- the tool object -----------------------------------------------------------------------------------------------


def test_calling_the_tool_calls_the_original_function() -> None:
    @tool
    def add(a: int, b: int) -> int:
        return a + b

    assert add(2, b=3) == 5
    assert isinstance(add, FunctionTool)
    assert add.fn.__name__ == "add"


def test_function_tool_is_constructible_directly() -> None:
    def add(a: int, b: int) -> int:
        """Add numbers."""
        return a + b

    t = FunctionTool(add, name="plus", threaded=False)
    assert t.fn is add
    assert t.threaded is False
    assert t.info.name == "plus"
    assert t.info.description == "Add numbers."
    assert repr(t) == "FunctionTool(name='plus')"


def test_function_tools_are_tools_but_not_streaming_tools() -> None:
    @tool
    def f() -> str:
        return ""

    assert isinstance(f, Tool)
    assert not isinstance(f, StreamingTool)


async def test_bound_methods_can_be_tools() -> None:
    class Counter:
        def __init__(self) -> None:
            self.n = 0

        def bump(self, by: int) -> int:
            """Bump the counter."""
            self.n += by
            return self.n

    counter = Counter()
    bump = FunctionTool(counter.bump)
    assert list(bump.info.parameters["properties"]) == ["by"]
    assert await bump.invoke('{"by": 2}') == "2"


async def test_lambda_with_a_name_can_be_a_tool() -> None:
    greet = FunctionTool(lambda: "hello", name="greet")
    assert greet.info.name == "greet"
    assert await greet.invoke("") == "hello"


# -- definition errors ---------------------------------------------------------------------------------------------


def test_parameter_without_annotation_is_a_user_error() -> None:
    def f(city: str, days) -> str:  # type: ignore[no-untyped-def]
        return ""

    with pytest.raises(UserError) as caught:
        tool(f)
    assert str(caught.value) == "Invalid parameter of tool [f]: expected a type annotation on 'days', got none"


def test_undecorated_method_hints_at_the_bound_method() -> None:
    class C:
        def m(self, x: int) -> int:
            return x

    with pytest.raises(UserError, match=r"got none \(decorate the bound method: FunctionTool\(instance.method\)\)$"):
        tool(C.m)


def test_var_positional_parameter_is_a_user_error() -> None:
    def f(*names: str) -> str:
        return ""

    with pytest.raises(UserError) as caught:
        tool(f)
    assert str(caught.value) == (
        "Invalid parameter of tool [f]: expected named parameters with type annotations, got *names"
    )


def test_var_keyword_parameter_is_a_user_error() -> None:
    def f(**options: str) -> str:
        return ""

    with pytest.raises(UserError, match=r"got \*\*options$"):
        tool(f)


def test_lambda_without_a_name_is_a_user_error() -> None:
    with pytest.raises(UserError, match=r"^Invalid tool function: expected a function with a name, got <function"):
        FunctionTool(lambda: "")


def test_callable_without_a_name_is_a_user_error() -> None:
    def f(a: int, b: int) -> int:
        return a + b

    with pytest.raises(UserError, match=r"\(pass name=\.\.\.\)$"):
        FunctionTool(functools.partial(f, 1))


def test_partial_with_a_name_is_a_tool_described_by_the_wrapped_function() -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    add_one = FunctionTool(functools.partial(add, 1), name="add_one")
    assert add_one.info.description == "Add two numbers."
    assert add_one.info.parameters["required"] == ["b"]


def test_invalid_tool_name_is_a_user_error_at_definition() -> None:
    with pytest.raises(UserError, match=r"^Invalid tool name: .* got 'get weather'$"):

        @tool(name="get weather")
        def f() -> str:
            return ""


def test_type_pydantic_cannot_handle_is_a_user_error_naming_the_tool() -> None:
    class Opaque:
        pass

    def f(thing: Opaque) -> str:
        return ""

    with pytest.raises(UserError, match=r"^Cannot build the argument schema of tool \[f\]: "):
        tool(f)


def test_unresolvable_annotation_is_a_user_error_naming_the_tool() -> None:
    def f(thing: "Missing") -> str:  # type: ignore[name-defined]  # noqa: F821
        return ""

    with pytest.raises(UserError, match=r"^Cannot read the signature of tool \[f\]: name 'Missing' is not defined"):
        tool(f)


# -- plain functions where a tool is expected --------------------------------------------------------------------------


def lookup(order_id: int) -> str:
    """Look an order up.

    Args:
        order_id: the order number
    """
    return f"order {order_id} shipped"


def test_as_tool_makes_a_plain_function_the_tool_tool_makes() -> None:
    made = as_tool(lookup)
    assert isinstance(made, FunctionTool)
    assert made.info == tool(lookup).info
    assert made.info.description == "Look an order up."


def test_as_tool_takes_a_tool_as_it_is() -> None:
    made = tool(lookup)
    assert as_tool(made) is made


class NotATool:
    pass


@pytest.mark.parametrize(
    ("candidate", "found"),
    [
        (3, "got int 3"),
        ("lookup", "got str 'lookup'"),
        (NotATool, "got the class NotATool (pass an instance)"),
        (ToolInfo(name="lookup", description="x"), "got the ToolInfo of 'lookup', which describes a tool only"),
    ],
    ids=["int", "str", "class", "ToolInfo"],
)
def test_as_tools_refuses_what_is_neither_a_tool_nor_a_function_naming_where(candidate: object, found: str) -> None:
    with pytest.raises(UserError) as caught:
        as_tools([lookup, candidate], owner="ChatModelAgent 'a'")
    assert str(caught.value) == (
        f"ChatModelAgent 'a': tools[1]: expected a Tool or a function (made a tool as @tool would), {found}"
    )


def test_as_tool_refuses_a_function_tool_cannot_make_saying_why() -> None:
    with pytest.raises(UserError) as caught:
        as_tool(lambda order_id: order_id, where="tools[0]")
    assert str(caught.value).startswith("tools[0]: Invalid tool function: expected a function with a name, got ")

"""Tools made from typed Python functions: ``@tool`` and ``FunctionTool``.

The function's signature becomes the argument schema, its docstring the descriptions. A tool object still
calls the plain function when called directly, so decorated functions stay easy to unit-test.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, Generic, ParamSpec, TypeAlias, TypeVar, cast, overload

import pydantic_core

from ..errors import ModelJSONError, ToolArgumentsError, UserError
from ..schema import Stream, ToolInfo
from ._arguments import Arguments
from ._context import ToolContext
from ._docstring import parse_docstring
from ._json import check_model_json, parse_model_json
from ._protocols import Tool
from .feedback import describe_json_value

__all__ = ["FunctionTool", "StreamingFunctionTool", "ToolLike", "as_tool", "as_tools", "check_arguments", "tool"]

P = ParamSpec("P")
R = TypeVar("R")


class FunctionTool(Generic[P, R]):
    """A tool that calls ``fn`` with the arguments a model sends, validated against ``fn``'s signature.

    Sync functions run in a worker thread (contextvars copied) so that blocking code does not stall the event
    loop; a cancelled call stops waiting, but the thread runs to its end. ``threaded=False`` runs them inline,
    for cheap pure functions. Async functions are awaited. Whatever the function raises propagates unchanged:
    the runtime decides what a failed tool means for the run.
    """

    def __init__(
        self,
        fn: Callable[P, R],
        *,
        name: str | None = None,
        description: str | None = None,
        threaded: bool = True,
    ) -> None:
        if inspect.isasyncgenfunction(fn) and not isinstance(self, StreamingFunctionTool):
            raise UserError(
                "Invalid function for FunctionTool: expected a function, got an async generator "
                "function (use StreamingFunctionTool)"
            )
        self.fn = fn
        self.threaded = threaded
        name = name if name is not None else _name_of(fn)
        summary, descriptions = parse_docstring(_doc_of(fn))
        self._arguments = Arguments(fn, tool_name=name, descriptions=descriptions)
        self.info = ToolInfo(
            name=name,
            description=description if description is not None else summary,
            parameters=self._arguments.schema,
        )
        self._is_async = inspect.iscoroutinefunction(fn)
        self._call: Callable[..., Any] = fn

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.info.name!r})"

    def check_arguments(self, arguments: str) -> None:
        """Refuse ``arguments`` the call would refuse (``ToolArgumentsError``): JSON, then ``fn``'s signature."""
        self._arguments.check(arguments)

    async def invoke(self, arguments: str, ctx: ToolContext | None = None) -> str:
        args, kwargs = self._arguments.bind(arguments, ctx)
        call = self._call
        if self._is_async:
            result = await call(*args, **kwargs)
        elif self.threaded:
            result = await asyncio.to_thread(call, *args, **kwargs)
        else:
            result = call(*args, **kwargs)
        if inspect.isawaitable(result):  # a sync wrapper around a coroutine function
            result = await result
        return _to_text(result)


class StreamingFunctionTool(FunctionTool[P, AsyncIterator[str]]):
    """A tool from an async generator function: ``stream()`` hands out the chunks it yields as they come;
    ``invoke()`` returns them joined."""

    def __init__(
        self, fn: Callable[P, AsyncIterator[str]], *, name: str | None = None, description: str | None = None
    ) -> None:
        if not inspect.isasyncgenfunction(fn):
            raise UserError(
                f"Invalid function for StreamingFunctionTool: expected an async generator function, got {fn!r}"
            )
        super().__init__(fn, name=name, description=description)

    def stream(self, arguments: str, ctx: ToolContext | None = None) -> Stream[str]:
        args, kwargs = self._arguments.bind(arguments, ctx)
        return Stream.from_async_iter(cast(Callable[..., AsyncIterator[str]], self.fn)(*args, **kwargs))

    async def invoke(self, arguments: str, ctx: ToolContext | None = None) -> str:
        return "".join(await self.stream(arguments, ctx).collect())


@overload
def tool(fn: Callable[P, AsyncIterator[str]], /) -> StreamingFunctionTool[P]: ...
@overload
def tool(fn: Callable[P, R], /) -> FunctionTool[P, R]: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None, threaded: bool = True
) -> Callable[[Callable[P, R]], FunctionTool[P, R]]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    threaded: bool = True,
) -> FunctionTool[..., Any] | Callable[[Callable[..., Any]], FunctionTool[..., Any]]:
    """Make a tool from a typed function; use as ``@tool`` or ``@tool(name=..., description=..., threaded=...)``.

    An async generator function becomes a ``StreamingFunctionTool``; ``threaded`` does not apply to it.
    """

    def make(fn: Callable[..., Any]) -> FunctionTool[..., Any]:
        if inspect.isasyncgenfunction(fn):
            return StreamingFunctionTool(fn, name=name, description=description)
        return FunctionTool(fn, name=name, description=description, threaded=threaded)

    return make if fn is None else make(fn)


ToolLike: TypeAlias = Tool | Callable[..., Any]
"""What an agent's ``tools=[...]`` takes: tools, and plain functions, which it makes tools as ``@tool`` does."""


def as_tool(candidate: object, *, where: str = "tool") -> Tool:
    """``candidate`` as a tool: a ``Tool`` as it is, a plain function (sync, async or an async generator) made one as
    ``@tool`` would make it; anything else is refused with a ``UserError`` that says so, ``where`` naming the place."""
    if isinstance(candidate, Tool):
        return candidate
    expected = "expected a Tool or a function (made a tool as @tool would)"
    if isinstance(candidate, ToolInfo):
        raise UserError(f"{where}: {expected}, got the ToolInfo of {candidate.name!r}, which describes a tool only")
    if inspect.isclass(candidate):
        raise UserError(f"{where}: {expected}, got the class {candidate.__qualname__} (pass an instance)")
    if not callable(candidate):
        raise UserError(f"{where}: {expected}, got {type(candidate).__qualname__} {candidate!r:.80}")
    try:
        return tool(candidate)
    except UserError as error:
        raise UserError(f"{where}: {error}") from None


def check_arguments(tool: Tool, arguments: str) -> ToolArgumentsError | None:
    """Why ``tool`` would refuse a call with ``arguments``, before it is made (None when it would not): its own
    check when it has one (a ``FunctionTool`` checks the signature's schema), else that they are a JSON object."""
    own = getattr(tool, "check_arguments", None)
    name = tool.info.name
    try:
        if callable(own):
            own(arguments)
            return None
        check_model_json(arguments)
        value = parse_model_json(arguments) if arguments.strip() else {}
    except ToolArgumentsError as refused:
        return refused
    except ModelJSONError as error:
        return _refusal(name, str(error))
    return (
        None if isinstance(value, dict) else _refusal(name, f"expected a JSON object, got {describe_json_value(value)}")
    )


def _refusal(name: str, detail: str) -> ToolArgumentsError:
    return ToolArgumentsError(f"Invalid arguments for tool [{name}]: {detail}", tool_name=name)


def as_tools(candidates: Iterable[object], *, owner: str) -> list[Tool]:
    """``as_tool`` of each candidate; a refusal names ``owner`` and the position (``agent 'a': tools[2]: …``)."""
    return [as_tool(candidate, where=f"{owner}: tools[{i}]") for i, candidate in enumerate(candidates)]


def _name_of(fn: Callable[..., Any]) -> str:
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str) or name == "<lambda>":
        raise UserError(f"Invalid tool function: expected a function with a name, got {fn!r} (pass name=...)")
    return name


def _doc_of(fn: Callable[..., Any]) -> str | None:
    # A partial's own docstring describes functools.partial, not the function it wraps.
    while isinstance(fn, functools.partial):
        fn = fn.func
    return inspect.getdoc(fn)


def _to_text(result: Any) -> str:
    """The observation a model reads: text as it is, nothing as "", anything else as JSON."""
    if isinstance(result, str):
        return result
    if result is None:
        return ""
    return pydantic_core.to_json(result, fallback=str).decode()

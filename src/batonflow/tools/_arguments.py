"""From a Python signature to the JSON Schema a model sees, and from the model's JSON text back to a call.

pydantic does the work: a model class is generated from the signature, its JSON Schema (less the noise) is the
tool's ``parameters``, and it validates what the model sends. Unknown keys are refused rather than dropped:
models invent arguments, and only an error tells them so. The text is held to the limits of model JSON
(``check_model_json``) before anything parses it.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, cast

from pydantic import BaseModel, ConfigDict, Field, PydanticUserError, ValidationError, create_model

from ..errors import ModelJSONError, ToolArgumentsError, UserError
from ._context import ToolContext
from ._json import check_model_json, parse_model_json
from .feedback import describe_json_text, describe_json_value, describe_validation_error

__all__ = ["Arguments"]

# Keywords whose values are data, not schemas: a "title" inside them is not pydantic's decoration.
_DATA_KEYWORDS = frozenset({"default", "const", "enum", "examples"})
# Keywords whose values map names to schemas: the names are kept whatever they are (a property may be "title").
_NAMED_SCHEMAS = frozenset({"properties", "$defs", "definitions", "patternProperties"})


class Arguments:
    """The arguments of one function, as a tool receives them from a model."""

    __slots__ = ("_bindings", "_model", "schema", "tool_name")

    def __init__(self, fn: Callable[..., Any], *, tool_name: str, descriptions: dict[str, str]) -> None:
        self.tool_name = tool_name
        try:
            signature = inspect.signature(fn, eval_str=True)
        except (NameError, TypeError, ValueError) as error:
            raise UserError(f"Cannot read the signature of tool [{tool_name}]: {error}") from error

        fields: dict[str, Any] = {}
        # (parameter name, passed by position, model field or None for the injected ToolContext)
        self._bindings: list[tuple[str, bool, str | None]] = []
        for index, param in enumerate(signature.parameters.values()):
            _check_parameter(param, tool_name)
            positional = param.kind is inspect.Parameter.POSITIONAL_ONLY
            if _is_context(param.annotation):
                self._bindings.append((param.name, positional, None))
                continue
            # Fields get neutral names and the parameter's name as alias, so that parameters called
            # "json", "copy", "model_config" or "_private" neither clash with BaseModel nor become private.
            field = f"p{index}"
            default = ... if param.default is inspect.Parameter.empty else param.default
            info = Field(alias=param.name, description=descriptions.get(param.name))
            annotation = cast(Any, Annotated)[param.annotation, info]  # a type built at run time
            fields[field] = (annotation, default)
            self._bindings.append((param.name, positional, field))

        try:
            self._model: type[BaseModel] = create_model(
                f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
            )
            self.schema: dict[str, Any] = _without_titles(self._model.model_json_schema())
        except PydanticUserError as error:
            message = str(error).splitlines()[0]
            raise UserError(f"Cannot build the argument schema of tool [{tool_name}]: {message}") from error

    def bind(self, arguments: str, ctx: ToolContext | None) -> tuple[list[Any], dict[str, Any]]:
        """Validate the model's ``arguments`` text; return the positional and keyword arguments of the call."""
        values = self._validate(arguments)
        if ctx is None:
            ctx = ToolContext(tool_name=self.tool_name, call_id="")
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for name, positional, field in self._bindings:
            value = ctx if field is None else getattr(values, field)
            if positional:
                args.append(value)
            else:
                kwargs[name] = value
        return args, kwargs

    def check(self, arguments: str) -> None:
        """Refuse ``arguments`` as ``bind`` would (``ToolArgumentsError``), without making the call."""
        self._validate(arguments)

    def _validate(self, arguments: str) -> BaseModel:
        try:
            check_model_json(arguments)
        except ModelJSONError as error:
            raise self._error(str(error)) from None
        try:
            # The fast path: pydantic parses and validates in one go. Anything it refuses is parsed again below,
            # for the error message a model can act on.
            return self._model.model_validate_json(arguments or "{}")
        except ValueError:
            pass
        text = arguments.strip()
        data: Any = {}  # models send "" for a tool without parameters
        if text:
            try:
                data = parse_model_json(text)
            except ModelJSONError as error:
                raise self._error(f"expected a JSON object, got {describe_json_text(text)}") from error
        if not isinstance(data, dict):
            raise self._error(f"expected a JSON object, got {describe_json_value(data)}")
        try:
            return self._model.model_validate(data)
        except ValidationError as error:
            raise self._error(describe_validation_error(error, data, self.schema)) from error

    def _error(self, detail: str) -> ToolArgumentsError:
        return ToolArgumentsError(f"Invalid arguments for tool [{self.tool_name}]: {detail}", tool_name=self.tool_name)


def _check_parameter(param: inspect.Parameter, tool_name: str) -> None:
    if param.kind is inspect.Parameter.VAR_POSITIONAL or param.kind is inspect.Parameter.VAR_KEYWORD:
        stars = "*" if param.kind is inspect.Parameter.VAR_POSITIONAL else "**"
        raise UserError(
            f"Invalid parameter of tool [{tool_name}]: expected named parameters with type annotations, "
            f"got {stars}{param.name}"
        )
    if param.annotation is inspect.Parameter.empty:
        hint = " (decorate the bound method: FunctionTool(instance.method))" if param.name == "self" else ""
        raise UserError(
            f"Invalid parameter of tool [{tool_name}]: expected a type annotation on '{param.name}', got none{hint}"
        )


def _is_context(annotation: Any) -> bool:
    """True for ``ToolContext`` and ``ToolContext | None`` (also inside ``Annotated``)."""
    if typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(members) != 1:
            return False
        annotation = members[0]
    return isinstance(annotation, type) and issubclass(annotation, ToolContext)


def _without_titles(schema: Any) -> Any:
    """The schema without the "title" keys pydantic adds everywhere: noise for a small model's context."""
    if isinstance(schema, list):
        return [_without_titles(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    cleaned: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in _DATA_KEYWORDS:
            cleaned[key] = value
        elif key in _NAMED_SCHEMAS and isinstance(value, dict):
            cleaned[key] = {name: _without_titles(sub) for name, sub in value.items()}
        else:
            cleaned[key] = _without_titles(value)
    return cleaned

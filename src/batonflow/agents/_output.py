"""Typed output for agents: the schema instruction, parsing and validation (Solon's ``outputSchema``/``toBean``).

A pydantic model class is validated by pydantic; a JSON Schema dict by a small checker here (type, enum, const,
properties, required, additionalProperties, items, length/count/range limits, pattern, any/one/allOf, local
``$ref``s), so that no JSON Schema library is needed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from ..adk import AgentEvent, get_language
from ..errors import ModelJSONError, RunError, UserError
from ..models import JSONSchemaFormat, ModelSettings, merge_settings
from ..schema import Message
from ..tools import parse_model_json
from ..tools.feedback import data_path, describe_json_text, describe_json_value, join_clauses, show_path, show_value

__all__ = ["OutputSchema", "parse_output"]

M = TypeVar("M", bound=BaseModel)

OutputSchema = type[BaseModel] | Mapping[str, Any]
"""A pydantic model class, or a JSON Schema as a dict."""

_SCHEMA_INSTRUCTION = {
    "en": (
        "Answer with JSON only: one JSON value that matches the JSON Schema below. Write nothing before or after "
        "it and do not put it in a Markdown code block.\n\nJSON Schema:\n"
    ),
    "zh": "只用 JSON 回答：输出一个符合下面 JSON Schema 的 JSON 值。前后不要写任何其他内容，也不要放进 Markdown 代码块。\n\nJSON Schema：\n",
}


# -- output schemas (Solon's outputSchema and toBean) ---------------------------------------------------------------


@overload
def parse_output(source: AgentEvent | Message | str, schema: type[M]) -> M: ...


@overload
def parse_output(source: AgentEvent | Message | str, schema: Mapping[str, Any]) -> Any: ...


def parse_output(source: AgentEvent | Message | str, schema: OutputSchema) -> Any:
    """The answer in ``source`` as a value of ``schema`` (Solon's ``toBean``).

    ``source`` is an agent's event, a message or the answer's text; ``schema`` a pydantic model class (an instance
    is returned) or a JSON Schema dict (the validated JSON value is returned). A ```` ```json ```` fence around the
    JSON is ignored. An answer that does not fit raises ``RunError`` saying what was expected and what was found.
    """
    spec = Schema.of(schema)
    if isinstance(source, AgentEvent):
        output = source.output
        if spec.model is not None and output is not None and isinstance(output.customized_output, spec.model):
            return output.customized_output
        variant = output.message_output if output is not None else None
        if variant is None:
            raise UserError(f"parse_output: expected an event carrying a message, got {source!r}")
        if variant.message is None:
            raise UserError(
                "parse_output: expected a read message, got an unread stream; "
                "await event.message_output.get_message() first"
            )
        text = variant.message.text
    elif isinstance(source, Message):
        text = source.text
    else:
        text = source
    return spec.parse(text)


_FENCE = "```"
_NOT_IN_A_NAME = re.compile(r"[^A-Za-z0-9_-]+")
_LANGUAGE = re.compile(r"[A-Za-z0-9_-]*")


@dataclass(frozen=True, slots=True)
class Schema:
    """An output schema ready to use: its JSON Schema for the prompt, and how answers are checked against it."""

    label: str
    json_schema: dict[str, Any]
    text: str  # the schema as JSON, for the instruction
    model: type[BaseModel] | None = None

    @staticmethod
    def of(schema: OutputSchema) -> Schema:
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            json_schema = schema.model_json_schema()
            return Schema(schema.__name__, json_schema, json.dumps(json_schema, ensure_ascii=False), schema)
        if not isinstance(schema, Mapping):
            raise UserError(
                f"output_schema: expected a pydantic BaseModel subclass or a JSON Schema dict, got {schema!r}"
            )
        json_schema = dict(schema)
        try:
            text = json.dumps(json_schema, ensure_ascii=False)
        except (TypeError, ValueError) as error:
            raise UserError(f"output_schema: expected a JSON Schema made of JSON values, got {error}") from None
        _check_refs(json_schema, json_schema)
        title = json_schema.get("title")
        return Schema(title if isinstance(title, str) and title else "the output schema", json_schema, text)

    def instruction(self) -> str:
        return _SCHEMA_INSTRUCTION[get_language()] + self.text

    def response_format(self) -> JSONSchemaFormat:
        """The schema as the provider's structured output asks for it, named after the model class or title.

        Not ``strict``: OpenAI's strict mode refuses most schemas pydantic writes (optional fields, defaults); the
        answer is checked here anyway.
        """
        title = self.json_schema.get("title")
        named = self.model.__name__ if self.model is not None else title if isinstance(title, str) else ""
        name = _NOT_IN_A_NAME.sub("_", named).strip("_")[:64]
        return JSONSchemaFormat(self.json_schema, name=name or "answer")

    def settings(self, settings: ModelSettings | None) -> ModelSettings:
        """``settings`` asking for this schema's structured output, unless they ask for a format of their own."""
        return merge_settings(ModelSettings(response_format=self.response_format()), settings)

    def parse(self, text: str) -> Any:
        stripped = _unfenced(text.strip())
        try:
            data = parse_model_json(stripped)
        except ModelJSONError as error:
            why = f"not valid JSON ({error.detail})" if error.reason == "invalid" else str(error)
            raise self._failure(text, why) from None
        if self.model is None:
            clauses: list[str] = []
            _check(data, self.json_schema, self.json_schema, [], clauses)
            if clauses:
                raise self._failure(text, join_clauses(clauses))
            return data
        try:
            return self.model.model_validate_json(stripped)
        except ValidationError as error:
            raise self._failure(text, _describe(error, data)) from None

    def _failure(self, text: str, why: str) -> RunError:
        return RunError(f"expected JSON matching {self.label}, got {describe_json_text(text)}: {why}")


def _unfenced(text: str) -> str:
    """The text inside a ```` ```json ```` fence around the whole of ``text``; ``text`` itself if there is none.

    String operations, not a regular expression: the lazy match that was here backtracked over a run of spaces
    in an answer that opens a fence and never closes it (4,000 spaces took 50 seconds).
    """
    if len(text) < 2 * len(_FENCE) or not (text.startswith(_FENCE) and text.endswith(_FENCE)):
        return text
    inner = text[len(_FENCE) : -len(_FENCE)]
    language = _LANGUAGE.match(inner)
    return inner[language.end() if language else 0 :].strip()


# pydantic says "Input should be a valid integer, unable to parse string as an integer": the clause after the comma
# repeats what the value shows.
_SHOULD = re.compile(r"^\w+ should (.*?)(?:, (?:unable to|got a) .*)?$", re.DOTALL)
_NOT_AN_OBJECT = frozenset({"model_type", "model_attributes_type", "dict_type"})


def _describe(error: ValidationError, data: Any) -> str:
    """One ``expected …, got …`` clause per mistake, naming each place by its path in the answer (see
    ``join_clauses``)."""
    items = error.errors(include_url=False)
    return join_clauses((_clause(item, data) for item in items), total=len(items))


def _clause(item: ErrorDetails, data: Any) -> str:
    where = _where(data_path(item["loc"], data))
    kind = item["type"]
    if kind == "missing":
        return f"expected {where}, got nothing"
    if kind == "extra_forbidden":
        return f"expected no field {where}, got {show_value(item.get('input'))}"
    if kind in _NOT_AN_OBJECT:
        return f"expected {where} to be an object, got {describe_json_value(item.get('input'))}"
    should = _SHOULD.match(item["msg"])
    requirement = f"to {should[1]}" if should else f"to be valid ({item['msg']})"
    return f"expected {where} {requirement}, got {show_value(item.get('input'))}"


def _where(path: Sequence[str | int]) -> str:
    return show_path(path) if path else "the answer"


# -- a JSON Schema check for dict schemas ---------------------------------------------------------------------------
# The keywords models are asked to follow in practice: type, enum, const, properties, required,
# additionalProperties, items, the size and range bounds, pattern, anyOf/oneOf/allOf and local $refs. Other keywords
# are annotations here, as JSON Schema treats keywords it does not know.

_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
}


def _resolve(ref: str, root: Mapping[str, Any]) -> Any:
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        raise UserError(f"output_schema: expected local $refs ('#/$defs/Name'), got {ref!r}")
    node: Any = root
    for step in ref[2:].split("/"):
        step = step.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or step not in node:
            raise UserError(f"output_schema: expected $ref {ref!r} to name a part of the schema, got nothing there")
        node = node[step]
    return node


def _check_refs(node: Any, root: Mapping[str, Any]) -> None:
    if isinstance(node, Mapping):
        ref = node.get("$ref")
        if isinstance(ref, str):
            _resolve(ref, root)
        for value in node.values():
            _check_refs(value, root)
    elif isinstance(node, list):
        for value in node:
            _check_refs(value, root)


def _kind(schema: Any, root: Mapping[str, Any]) -> str:
    """A few words for what a schema accepts: "integer", "string or null", "one of 'a', 'b'"."""
    if not isinstance(schema, Mapping):
        return "a value"
    if isinstance(schema.get("$ref"), str):
        return _kind(_resolve(schema["$ref"], root), root)
    if "enum" in schema:
        return "one of " + ", ".join(show_value(v) for v in schema["enum"])
    if "const" in schema:
        return show_value(schema["const"])
    members = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(members, list):
        return " or ".join(_kind(m, root) for m in members)
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    if kind == "array" and isinstance(schema.get("items"), Mapping):
        return f"array of {_kind(schema['items'], root)}"
    return kind if isinstance(kind, str) else "a value"


def _check(value: Any, schema: Any, root: Mapping[str, Any], path: list[str | int], out: list[str]) -> None:
    """Append to ``out`` one clause per way ``value`` breaks ``schema``."""
    if not isinstance(schema, Mapping):
        if schema is False:
            out.append(f"expected nothing at {_where(path)}, got {show_value(value)}")
        return
    where = _where(path)
    if isinstance(schema.get("$ref"), str):
        _check(value, _resolve(schema["$ref"], root), root, path, out)
    for member in schema.get("allOf", ()):
        _check(value, member, root, path, out)
    for keyword in ("anyOf", "oneOf"):
        members = schema.get(keyword)
        if isinstance(members, list):
            fits = sum(1 for m in members if not _errors(value, m, root, path))
            if fits == 0:
                out.append(f"expected {where} to be {_kind({keyword: members}, root)}, got {show_value(value)}")
            elif keyword == "oneOf" and fits > 1:
                out.append(
                    f"expected {where} to fit exactly one of its oneOf schemas, got {show_value(value)} fitting {fits}"
                )
    kind = schema.get("type")
    if kind is not None:
        kinds = kind if isinstance(kind, list) else [kind]
        if not any(_TYPES.get(k, lambda _: True)(value) for k in kinds):
            out.append(f"expected {where} to be {_kind(schema, root)}, got {show_value(value)}")
            return
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"expected {where} to be {_kind({'enum': schema['enum']}, root)}, got {show_value(value)}")
    if "const" in schema and value != schema["const"]:
        out.append(f"expected {where} to be {show_value(schema['const'])}, got {show_value(value)}")
    if isinstance(value, str):
        _check_bounds(where, len(value), schema, "minLength", "maxLength", "characters", out)
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and re.search(pattern, value) is None:
            out.append(f"expected {where} to match {pattern!r}, got {show_value(value)}")
    elif isinstance(value, int | float) and not isinstance(value, bool):
        for keyword, holds, sign in _RANGES:
            limit = schema.get(keyword)
            if isinstance(limit, int | float) and not holds(value, limit):
                out.append(f"expected {where} to be {sign} {limit}, got {show_value(value)}")
    elif isinstance(value, list):
        _check_bounds(where, len(value), schema, "minItems", "maxItems", "items", out)
        items = schema.get("items")
        if isinstance(items, Mapping | bool):
            for index, item in enumerate(value):
                _check(item, items, root, [*path, index], out)
    elif isinstance(value, dict):
        _check_object(value, schema, root, path, out)


_RANGES: tuple[tuple[str, Callable[[float, float], bool], str], ...] = (
    ("minimum", lambda v, limit: v >= limit, ">="),
    ("maximum", lambda v, limit: v <= limit, "<="),
    ("exclusiveMinimum", lambda v, limit: v > limit, ">"),
    ("exclusiveMaximum", lambda v, limit: v < limit, "<"),
)


def _check_bounds(
    where: str, size: int, schema: Mapping[str, Any], low: str, high: str, unit: str, out: list[str]
) -> None:
    least, most = schema.get(low), schema.get(high)
    if isinstance(least, int) and size < least:
        out.append(f"expected {where} to have at least {least} {unit}, got {size}")
    if isinstance(most, int) and size > most:
        out.append(f"expected {where} to have at most {most} {unit}, got {size}")


def _check_object(
    value: dict[str, Any], schema: Mapping[str, Any], root: Mapping[str, Any], path: list[str | int], out: list[str]
) -> None:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    for name in schema.get("required", ()):
        if name not in value:
            kind = _kind(properties.get(name), root)
            out.append(f"expected {_where([*path, name])}{f' ({kind})' if kind != 'a value' else ''}, got nothing")
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        if name in properties:
            _check(item, properties[name], root, [*path, name], out)
        elif extra is False:
            known = ", ".join(_where([*path, n]) for n in properties)
            expected = f"one of {known}" if known else "no fields"
            out.append(f"expected {expected}, got unknown {_where([*path, name])}")
        elif isinstance(extra, Mapping):
            _check(item, extra, root, [*path, name], out)


def _errors(value: Any, schema: Any, root: Mapping[str, Any], path: list[str | int]) -> list[str]:
    found: list[str] = []
    _check(value, schema, root, path, found)
    return found

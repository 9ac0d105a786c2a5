"""Tell a model, in a few words, what was wrong with the arguments it produced.

The text becomes the tool's observation, so it is written for a model that must correct itself: one
``expected <what>, got <what>`` clause per mistake, naming the argument by its path as the model wrote it. The
agent kinds explain a malformed structured answer with the same words, which is why this module is public: so can a
tool or a middleware of your own.

What the model wrote may be hostile (32,000 unknown keys, a key name of megabytes), so a report is bounded: the
first ten distinct clauses and "and N more", names and values cut short, and no work that grows faster than the
number of mistakes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

__all__ = [
    "data_path",
    "describe_json_text",
    "describe_json_value",
    "describe_validation_error",
    "join_clauses",
    "show_path",
    "show_value",
]

_MAX_TEXT = 200
_MAX_VALUE = 100
_MAX_NAME = 60
_MAX_CLAUSES = 10
# pydantic says "Input should be a valid integer, unable to parse string as an integer": the clause after the
# comma repeats the obvious, so it is dropped.
_SHOULD = re.compile(r"^\w+ should (.*?)(?:, (?:unable to|got a) .*)?$", re.DOTALL)


def describe_json_text(text: str) -> str:
    """A short repr of text that is not JSON."""
    return repr(text) if len(text) <= _MAX_TEXT else repr(text[:_MAX_TEXT]) + "..."


def describe_json_value(value: Any) -> str:
    """The JSON kind of a parsed value: what a model sent instead of an object."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "null"


def describe_validation_error(error: ValidationError, data: dict[str, Any], schema: dict[str, Any]) -> str:
    """One clause per distinct mistake, joined by "; " (see ``join_clauses``). ``data`` is what was validated;
    ``schema`` its schema."""
    items = error.errors(include_url=False)
    known: dict[tuple[str | int, ...], str] = {}  # the "one of ..." of each object with unknown keys, built once
    clauses = (
        _clause(item["type"], item["msg"], item.get("input"), data_path(item["loc"], data), schema, known)
        for item in items
    )
    return join_clauses(clauses, total=len(items))


def join_clauses(clauses: Iterable[str], *, total: int | None = None) -> str:
    """The distinct ``clauses`` joined by "; ", in order: the first ten, then "and N more".

    Without ``total``, N counts the distinct others. With ``total``, the number of clauses there are, ``clauses``
    is read only up to the tenth distinct one (so a lazy iterable describes no more than it shows), and N counts
    the rest, repeats included.
    """
    shown: dict[str, None] = {}  # in order, without repeats
    others: set[str] = set()
    read = 0
    for clause in clauses:
        if len(shown) < _MAX_CLAUSES:
            read += 1
            shown[clause] = None
        elif total is not None:
            break
        elif clause not in shown:
            others.add(clause)
    more = len(others) if total is None else total - read
    return "; ".join(shown) + (f"; and {more:,} more" if more else "")


def _clause(
    kind: str,
    msg: str,
    value: Any,
    path: list[str | int],
    schema: dict[str, Any],
    known: dict[tuple[str | int, ...], str],
) -> str:
    defs = schema.get("$defs", {})
    where = show_path(path) if path else "the arguments"
    if kind == "missing":
        expected = _type_name(_schema_at(schema, path), defs)
        return f"expected {where}{f' ({expected})' if expected else ''}, got nothing"
    if kind == "extra_forbidden":
        parent_path = tuple(path[:-1])
        if parent_path not in known:
            parent = _resolve(_schema_at(schema, path[:-1]), defs)
            names = list(parent.get("properties", {})) if parent else []
            known[parent_path] = ", ".join(show_path([*parent_path, name]) for name in names)
        if known[parent_path]:
            return f"expected one of {known[parent_path]}, got unknown {where}"
        return f"expected no {'arguments' if len(path) == 1 else 'fields'}, got unknown {where}"
    match = _SHOULD.match(msg)
    requirement = f"to {match[1]}" if match else f"to be valid ({msg})"
    return f"expected {where} {requirement}, got {show_value(value)}"


def data_path(loc: tuple[str | int, ...], data: Any) -> list[str | int]:
    """The part of pydantic's error location that names places in ``data``.

    pydantic also puts steps of its own in the location (the member of a union that was tried, as in
    ``('unit', 'int')``); those name nothing the model wrote, so they are left out. The last step may name a
    key that is absent (a missing argument).
    """
    path: list[str | int] = []
    for index, part in enumerate(loc):
        present = (isinstance(data, dict) and part in data) or (
            isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data)
        )
        if present:
            data = data[part]
        elif index < len(loc) - 1 or not isinstance(data, dict):
            continue
        path.append(part)
    return path


def show_path(path: Iterable[str | int]) -> str:
    """A place in what the model wrote, quoted as it wrote it (``'items[0].name'``); each name cut short."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            name = part if len(part) <= _MAX_NAME else part[:_MAX_NAME] + "..."
            text += f".{name}" if text else name
    return f"'{text}'"


def show_value(value: Any) -> str:
    """A value as the model reads it: JSON (a string as a Python repr), cut to 100 characters."""
    if isinstance(value, str):
        text = repr(value[: _MAX_VALUE + 1])  # no need to quote megabytes to show a hundred characters
    else:
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError):
            text = repr(value)
    return text if len(text) <= _MAX_VALUE else text[:_MAX_VALUE] + "..."


def _resolve(node: Any, defs: dict[str, Any]) -> dict[str, Any] | None:
    """The schema a node stands for: ``$ref`` followed, an optional value's non-null member taken."""
    if not isinstance(node, dict):
        return None
    if "$ref" in node:
        return _resolve(defs.get(node["$ref"].rsplit("/", 1)[-1]), defs)
    for member in node.get("anyOf", ()):
        if member.get("type") != "null":
            return _resolve(member, defs)
    return node


def _schema_at(schema: dict[str, Any], path: list[str | int]) -> dict[str, Any] | None:
    defs = schema.get("$defs", {})
    node: Any = schema
    for part in path:
        parent = _resolve(node, defs)
        if parent is None:
            return None
        node = parent.get("items") if isinstance(part, int) else parent.get("properties", {}).get(part)
    return node if isinstance(node, dict) else None


def _type_name(node: dict[str, Any] | None, defs: dict[str, Any]) -> str:
    """A few words for the kind of value a schema accepts: "string", "array of integer", "one of 'a', 'b'"."""
    if node is None:
        return ""
    if "$ref" in node:
        return _type_name(defs.get(node["$ref"].rsplit("/", 1)[-1]), defs)
    if "enum" in node:
        return "one of " + ", ".join(show_value(value) for value in node["enum"])
    if "const" in node:
        return show_value(node["const"])
    members = node.get("anyOf") or node.get("oneOf")
    if members:
        return " or ".join(name for name in (_type_name(member, defs) for member in members) if name)
    kind = node.get("type")
    if kind == "array" and isinstance(node.get("items"), dict):
        items = _type_name(node["items"], defs)
        return f"array of {items}" if items else "array"
    if isinstance(kind, list):
        return " or ".join(kind)
    return kind if isinstance(kind, str) else ""

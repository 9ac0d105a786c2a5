"""Solon's ``#{...}`` templates (a system prompt, an output format), filled from a flow's variables.

Solon's placeholder holds a whole SnEL expression; here it holds a variable path only (``#{name}``,
``#{user.city}``, ``#{items[0]}``, ``#{row['the key']}``), read over plain data by the same rules as a condition, so
that a prompt template computes nothing. Everything else is Solon's: the placeholder is found by balancing braces, a
placeholder that never closes is left as text, the path may be padded with spaces, and the value is written as Java
writes it: null (a missing variable, or ``None``) as ``null``, booleans as ``true`` and ``false``.

A template may repeat a placeholder as often as it likes, and a value may be large, so the text a template renders
is at most ``MAX_RENDERED`` characters: each value is sized (``size``, as the sandbox prices it) before it is written,
so that one too large to fit is refused before it is turned into text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from ._calls import plain, read
from ._expr import ExpressionError, ExpressionLimitError
from ._work import Refused, size

__all__ = ["MAX_RENDERED", "render_template"]

MAX_RENDERED = 1_000_000
"""The characters a template may render, its text and its values all told."""

_PATH = re.compile(r"""[^\W\d]\w*(?:\s*(?:\.\s*[^\W\d]\w*|\[\s*(?:-?\d+|'[^'\\]*'|"[^"\\]*")\s*\]))*""")
_STEP = re.compile(r"""\.\s*([^\W\d]\w*)|\[\s*(-?\d+)\s*\]|\[\s*'([^']*)'\s*\]|\[\s*"([^"]*)"\s*\]""")

Path = tuple[str | int, ...]
Fragment = str | tuple[str, Path]  # text, or (the placeholder as written, the path it reads)


def _placeholder_end(text: str, start: int) -> int:
    """The index of the brace that closes the placeholder whose content starts at ``start``, or -1."""
    depth = 1
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _path(placeholder: str, content: str) -> Path:
    if not _PATH.fullmatch(content):
        raise ExpressionError(
            f"template placeholder {placeholder!r}: expected a variable path such as name, user.city or items[0],"
            f" found {content!r} (templates read variables, they compute nothing)",
            source=placeholder,
        )
    first = re.match(r"[^\W\d]\w*", content)
    assert first is not None
    steps: list[str | int] = [first.group()]
    for step in _STEP.finditer(content, first.end()):
        name, index, single, double = step.groups()
        steps.append(int(index) if index is not None else next(s for s in (name, single, double) if s is not None))
    if any(isinstance(step, str) and step.startswith("__") for step in steps):
        raise ExpressionError(
            f"template placeholder {placeholder!r}: expected plain data, found {content!r} (names that start with"
            " '__' are not allowed)",
            source=placeholder,
        )
    return tuple(steps)


@lru_cache(maxsize=512)
def _fragments(text: str) -> tuple[Fragment, ...]:
    fragments: list[Fragment] = []
    position = 0
    while (start := text.find("#{", position)) != -1:
        end = _placeholder_end(text, start + 2)
        if end == -1:
            break
        if start > position:
            fragments.append(text[position:start])
        placeholder = text[start : end + 1]
        fragments.append((placeholder, _path(placeholder, text[start + 2 : end].strip())))
        position = end + 1
    if position < len(text):
        fragments.append(text[position:])
    return tuple(fragments)


def _value(placeholder: str, path: Path, variables: Mapping[str, Any]) -> Any:
    name = path[0]
    value = variables.get(name) if isinstance(name, str) else None
    try:
        for step in path[1:]:
            value = read(value, step, attribute=isinstance(step, str), methods=False)
    except Refused as refused:
        raise ExpressionError(f"template placeholder {placeholder!r}: {refused.detail}", source=placeholder) from None
    return plain(value)


def _written(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def render_template(text: str, variables: Mapping[str, Any]) -> str:
    """``text`` with each ``#{path}`` replaced by that variable's value, written as Solon writes it (``null``,
    ``true``, ``false``); an ``ExpressionError`` for a placeholder that is not a variable path, an
    ``ExpressionLimitError`` once the text would pass ``MAX_RENDERED`` characters."""
    parts: list[str] = []
    left = MAX_RENDERED
    for fragment in _fragments(text):
        written: str | None
        if isinstance(fragment, str):
            written, source = fragment, text
        else:
            source, path = fragment
            value = _value(source, path, variables)
            # Each item of a value is written as a character at least: a value of more items than are left cannot
            # fit, and is refused before it is turned into text.
            written = _written(value) if type(value) is str or size(value, left) <= left else None
        if written is None or len(written) > left:
            raise ExpressionLimitError(
                f"template {_shown(source)}: expected a rendered text of at most {MAX_RENDERED} characters"
                " (MAX_RENDERED), found more",
                source=source,
                limit="MAX_RENDERED",
            )
        left -= len(written)
        parts.append(written)
    return "".join(parts)


def _shown(text: str) -> str:
    return repr(text if len(text) <= 80 else text[:79] + "…")

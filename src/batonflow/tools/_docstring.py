"""Read a tool's description and its parameters' descriptions from a docstring.

Two common styles are understood: Google (an ``Args:`` section with ``name (type): text`` entries) and Sphinx
(``:param name: text`` fields). The description is the text before the first section or field; what follows it
(returns, raises, examples) is for the programmer, not for the model.
"""

from __future__ import annotations

import re

__all__ = ["parse_docstring"]

_ARGS_HEADERS = frozenset({"args", "arguments", "parameters", "params", "keyword args", "keyword arguments"})
_SECTION_HEADER = re.compile(
    r"^(args|arguments|parameters|params|keyword args|keyword arguments|returns?|yields?|raises|examples?|"
    r"notes?|warnings?|see also|attributes|todo|references):\s*$",
    re.IGNORECASE,
)
# `name (type): text` or `name: text`; a leading `*`/`**` as written for *args is tolerated.
_GOOGLE_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
# `:param name: text` or `:param type name: text`
_SPHINX_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?\*{0,2}(\w+)\s*:\s*(.*)$")
_SPHINX_FIELD = re.compile(r"^:\w+")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Return ``(description, {parameter: description})`` from a cleaned docstring (``inspect.getdoc``)."""
    if not doc:
        return "", {}
    lines = doc.strip().splitlines()
    end = next(
        (i for i, line in enumerate(lines) if _SECTION_HEADER.match(line.strip()) or _SPHINX_FIELD.match(line.strip())),
        len(lines),
    )
    summary = "\n".join(lines[:end]).strip()
    params = _google_args(lines[end:])
    params.update(_sphinx_params(lines[end:]))
    return summary, params


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _google_args(lines: list[str]) -> dict[str, str]:
    params: dict[str, list[str]] = {}
    section_indent: int | None = None  # indentation of the current Args header; None outside such a section
    entry_indent: int | None = None
    current: list[str] | None = None
    for line in lines:
        text = line.strip()
        if not text:
            continue
        if section_indent is not None and _indent(line) <= section_indent:
            section_indent = None  # a dedent ends the section
        if section_indent is None:
            if text.endswith(":") and text[:-1].lower() in _ARGS_HEADERS:
                section_indent, entry_indent, current = _indent(line), None, None
            continue
        if entry_indent is None:
            entry_indent = _indent(line)
        match = _GOOGLE_ENTRY.match(text) if _indent(line) == entry_indent else None
        if match:
            current = params.setdefault(match[1], [])
            current.append(match[2])
        elif current is not None:
            current.append(text)  # a continuation line of the entry above
    return {name: " ".join(part for part in parts if part) for name, parts in params.items()}


def _sphinx_params(lines: list[str]) -> dict[str, str]:
    params: dict[str, list[str]] = {}
    current: list[str] | None = None
    field_indent = 0
    for line in lines:
        text = line.strip()
        match = _SPHINX_PARAM.match(text)
        if match:
            current, field_indent = params.setdefault(match[1], []), _indent(line)
            current.append(match[2])
        elif current is not None and text and _indent(line) > field_indent and not _SPHINX_FIELD.match(text):
            current.append(text)
        else:
            current = None
    return {name: " ".join(part for part in parts if part) for name, parts in params.items()}

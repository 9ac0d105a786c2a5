"""Reading graph documents (YAML and JSON) with bounds, before anything is built from them.

Graph files are shared, downloaded and served, so reading one must not be a way to spend the reader's memory, time
or stack. A YAML alias repeats what its anchor names without the file paying for it (a few hundred bytes of nested
aliases stand for billions of values), recursive aliases nest without end, and deep nesting is recursion for
whatever walks the document next. So a document is read only up to ``MAX_DOCUMENT_BYTES``, and YAML is composed by
PyYAML's safe loader (no tags that build objects) with a count kept as it goes: how deep values nest and how many
there are with every alias counted as what it names, from the sizes of the anchors already read, so that nothing is
expanded to be counted and the first value past ``MAX_DOCUMENT_DEPTH`` or ``MAX_DOCUMENT_VALUES`` stops the
reading. JSON has no aliases: its depth and values are counted once it is parsed, and a nesting too deep for the
parser is the same error. Every failure is a ``GraphFileError`` naming the file and, where one was passed, the limit.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from yaml.events import AliasEvent, Event, NodeEvent
from yaml.nodes import Node

from ._errors import GraphFileError

__all__ = ["MAX_DOCUMENT_BYTES", "MAX_DOCUMENT_DEPTH", "MAX_DOCUMENT_VALUES", "parse_json", "parse_yaml", "read_text"]

MAX_DOCUMENT_BYTES = 1_000_000
"""The size of a graph file in bytes (of a document given as text, in characters)."""

MAX_DOCUMENT_DEPTH = 64
"""How deep a document's values may nest: the document itself is level 1, the values in it level 2, and so on."""

MAX_DOCUMENT_VALUES = 100_000
"""How many values (mappings, lists, keys and scalars) a document may hold, each alias counted as all it names."""


def _at(mark: Any) -> str:
    return f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, counting depth and values (aliases as what they name) as it composes."""

    def __init__(self, text: str, file: str) -> None:
        super().__init__(text)
        self._file = file
        self._depth = 0
        self._deepest = 0  # the deepest level reached in the node being composed
        self._values = 0
        self._composed: dict[str, tuple[int, int]] = {}  # anchor -> (values, levels) of the node it names

    def _refuse(self, detail: str, limit: str) -> GraphFileError:
        return GraphFileError(detail, file=self._file, limit=limit)

    def _count(self, values: int, levels: int, mark: Any) -> None:
        self._values += values
        if self._values > MAX_DOCUMENT_VALUES:
            raise self._refuse(
                f"expected at most {MAX_DOCUMENT_VALUES} values (MAX_DOCUMENT_VALUES), each alias counted as all it"
                f" names, found more{_at(mark)}",
                "MAX_DOCUMENT_VALUES",
            )
        deepest = self._depth + levels
        if deepest > MAX_DOCUMENT_DEPTH:
            raise self._refuse(
                f"expected values nested at most {MAX_DOCUMENT_DEPTH} levels deep (MAX_DOCUMENT_DEPTH), found"
                f" {deepest} levels{_at(mark)}",
                "MAX_DOCUMENT_DEPTH",
            )
        self._deepest = max(self._deepest, deepest)

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event: Event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, AliasEvent):
            anchor = event.anchor or ""
            if anchor in self.anchors and anchor not in self._composed:
                raise self._refuse(
                    f"expected values nested at most {MAX_DOCUMENT_DEPTH} levels deep (MAX_DOCUMENT_DEPTH), found"
                    f" the alias *{anchor}{_at(event.start_mark)} inside the value it names, which nests without end",
                    "MAX_DOCUMENT_DEPTH",
                )
            values, levels = self._composed.get(anchor, (0, 0))  # an undefined alias: PyYAML says so below
            self._count(values, levels, event.start_mark)
            return super().compose_node(parent, index)
        named = event.anchor if isinstance(event, NodeEvent) else None
        self._depth += 1
        outer_deepest, self._deepest = self._deepest, 0
        values_before = self._values
        try:
            self._count(1, 0, event.start_mark)
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        levels = self._deepest - self._depth
        self._deepest = max(outer_deepest, self._deepest)
        if named is not None:
            self._composed[named] = (self._values - values_before, levels)
        return node


def _check_size(size: int, file: str, unit: str) -> None:
    if size > MAX_DOCUMENT_BYTES:
        raise GraphFileError(
            f"expected at most {MAX_DOCUMENT_BYTES} {unit} (MAX_DOCUMENT_BYTES), found {size}",
            file=file,
            limit="MAX_DOCUMENT_BYTES",
        )


def _yaml_problem(error: yaml.YAMLError) -> str:
    """A YAML error on one line: the problem, where it is, and what was being read."""
    if isinstance(error, yaml.MarkedYAMLError):
        problem = error.problem or "a syntax error"
        context = f" ({error.context}{_at(error.context_mark)})" if error.context else ""
        return f"{problem}{_at(error.problem_mark)}{context}"
    if isinstance(error, yaml.reader.ReaderError):
        found = f"U+{error.character:04X}" if isinstance(error.character, int) else repr(error.character)
        return f"the character {found} at offset {error.position}: {error.reason}"
    return " ".join(str(error).split())


def parse_yaml(text: str, *, file: str = "") -> Any:
    """The document a YAML text holds, read with the bounds above (``GraphFileError`` past one of them)."""
    _check_size(len(text), file, "characters")
    try:
        loader = _BoundedLoader(text, file)  # which checks the characters first
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as error:
        raise GraphFileError(f"invalid YAML: {_yaml_problem(error)}", file=file) from None
    except (ValueError, OverflowError) as error:  # a scalar its type cannot hold: an int of 5,000 digits, a 13th month
        raise GraphFileError(f"invalid YAML: a value that cannot be read: {error}", file=file) from None


def parse_json(text: str, *, file: str = "") -> Any:
    """The document a JSON text holds, read with the bounds above (``GraphFileError`` past one of them)."""
    _check_size(len(text), file, "characters")
    too_deep = GraphFileError(
        f"expected values nested at most {MAX_DOCUMENT_DEPTH} levels deep (MAX_DOCUMENT_DEPTH), found more",
        file=file,
        limit="MAX_DOCUMENT_DEPTH",
    )
    try:
        document = json.loads(text)
    except RecursionError:  # nesting deeper than the parser follows: past the depth limit by far
        raise too_deep from None
    except ValueError as error:
        raise GraphFileError(f"invalid JSON: {error}", file=file) from None
    values = 0
    pending: list[tuple[Any, int]] = [(document, 1)]
    while pending:
        value, depth = pending.pop()
        values += 1
        if depth > MAX_DOCUMENT_DEPTH:
            raise too_deep
        if isinstance(value, Mapping):
            values += len(value)  # the keys
            pending.extend((item, depth + 1) for item in value.values())
        elif isinstance(value, list):
            pending.extend((item, depth + 1) for item in value)
        if values > MAX_DOCUMENT_VALUES:
            raise GraphFileError(
                f"expected at most {MAX_DOCUMENT_VALUES} values (MAX_DOCUMENT_VALUES), found more",
                file=file,
                limit="MAX_DOCUMENT_VALUES",
            )
    return document


def read_text(path: Path) -> str:
    """The UTF-8 text of the regular file at ``path``, of at most ``MAX_DOCUMENT_BYTES`` bytes."""
    file = str(path)
    try:
        status = path.stat()
    except OSError as error:
        raise GraphFileError(f"cannot read it: {error.strerror or error}", file=file) from None
    if stat.S_ISDIR(status.st_mode):
        raise GraphFileError("expected a graph file, found a directory", file=file)
    if not stat.S_ISREG(status.st_mode):
        # A device or a pipe may never end, or never answer: read regular files only.
        raise GraphFileError("expected a regular file, found a device, a pipe or a socket", file=file)
    _check_size(status.st_size, file, "bytes")
    try:
        with path.open("rb") as stream:
            data = stream.read(MAX_DOCUMENT_BYTES + 1)  # the file may have grown since
    except OSError as error:
        raise GraphFileError(f"cannot read it: {error.strerror or error}", file=file) from None
    _check_size(len(data), file, "bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise GraphFileError(
            f"expected UTF-8 text, found the byte 0x{data[error.start]:02x} at offset {error.start}", file=file
        ) from None
    if not text.strip():
        raise GraphFileError("expected a graph document, found an empty file", file=file)
    return text

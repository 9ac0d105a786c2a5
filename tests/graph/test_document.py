"""Reading graph documents within bounds: aliases counted as what they name, depth, values, size, and the file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from batonflow.graph import FlowEngine, Graph, GraphError, GraphFileError, ScriptTaskError
from batonflow.graph import _document as document

# The classic "billion laughs": 671 bytes that stand for 9 ** 9 strings once every alias is expanded.
LAUGHS = "id: g\nlayout: [{id: a}]\n" + "".join(
    f"{name}: &{name} [{', '.join([f'*{previous}'] * 9) if previous else ', '.join(['lol'] * 9)}]\n"
    for previous, name in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)


def nested(levels: int) -> str:
    """A graph document whose innermost value is at level ``levels`` (the document itself is level 1)."""
    lists = levels - 3  # the document, its meta mapping, and the scalar inside the lists
    return "id: g\nlayout: [{id: a}]\nmeta:\n  x: " + "[" * lists + "1" + "]" * lists + "\n"


def test_a_billion_laughs_is_refused_before_anything_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    def never(*args: object) -> None:
        raise AssertionError("the document was built")

    monkeypatch.setattr(document._BoundedLoader, "construct_document", never)
    assert len(LAUGHS) < 700

    with pytest.raises(GraphFileError) as caught:
        Graph.from_yaml(LAUGHS)

    assert caught.value.limit == "MAX_DOCUMENT_VALUES"
    assert str(caught.value).startswith("expected at most 100000 values (MAX_DOCUMENT_VALUES), each alias counted")


def test_aliases_and_merge_keys_within_the_limits_read_as_before() -> None:
    graph = Graph.from_yaml(
        "id: g\nmeta:\n  base: &base {retries: 2, model: m}\n  chat: {<<: *base, model: n}\n  again: *base\n"
        "layout: [{id: a}]\n"
    )

    assert dict(graph.meta["chat"]) == {"retries": 2, "model": "n"}
    assert graph.meta["again"] == {"retries": 2, "model": "m"}


def test_values_are_counted_with_aliases_expanded_up_to_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(document, "MAX_DOCUMENT_VALUES", 23)
    # The document, its 4 keys, 'g', the layout (4 values), a: [1, 2, 3] (4 values), b: [*a, *a] (1 + 2 * 4).
    text = "id: g\nlayout: [{id: a}]\na: &a [1, 2, 3]\nb: [*a, *a]\n"
    assert Graph.from_yaml(text).id == "g"

    with pytest.raises(GraphFileError) as caught:
        Graph.from_yaml(text.replace("[*a, *a]", "[*a, *a, *a]"))
    assert caught.value.limit == "MAX_DOCUMENT_VALUES" and "at line 4, column 13" in str(caught.value)


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, "{a: " * 100_000 + "1" + "}" * 100_000])
def test_nesting_one_hundred_thousand_deep_is_the_depth_limit_not_a_recursion_error(text: str) -> None:
    with pytest.raises(GraphFileError) as caught:
        Graph.from_yaml(text)

    assert caught.value.limit == "MAX_DOCUMENT_DEPTH"
    assert "expected values nested at most 64 levels deep (MAX_DOCUMENT_DEPTH), found 65 levels at line 1" in str(
        caught.value
    )


def test_the_depth_limit_counts_the_document_as_level_one() -> None:
    assert Graph.from_yaml(nested(64)).meta["x"] is not None
    assert Graph.from_json(json.dumps(Graph.from_yaml(nested(64)).to_dict())).id == "g"

    with pytest.raises(GraphFileError, match="found 65 levels"):
        Graph.from_yaml(nested(65))


def test_an_alias_counts_the_depth_of_what_it_names() -> None:
    deep = "[" * 40 + "1" + "]" * 40
    text = "id: g\nlayout: [{id: a}]\nmeta:\n  a: &deep " + deep + "\n  b: " + "[" * 30 + "*deep" + "]" * 30 + "\n"

    with pytest.raises(GraphFileError) as caught:
        Graph.from_yaml(text)

    assert caught.value.limit == "MAX_DOCUMENT_DEPTH" and "found 73 levels at line 5" in str(caught.value)


@pytest.mark.parametrize("text", ["id: &a [*a]\n", "id: g\nmeta: &m {self: *m}\n", "id: g\nx: &x [1, [2, *x]]\n"])
def test_a_recursive_alias_is_refused_as_nesting_without_end(text: str) -> None:
    with pytest.raises(GraphFileError) as caught:
        Graph.from_yaml(text)

    assert caught.value.limit == "MAX_DOCUMENT_DEPTH"
    assert "inside the value it names, which nests without end" in str(caught.value)


def test_a_text_or_a_file_past_the_size_limit_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    text = "id: g\nlayout: [{id: a}]\n# " + "x" * document.MAX_DOCUMENT_BYTES + "\n"
    with pytest.raises(GraphFileError) as caught:
        Graph.from_yaml(text)
    assert caught.value.limit == "MAX_DOCUMENT_BYTES"
    assert f"expected at most 1000000 characters (MAX_DOCUMENT_BYTES), found {len(text)}" in str(caught.value)

    path = tmp_path / "big.yml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(GraphFileError) as caught:
        Graph.load(path)
    assert caught.value.file == str(path) and caught.value.limit == "MAX_DOCUMENT_BYTES"
    assert (
        str(caught.value)
        == f"file {str(path)!r}: expected at most 1000000 bytes (MAX_DOCUMENT_BYTES), found {len(text)}"
    )


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("[" * 100_000 + "]" * 100_000, "MAX_DOCUMENT_DEPTH", "nested at most 64 levels deep"),
        ('{"id": "g", "meta": {"x": ' + "[" * 63 + "]" * 63 + "}}", "MAX_DOCUMENT_DEPTH", "nested at most 64"),
        ('{"id": "g", "meta": {"x": [' + "0, " * 100_000 + "0]}}", "MAX_DOCUMENT_VALUES", "at most 100000 values"),
    ],
)
def test_json_is_bounded_the_same_way(text: str, limit: str, expected: str) -> None:
    with pytest.raises(GraphFileError) as caught:
        Graph.from_json(text)

    assert caught.value.limit == limit and expected in str(caught.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id: " + "9" * 5000, "invalid YAML: a value that cannot be read: Exceeds the limit (4300 digits)"),
        ("id: 2024-13-45", "invalid YAML: a value that cannot be read: month must be in 1..12"),
        ("id: [unclosed", "invalid YAML: expected ',' or ']', but got '<stream end>' at line 1, column 14"),
        ("id: g\n\x07", "invalid YAML: the character U+0007 at offset 6: special characters are not allowed"),
        ("a: *nowhere", "invalid YAML: found undefined alias 'nowhere' at line 1, column 4"),
    ],
)
def test_bad_yaml_is_one_line_naming_where(text: str, expected: str) -> None:
    with pytest.raises(GraphFileError) as caught:
        Graph.from_yaml(text)

    assert str(caught.value).startswith(expected) and "\n" not in str(caught.value)
    assert caught.value.limit == ""


def test_a_file_that_is_not_a_regular_utf8_file_is_refused_naming_it(tmp_path: Path) -> None:
    cases = {"folder.yml": "expected a graph file, found a directory"}
    (tmp_path / "folder.yml").mkdir()
    (tmp_path / "latin1.yml").write_bytes(b"id: caf\xe9\n")
    cases["latin1.yml"] = "expected UTF-8 text, found the byte 0xe9 at offset 7"
    (tmp_path / "empty.yml").write_text("  \n", encoding="utf-8")
    cases["empty.yml"] = "expected a graph document, found an empty file"
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe.yml")
        cases["pipe.yml"] = "expected a regular file, found a device, a pipe or a socket"

    for name, expected in cases.items():
        path = tmp_path / name
        with pytest.raises(GraphFileError) as caught:
            Graph.load(path)
        assert str(caught.value) == f"file {str(path)!r}: {expected}" and caught.value.file == str(path)


def test_a_graph_error_from_a_file_keeps_its_type_and_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "script.yml"
    path.write_text("id: g\nlayout: [{id: a, task: 'print(1)'}]\n", encoding="utf-8")
    with pytest.raises(ScriptTaskError) as caught:
        Graph.load(path)
    assert caught.value.file == str(path)
    assert str(caught.value).startswith(f"file {str(path)!r}, graph 'g', node 'a', field 'task': inline script")

    path.write_text("- a list\n", encoding="utf-8")
    with pytest.raises(GraphError) as plain:
        Graph.load(path)
    assert str(plain.value) == f"file {str(path)!r}: a graph document must be a mapping, got list ['a list']"


def test_an_engine_that_fails_to_load_a_file_keeps_the_graphs_it_had(tmp_path: Path) -> None:
    engine = FlowEngine()
    kept = engine.load(Graph.from_yaml("id: kept\nlayout: [{id: a}]\n"))
    (tmp_path / "kept.yml").write_text(LAUGHS.replace("id: g", "id: kept"), encoding="utf-8")

    with pytest.raises(GraphFileError):
        engine.load(tmp_path / "kept.yml")

    assert engine.graphs == (kept,)

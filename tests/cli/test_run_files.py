"""``batonflow run`` on bad files: one line naming the file, exit 1, never a Python traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import batonflow
from batonflow.cli import main

LAUGHS = "id: g\nlayout: [{id: a}]\n" + "".join(
    f"{name}: &{name} [{', '.join([f'*{previous}'] * 9) if previous else ', '.join(['lol'] * 9)}]\n"
    for previous, name in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)


def write(name: str, content: str | bytes) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return path

    return make


def folder(folder: Path) -> Path:
    path = folder / "folder.yml"
    path.mkdir()
    return path


CASES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "missing": (lambda folder: folder / "missing.yml", "cannot read it: No such file or directory"),
    "a directory": (folder, "expected a graph file, found a directory"),
    "binary": (write("binary.yml", b"\x00\x01\x02\x03"), "invalid YAML: the character U+0000 at offset 0"),
    "not UTF-8": (write("latin1.yml", b"id: caf\xe9\n"), "expected UTF-8 text, found the byte 0xe9 at offset 7"),
    "empty": (write("empty.yml", ""), "expected a graph document, found an empty file"),
    "bad YAML": (write("bad.yml", "id: [unclosed"), "invalid YAML: expected ',' or ']', but got '<stream end>'"),
    "bad JSON": (write("bad.json", '{"id": '), "invalid JSON: Expecting value: line 1 column 8 (char 7)"),
    "a bomb": (write("bomb.yml", LAUGHS), "expected at most 100000 values (MAX_DOCUMENT_VALUES)"),
    "a recursive alias": (write("loop.yml", "id: &a [*a]\n"), "found the alias *a at line 1, column 9 inside"),
    "too deep": (write("deep.yml", "[" * 100_000), "expected values nested at most 64 levels deep"),
    "too deep JSON": (write("deep.json", "[" * 100_000), "expected values nested at most 64 levels deep"),
    "too big": (write("big.yml", "id: g\n#" + "x" * 1_000_000), "expected at most 1000000 bytes (MAX_DOCUMENT_BYTES)"),
    "a graph error": (write("link.yml", "id: g\nlayout: [{id: a, link: nowhere}]\n"), "graph 'g', node 'a', field"),
    "an unknown task": (
        write("task.yml", "id: g\nlayout: [{id: a, task: '@Nope'}]\n"),
        "graph 'g', node 'a': The task",
    ),
    "a script task": (write("script.yml", "id: g\nlayout: [{id: a, task: 'rm -rf /'}]\n"), "inline script tasks"),
    "a bad condition": (write("when.yml", "id: g\nlayout: [{id: a, when: 'x.__class__'}]\n"), "node 'a': expression"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_bad_flow_file_is_one_line_naming_it_and_exit_1(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make, expected = CASES[case]
    path = make(tmp_path)

    assert main(["run", str(path)]) == 1

    captured = capsys.readouterr()
    assert captured.out == ""
    line = captured.err.removesuffix("\n")
    assert "\n" not in line and line.startswith(f"batonflow: file {str(path)!r}")
    assert expected in line


def test_a_bad_sub_graph_file_is_named_itself(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flow = write("flow.yml", "id: flow\nlayout: [{id: a}]\n")(tmp_path)
    sub = write("sub.yml", "id: &a [*a]\n")(tmp_path)

    assert main(["run", str(flow), "--graph", str(sub)]) == 1

    assert capsys.readouterr().err.startswith(f"batonflow: file {str(sub)!r}: expected values nested at most 64")


def test_the_shell_sees_exit_1_and_no_traceback(tmp_path: Path) -> None:
    path = write("bomb.yml", LAUGHS)(tmp_path)
    source = Path(batonflow.__file__).resolve().parent.parent

    result = subprocess.run(
        [sys.executable, "-m", "batonflow", "run", str(path)],
        capture_output=True,
        text=True,
        timeout=120,  # a guard against a hang only
        env={**os.environ, "PYTHONPATH": str(source)},
    )

    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith(f"batonflow: file {str(path)!r}: expected at most 100000 values")
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1


THREE_WAYS = """id: g
layout:
  - {id: s, type: start, link: x}
  - {id: x, type: exclusive, link: [{nextId: a, when: "k == 1"}, {nextId: b}]}
  - {id: a, link: join1}
  - {id: b, link: join1}
  - {id: join1, type: parallel, link: e}
  - {id: e, type: end}
"""


def test_a_dead_join_is_refused_and_no_check_joins_runs_the_flow_to_where_it_waits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write("flow.yml", THREE_WAYS)(tmp_path)

    assert main(["run", str(path), "--var", "k=1"]) == 1
    assert "a parallel join waits for all its 2 inbound links" in capsys.readouterr().err

    assert main(["run", str(path), "--var", "k=1", "--no-check-joins"]) == 3
    captured = capsys.readouterr()
    assert json.loads(captured.out)["last_node"] == "join1"
    assert "the flow did not finish: graph 'g', node 'join1'" in captured.err


def test_no_check_joins_is_for_flow_files_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "m:agent", "--input", "x", "--no-check-joins"]) == 2
    assert "Invalid value for --no-check-joins: expected with a FLOW.yml target" in capsys.readouterr().err

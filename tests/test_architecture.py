"""The shape the code keeps: the layer order, packages that meet through their facades, and small pieces.

The layer order is the import-linter contract in pyproject.toml (``make lint`` runs it too). A package reaches
another through its facade (``from ..adk import RunContext``), never through its ``_``-prefixed modules, so that
what is private can be moved and renamed; tests hold to the same rule, through the public names only. No module of
the library grows past 500 lines and no function past 60.

PRIVATE_IMPORTS_ALLOWED and SIZE_ALLOWED name files that the work under way rewrites. Each entry goes with that
work, and an entry that no longer needs its place fails the test, so the lists can only shrink: they end empty.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import batonflow

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = SRC / "batonflow"

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60

PRIVATE_IMPORTS_ALLOWED: set[str] = set()

# White-box seams kept on purpose: (test file, private module). Not work in progress, so not in the list above.
PRIVATE_SEAMS_KEPT: set[tuple[str, str]] = {
    # The limit on nested walks, raised past Python's stack to show that a RecursionError still ends in a FlowRunError.
    ("tests/graph/test_engine.py", "batonflow.graph._engine"),
    # The loader's construction step replaced, to show that a refused document builds nothing.
    ("tests/graph/test_document.py", "batonflow.graph._document"),
    # The sandbox's price of a value, checked on values no expression could build cheaply.
    ("tests/graph/test_sandbox.py", "batonflow.graph._work"),
    ("tests/graph/test_sandbox.py", "batonflow.graph._work.size"),
    # The command's printer, on events no run of the command makes (markup and control characters in every field).
    ("tests/cli/test_events.py", "batonflow.cli._events"),
    ("tests/cli/test_events.py", "batonflow.cli._events.EventPrinter"),
    ("tests/cli/test_events.py", "batonflow.cli._events.plain"),
    # The server's JSON encoding of text UTF-8 cannot carry, which no well-formed request makes.
    ("tests/server/test_wire.py", "batonflow.server._wire"),
    ("tests/server/test_wire.py", "batonflow.server._wire.json_text"),
}

SIZE_ALLOWED: set[str] = set()


def relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def library_modules() -> Iterator[tuple[Path, str, str]]:
    """Each module of the library: its path, its dotted name, and the package it belongs to."""
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        if parts[-1] == "__init__":
            name = ".".join(parts[:-1])
            yield path, name, name
        else:
            name = ".".join(parts)
            yield path, name, name.rpartition(".")[0]


def imported(tree: ast.Module, module: str, package: str) -> Iterator[tuple[int, str]]:
    """(line, dotted name) of every batonflow module or name imported in ``tree``, relative imports resolved."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names if alias.name.startswith("batonflow"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target == "batonflow" or target.startswith("batonflow."):
                yield node.lineno, target
                yield from ((node.lineno, f"{target}.{alias.name}") for alias in node.names)


def private_owner(name: str) -> str | None:
    """The package whose private module (or name) ``name`` reaches into, or None for a public name."""
    parts = name.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
            return ".".join(parts[:i])
    return None


def may_import_privates_of(importer_package: str, owner: str) -> bool:
    # A package's own private modules, and those of the packages around it (batonflow.adk.loop is part of
    # batonflow.adk's implementation); the top-level package's private modules only from the top level.
    return importer_package == owner or (owner != "batonflow" and importer_package.startswith(owner + "."))


def library_private_imports() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path, module, package in library_modules():
        for line, name in imported(ast.parse(path.read_text()), module, package):
            owner = private_owner(name)
            if owner is not None and not may_import_privates_of(package, owner):
                found.setdefault(relative(path), []).append(f"line {line}: {name}")
    return found


def test_packages_meet_through_their_facades_never_through_private_modules() -> None:
    found = library_private_imports()
    offending = {path: names for path, names in found.items() if path not in PRIVATE_IMPORTS_ALLOWED}
    assert offending == {}, "promote the name to the package's facade (or a public module) and import it from there"


def private_imports_of_tests() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for _, name in imported(ast.parse(path.read_text()), "tests", "tests"):
            if private_owner(name) is not None:
                found.setdefault(relative(path), []).append(name)
    return found


def test_tests_use_only_public_modules_and_names() -> None:
    offending = {
        path: [name for name in names if (path, name) not in PRIVATE_SEAMS_KEPT]
        for path, names in private_imports_of_tests().items()
        if path not in PRIVATE_IMPORTS_ALLOWED
    }
    assert {path: names for path, names in offending.items() if names} == {}, (
        "test through the public API; a name a test needs is a name a user needs"
    )


def test_the_private_imports_allow_lists_hold_only_what_is_there() -> None:
    tests = private_imports_of_tests()
    stale = PRIVATE_IMPORTS_ALLOWED - set(library_private_imports()) - set(tests)
    assert stale == set(), "these files no longer import private modules: remove them from the allow-list"
    kept = {(path, name) for path, names in tests.items() for name in names}
    assert PRIVATE_SEAMS_KEPT - kept == set(), "these seams are gone: remove them from the list"


def test_the_layer_order_holds() -> None:
    # import-linter reads the package that `import batonflow` finds: it must be this checkout's.
    assert Path(batonflow.__file__).resolve().parent == PACKAGE
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(lint_imports), "--no-cache", "--no-logo", str(ROOT / "pyproject.toml")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def oversized() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path, _, _ in library_modules():
        source = path.read_text()
        lines = len(source.splitlines())
        if lines > MAX_MODULE_LINES:
            found.setdefault(relative(path), []).append(f"the module: {lines} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.setdefault(relative(path), []).append(f"{node.name} (line {node.lineno}): {length} lines")
    return found


def test_no_module_over_500_lines_and_no_function_over_60() -> None:
    assert {path: what for path, what in oversized().items() if path not in SIZE_ALLOWED} == {}


def test_the_size_allow_list_holds_only_files_that_need_it() -> None:
    stale = SIZE_ALLOWED - set(oversized())
    assert stale == set(), "these files are small enough now: remove them from the allow-list"


# An assertion that an elapsed wall time stays under a limit: a clock reading minus a start compared with "<", or a
# duration named so (took, elapsed, latency, recovery, wall_s) compared with "<". Such a test fails when the machine
# is loaded, not when the code is wrong; a lower bound ("it waited at least") is fine, as is a deadline that guards
# against a hang while waiting for a condition.
WALL_CLOCK_LIMIT = re.compile(
    r"^\s*assert\b.*(?:\b(?:monotonic|perf_counter|time)\(\)\s*-\s*\w+|\b(?:took|elapsed|latency|recovery|wall_s)\b)"
    r"\s*<"
)


def wall_clock_limits(text: str) -> list[int]:
    """The line numbers of ``text`` that assert an elapsed wall time against a limit."""
    return [number for number, line in enumerate(text.splitlines(), 1) if WALL_CLOCK_LIMIT.search(line)]


def test_the_wall_clock_limit_finder_tells_limits_from_deadlines_and_lower_bounds() -> None:
    limits = [
        "    assert time.monotonic() - started < 2.0",
        "    assert 0.15 < time.perf_counter() - t0 < 1.5",
        '    assert sleeper.cancelled() and took < 1.0, f"{took}"',
        "        assert latency < 1.0",
    ]
    fine = [
        "    assert time.monotonic() < deadline, 'never came'",
        "    assert time.monotonic() - started > 0.15  # it waited",
        "    await asyncio.wait_for(call, WAIT)",
        "    assert growth(refuse, 1_000) < 40",
    ]
    assert wall_clock_limits("\n".join(limits + fine)) == [1, 2, 3, 4]


def test_no_test_asserts_a_wall_clock_limit() -> None:
    """Claims about time belong in benchmarks/; a test checks counts, or growth within one run (tests/growth.py)."""
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for number in wall_clock_limits(path.read_text())
    ]
    assert found == [], f"expected no assertion of elapsed wall time under a limit, found: {', '.join(found)}"

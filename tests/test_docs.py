"""The concept pages of docs/ run: every ```python block of a page is executed, in order, as one program.

A page's blocks run as a reader would copy them: in order, into one fresh ``__main__`` module with nothing
imported beforehand, in a process of its own whose working folder is a fresh empty one. A block may ``await`` at
its top level, as in ``python -m asyncio``: the blocks share one event loop. A block that is not meant to run (a
sketch with a real model, a fragment) is marked by the line ``<!-- not run -->`` just before its fence. The
programs run against the real PostgreSQL and Redis servers where a page uses them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from tests.services import POSTGRES_DSN, REDIS_URL, drop_tables

import batonflow

ROOT = Path(__file__).resolve().parent.parent
SRC = Path(batonflow.__file__).resolve().parent.parent
PAGES = [
    "agents.md",
    "transfer.md",
    "interrupts.md",
    "stores.md",
    "sessions.md",
    "solon-agents.md",
    "observability.md",
    "graph.md",
    "graph-expressions.md",
    "teams.md",
    "flows.md",
    "composition.md",
    "models.md",
    "mcp.md",
    "interop.md",
    "serving.md",
    "distributed.md",
    "evals.md",
    "history.md",
]
NOT_RUN = "<!-- not run -->"
# The services as the pages name them, and what the tests run them on.
SERVICES = {"postgresql://postgres@127.0.0.1:5432/test": POSTGRES_DSN, "redis://127.0.0.1:6379/0": REDIS_URL}
FENCE = re.compile(r"^```(\w*)\s*$")


def blocks(text: str) -> list[tuple[int, str, bool]]:
    """Each ```python block of a Markdown text: its first line's number, its code, and whether it is to run."""
    found: list[tuple[int, str, bool]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), None)
        if end is None:
            raise ValueError(f"line {i + 1}: expected a closing ``` for this block, got the end of the page")
        previous = next((line for line in reversed(lines[:i]) if line.strip()), "")
        if opening.group(1) == "python":
            found.append((i + 2, "\n".join(lines[i + 1 : end]), previous.strip() != NOT_RUN))
        elif previous.strip() == NOT_RUN:
            raise ValueError(f"line {i + 1}: {NOT_RUN} marks python blocks only, got a {opening.group(1)!r} block")
        i = end + 1
    return found


# The runner's own imports stay in its module; the page's blocks run in a new ``__main__`` that starts empty.
RUNNER = """\
import ast, asyncio, json, sys, types

async def run(page, blocks):
    main = types.ModuleType("__main__")
    sys.modules["__main__"] = main
    for line, code in blocks:
        compiled = compile("\\n" * (line - 1) + code, page, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        result = types.FunctionType(compiled, main.__dict__)()
        if result is not None:
            await result

asyncio.run(run(sys.argv[1], json.load(sys.stdin)))
"""


def program(text: str) -> list[tuple[int, str]]:
    """The runnable blocks of a page, in order: each with its first line's number, for tracebacks."""
    return [(line, code) for line, code, run in blocks(text) if run]


def test_the_block_reader_runs_what_is_unmarked_and_skips_what_is_marked() -> None:
    text = f"Intro.\n\n```python\nx = 1\n```\n\n{NOT_RUN}\n```python\nload_model('openai:x')\n```\n\n```sh\nls\n```\n"
    assert blocks(text) == [(4, "x = 1", True), (9, "load_model('openai:x')", False)]
    assert program(text) == [(4, "x = 1")]


def test_a_marker_on_another_kind_of_block_or_an_unclosed_block_is_refused() -> None:
    with pytest.raises(ValueError, match="marks python blocks only, got a 'sh' block"):
        blocks(f"{NOT_RUN}\n```sh\nls\n```\n")
    with pytest.raises(ValueError, match="line 1: expected a closing ``` for this block, got the end of the page"):
        blocks("```python\nx = 1\n")


def test_the_readme_links_every_concept_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert [page for page in PAGES if f"(docs/{page})" not in readme] == []


def run_page(page: str, text: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``text``'s blocks. A page names the services ``scripts/services`` sets up (the ``test`` database, Redis
    database 0) as a reader would; they run on the ones the tests' settings name (``tests/services.py``)."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    for default, setting in SERVICES.items():
        text = text.replace(default, setting)
    return subprocess.run(
        [sys.executable, "-c", RUNNER, f"docs/{page}"],
        input=json.dumps(program(text)),
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def test_a_page_starts_with_nothing_imported_in_an_empty_folder_and_may_await_at_top_level(tmp_path: Path) -> None:
    text = (
        "```python\nimport os\nassert os.listdir() == [], os.listdir()\n```\n\n"
        "```python\nfor name in ('asyncio', 'ast', 'json', 'sys', 'types', 'run'):\n"
        "    assert name not in globals(), name\nassert __name__ == '__main__'\n```\n\n"
        "```python\nimport asyncio\nawait asyncio.sleep(0)\nprint('awaited', os.getcwd())\n```\n"
    )
    done = run_page("probe.md", text, tmp_path)
    assert (done.returncode, done.stdout) == (0, f"awaited {tmp_path}\n"), done.stderr


def test_a_page_s_services_are_the_ones_the_tests_settings_name(tmp_path: Path) -> None:
    text = '```python\nprint("postgresql://postgres@127.0.0.1:5432/test", "redis://127.0.0.1:6379/0")\n```\n'
    done = run_page("probe.md", text, tmp_path)
    assert (done.returncode, done.stdout) == (0, f"{POSTGRES_DSN} {REDIS_URL}\n"), done.stderr


def test_a_failing_block_is_reported_at_its_line_in_the_page(tmp_path: Path) -> None:
    done = run_page("probe.md", "Intro.\n\n```python\nx = 1\nasyncio.sleep(0)\n```\n", tmp_path)
    assert done.returncode == 1
    assert 'File "docs/probe.md", line 5' in done.stderr
    assert "NameError: name 'asyncio' is not defined" in done.stderr


def _library_tables() -> set[str]:
    """The tables under the stores' default names (``batonflow_...``) in the tests' database."""
    with psycopg.connect(POSTGRES_DSN) as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = 'public' AND table_name LIKE 'batonflow\\_%'"
        )
        return {name for (name,) in rows}


@pytest.fixture
def page_tables() -> Iterator[None]:
    """A page uses the stores as a reader would, under their default table names: the ones its run made are dropped
    afterwards, so that the tests leave nothing behind (tests/conftest.py checks)."""
    before = _library_tables()
    yield
    drop_tables(*sorted(_library_tables() - before))


@pytest.mark.parametrize("page", PAGES)
def test_the_page_s_code_runs(page: str, tmp_path: Path, page_tables: None) -> None:
    text = (ROOT / "docs" / page).read_text()
    assert any(run for _, _, run in blocks(text)), f"{page}: expected runnable python blocks, got none"
    done = run_page(page, text, tmp_path)
    assert done.returncode == 0, f"docs/{page} failed:\n{done.stderr}"

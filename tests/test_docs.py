"""The concept pages of docs/ run: every ```python block of a page is executed, in order, as one program.

A page's blocks share their names, as a reader would type them into one notebook; they run inside one async
function, so a block may ``await`` at its top level. A block that is not meant to run (a sketch with a real
model, a fragment) is marked by the line ``<!-- not run -->`` just before its fence. The program runs in a process
of its own, in a fresh folder (for the files a page's stores make), against the real PostgreSQL and Redis servers
where a page uses them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

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
    "serving.md",
    "distributed.md",
]
NOT_RUN = "<!-- not run -->"
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


def program(text: str) -> str:
    """The runnable blocks of a page as one script: one async function that runs them in order."""
    body = "".join(
        f"    # block at line {line}\n{textwrap.indent(code, '    ')}\n" for line, code, run in blocks(text) if run
    )
    return f"import asyncio\n\n\nasync def page() -> None:\n{body}    pass\n\n\nasyncio.run(page())\n"


def test_the_block_reader_runs_what_is_unmarked_and_skips_what_is_marked() -> None:
    text = f"Intro.\n\n```python\nx = 1\n```\n\n{NOT_RUN}\n```python\nload_model('openai:x')\n```\n\n```sh\nls\n```\n"
    assert blocks(text) == [(4, "x = 1", True), (9, "load_model('openai:x')", False)]
    assert "x = 1" in program(text) and "load_model" not in program(text)


def test_a_marker_on_another_kind_of_block_or_an_unclosed_block_is_refused() -> None:
    with pytest.raises(ValueError, match="marks python blocks only, got a 'sh' block"):
        blocks(f"{NOT_RUN}\n```sh\nls\n```\n")
    with pytest.raises(ValueError, match="line 1: expected a closing ``` for this block, got the end of the page"):
        blocks("```python\nx = 1\n")


def test_the_readme_links_every_concept_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert [page for page in PAGES if f"(docs/{page})" not in readme] == []


@pytest.mark.parametrize("page", PAGES)
def test_the_page_s_code_runs(page: str, tmp_path: Path) -> None:
    text = (ROOT / "docs" / page).read_text()
    assert any(run for _, _, run in blocks(text)), f"{page}: expected runnable python blocks, got none"
    script = tmp_path / f"{page}.py"
    script.write_text(program(text))
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False
    )
    assert done.returncode == 0, f"docs/{page} failed:\n{done.stderr}"

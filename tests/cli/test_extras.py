"""A command that needs an extra which is not installed says so in one line, naming the install command, and exits 2:
each case runs the command in a child process where the extra's module cannot be imported."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

AGENT = """
from batonflow import ChatModelAgent
from batonflow.schema import assistant
from batonflow.testing import ScriptedModel

agent = ChatModelAgent(name="a", description="answers", model=ScriptedModel([assistant("hi")]))
"""

# The child hides ``module`` as an uninstalled package looks to ``import``, then runs the command.
CHILD = (
    "import sys; sys.modules[sys.argv[1]] = None; from batonflow.cli import main; raise SystemExit(main(sys.argv[2:]))"
)


def _without(module: str, args: list[str], folder: Path) -> subprocess.CompletedProcess[str]:
    (folder / "extras_agents.py").write_text(AGENT)
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{folder}", "NO_COLOR": "1"}
    command = [sys.executable, "-c", CHILD, module, *args]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize(
    ("module", "extra", "args"),
    [
        ("fastapi", "server", ["serve", "extras_agents:agent"]),
        ("fastapi", "server", ["web", "extras_agents:agent"]),
        ("uvicorn", "server", ["serve", "extras_agents:agent"]),
        ("ag_ui", "agui", ["serve", "extras_agents:agent", "--agui"]),
        ("a2a", "a2a", ["serve", "extras_agents:agent", "--a2a"]),
        ("mcp", "mcp", ["mcp", "extras_agents:agent"]),
        ("mcp", "mcp", ["mcp", "extras_agents:agent", "--http"]),
        (
            "dbos",
            "dbos",
            [
                "worker",
                "extras_agents:agent",
                "--database-url",
                "postgresql://127.0.0.1:1/none",
                "--store",
                "sqlite:x.db",
            ],
        ),
        ("asyncpg", "postgres", ["run", "extras_agents:agent", "--input", "x", "--store", "postgres:postgresql://h/x"]),
        ("llama_cpp", "local", ["demo"]),
        ("typer", "cli", ["--version"]),
        ("rich", "cli", ["demo", "--model", "scripted"]),
    ],
)
def test_a_missing_extra_is_one_line_naming_the_install_command(
    module: str, extra: str, args: list[str], tmp_path: Path
) -> None:
    done = _without(module, args, tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"batonflow: this command needs the {extra} extra, which is not installed (expected the module {module!r}, "
        f"found none): pip install 'batonflow[{extra}]'\n"
    )


def test_a_missing_module_that_no_extra_brings_is_not_named_an_extra(tmp_path: Path) -> None:
    done = _without("fastapi", ["run", "no_such_module:agent", "--input", "x"], tmp_path)
    assert done.returncode == 2
    assert "expected an importable module 'no_such_module'" in done.stderr
    assert "extra" not in done.stderr

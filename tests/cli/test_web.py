"""``batonflow web`` prints the dev UI's URL before it tries a browser, and says when none could be opened: the
command runs in a child process with ``$BROWSER`` set to a command that fails, or to one that succeeds."""

from __future__ import annotations

import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

AGENT = """
from batonflow import ChatModelAgent
from batonflow.schema import assistant
from batonflow.testing import ScriptedModel

agent = ChatModelAgent(name="a", description="answers", model=ScriptedModel([assistant("hi")]))
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _web(folder: Path, browser: str, until: Callable[[list[str]], bool], *options: str) -> list[str]:
    """The lines ``batonflow web`` printed of itself (stdout and stderr together) by the time ``until`` holds of
    them; then it is stopped."""
    (folder / "web_agents.py").write_text(AGENT)
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{folder}", "BROWSER": browser, "NO_COLOR": "1"}
    command = [sys.executable, "-m", "batonflow", "web", "web_agents:agent", "--port", str(_free_port()), *options]
    child = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue[str] = queue.Queue()
    output = child.stdout
    assert output is not None
    reader = threading.Thread(target=lambda: [lines.put(line.rstrip("\n")) for line in output], daemon=True)
    reader.start()
    seen: list[str] = []
    deadline = time.monotonic() + 60
    try:
        while not until(seen) and time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.1)
            except queue.Empty:
                continue
            if line.startswith("batonflow web:"):
                seen.append(line)
    finally:
        child.terminate()
        child.wait(10)
    assert until(seen), seen
    return seen


def test_the_url_is_printed_and_a_missing_browser_is_said(tmp_path: Path) -> None:
    said = _web(tmp_path, str(tmp_path / "no-such-browser"), lambda seen: len(seen) >= 2)
    assert said[0].startswith("batonflow web: the dev UI is at http://127.0.0.1:")
    url = said[0].removeprefix("batonflow web: the dev UI is at ")
    assert url.endswith("/ui/")
    assert said[1] == f"batonflow web: no browser could be opened here; open {url} in one"


def test_an_opened_browser_gets_the_url_and_is_not_reported_missing(tmp_path: Path) -> None:
    opened = tmp_path / "opened"
    browser = tmp_path / "browser"
    browser.write_text(f'#!/bin/sh\necho "$1" > {opened}\n')
    browser.chmod(0o755)
    said = _web(tmp_path, str(browser), lambda seen: bool(seen) and opened.exists())
    assert said == [f"batonflow web: the dev UI is at {opened.read_text().strip()}"]


def test_an_ipv6_host_is_printed_in_brackets(tmp_path: Path) -> None:
    said = _web(tmp_path, str(tmp_path / "no-such-browser"), lambda seen: bool(seen), "--host", "::1")
    assert said[0].startswith("batonflow web: the dev UI is at http://[::1]:") and said[0].endswith("/ui/")

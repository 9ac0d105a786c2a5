"""docs/distributed.md's local recipe, followed as written: its commands are read from the page (so page and test
cannot drift), in its order, with its flags; two workers and two API processes started as it says, a run started
on one API with its curl line and followed on the other with its curl line, to its completed end.

What the test does differently from a reader, and why:

- **Names of its own.** The page's database (``batonflow``) and ports (8001, 8002) are replaced, where the page
  writes them, by a fresh database name and two free ports, so that the test neither clashes with another run of
  itself nor with a database a developer made by following the page. Each replaced text must be on the page.
- **Set-up that is already done.** The page's set-up needs root and apt on a fresh machine. Its ``sudo`` is a
  shell function here (``PRELUDE``) that decides per command: ``apt-get install`` is skipped when PostgreSQL
  (``pg_isready``) and Redis (``redis-cli ping``) already answer on 127.0.0.1; anything else runs as the user named
  by ``-u``, through ``sudo`` when there is one, else through ``runuser`` (CI runs as root and has no sudo).
- **A role of its own.** The page's role (``batonflow``) is replaced by a fresh name too, dropped afterwards. The
  test checks that the processes ran as that role (it owns DBOS's tables), that it is no superuser, and that the
  ``postgres`` role is as it was before the recipe ran.
- **A terminal of its own** is a background process whose output goes to a log; the test waits, as a reader would,
  for a worker to say ``taking segments`` and for an API process to answer ``/health``; Ctrl-C is SIGINT.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import pytest
from tests.server.conftest import parse_sse
from tests.services import new_database_name

from .conftest import ADMIN_DSN, ROOT

PAGE = ROOT / "docs" / "distributed.md"
SECTION = "## A local recipe: two workers and two API processes on one machine"
FENCE = re.compile(r"^```(\w*)\s*$")

PRELUDE = r"""
sudo() {
    case "$*" in
        "apt-get install"*)
            if pg_isready -q -h 127.0.0.1 -p 5432 && redis-cli -h 127.0.0.1 -p 6379 ping | grep -q PONG; then
                echo "recipe: PostgreSQL and Redis answer on 127.0.0.1: skipped: sudo $*"
                return 0
            fi ;;
    esac
    if type -P sudo >/dev/null; then command sudo "$@"; return; fi
    if [ "$1" = "-u" ]; then local user="$2"; shift 2; runuser -u "$user" -- "$@"; else "$@"; fi
}
"""
"""What stands in for a reader's terminal with sudo (see the module's docstring)."""


@dataclass
class Block:
    language: str
    line: int
    code: str


def recipe_blocks(text: str) -> list[Block]:
    """The fenced blocks of the recipe's section, in order."""
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    lines = text[start : None if end < 0 else end].splitlines()
    first = text[:start].count("\n") + 1
    found, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        close = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        found.append(Block(opening.group(1), first + i + 1, "\n".join(lines[i + 1 : close])))
        i = close + 1
    return found


def replaced(code: str, names: dict[str, str]) -> str:
    """``code`` with each of ``names``' texts replaced; each must be there (else the page changed under the test)."""
    for old, new in names.items():
        if old not in code:
            raise ValueError(f"docs/distributed.md's recipe: expected {old!r} in the block, got:\n{code}")
        code = code.replace(old, new)
    return code


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Terminal:
    """One command of the recipe running as a reader's terminal would run it: in the background, its output in
    a log, in a process group of its own (so that Ctrl-C reaches the command, not only its shell)."""

    def __init__(self, command: str, folder: Path, env: dict[str, str], name: str) -> None:
        self.command = command
        self.log = folder / f"{name}.log"
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                ["bash", "-c", PRELUDE + command],
                cwd=folder,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def until(self, ready: Callable[[], bool], what: str, within: float = 60.0) -> None:
        deadline = time.monotonic() + within
        while not ready():
            if self.process.poll() is not None:
                raise AssertionError(f"{self.command!r} exited ({self.process.returncode}):\n{self.text()[-3000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.command!r}: {what} within {within} s:\n{self.text()[-3000:]}")
            time.sleep(0.1)

    def interrupt(self) -> int:
        """Ctrl-C, then its exit status (killed if it did not stop within 20 s)."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(5)
        return self.process.returncode


def _answers(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def _shell(code: str, folder: Path, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", PRELUDE + code],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"{code}\nfailed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture
def database() -> Iterator[str]:
    """The recipe's database and role (one name), named for this test; dropped afterwards even when the recipe's
    own drops did not run."""
    name = new_database_name("recipe")
    try:
        yield name
    finally:
        with psycopg.connect(ADMIN_DSN, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            admin.execute(f"DROP ROLE IF EXISTS {name}")


_SUPERUSER = "SELECT rolpassword, rolvaliduntil, rolsuper, rolcanlogin FROM pg_authid WHERE rolname = 'postgres'"


def test_the_page_holds_the_recipe_this_test_follows() -> None:
    kinds = [(b.language, b.code.splitlines()[0]) for b in recipe_blocks(PAGE.read_text())]
    assert kinds == [
        ("bash", "sudo apt-get install -y postgresql redis-server"),
        ("python", "# myapp.py"),
        ("bash", "batonflow worker myapp:agents --store sqlite:runs.db --concurrency 50"),
        ("bash", "batonflow serve myapp:agents --backend dbos --store sqlite:runs.db --port 8001"),
        ("bash", "run=$(curl -s localhost:8001/runs -H 'Content-Type: application/json' \\"),
        ("bash", "sudo -u postgres dropdb --force batonflow"),
    ]
    assert "ALTER USER postgres" not in PAGE.read_text()


def test_a_missing_text_to_replace_is_a_clear_failure() -> None:
    with pytest.raises(ValueError, match=r"expected '--port 8001' in the block, got:\nbatonflow serve x --port 9$"):
        replaced("batonflow serve x --port 9", {"--port 8001": "--port 1"})


def test_the_local_recipe_runs_as_written(tmp_path: Path, database: str) -> None:
    setup, app, workers, apis, follow, cleanup = recipe_blocks(PAGE.read_text())
    ports = {"8001": str(_free_port()), "8002": str(_free_port())}
    names = {
        "CREATE ROLE batonflow": f"CREATE ROLE {database}",
        "createdb --owner batonflow batonflow": f"createdb --owner {database} {database}",
        "postgresql://batonflow:batonflow@127.0.0.1:5432/batonflow": f"postgresql://{database}:batonflow@127.0.0.1:5432/{database}",
    }
    listen = {f"--port {old}": f"--port {new}" for old, new in ports.items()}
    reach = {f"localhost:{old}": f"localhost:{new}" for old, new in ports.items()}
    (tmp_path / "myapp.py").write_text(app.code + "\n")
    bin_dir = str(Path(sys.executable).parent)  # batonflow and python3 of this environment, this checkout's code
    env = {
        **os.environ,
        "PATH": os.pathsep.join([bin_dir, os.environ.get("PATH", "")]),
        "PYTHONPATH": str(ROOT / "src"),
    }

    with psycopg.connect(ADMIN_DSN) as admin:
        superuser = admin.execute(_SUPERUSER).fetchone()
    out = _shell(replaced(setup.code, names) + '\nenv -0 > "$RECIPE_ENV"', tmp_path, {**env, "RECIPE_ENV": "env"})
    exported = dict(item.split("=", 1) for item in (tmp_path / "env").read_text().split("\0") if "=" in item)
    env |= {k: v for k, v in exported.items() if k.startswith("BATONFLOW_")}
    assert env["BATONFLOW_DATABASE_URL"].endswith(f"@127.0.0.1:5432/{database}"), out.stdout

    terminals: list[Terminal] = []
    try:
        for n, command in enumerate(workers.code.splitlines()):
            terminals.append(Terminal(command, tmp_path, env, f"worker-{n}"))
            log = terminals[-1]
            log.until(lambda log=log: "taking segments" in log.text(), "no 'taking segments' in its log")
        for n, command in enumerate(replaced(apis.code, listen).splitlines()):
            port = int(command.rpartition("--port ")[2].split()[0])
            terminals.append(Terminal(command, tmp_path, env, f"api-{n}"))
            terminals[-1].until(lambda port=port: _answers(port), f"no answer on port {port}")
        followed = _shell(replaced(follow.code, reach), tmp_path, env, timeout=60)
        with psycopg.connect(env["BATONFLOW_DATABASE_URL"]) as own:  # the processes' role, over TCP
            owners = own.execute("SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = 'dbos'").fetchall()
            role = own.execute(
                "SELECT rolsuper, rolcreatedb, rolcreaterole FROM pg_roles WHERE rolname = current_user"
            ).fetchone()
    finally:
        stopped = [t.interrupt() for t in reversed(terminals)]
    frames = parse_sse(followed.stdout)
    assert frames and frames[-1].event == "end", followed.stdout
    end = frames[-1].data
    assert end["status"] == "completed" and end["text"] == "order 7 shipped", end
    assert end["run_id"].startswith("ckpt-") and end["run_id"].endswith("@start")
    events = [f for f in frames if "message" in f.data]  # the run's agent events, after its "run" frame
    assert frames[0].event == "run" and events[0].data["message"]["tool_calls"][0]["name"] == "ship"
    assert stopped == [0, 0, 0, 0], [t.text()[-2000:] for t in terminals]  # each stopped on Ctrl-C

    assert owners == [(database,)] and role == (False, False, False)  # DBOS's tables made by the recipe's role
    drops = {"dropdb --force batonflow": f"dropdb --force {database}", "dropuser batonflow": f"dropuser {database}"}
    _shell(replaced(cleanup.code, drops), tmp_path, env)
    with psycopg.connect(ADMIN_DSN) as admin:
        left = admin.execute("SELECT count(*) FROM pg_database WHERE datname = %s", (database,)).fetchone()
        roles = admin.execute("SELECT count(*) FROM pg_roles WHERE rolname = %s", (database,)).fetchone()
        assert admin.execute(_SUPERUSER).fetchone() == superuser  # the recipe left the postgres role alone
    assert left == (0,) and roles == (0,)

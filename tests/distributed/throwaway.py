"""A PostgreSQL server of a test's own, on a port of its own, that the test may stop and start again (an outage):
never the shared one. ``initdb`` and ``postgres`` from the machine's PostgreSQL, run as the ``postgres`` user when
the tests run as root (PostgreSQL refuses root)."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg


def _binary(name: str) -> str:
    found = shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None)
    if found is None:
        raise RuntimeError(f"throwaway PostgreSQL: expected {name} on PATH or in /usr/lib/postgresql/*/bin, got none")
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ThrowawayPostgres:
    """A PostgreSQL server in a temporary directory of its own (which ``remove`` deletes), on a free loopback port,
    trusting every local connection."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="batonflow-pg-"))  # not under pytest's root-only folder
        self.data = self.directory / "data"
        self.port = _free_port()
        self._process: subprocess.Popen[bytes] | None = None
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:
            shutil.chown(self.directory, "postgres")
        self._run([_binary("initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8"])

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _command(self, command: list[str]) -> list[str]:
        return ["runuser", "-u", "postgres", "--", *command] if self._as_postgres else command

    def _run(self, command: list[str]) -> None:
        done = subprocess.run(self._command(command), capture_output=True)
        if done.returncode != 0:
            raise RuntimeError(f"{command[0]} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)

    def start(self) -> None:
        log = (self.directory / "server.log").open("ab")
        options = [
            "-D", str(self.data), "-p", str(self.port), "-k", str(self.directory), "-c", "listen_addresses=127.0.0.1",
            "-c", "fsync=off", "-c", "max_connections=200",
        ]  # fmt: skip
        self._process = subprocess.Popen(self._command([_binary("postgres"), *options]), stdout=log, stderr=log)
        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(self.url, connect_timeout=1):
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline or self._process.poll() is not None:
                    raise RuntimeError((self.directory / "server.log").read_text()[-2000:]) from None
                time.sleep(0.1)

    def stop(self) -> None:
        """Stop the server at once (its clients' connections break): the outage."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            self._run([_binary("pg_ctl"), "-D", str(self.data), "stop", "-m", "immediate", "-w"])
            _reap(process)


def _reap(process: subprocess.Popen[bytes]) -> None:
    """Wait for the server's ``runuser`` to exit once the server has. ``runuser`` stops itself when it sees its
    child stopped (a test that SIGSTOPs the server's processes) and may do so after the test's SIGCONT reached it, so
    it is continued again while it is waited for."""
    for _ in range(300):
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGCONT)
        try:
            process.wait(0.1)
            return
        except subprocess.TimeoutExpired:
            continue
    process.wait(0)

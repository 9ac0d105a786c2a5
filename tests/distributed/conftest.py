"""A DBOS worker process for the distributed tests: a database of its own per test module (created, then dropped),
the worker started once per module (``batonflow worker`` in a subprocess), and its log to look into."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import pytest
from fastapi import FastAPI
from tests.server.conftest import asgi_client
from tests.services import POSTGRES_DSN as ADMIN_DSN
from tests.services import REDIS_URL, new_database_name

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Worker:
    process: subprocess.Popen[bytes]
    log: Path

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def wait_for(self, needle: str, within: float = 30.0) -> None:
        deadline = time.monotonic() + within
        while needle not in self.text():
            if self.process.poll() is not None:
                raise AssertionError(f"the worker exited ({self.process.returncode}):\n{self.text()[-3000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"the worker did not log {needle!r} within {within} s:\n{self.text()[-3000:]}")
            time.sleep(0.05)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        return self.process.returncode


@dataclass
class Cluster:
    database_url: str
    store_path: Path
    effects: Path
    tmp: Path
    postgres_store: bool = False  # checkpoints in the cluster's database (as on several machines), not a file

    @property
    def store_spec(self) -> str:
        return f"postgres:{self.database_url}" if self.postgres_store else f"sqlite:{self.store_path}"

    @property
    def tick_gate(self) -> Path:
        """The file a ``ticker`` run given ``N/H`` waits for at step ``H`` (see ``apps``)."""
        return self.tmp / "tick-gate"

    def start_worker(
        self,
        *extra: str,
        concurrency: int = 8,
        branch_concurrency: int | None = None,
        redis_url: str = REDIS_URL,
        events_url: str | None = None,
        module: str = "batonflow",
    ) -> Worker:
        """A ``batonflow worker`` of the cluster, its live events in Redis, or at ``events_url`` when given;
        ``module`` is what runs the command line (``python -m module worker …``)."""
        log = self.tmp / f"worker-{uuid.uuid4().hex[:6]}.log"
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
            "BATONFLOW_TEST_SIDE_EFFECTS": str(self.effects),
            "BATONFLOW_TEST_TICK_GATE": str(self.tick_gate),
        }
        env.pop("BATONFLOW_REDIS_URL", None)  # the option below says where events go
        env.pop("BATONFLOW_EVENTS_URL", None)
        command = [
            sys.executable,
            "-m",
            module,
            "worker",
            "tests.distributed.apps:agents",
            "--database-url",
            self.database_url,
            "--store",
            self.store_spec,
            "--concurrency",
            str(concurrency),
            *(["--redis-url", redis_url] if events_url is None else ["--events-url", events_url]),
            *(("--branch-concurrency", str(branch_concurrency)) if branch_concurrency is not None else ()),
            *extra,
        ]
        with log.open("wb") as out:
            process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        worker = Worker(process, log)
        worker.wait_for("taking segments")
        return worker

    def effect_lines(self) -> list[str]:
        return self.effects.read_text().splitlines() if self.effects.exists() else []


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    name = new_database_name("dbos")
    with psycopg.connect(ADMIN_DSN, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    base, _, _ = ADMIN_DSN.rpartition("/")
    tmp = tmp_path_factory.mktemp("cluster")
    try:
        yield Cluster(f"{base}/{name}", tmp / "checkpoints.db", tmp / "effects", tmp)
    finally:
        with psycopg.connect(ADMIN_DSN, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(scope="module")
def worker(cluster: Cluster) -> Iterator[Worker]:
    running = cluster.start_worker()
    try:
        yield running
    finally:
        running.stop()


@asynccontextmanager
async def two_apis(one: FastAPI, two: FastAPI) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    """Clients of two API processes' apps (in this process, each with its own lifespan), as a load balancer's
    clients reach two of them."""
    async with (
        one.router.lifespan_context(one),
        two.router.lifespan_context(two),
        asgi_client(one, timeout=20) as a,
        asgi_client(two, timeout=20) as b,
    ):
        yield a, b


def serve_command(cluster: Cluster, port: int, *events: str) -> list[str]:
    """``batonflow serve`` of the test agents on the DBOS backend of ``cluster``, its live events at ``events``
    (``--redis-url URL`` or ``--events-url URL``)."""
    return [
        sys.executable,
        "-m",
        "batonflow",
        "serve",
        "tests.distributed.apps:agents",
        "--port",
        str(port),
        "--store",
        f"sqlite:{cluster.store_path}",
        "--backend",
        "dbos",
        "--database-url",
        cluster.database_url,
        *events,
    ]

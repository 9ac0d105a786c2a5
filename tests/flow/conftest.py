"""Fixtures for flow tests: an embedding model made of word counts, an engine with a scripted console, a static
HTTP server on loopback, and a real llama.cpp server (chat and embeddings) running SmolLM2."""

from __future__ import annotations

import hashlib
import http.server
import io
import math
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

import pytest

from batonflow.flow import AiFlowEngine

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "flows"
_SERVER_START_TIMEOUT = 120.0


class WordEmbedding:
    """An embedding model for tests: each word counts in one of 64 dimensions (chosen by its hash), so texts that
    share words are near. It records what it embedded."""

    model_name = "words"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [self.vector(text) for text in texts]

    @staticmethod
    def vector(text: str) -> list[float]:
        vector = [0.0] * 64
        for word in re.findall(r"\w+", text.lower()):
            vector[hashlib.sha256(word.encode()).digest()[0] % 64] += 1.0
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        return [x / norm for x in vector]


class Console:
    """stdin and stdout for an engine: ``lines`` are read, ``printed`` is what was written."""

    def __init__(self, lines: Sequence[str] = ()) -> None:
        self.stdin = io.StringIO("".join(f"{line}\n" for line in lines))
        self.stdout = io.StringIO()

    @property
    def printed(self) -> list[str]:
        return self.stdout.getvalue().splitlines()


@pytest.fixture
def console() -> Console:
    return Console()


@pytest.fixture
def engine(console: Console) -> AiFlowEngine:
    return AiFlowEngine(stdin=console.stdin, stdout=console.stdout)


@pytest.fixture
def loopback_engine(console: Console) -> AiFlowEngine:
    """An engine whose flows may connect to loopback (the test servers), and nowhere else."""
    return AiFlowEngine(stdin=console.stdin, stdout=console.stdout, allowed_hosts=["127.0.0.0/8"])


@pytest.fixture
def static_site(tmp_path: Path) -> Iterator[str]:
    """``http://127.0.0.1:<port>`` serving ``tmp_path/site``; ``/moved`` redirects to ``http://[::1]:<port>/``."""
    root = tmp_path / "site"
    root.mkdir()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(root), **kwargs)  # type: ignore[arg-type]

        def do_GET(self) -> None:
            if self.path == "/moved":
                self.send_response(302)
                self.send_header("Location", f"http://[::1]:{self.server.server_address[1]}/about.md")
                self.end_headers()
                return
            super().do_GET()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for(process: subprocess.Popen[bytes], url: str, log: IO[bytes], what: str) -> None:
    deadline = time.monotonic() + _SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log.seek(0)
            pytest.fail(f"{what} exited with code {process.returncode}:\n{log.read().decode(errors='replace')[-4000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return  # it answers
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    pytest.fail(f"{what} did not answer within {_SERVER_START_TIMEOUT} s")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture(scope="session")
def llama_server(llama_embedding_server: str) -> str:
    """The llama.cpp server of the flows' tests: chat completions and embeddings on one (tests/conftest.py)."""
    return llama_embedding_server


@pytest.fixture(scope="session")
def mcp_server() -> Iterator[str]:
    """The URL (``http://127.0.0.1:<port>/mcp``) of the example's weather MCP server over streamable HTTP."""
    port = free_port()
    command = [sys.executable, str(EXAMPLES / "weather_mcp_server.py"), "--port", str(port)]
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env={**os.environ})
        try:
            url = f"http://127.0.0.1:{port}/mcp"
            wait_for(process, url, log, "the MCP server")
            yield url
        finally:
            stop(process)


class FakeOpenAI:
    """What an OpenAI-compatible server on loopback was asked: (path, Authorization header, JSON body)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.requests: list[tuple[str, str, dict[str, object]]] = []


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A server answering ``/chat/completions`` with "pong", ``/embeddings`` with [1, 0], and
    ``/images/generations`` with an image URL, under any prefix."""
    import json

    recorder = FakeOpenAI("")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            recorder.requests.append((self.path, self.headers.get("Authorization", ""), body))
            if self.path.endswith("/chat/completions"):
                answer: dict[str, object] = {
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "pong"}}
                    ],
                }
            elif self.path.endswith("/embeddings"):
                data = [{"object": "embedding", "index": i, "embedding": [1.0, 0.0]} for i in range(len(body["input"]))]
                answer = {
                    "object": "list",
                    "data": data,
                    "model": body["model"],
                    "usage": {"prompt_tokens": 1, "total_tokens": 1},
                }
            else:
                answer = {"created": 0, "data": [{"url": f"https://images.example/{body['size']}.png"}]}
            payload = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    recorder.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield recorder
    finally:
        server.shutdown()
        server.server_close()

"""Hostile graph files, flows and requests: an attacker's probes on loopback, and a count of what held.

    python -m benchmarks.hostile [--group GROUP] [--verbose]

Each probe tries one thing a shared flow file, a served request or a crafted id should not be able to do (run a
command, read a file outside the flow's folder, reach a host nobody allowed, read an endless body, expand a YAML
bomb, make one expression do a trillion steps, break the server with a lone surrogate, reach another endpoint
through an id) and says whether it **held**: the thing did not happen, and what came back was a typed batonflow
error (or a 4xx from the server), not a crash. The groups:

- ``flow files``: stdio MCP commands, files outside ``base_dir`` (``..``, absolute, ``~``, ``file:``, symlinks),
  hosts outside ``allowed_hosts`` (chat, embedding, MCP over HTTP, Redis, documents, redirects, IP spellings);
- ``fetches``: a 100 MB body, an endless one, one byte a second, a binary body for a document;
- ``cli ids``: ``batonflow checkpoints`` with ids that are paths, queries or Rich markup;
- ``loading``: YAML and JSON bombs, recursion and depth, a self-link, ``batonflow run`` on bad files;
- ``expressions``: work done inside one operation of the sandbox;
- ``server``: lone surrogates, ids with ``/`` and dots, shadowed listings, a long flow eval, deep session values.

Probes that could exhaust the machine on a checkout that does not hold (bombs, big bodies) run in a subprocess of
their own, with 2 GiB of address space and a guard of ``GUARD`` seconds; a probe that runs into the guard did not
hold. The guard is only there so that a checkout that does not hold still ends: on one that holds, every probe
ends on its own, in a fraction of it. Only public names are used, so the same file can be run on an older checkout
(``PYTHONPATH=<checkout>/src python -m benchmarks.hostile``) to count what held there. Every server is on
127.0.0.1 and made here.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import http.server
import json
import math
import os
import re
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from batonflow.tools import ToolContext  # the server probes' tool reads it from this module's names

GUARD = 60.0
"""Seconds an isolated probe may take before it is taken as not holding (a hang, a bomb expanding)."""
MEMORY = 2 << 30
"""Bytes of address space an isolated probe may use."""
SECRET = "TOPSECRET-4f1d"

Outcome = str | None
"""``None`` when the probe held, else what got through."""


@dataclass(frozen=True, slots=True)
class Probe:
    name: str
    group: str
    run: Callable[[Path], Awaitable[Outcome]]
    isolated: bool = False


PROBES: list[Probe] = []


def probe(group: str, *, isolated: bool = False) -> Callable[[Callable[[Path], Awaitable[Outcome]]], Any]:
    def register(run: Callable[[Path], Awaitable[Outcome]]) -> Callable[[Path], Awaitable[Outcome]]:
        PROBES.append(Probe(run.__name__, group, run, isolated))
        return run

    return register


def typed(error: BaseException) -> Outcome:
    """``None`` when ``error`` is batonflow's own kind of error, else what it was."""
    from batonflow.errors import BatonflowError

    if isinstance(error, BatonflowError) and not isinstance(error.__cause__, RecursionError | MemoryError):
        return None
    return f"{type(error).__name__}: {str(error)[:160]}"


async def refused(call: Awaitable[Any]) -> Outcome:
    """``None`` when ``call`` raises a typed error; what it did otherwise."""
    try:
        await asyncio.wait_for(call, timeout=GUARD)
    except TimeoutError:
        return f"still running after {GUARD:.0f} s"
    except Exception as error:
        return typed(error)
    return "it ran"


# -- servers on loopback ------------------------------------------------------------------------------------------


class Recorder:
    """An HTTP server on 127.0.0.1 that records every request's raw target and answers with ``answer(path)``
    (status, content type, body chunks, seconds between chunks)."""

    def __init__(self, answer: Callable[[str], tuple[int, str, Iterator[bytes], float]] | None = None) -> None:
        self.paths: list[str] = []
        self.bodies: list[bytes] = []
        recorder = self
        answer = answer or (lambda path: (200, "application/json", iter([b"{}"]), 0.0))

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                recorder.paths.append(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                recorder.bodies.append(self.rfile.read(length) if length else b"")
                status, kind, chunks, pause = answer(self.path)
                if status in (301, 302):
                    self.send_response(status)
                    self.send_header("Location", next(chunks).decode())
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    for chunk in chunks:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                        if pause:
                            time.sleep(pause)
                    self.wfile.write(b"0\r\n\r\n")
                except OSError:  # the client went away: that is what a bounded reader does
                    pass

            do_GET = do_POST = do_DELETE = _answer

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Listener:
    """A TCP port on 127.0.0.1 that counts the connections made to it (and closes them)."""

    def __init__(self) -> None:
        self.accepted = 0
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = self.socket.accept()
                self.accepted += 1
                connection.close()

    def close(self) -> None:
        self.socket.close()


@contextlib.contextmanager
def recorder(answer: Callable[[str], tuple[int, str, Iterator[bytes], float]] | None = None) -> Iterator[Recorder]:
    server = Recorder(answer)
    try:
        yield server
    finally:
        server.close()


def reached(server: Recorder | Listener, outcome: Outcome) -> Outcome:
    count = len(server.paths) if isinstance(server, Recorder) else server.accepted
    if count:
        return f"the host was reached {count} time(s)" + (f"; {outcome}" if outcome else "")
    return outcome


# -- flow files ---------------------------------------------------------------------------------------------------


class Words:
    """An embedding model of word counts, so repositories need no server."""

    model_name = "words"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = []
        for text in texts:
            vector = [0.0] * 16
            for word in re.findall(r"\w+", text.lower()):
                vector[hashlib.sha256(word.encode()).digest()[0] % 16] += 1.0
            norm = math.sqrt(sum(x * x for x in vector)) or 1.0
            vectors.append([x / norm for x in vector])
        return vectors


def engine(base_dir: Path | None, **options: Any) -> Any:
    from batonflow.flow import AiFlowEngine
    from batonflow.schema import assistant
    from batonflow.testing import FunctionModel

    flows = AiFlowEngine(base_dir=base_dir, **options)
    flows.register("words", Words())
    flows.register("scripted", FunctionModel(lambda messages, tools: assistant("ok")))
    return flows


async def run_flow(yaml_text: str, base_dir: Path | None, **options: Any) -> Outcome:
    from batonflow.graph import Graph

    async def run() -> None:
        async with engine(base_dir, **options) as flows:
            await flows.eval(Graph.from_yaml(yaml_text))

    return await refused(run())


def chat_flow(meta: str) -> str:
    return f'id: probe\nlayout:\n  - {{id: chat, task: "@ChatModel", meta: {{message: hi, {meta}}}}}\n'


def rag_flow(source: str, *, repository: str = "InMemoryRepository", extra: str = "") -> str:
    return (
        "id: probe\nlayout:\n"
        '  - {id: embed, task: "@EmbeddingModel", meta: {embeddingConfig: {model: words}}}\n'
        f'  - {{id: docs, task: "@{repository}", meta: {{message: secret, documentSources: [{json.dumps(source)}]'
        f"{extra}}}}}\n"
    )


def layout(tmp: Path) -> Path:
    """A flow folder in ``tmp`` with a document, and a secret outside it."""
    folder = tmp / "flow"
    (folder / "docs").mkdir(parents=True, exist_ok=True)
    (folder / "docs" / "ok.md").write_text("Solon is a Java framework.\n")
    (tmp / "secret.txt").write_text(f"{SECRET}\n")
    return folder


@probe("flow files")
async def stdio_mcp_command_in_eval(tmp: Path) -> Outcome:
    marker = tmp / "pwned"
    meta = f"chatConfig: {{model: scripted}}, mcpServers: {{x: {{type: stdio, command: sh, args: ['-c', 'id > {marker}']}}}}"
    outcome = await run_flow(chat_flow(meta), layout(tmp))
    return "the command ran" if marker.exists() else outcome


@probe("flow files")
async def stdio_mcp_command_from_batonflow_run(tmp: Path) -> Outcome:
    marker = tmp / "pwned"
    folder = layout(tmp)
    meta = (
        "chatConfig: {provider: openai, model: m, apiKey: k, apiUrl: 'http://127.0.0.1:9/v1/chat/completions'}, "
        f"mcpServers: {{x: {{type: stdio, command: sh, args: ['-c', 'id > {marker}']}}}}"
    )
    (folder / "shell.yml").write_text(chat_flow(meta))
    code, _, err = await cli_run(["run", str(folder / "shell.yml")], tmp)
    if marker.exists():
        return "the command ran"
    return clean_failure(code, err)


async def cli_run(args: Sequence[str], tmp: Path) -> tuple[int, str, str]:
    """``batonflow ARGS`` in a subprocess: its exit code, stdout and stderr."""
    env = {**os.environ, "HOME": str(tmp), "NO_COLOR": "1", "COLUMNS": "200"}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "batonflow",
        *args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=tmp,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout=GUARD)
    except TimeoutError:
        process.kill()
        await process.wait()
        return -9, "", f"still running after {GUARD:.0f} s"
    return process.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")


def clean_failure(code: int, err: str) -> Outcome:
    if code == 0:
        return "batonflow run succeeded"
    if "Traceback" in err or code < 0:
        return "a Python traceback: " + err.strip().splitlines()[-1][:160] if err.strip() else f"exit {code}"
    return None


def _source_probe(name: str, source: Callable[[Path], str], *, symlink: bool = False) -> None:
    async def run(tmp: Path) -> Outcome:
        folder = layout(tmp)
        if symlink:
            (folder / "docs" / "link.md").symlink_to(tmp / "secret.txt")
        home = os.environ.get("HOME")
        os.environ["HOME"] = str(tmp / "home")
        (tmp / "home").mkdir(exist_ok=True)
        (tmp / "home" / ".bashrc").write_text(f"export TOKEN={SECRET}\n")
        try:
            outcome = await run_flow(rag_flow(source(tmp)), folder)
        finally:
            if home is not None:
                os.environ["HOME"] = home
        return "the file was read" if outcome == "it ran" else outcome

    run.__name__ = name
    probe("flow files")(run)


_source_probe("document_source_dot_dot", lambda tmp: "../" * 12 + str(tmp / "secret.txt").lstrip("/"))
_source_probe("document_source_etc_passwd", lambda tmp: "/etc/passwd")
_source_probe("document_source_home", lambda tmp: "~/.bashrc")
_source_probe("document_source_file_url", lambda tmp: f"file:{tmp / 'secret.txt'}")
_source_probe("document_source_symlink_file", lambda tmp: "docs/link.md", symlink=True)
_source_probe("document_source_symlink_in_folder", lambda tmp: "docs", symlink=True)


@probe("flow files")
async def chat_api_url_not_allowed(tmp: Path) -> Outcome:
    with recorder() as server:
        meta = f"chatConfig: {{provider: openai, model: m, apiKey: k, apiUrl: '{server.url}/v1/chat/completions'}}"
        return reached(server, await run_flow(chat_flow(meta), layout(tmp)))


@probe("flow files")
async def ollama_endpoint_not_allowed(tmp: Path) -> Outcome:
    with recorder() as server:
        meta = f"chatConfig: {{provider: ollama, model: m, apiUrl: '{server.url}/api/chat'}}"
        return reached(server, await run_flow(chat_flow(meta), layout(tmp)))


@probe("flow files")
async def embedding_api_url_not_allowed(tmp: Path) -> Outcome:
    with recorder() as server:
        flow = (
            "id: probe\nlayout:\n"
            f'  - {{task: "@EmbeddingModel", meta: {{message: hi, embeddingConfig: {{provider: openai, model: m, '
            f"apiKey: k, apiUrl: '{server.url}/v1/embeddings'}}}}}}\n"
            '  - {task: "@InMemoryRepository", meta: {message: hi, documentSources: [docs]}}\n'
        )
        return reached(server, await run_flow(flow, layout(tmp)))


@probe("flow files")
async def mcp_over_http_not_allowed(tmp: Path) -> Outcome:
    with recorder() as server:
        meta = f"chatConfig: {{model: scripted}}, mcpServers: {{x: {{type: streamable, url: '{server.url}/mcp'}}}}"
        return reached(server, await run_flow(chat_flow(meta), layout(tmp)))


@probe("flow files")
async def redis_config_not_allowed(tmp: Path) -> Outcome:
    listener = Listener()
    try:
        extra = f", redisConfig: {{server: '127.0.0.1:{listener.port}'}}"
        outcome = await run_flow(rag_flow("docs", repository="RedisRepository", extra=extra), layout(tmp))
        await asyncio.sleep(0.05)  # a connection the client made has been accepted by now
        return reached(listener, outcome)
    finally:
        listener.close()


@probe("flow files")
async def document_url_not_allowed(tmp: Path) -> Outcome:
    with recorder() as server:
        return reached(server, await run_flow(rag_flow(f"{server.url}/doc.md"), layout(tmp)))


@probe("flow files")
async def redirect_to_a_host_not_allowed(tmp: Path) -> Outcome:
    with recorder() as target:
        with recorder(lambda path: (302, "", iter([f"http://localhost:{target.port}/x".encode()]), 0.0)) as origin:
            outcome = await run_flow(
                rag_flow(f"{origin.url}/doc.md"), layout(tmp), allowed_hosts=[f"127.0.0.1:{origin.port}"]
            )
        return reached(target, outcome)


@probe("flow files")
async def ip_spelled_as_a_number(tmp: Path) -> Outcome:
    with recorder() as server:
        flow = rag_flow(f"http://2130706433:{server.port}/doc.md")
        return reached(server, await run_flow(flow, layout(tmp), allowed_hosts=["example.com"]))


@probe("flow files")
async def userinfo_names_an_allowed_host(tmp: Path) -> Outcome:
    with recorder() as server:
        flow = rag_flow(f"http://example.com@127.0.0.1:{server.port}/doc.md")
        return reached(server, await run_flow(flow, layout(tmp), allowed_hosts=["example.com"]))


# -- fetches ------------------------------------------------------------------------------------------------------


def _body(total: int | None, *, kind: str = "text/plain", chunk: int = 1 << 20, pause: float = 0.0) -> Any:
    def chunks() -> Iterator[bytes]:
        sent = 0
        while total is None or sent < total:
            size = chunk if total is None else min(chunk, total - sent)
            sent += size
            yield b"a" * size

    return lambda path: (200, kind, chunks(), pause)


async def _fetch(tmp: Path, answer: Any, **options: Any) -> Outcome:
    with recorder(answer) as server:
        flow = rag_flow(f"{server.url}/doc.md")
        outcome = await run_flow(flow, layout(tmp), allowed_hosts=[f"127.0.0.1:{server.port}"], **options)
    return "the whole body was read" if outcome == "it ran" else outcome


@probe("fetches", isolated=True)
async def document_of_100_mb(tmp: Path) -> Outcome:
    return await _fetch(tmp, _body(100 << 20))


@probe("fetches", isolated=True)
async def endless_document(tmp: Path) -> Outcome:
    return await _fetch(tmp, _body(None))


@probe("fetches", isolated=True)
async def one_byte_a_second(tmp: Path) -> Outcome:
    return await _fetch(tmp, _body(120, chunk=1, pause=1.0), http_timeout=2)


@probe("fetches")
async def binary_document(tmp: Path) -> Outcome:
    return await _fetch(tmp, _body(4096, kind="application/octet-stream"))


# -- ids through the CLI ------------------------------------------------------------------------------------------


def _fake_api(path: str) -> tuple[int, str, Iterator[bytes], float]:
    if path == "/checkpoints":
        entry = {"checkpoint_id": "[/]", "agent": "[bold]a", "session_id": "[/x]", "interrupts": []}
        body: dict[str, Any] = {"checkpoints": [entry]}
    else:
        body = {"checkpoint_id": "x", "interrupts": [], "status": "completed", "text": "", "agent": "a"}
    return 200, "application/json", iter([json.dumps(body).encode()]), 0.0


def _cli(args: Sequence[str]) -> tuple[int, str]:
    from typer.testing import CliRunner

    from batonflow.cli import app

    result = CliRunner().invoke(app, list(args))
    failure = "" if result.exception is None or isinstance(result.exception, SystemExit) else repr(result.exception)
    return result.exit_code, result.output + failure


def _one_segment(paths: Sequence[str], checkpoint_id: str, tail: str = "") -> Outcome:
    """``None`` when every path is ``/checkpoints/<the id as one segment>[/tail]``."""
    from urllib.parse import unquote

    for path in paths:
        parts = path.split("/")
        if (
            "?" in path
            or len(parts) != 3 + bool(tail)
            or parts[1] != "checkpoints"
            or unquote(parts[2]) != checkpoint_id
        ):
            return f"the CLI asked for {path!r}"
        if tail and parts[3] != tail:
            return f"the CLI asked for {path!r}"
    return None if paths else "no request was made"


def _show_probe(name: str, checkpoint_id: str) -> None:
    async def run(tmp: Path) -> Outcome:
        with recorder(_fake_api) as server:
            await asyncio.to_thread(_cli, ["checkpoints", "show", checkpoint_id, "--url", server.url])
            return _one_segment(server.paths, checkpoint_id)

    run.__name__ = name
    probe("cli ids")(run)


_show_probe("cli_show_dot_dot_reaches_sessions", "../sessions/victim")
_show_probe("cli_show_id_with_a_slash", "a/b")
_show_probe("cli_show_id_with_a_query", "x?y")
_show_probe("cli_show_id_that_is_markup", "[/]")


@probe("cli ids")
async def cli_resume_reaches_cancel(tmp: Path) -> Outcome:
    checkpoint_id = "../runs/victim/cancel?"
    with recorder(_fake_api) as server:
        await asyncio.to_thread(_cli, ["checkpoints", "resume", checkpoint_id, "--all", "yes", "--url", server.url])
    if not server.paths:
        return "no request was made"
    read, *resumes = server.paths
    return _one_segment([read], checkpoint_id) or _one_segment(resumes, checkpoint_id, "resume")


@probe("cli ids")
async def cli_list_with_rich_markup(tmp: Path) -> Outcome:
    with recorder(_fake_api) as server:
        code, output = await asyncio.to_thread(_cli, ["checkpoints", "list", "--url", server.url])
    if code != 0:
        return f"exit {code}: {output.strip().splitlines()[-1][:160] if output.strip() else ''}"
    return (
        None if "[/]" in output and "[bold]a" in output and "[/x]" in output else "the ids were not shown as they are"
    )


# -- loading ------------------------------------------------------------------------------------------------------


def _laughs(levels: int, width: int) -> str:
    lines = ["a0: &a0 [lol]"]
    for level in range(1, levels):
        refs = ", ".join([f"*a{level - 1}"] * width)
        lines.append(f"a{level}: &a{level} [{refs}]")
    return "\n".join(lines)


async def _loaded(text: str, *, json_text: bool = False) -> Outcome:
    from batonflow.graph import Graph

    async def load() -> None:
        graph = Graph.from_json(text) if json_text else Graph.from_yaml(text)
        graph.to_json()

    return await refused(load())


@probe("loading", isolated=True)
async def yaml_billion_laughs(tmp: Path) -> Outcome:
    bomb = _laughs(9, 9) + "\nid: bomb\nlayout:\n  - {id: a, meta: {m: *a8}}\n"
    return await _loaded(bomb)


@probe("loading", isolated=True)
async def yaml_bomb_printed_by_batonflow_run(tmp: Path) -> Outcome:
    bomb = _laughs(6, 8) + "\nid: bomb\nlayout:\n  - {type: start}\n  - {task: '@VarInput', meta: {message: *a5}}\n"
    (tmp / "bomb.yml").write_text(bomb)
    code, out, err = await cli_run(["run", str(tmp / "bomb.yml")], tmp)
    if len(out) > 1 << 20:
        return f"it printed {len(out):,} characters"
    return clean_failure(code, err)


@probe("loading", isolated=True)
async def yaml_recursive_alias(tmp: Path) -> Outcome:
    return await _loaded("id: loop\nlayout:\n  - &n {id: a, meta: {self: *n}}\n")


@probe("loading", isolated=True)
async def yaml_100000_deep(tmp: Path) -> Outcome:
    return await _loaded("id: deep\nlayout:\n  - {id: a, meta: {m: " + "[" * 100_000 + "]" * 100_000 + "}}\n")


@probe("loading", isolated=True)
async def json_100000_deep(tmp: Path) -> Outcome:
    text = '{"id": "deep", "layout": [{"id": "a", "meta": {"m": ' + "[" * 100_000 + "]" * 100_000 + "}}]}"
    return await _loaded(text, json_text=True)


@probe("loading", isolated=True)
async def self_link_before_other_links(tmp: Path) -> Outcome:
    from batonflow.graph import FlowEngine, Graph

    text = (
        "id: selfish\nlayout:\n  - {id: s, type: start, link: a}\n  - {id: a, link: [a, e]}\n  - {id: e, type: end}\n"
    )

    async def run() -> None:
        await FlowEngine().eval(Graph.from_yaml(text))

    return await refused(run())


def _bad_file(name: str, file_name: str, content: bytes | None) -> None:
    async def run(tmp: Path) -> Outcome:
        path = tmp / file_name
        if content is None:
            path.mkdir()
        else:
            path.write_bytes(content)
        code, _, err = await cli_run(["run", str(path)], tmp)
        return clean_failure(code, err)

    run.__name__ = name
    probe("loading")(run)


_bad_file("batonflow_run_binary_file", "binary.yml", bytes(range(256)) * 4)
_bad_file("batonflow_run_not_utf8", "latin.yml", "id: caf\xe9\nlayout: []\n".encode("latin-1"))
_bad_file("batonflow_run_a_folder", "folder.yml", None)
_bad_file("batonflow_run_a_list", "list.yml", b"- 1\n- 2\n")
_bad_file("batonflow_run_bad_yaml", "bad.yml", b"id: [unclosed\n")
_bad_file("batonflow_run_deep_yaml", "deep.yml", b"id: d\nlayout: " + b"[" * 100_000 + b"]" * 100_000 + b"\n")


# -- expressions --------------------------------------------------------------------------------------------------


def _expression_probe(name: str, source: str) -> None:
    async def run(tmp: Path) -> Outcome:
        from batonflow.graph import compile_expression

        async def evaluate() -> None:
            compile_expression(source).evaluate({})

        return await refused(evaluate())

    run.__name__ = name
    probe("expressions", isolated=True)(run)


_NESTED = "[[0] * 1000000] * 1000000"
_expression_probe("expression_str_of_nested_lists", f"len(str({_NESTED}))")
_expression_probe("expression_equality_of_nested_lists", f"{_NESTED} == {_NESTED}")
_expression_probe("expression_order_of_nested_lists", f"{_NESTED} < {_NESTED}")
_expression_probe("expression_max_of_nested_lists", f"max({_NESTED})")
_expression_probe("expression_sorted_nested_lists", f"sorted({_NESTED})")
_expression_probe("expression_membership_in_nested_lists", f"[1] in {_NESTED}")
_expression_probe("expression_join_of_repeated_text", "','.join(['x' * 1000000] * 1000000)")


# -- the server ---------------------------------------------------------------------------------------------------


def _approve(order: int, ctx: ToolContext) -> str:
    """Ask a human.

    Args:
        order: the order
    """
    return str(ctx.ask({"approve": order}))


def _agents() -> list[Any]:
    from batonflow import ChatModelAgent, tool
    from batonflow.schema import assistant
    from batonflow.testing import FunctionModel, tool_calls

    def asking(messages: Any, tools: Any) -> Any:
        if messages[-1].role == "tool":
            return assistant(f"answer: {messages[-1].content}")
        return tool_calls(("_approve", {"order": 1}))

    echo = FunctionModel(lambda messages, tools: assistant(f"echo: {messages[-1].content}"))
    return [
        ChatModelAgent(name="echo", description="Echoes.", model=echo),
        ChatModelAgent(name="asks", description="Asks.", model=FunctionModel(asking), tools=[tool(_approve)]),
    ]


@contextlib.asynccontextmanager
async def client(**options: Any) -> Any:
    import httpx

    from batonflow.server import create_app

    app = create_app(_agents(), **options)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)  # a crash is a 500
        async with httpx.AsyncClient(transport=transport, base_url="http://probe", timeout=GUARD) as http:
            yield http


def _status(response: Any, what: str) -> Outcome:
    """``None`` for a 4xx, or a success whose body is well-formed JSON (the text was stored safely)."""
    if 400 <= response.status_code < 500:
        return None
    if response.status_code < 300:
        try:
            json.loads(response.content.decode("utf-8"))
            return None
        except ValueError:
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                ended = b"completed" in response.content and b"event: error" not in response.content
                return (
                    None if ended else f"{what}: the stream ended without the run's end ({len(response.content)} bytes)"
                )
            return f"{what}: {response.status_code} with a body that is not JSON"
    return f"{what}: {response.status_code}"


async def _raw(http: Any, path: str, body: str) -> Any:
    return await http.post(path, content=body.encode(), headers={"Content-Type": "application/json"})


async def _answer(call: Awaitable[Any], what: str) -> Outcome:
    try:
        response = await call
    except Exception as error:
        return f"{what}: {type(error).__name__}: {str(error)[:120]}"
    return _status(response, what)


@probe("server")
async def surrogate_in_a_prompt(tmp: Path) -> Outcome:
    async with client() as http:
        return await _answer(_raw(http, "/runs", '{"agent": "echo", "input": "hi \\ud800"}'), "POST /runs")


@probe("server")
async def surrogate_over_sse(tmp: Path) -> Outcome:
    async with client() as http:
        body = '{"agent": "echo", "input": "\\ud800", "stream": true}'
        return await _answer(_raw(http, "/runs", body), "POST /runs with stream")


@probe("server")
async def surrogate_in_chat_completions(tmp: Path) -> Outcome:
    async with client() as http:
        body = '{"model": "echo", "messages": [{"role": "user", "content": "\\udfff"}]}'
        return await _answer(_raw(http, "/v1/chat/completions", body), "POST /v1/chat/completions")


@probe("server")
async def surrogate_in_a_session_turn(tmp: Path) -> Outcome:
    async with client() as http:
        first = await _answer(_raw(http, "/runs", '{"agent": "echo", "input": "\\ud800", "session_id": "s1"}'), "turn")
        after = await http.get("/sessions/s1")
        if after.status_code >= 500:
            return f"{first or 'the turn was refused'}; GET /sessions/s1 is then {after.status_code}"
        return first


@probe("server")
async def surrogate_in_session_values(tmp: Path) -> Outcome:
    async with client() as http:
        body = '{"agent": "asks", "input": "go", "session_values": {"k": "\\ud800"}}'
        started = await _raw(http, "/runs", body)
        if 400 <= started.status_code < 500:
            return None
        if started.status_code != 200 or started.json()["status"] != "interrupted":
            return f"POST /runs with session_values: {started.status_code} {started.content[:120]!r}"
        pending = await http.get(f"/checkpoints/{started.json()['checkpoint_id']}")
        return _status(pending, "GET /checkpoints/{id} after it")


@probe("server")
async def deep_session_values(tmp: Path) -> Outcome:
    async with client() as http:
        deep = "[" * 600 + "]" * 600
        started = await _raw(http, "/runs", '{"agent": "asks", "input": "go", "session_values": {"k": ' + deep + "}}")
    if 400 <= started.status_code < 500:
        return None
    status = started.json().get("status") if started.status_code == 200 else None
    return f"values 600 deep were let in: {started.status_code}" + (f", the run {status}" if status else "")


@probe("server")
async def checkpoint_id_with_a_slash(tmp: Path) -> Outcome:
    from urllib.parse import quote

    async with client() as http:
        started = await http.post("/runs", json={"agent": "asks", "input": "go", "checkpoint_id": "a/b"})
        if 400 <= started.status_code < 500:
            return None  # refused when the run starts: a clear 4xx
        listed = [entry["checkpoint_id"] for entry in (await http.get("/checkpoints")).json()["checkpoints"]]
        fetched = await http.get(f"/checkpoints/{quote('a/b', safe='')}")
        if "a/b" in listed and fetched.status_code != 200:
            return f"listed, then GET /checkpoints/a%2Fb is {fetched.status_code}"
        return None if fetched.status_code == 200 else f"GET /checkpoints/a%2Fb is {fetched.status_code}"


@probe("server")
async def a_checkpoint_and_a_conversation_of_one_id(tmp: Path) -> Outcome:
    async with client() as http:
        await http.post("/runs", json={"agent": "asks", "input": "go", "checkpoint_id": "same"})
        await http.post("/runs", json={"agent": "asks", "input": "go", "session_id": "same"})
        listed = (await http.get("/checkpoints")).json()["checkpoints"]
    return None if len(listed) == 2 else f"/checkpoints lists {len(listed)} of the 2 pending runs"


def _outside(tmp: Path, folder: Path) -> list[str]:
    return sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*") if not p.is_relative_to(folder))


def _file_session_probe(name: str, session_id: str) -> None:
    async def run(tmp: Path) -> Outcome:
        from urllib.parse import quote

        from batonflow.store import FileSessionStore

        folder = tmp / "store" / "sessions"
        folder.mkdir(parents=True)
        async with client(session_store=FileSessionStore(folder)) as http:
            turn = await http.post("/runs", json={"agent": "echo", "input": "hi", "session_id": session_id})
            # Dots spelled out: a client would otherwise read /sessions/.. as the path above it.
            read = await http.get("/sessions/" + quote(session_id, safe="").replace(".", "%2E"))
        outside = _outside(tmp, folder)
        if outside != ["store"]:
            return f"files outside the store's folder: {outside}"
        if 400 <= turn.status_code < 500:
            return None  # refused at the door, with a 4xx
        if turn.status_code != 200 or read.status_code != 200 or "echo: hi" not in read.text:
            return f"POST /runs {turn.status_code}, then GET /sessions/{{id}} {read.status_code}"
        return None

    run.__name__ = name
    probe("server")(run)


_file_session_probe("file_session_id_dot_dot", "..")
_file_session_probe("file_session_id_hidden", ".hidden")
_file_session_probe("file_session_id_encoded_dots", "%2e%2e")


def _loop_flow(items: int) -> Any:
    from batonflow.graph import Graph

    return Graph.from_yaml(
        f"id: long\nlayout:\n  - {{type: start}}\n  - {{id: l, type: loop, meta: {{$for: i, $in: '0:{items}:1'}}}}\n"
        "  - {id: step, task: '@tick'}\n  - {id: l_end, type: loop}\n  - {type: end}\n"
    )


@probe("server")
async def long_flow_eval_blocks_health(tmp: Path) -> Outcome:
    from batonflow.graph import FlowEngine

    flows = FlowEngine()
    started = asyncio.Event()
    flows.register("tick", lambda ctx, node: started.set())
    async with client(flows=[_loop_flow(99_999)], flow_engine=flows) as http:
        evaluation = asyncio.ensure_future(http.post("/flows/long/eval", json={}))
        await asyncio.wait([evaluation, asyncio.ensure_future(started.wait())], return_when=asyncio.FIRST_COMPLETED)
        health = await http.get("/health")
        finished_first = evaluation.done()
        await evaluation
    return "/health waited for the eval to end" if finished_first or health.status_code != 200 else None


@probe("server")
async def flow_evals_count_as_active_runs(tmp: Path) -> Outcome:
    from batonflow.graph import FlowEngine
    from batonflow.server import ServerLimits

    flows = FlowEngine()
    gate, entered = asyncio.Event(), asyncio.Event()

    async def wait(ctx: Any, node: Any) -> None:
        entered.set()
        await gate.wait()

    flows.register("tick", wait)
    async with client(flows=[_loop_flow(1)], flow_engine=flows, limits=ServerLimits(max_active_runs=1)) as http:
        first = asyncio.ensure_future(http.post("/flows/long/eval", json={}))
        await entered.wait()
        second = await http.post("/runs", json={"agent": "echo", "input": "hi"})
        gate.set()
        await first
    return (
        None
        if second.status_code in (429, 503)
        else f"a run beside a running eval, at max_active_runs=1: {second.status_code}"
    )


# -- running ------------------------------------------------------------------------------------------------------


def run_one(item: Probe) -> Outcome:
    """``item`` here, in a folder of its own and a new event loop."""
    with tempfile.TemporaryDirectory(prefix="hostile-") as folder:
        try:
            return asyncio.run(item.run(Path(folder).resolve()))
        except Exception as error:  # the probe itself broke: that is no hold either
            return f"the probe failed: {type(error).__name__}: {str(error)[:160]}"


def isolated(item: Probe) -> Outcome:
    """``item`` in a subprocess with bounded memory and a guard."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))

    try:
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.hostile", "--one", item.name],
            capture_output=True,
            text=True,
            timeout=GUARD + 10,
            preexec_fn=limit,
            cwd=Path(__file__).resolve().parents[1],
        )
    except subprocess.TimeoutExpired:
        return f"still running after {GUARD + 10:.0f} s"
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return f"the probe's process died: {tail[:160]}"
    answer: Outcome = json.loads(lines[-1])["outcome"]
    return answer


def run_all(group: str | None = None) -> list[tuple[Probe, Outcome]]:
    results = []
    for item in PROBES:
        if group is not None and item.group != group:
            continue
        outcome = isolated(item) if item.isolated else run_one(item)
        results.append((item, outcome))
    return results


def summary(results: Sequence[tuple[Probe, Outcome]]) -> str:
    held = sum(outcome is None for _, outcome in results)
    return f"hostile probes: {held} of {len(results)} held"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.hostile", description=__doc__.split("\n\n")[0])
    parser.add_argument("--group", choices=sorted({p.group for p in PROBES}), help="only this group's probes")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--verbose", action="store_true", help="list the probes that held too")
    args = parser.parse_args(argv)
    if args.one is not None:
        item = next(p for p in PROBES if p.name == args.one)
        print(json.dumps({"outcome": run_one(item)}))
        return 0
    results = run_all(args.group)
    groups: dict[str, list[tuple[Probe, Outcome]]] = {}
    for item, outcome in results:
        groups.setdefault(item.group, []).append((item, outcome))
    for name, rows in groups.items():
        held = sum(outcome is None for _, outcome in rows)
        print(f"{name}: {held} of {len(rows)} held")
        for item, outcome in rows:
            if outcome is not None or args.verbose:
                print(f"  {'held' if outcome is None else 'FAILED'}  {item.name}" + (f": {outcome}" if outcome else ""))
    print(summary(results))
    return 0 if all(outcome is None for _, outcome in results) else 1


if __name__ == "__main__":
    sys.exit(main())

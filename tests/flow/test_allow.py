"""What a flow file may reach: commands, files and hosts only as the engine's owner allowed them in code, and every
fetch bounded in size, time and type. Each refusal is a ``FlowPermissionError`` naming the node, the meta and the
rule, raised before anything runs or connects."""

from __future__ import annotations

import contextlib
import http.server
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from batonflow.flow import AiFlowEngine, FlowComponentError, FlowMetaError, FlowPermissionError
from batonflow.graph import FlowContext, FlowEngine, Graph
from batonflow.schema import assistant
from batonflow.testing import ScriptedModel

from .conftest import FakeOpenAI, WordEmbedding

TEST_MCP_SERVER = Path(__file__).resolve().parents[1] / "tools" / "mcp_server.py"


def chat(meta: str) -> Graph:
    return Graph.from_yaml(f'id: g\nlayout:\n  - {{id: chat, task: "@ChatModel", meta: {{message: hi, {meta}}}}}\n')


def stdio(command: str, *args: str, extra: str = "") -> str:
    return f"{{type: stdio, command: {json.dumps(command)}, args: {json.dumps(list(args))}, timeout: 10{extra}}}"


def scripted(engine: FlowEngine) -> ScriptedModel:
    model = ScriptedModel([assistant("pong")])
    engine.register("scripted", model)
    return model


async def refusal(engine: FlowEngine, graph: Graph, *, node: str, meta: str, rule: str) -> str:
    with pytest.raises(FlowPermissionError) as caught:
        await engine.eval(graph, FlowContext(variables={"message": "query"}))
    assert (caught.value.graph_id, caught.value.node_id, caught.value.meta, caught.value.rule) == (
        "g",
        node,
        meta,
        rule,
    )
    return str(caught.value)


# -- commands ----------------------------------------------------------------------------------------------------


async def test_a_stdio_server_runs_no_command_the_owner_did_not_allow(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    graph = chat(f"chatConfig: {{model: scripted}}, mcpServers: {{x: {stdio('sh', '-c', f'id > {marker}')}}}")

    for engine in (AiFlowEngine(base_dir=tmp_path), AiFlowEngine(allowed_hosts=["127.0.0.1"])):
        model = scripted(engine)
        text = await refusal(engine, graph, node="chat", meta="mcpServers", rule="allowed_commands")

        assert "server 'x' would run the command 'sh', which is not allowed; allowed commands: none" in text
        assert "AiFlowEngine(allowed_commands=['sh'])" in text
        assert not marker.exists() and model.requests == []


async def test_every_server_is_checked_before_any_starts(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    first = stdio(sys.executable, "-c", f"open({str(marker)!r}, 'w')")
    graph = chat(f"chatConfig: {{model: scripted}}, mcpServers: {{a: {first}, b: {stdio('sh')}}}")
    engine = AiFlowEngine(base_dir=tmp_path, allowed_commands=[sys.executable])
    scripted(engine)

    await refusal(engine, graph, node="chat", meta="mcpServers", rule="allowed_commands")

    assert not marker.exists()


async def test_an_allowed_command_runs_its_server(tmp_path: Path) -> None:
    engine = AiFlowEngine(base_dir=tmp_path, allowed_commands=[sys.executable])
    model = scripted(engine)
    graph = chat(
        f"chatConfig: {{model: scripted}}, mcpServers: {{t: {stdio(sys.executable, str(TEST_MCP_SERVER), 'stdio')}}}"
    )

    async with engine:
        await engine.eval(graph)

    assert "add" in [info.name for info in model.requests[0].tools or []]


def server_node(config: dict[str, object]) -> Graph:
    return chat(f"chatConfig: {{model: scripted}}, mcpServers: {{x: {json.dumps({**config, 'timeout': 5})}}}")


async def starts(engine: AiFlowEngine, config: dict[str, object]) -> str:
    """The error of a server that started and exited at once (``sh -c 'exit 3'``): it was allowed to run."""
    scripted(engine)
    with pytest.raises(FlowComponentError, match="did not give its tools") as caught:
        await engine.eval(server_node({"args": ["-c", "exit 3"], **config}))
    return str(caught.value)


@pytest.mark.parametrize(
    ("allowed", "command", "runs"),
    [
        (["sh"], "sh", True),
        (["sh"], "./sh", False),  # a path is never a name
        (["sh"], "/bin/sh", False),
        (["/bin/sh"], "sh", False),  # nor a name a path: which file it is depends on PATH
        (["/bin/sh"], "/bin/sh", True),
        (["/bin/sh"], "/bin/../bin/sh", True),  # resolves to the allowed file
        (["/bin/sh"], "/bin/../usr/bin/env", False),
        (["/bin/sh"], "./link", True),  # a link in cwd to the allowed file is that file
        (["/bin/sh"], "./other", False),
        ([], "sh", False),
    ],
)
async def test_a_command_matches_as_written_or_by_the_file_it_resolves_to(
    tmp_path: Path, allowed: list[str], command: str, runs: bool
) -> None:
    (tmp_path / "link").symlink_to("/bin/sh")
    (tmp_path / "other").symlink_to("/usr/bin/env")
    engine = AiFlowEngine(base_dir=tmp_path, allowed_commands=allowed)

    if runs:
        assert command in await starts(engine, {"command": command})
    else:
        scripted(engine)
        await refusal(
            engine, server_node({"command": command}), node="chat", meta="mcpServers", rule="allowed_commands"
        )


@pytest.mark.parametrize("name", ["PATH", "LD_PRELOAD", "PYTHONPATH", "path", "NODE_OPTIONS", "BASH_ENV"])
async def test_env_may_not_change_which_code_the_command_runs(tmp_path: Path, name: str) -> None:
    engine = AiFlowEngine(base_dir=tmp_path, allowed_commands=["sh"])
    scripted(engine)
    graph = server_node({"command": "sh", "env": {name: str(tmp_path), "API_KEY": "k"}})

    text = await refusal(engine, graph, node="chat", meta="mcpServers", rule="allowed_commands")

    assert f"the variable '{name}' of 'env'" in text
    await starts(engine, {"command": "sh", "env": {"API_KEY": "k"}})


@pytest.mark.parametrize("cwd", ["..", "/tmp", "~", "sub/../../x"])
async def test_a_server_s_cwd_stays_inside_base_dir(tmp_path: Path, cwd: str) -> None:
    base = tmp_path / "flow"
    (base / "sub").mkdir(parents=True)
    engine = AiFlowEngine(base_dir=base, allowed_commands=["sh"])
    scripted(engine)

    await refusal(engine, server_node({"command": "sh", "cwd": cwd}), node="chat", meta="mcpServers", rule="base_dir")

    await starts(engine, {"command": "sh", "cwd": "sub"})


def test_allowed_commands_must_be_names_or_absolute_paths() -> None:
    from batonflow.errors import UserError

    for bad in ("./sh", "bin/sh", "", "sh"):
        with pytest.raises(UserError, match="allowed_commands"):
            AiFlowEngine(allowed_commands=bad if bad == "sh" else [bad])


# -- files -------------------------------------------------------------------------------------------------------


def repository_flow(source: str) -> Graph:
    return Graph.from_yaml(
        "id: g\nlayout:\n"
        '  - {task: "@EmbeddingModel", meta: {embeddingConfig: {model: words}}}\n'
        f'  - {{id: repo, task: "@InMemoryRepository", meta: {{documentSources: ["{source}"]}}}}\n'
    )


def with_words(engine: FlowEngine) -> WordEmbedding:
    words = WordEmbedding()
    engine.register("words", words)
    return words


@pytest.fixture
def flow_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "flow"
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "a.md").write_text("inside")
    (tmp_path / "secret.md").write_text("outside")
    return folder


@pytest.mark.parametrize(
    "source",
    [
        "../../../../../etc/passwd",
        "/etc/passwd",
        "~/.bashrc",
        "file:/etc/hostname",
        "file:///etc/hostname",
        "file://localhost/etc/hostname",
        "file://evil/etc/hostname",
        "../secret.md",
        "docs/../../secret.md",
    ],
)
async def test_a_document_source_outside_base_dir_is_refused(flow_dir: Path, source: str) -> None:
    engine = AiFlowEngine(base_dir=flow_dir)
    words = with_words(engine)

    text = await refusal(engine, repository_flow(source), node="repo", meta="documentSources", rule="base_dir")

    assert f"base_dir: {str(engine.settings.base_dir)!r}" in text and "AiFlowEngine(base_dir=...)" in text
    assert words.calls == []


async def test_a_symlink_inside_base_dir_pointing_outside_is_refused(flow_dir: Path) -> None:
    (flow_dir / "docs" / "link.md").symlink_to(flow_dir.parent / "secret.md")
    engine = AiFlowEngine(base_dir=flow_dir)
    words = with_words(engine)

    for source in ("docs/link.md", "docs"):
        text = await refusal(engine, repository_flow(source), node="repo", meta="documentSources", rule="base_dir")
        assert "outside base_dir" in text
    assert words.calls == []


async def test_a_folder_link_pointing_outside_is_refused_and_one_inside_is_not_followed(flow_dir: Path) -> None:
    (flow_dir / "docs" / "up").symlink_to(flow_dir.parent)
    engine = AiFlowEngine(base_dir=flow_dir)
    with_words(engine)
    await refusal(engine, repository_flow("docs"), node="repo", meta="documentSources", rule="base_dir")

    (flow_dir / "docs" / "up").unlink()
    (flow_dir / "docs" / "again").symlink_to(flow_dir / "docs")
    engine = AiFlowEngine(base_dir=flow_dir)
    words = with_words(engine)
    await engine.eval(repository_flow("docs"), FlowContext(variables={"message": "query"}))
    assert words.calls[0] == ["inside"]


async def test_without_base_dir_no_file_is_read(flow_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(flow_dir)

    engine = AiFlowEngine()
    words = with_words(engine)
    text = await refusal(engine, repository_flow("docs/a.md"), node="repo", meta="documentSources", rule="base_dir")
    assert "base_dir: none: no file may be read" in text and words.calls == []


async def test_a_file_larger_than_max_fetch_bytes_is_refused(flow_dir: Path) -> None:
    (flow_dir / "big.md").write_text("x" * 101)
    engine = AiFlowEngine(base_dir=flow_dir, max_fetch_bytes=100)
    with_words(engine)

    text = await refusal(engine, repository_flow("big.md"), node="repo", meta="documentSources", rule="max_fetch_bytes")

    assert "larger than max_fetch_bytes (100 bytes)" in text


@pytest.mark.parametrize("meta", ["chatConfig", "embeddingConfig"])
async def test_a_local_model_file_outside_base_dir_is_refused(flow_dir: Path, meta: str) -> None:
    task = "@ChatModel" if meta == "chatConfig" else "@EmbeddingModel"
    graph = Graph.from_yaml(
        f'id: g\nlayout:\n  - {{id: m, task: "{task}", meta: {{{meta}: {{provider: local, model: /etc/x.gguf}}}}}}\n'
    )

    text = await refusal(AiFlowEngine(base_dir=flow_dir), graph, node="m", meta=meta, rule="base_dir")

    assert "the local model file '/etc/x.gguf' resolves to '/etc/x.gguf', outside base_dir" in text


# -- hosts -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("allowed", "url", "ok"),
    [
        (["127.0.0.1"], "http://127.1:{port}/ok", True),
        (["127.0.0.1"], "http://0x7f.0.0.1:{port}/ok", True),
        (["127.0.0.1"], "http://2130706433:{port}/ok", True),
        (["127.0.0.1"], "http://[::ffff:127.0.0.1]:{port}/ok", None),  # allowed; connects where IPv6 does
        (["127.0.0.0/8"], "http://127.0.0.1:{port}/ok", True),
        (["127.0.0.1:{port}"], "http://127.0.0.1:{port}/ok", True),
        (["localhost"], "http://LOCALHOST.:{port}/ok", None),  # allowed; resolves where the resolver knows FQDNs
        (["localhost:{port}"], "http://localhost:{port}/ok", True),
        (["127.0.0.0/8", "::1"], "http://localhost:{port}/ok", True),  # every address localhost resolves to is listed
        (["127.0.0.1:8080"], "http://127.0.0.1:8081/", False),
        (["localhost:443"], "http://localhost/", False),
        (["example.org"], "http://127.1/", False),
        (["example.org"], "http://0x7f.0.0.1/", False),
        (["example.org"], "http://2130706433/", False),
        (["example.org"], "http://[::ffff:127.0.0.1]/", False),
        (["example.org"], "http://example.org@127.0.0.1/", False),
        (["example.org"], "http://example.org.127.0.0.1.nip.io/", False),
        (["example.org"], "http://localhost/", False),
        (["localhost"], "http://127.0.0.1/", False),
        ([], "http://127.0.0.1/", False),
    ],
)
async def test_a_host_is_compared_as_the_client_connects_to_it(
    hostile_site: str, allowed: list[str], url: str, ok: bool | None
) -> None:
    port = hostile_site.rsplit(":", 1)[1]
    engine = AiFlowEngine(allowed_hosts=[entry.replace("{port}", port) for entry in allowed])
    graph = Graph.from_yaml('id: g\nlayout:\n  - {id: in, task: "@WebInput"}\n')
    context = FlowContext(variables={"message": "m", "attachment": url.replace("{port}", port)})

    if ok is False:
        with pytest.raises(FlowPermissionError) as caught:
            await engine.eval(graph, context)
        assert (caught.value.meta, caught.value.rule) == ("attachment", "allowed_hosts")
    elif ok:
        assert (await engine.eval(graph, context)).get("attachment").content == "hello"
    else:
        with contextlib.suppress(FlowComponentError):
            await engine.eval(graph, context)


@pytest.mark.parametrize("entry", ["", "a b", "user@host", "10.0.0.0/33", "http://x/", "a\\b"])
def test_an_allowed_hosts_entry_that_is_no_host_is_a_user_error(entry: str) -> None:
    from batonflow.errors import UserError

    with pytest.raises(UserError, match="allowed_hosts"):
        AiFlowEngine(allowed_hosts=[entry])


@pytest.mark.parametrize(
    ("meta", "config", "host"),
    [
        ("chatConfig", "{provider: openai, model: gpt-4o, apiKey: k}", "api.openai.com:443"),
        ("chatConfig", "{provider: ollama, model: llama3}", "127.0.0.1:11434"),
        ("chatConfig", "{model: m, apiUrl: 'http://127.0.0.1:{port}/v1'}", "127.0.0.1:{port}"),
        ("embeddingConfig", "{model: m, apiUrl: 'http://127.0.0.1:{port}/v1/embeddings'}", "127.0.0.1:{port}"),
        ("generateConfig", "{model: m, apiUrl: 'http://127.0.0.1:{port}/v1/images/generations'}", "127.0.0.1:{port}"),
    ],
)
async def test_a_model_config_reaches_only_allowed_hosts(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, meta: str, config: str, host: str
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    port = fake_openai.url.rsplit(":", 1)[1]
    task = {"chatConfig": "@ChatModel", "embeddingConfig": "@EmbeddingModel", "generateConfig": "@GenerateModel"}
    written = config.replace("{port}", port)
    graph = Graph.from_yaml(
        f'id: g\nlayout:\n  - {{id: m, task: "{task[meta]}", meta: {{message: hi, {meta}: {written}}}}}\n'
    )

    text = await refusal(AiFlowEngine(allowed_hosts=["example.org"]), graph, node="m", meta=meta, rule="allowed_hosts")

    assert f"connects to the host {host.replace('{port}', port)}" in text
    assert fake_openai.requests == []


async def test_a_model_endpoint_on_an_allowed_host_is_used(fake_openai: FakeOpenAI) -> None:
    graph = chat(f"chatConfig: {{model: m, apiUrl: '{fake_openai.url}/v1'}}")
    engine = AiFlowEngine(allowed_hosts=[fake_openai.url.removeprefix("http://")])

    context = await engine.eval(graph)

    assert context.get("message").content == "pong" and len(fake_openai.requests) == 1


async def test_openai_s_default_endpoint_is_the_one_of_openai_base_url(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", f"{fake_openai.url}/v1")
    graph = chat("chatConfig: {provider: openai, model: m, apiKey: k}")
    host = fake_openai.url.removeprefix("http://")

    text = await refusal(AiFlowEngine(), graph, node="chat", meta="chatConfig", rule="allowed_hosts")
    context = await AiFlowEngine(allowed_hosts=[host]).eval(graph)

    assert f"connects to the host {host}" in text
    assert context.get("message").content == "pong" and len(fake_openai.requests) == 1


@pytest.fixture
def redirector(fake_openai: FakeOpenAI) -> Iterator[str]:
    """``http://127.0.0.1:<port>``, answering every request with a 307 to the same path on ``localhost`` at the
    fake OpenAI server's port."""
    target = fake_openai.url.replace("127.0.0.1", "localhost")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.send_response(307)
            self.send_header("Location", f"{target}{self.path}")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    with serving(Handler) as url:
        yield url


async def test_a_model_endpoint_s_redirect_is_not_followed(redirector: str, fake_openai: FakeOpenAI) -> None:
    graph = chat(f"chatConfig: {{model: m, apiUrl: '{redirector}/v1'}}")
    engine = AiFlowEngine(allowed_hosts=[redirector.removeprefix("http://")])

    with pytest.raises(Exception, match="307"):
        await engine.eval(graph)

    assert fake_openai.requests == []


async def test_an_mcp_server_over_http_on_a_host_not_allowed_is_refused() -> None:
    graph = chat("chatConfig: {model: scripted}, mcpServers: {w: {type: streamable, url: 'http://127.0.0.1:9/mcp'}}")
    engine = AiFlowEngine(allowed_hosts=["example.org"])
    model = scripted(engine)

    text = await refusal(engine, graph, node="chat", meta="mcpServers", rule="allowed_hosts")

    assert "'http://127.0.0.1:9/mcp' connects to the host 127.0.0.1:9" in text and model.requests == []


async def test_a_redis_server_not_allowed_is_refused_before_connecting() -> None:
    graph = Graph.from_yaml(
        "id: g\nlayout:\n"
        '  - {task: "@EmbeddingModel", meta: {embeddingConfig: {model: words}}}\n'
        '  - {id: repo, task: "@RedisRepository", meta: {redisConfig: {server: "127.0.0.1:6379"}}}\n'
    )
    for engine in (AiFlowEngine(), AiFlowEngine(allowed_hosts=["127.0.0.1:6380"])):
        with_words(engine)
        async with engine:
            text = await refusal(engine, graph, node="repo", meta="redisConfig", rule="allowed_hosts")
        assert "'redisConfig server 127.0.0.1:6379' connects to the host 127.0.0.1:6379" in text


# -- fetches -----------------------------------------------------------------------------------------------------


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


@pytest.fixture
def hostile_site() -> Iterator[str]:
    """``/big`` (100 MB, with its length), ``/endless`` (chunked, without end), ``/drip`` (a byte every 0.1 s),
    ``/png``, ``/untyped``, ``/gzip`` and ``/ok`` (a small text)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            path = self.path
            kind = {"/png": "image/png", "/untyped": ""}.get(path, "text/plain; charset=utf-8")
            self.send_response(200)
            if kind:
                self.send_header("Content-Type", kind)
            if path == "/gzip":
                self.send_header("Content-Encoding", "gzip")
            if path == "/big":
                self.send_header("Content-Length", str(100_000_000))
            elif path == "/ok":
                self.send_header("Content-Length", "5")
            else:
                self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.body(path)

        def body(self, path: str) -> None:
            if path == "/ok":
                self.wfile.write(b"hello")
            elif path == "/big":
                for _ in range(100_000_000 // 65536):
                    self.wfile.write(b"x" * 65536)
            elif path == "/drip":
                for _ in range(600):  # a minute at most, should the client not hang up
                    self.wfile.write(b"1\r\nx\r\n")
                    self.wfile.flush()
                    time.sleep(0.1)
            else:
                for _ in range(100_000):
                    self.wfile.write(b"10000\r\n" + b"x" * 65536 + b"\r\n")

        def log_message(self, format: str, *args: object) -> None:
            pass

    with serving(Handler) as url:
        yield url


class serving:
    """A handler served on loopback in a thread, as a context manager giving its URL."""

    def __init__(self, handler: Callable[..., http.server.BaseHTTPRequestHandler]) -> None:
        self.server = _Server(("127.0.0.1", 0), handler)

    def __enter__(self) -> str:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __exit__(self, *exc_info: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def site_engine(url: str, **options: object) -> AiFlowEngine:
    return AiFlowEngine(allowed_hosts=[url.removeprefix("http://")], **options)


@pytest.mark.parametrize("path", ["/big", "/endless"])
async def test_a_body_larger_than_max_fetch_bytes_is_cut_off(hostile_site: str, path: str) -> None:
    engine = site_engine(hostile_site, max_fetch_bytes=100_000)
    words = with_words(engine)

    text = await refusal(
        engine, repository_flow(f"{hostile_site}{path}"), node="repo", meta="documentSources", rule="max_fetch_bytes"
    )

    assert "larger than max_fetch_bytes (100000 bytes)" in text and words.calls == []


async def test_a_server_sending_a_byte_at_a_time_is_cut_at_the_deadline(hostile_site: str) -> None:
    engine = site_engine(hostile_site, http_timeout=0.5)
    with_words(engine)

    text = await refusal(
        engine, repository_flow(f"{hostile_site}/drip"), node="repo", meta="documentSources", rule="http_timeout"
    )

    assert "took longer than http_timeout (0.5 s, the whole fetch)" in text


@pytest.mark.parametrize(("path", "found"), [("/png", "image/png"), ("/untyped", "no content type"), ("/gzip", "gzip")])
async def test_a_body_that_is_not_plain_text_is_refused(hostile_site: str, path: str, found: str) -> None:
    engine = site_engine(hostile_site)
    with_words(engine)

    text = await refusal(
        engine, repository_flow(f"{hostile_site}{path}"), node="repo", meta="documentSources", rule="content_type"
    )

    assert found in text


async def test_a_small_text_within_the_bounds_is_fetched(hostile_site: str) -> None:
    engine = site_engine(hostile_site, max_fetch_bytes=5, http_timeout=5)
    words = with_words(engine)

    await engine.eval(repository_flow(f"{hostile_site}/ok"), FlowContext(variables={"message": "query"}))

    assert words.calls[0] == ["hello"]


async def test_a_web_input_attachment_is_fetched_within_the_same_rules(hostile_site: str) -> None:
    graph = Graph.from_yaml('id: g\nlayout:\n  - {id: in, task: "@WebInput", meta: {message: hi}}\n')
    variables = {"attachment": f"{hostile_site}/big"}

    for engine, rule in (
        (AiFlowEngine(), "allowed_hosts"),
        (site_engine(hostile_site, max_fetch_bytes=10), "max_fetch_bytes"),
    ):
        with pytest.raises(FlowPermissionError) as caught:
            await engine.eval(graph, FlowContext(variables=variables))
        assert (caught.value.node_id, caught.value.meta, caught.value.rule) == ("in", "attachment", rule)


def test_the_fetch_bounds_are_checked() -> None:
    from batonflow.errors import UserError

    for options in (
        {"http_timeout": 0},
        {"http_timeout": float("inf")},
        {"max_fetch_bytes": 0},
        {"max_fetch_bytes": 1.5},
    ):
        with pytest.raises(UserError, match=next(iter(options))):
            AiFlowEngine(**options)


def test_a_permission_error_is_a_meta_error_naming_the_rule() -> None:
    error = FlowPermissionError("no", graph_id="g", node_id="n", meta="m", rule="base_dir")

    assert isinstance(error, FlowMetaError) and str(error) == "graph 'g', node 'n', meta 'm': no [rule base_dir]"

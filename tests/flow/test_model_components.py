"""The EmbeddingModel and GenerateModel components against an OpenAI-compatible server on loopback."""

from __future__ import annotations

import contextlib
import http.server
import threading
import time
from collections.abc import Iterator

import pytest

from batonflow.errors import RunError
from batonflow.flow import AiFlowEngine, FlowComponentError, GeneratedImage, ImageModel, OpenAIImageModel, serving
from batonflow.graph import FlowContext, Graph
from batonflow.models import EmbeddingModel
from batonflow.schema import user

from .conftest import FakeOpenAI


def flow(*nodes: str) -> Graph:
    return Graph.from_yaml("id: g\nlayout:\n" + "".join(f"  - {node}\n" for node in nodes))


async def test_embedding_config_maps_onto_an_openai_compatible_embeddings_endpoint(
    loopback_engine: AiFlowEngine, fake_openai: FakeOpenAI
) -> None:
    engine = loopback_engine
    config = f"{{provider: ollama, model: bge-m3, apiUrl: '{fake_openai.url}/api/embed'}}"
    context = await engine.eval(flow('{task: "@EmbeddingModel", meta: {embeddingConfig: ' + config + "}}"))

    model = context.get("property_embeddingModel")[0]
    assert isinstance(model, EmbeddingModel) and context.get("message") is None  # no I/O
    assert await model.embed(["a", "b"]) == [[1.0, 0.0], [1.0, 0.0]]
    assert [(path, body["model"]) for path, _, body in fake_openai.requests] == [("/v1/embeddings", "bge-m3")]


async def test_generate_model_turns_text_into_an_image_with_the_default_options(
    loopback_engine: AiFlowEngine, fake_openai: FakeOpenAI
) -> None:
    engine = loopback_engine
    config = f"{{model: dall-e, apiUrl: '{fake_openai.url}/v1/images/generations', apiKey: k, defaultOptions: {{size: 512x512}}}}"
    graph = flow('{task: "@GenerateModel", meta: {generateConfig: ' + config + "}}")

    context = await engine.eval(graph, FlowContext(variables={"message": user("a cat")}))

    assert context.get("message") == GeneratedImage(url="https://images.example/512x512.png")
    assert isinstance(context.get("property_generateModel")[0], ImageModel)
    path, authorization, body = fake_openai.requests[0]
    assert (path, authorization, body["prompt"], body["model"]) == (
        "/v1/images/generations",
        "Bearer k",
        "a cat",
        "dall-e",
    )


async def test_a_generated_image_is_rendered_as_markdown_by_web_output(engine: AiFlowEngine) -> None:
    class Painter:
        model_name = "painter"

        async def generate_image(self, prompt: str) -> GeneratedImage:
            return GeneratedImage(url=f"https://img/{prompt}.png")

    class Exchange:
        def __init__(self) -> None:
            self.written: list[str] = []

        def param(self, name: str) -> str | None:
            return {"message": "sunset"}.get(name)

        def file(self, name: str) -> None:
            return None

        async def write(self, text: str) -> None:
            self.written.append(text)

    engine.register("painter", Painter())
    exchange = Exchange()
    with serving(exchange):
        await engine.eval(
            flow(
                '{task: "@WebInput"}',
                '{task: "@GenerateModel", meta: {generateConfig: {model: painter}}}',
                '{task: "@WebOutput"}',
            )
        )

    assert exchange.written == ['{"role": "assistant", "content": "![](https://img/sunset.png)"}\n']


async def test_generate_model_refuses_other_input(engine: AiFlowEngine) -> None:
    class Painter:
        model_name = "painter"

        async def generate_image(self, prompt: str) -> GeneratedImage:
            raise AssertionError("not called")

    engine.register("painter", Painter())

    with pytest.raises(FlowComponentError, match="Unsupported data type: list"):
        await engine.eval(
            flow('{task: "@GenerateModel", meta: {generateConfig: {model: painter}}}'),
            FlowContext(variables={"message": [1]}),
        )


async def test_a_failing_image_model_names_generate_config(engine: AiFlowEngine) -> None:
    class Broken:
        model_name = "broken"

        async def generate_image(self, prompt: str) -> GeneratedImage:
            raise ConnectionError("refused")

    engine.register("broken", Broken())

    with pytest.raises(FlowComponentError) as caught:
        await engine.eval(flow('{task: "@GenerateModel", meta: {message: x, generateConfig: {model: broken}}}'))

    assert caught.value.meta == "generateConfig" and "ConnectionError: refused" in str(caught.value)


async def test_an_images_endpoint_that_does_not_answer_names_generate_config(loopback_engine: AiFlowEngine) -> None:
    engine = loopback_engine
    graph = flow(
        '{task: "@GenerateModel", meta: {message: a cat, generateConfig: {model: m, apiUrl: "http://127.0.0.1:1/v1"}}}'
    )

    with pytest.raises(FlowComponentError) as caught:
        await engine.eval(graph)

    assert caught.value.meta == "generateConfig"
    assert "image model 'm' request to http://127.0.0.1:1/v1/images/generations failed: ConnectError" in str(
        caught.value
    )


@pytest.fixture
def endless_images() -> Iterator[str]:
    """An images endpoint on loopback: ``/big/...`` answers without end, ``/drip/...`` a byte every 0.1 s."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                for _ in range(600):  # a minute at most, should the client not hang up
                    if self.path.startswith("/drip"):
                        self.wfile.write(b"1\r\n \r\n")
                        self.wfile.flush()
                        time.sleep(0.1)
                    else:
                        self.wfile.write(b"10000\r\n" + b" " * 65536 + b"\r\n")

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


async def test_an_images_endpoint_answering_without_end_is_cut_at_max_response_bytes(endless_images: str) -> None:
    model = OpenAIImageModel("m", base_url=f"{endless_images}/big", api_key="k", max_response_bytes=100_000)

    with pytest.raises(RunError, match="the answer is larger than 100000 bytes"):
        await model.generate_image("a cat")


async def test_an_images_endpoint_answering_a_byte_at_a_time_is_cut_at_the_timeout(endless_images: str) -> None:
    model = OpenAIImageModel("m", base_url=f"{endless_images}/drip", api_key="k", timeout=0.5)

    with pytest.raises(RunError, match=r"request to .*/drip/images/generations took longer than 0.5 s"):
        await model.generate_image("a cat")


def test_the_image_model_s_default_endpoint_follows_openai_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1/")

    assert OpenAIImageModel("m").base_url == "http://127.0.0.1:1/v1"

"""The input and output components: VarInput, VarCopy, ConsoleInput, WebInput, VarOutput, ConsoleOutput,
WebOutput."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from batonflow.flow import (
    AiFlowEngine,
    Document,
    FlowComponentError,
    FlowMetaError,
    GeneratedImage,
    current_exchange,
    output_text,
    serving,
)
from batonflow.graph import FlowContext, Graph
from batonflow.schema import Message, Stream, assistant

from .conftest import Console


def flow(*nodes: str) -> Graph:
    return Graph.from_yaml("id: g\nlayout:\n" + "".join(f"  - {node}\n" for node in nodes))


class Exchange:
    def __init__(self, params: dict[str, str] | None = None, files: dict[str, Any] | None = None) -> None:
        self.params = params or {}
        self.files = files or {}
        self.written: list[str] = []

    def param(self, name: str) -> str | None:
        return self.params.get(name)

    def file(self, name: str) -> Any:
        return self.files.get(name)

    async def write(self, text: str) -> None:
        self.written.append(text)


def chunks(*texts: str) -> Stream[Message]:
    return Stream.from_list([assistant(text) for text in texts])


# -- VarInput, VarCopy -------------------------------------------------------------------------------------------


async def test_var_input_puts_every_meta_into_the_context(engine: AiFlowEngine) -> None:
    context = await engine.eval(flow('{task: "@VarInput", meta: {message: hi, n: 3, tags: [a, b]}}'))

    assert (context.get("message"), context.get("n"), context.get("tags")) == ("hi", 3, ["a", "b"])


async def test_var_copy_evaluates_each_meta_as_an_expression_over_the_variables(engine: AiFlowEngine) -> None:
    context = await engine.eval(
        flow(
            '{task: "@VarCopy", meta: {var2: message, total: "n * 2 + 1", first: "items[0]", long: "len(message) > 3"}}'
        ),
        FlowContext(variables={"message": "hello", "n": 4, "items": ["x", "y"]}),
    )

    assert (context.get("var2"), context.get("total"), context.get("first"), context.get("long")) == (
        "hello",
        9,
        "x",
        True,
    )


async def test_var_copy_is_sandboxed_as_the_engine_s_conditions(engine: AiFlowEngine) -> None:
    with pytest.raises(FlowMetaError) as caught:
        await engine.eval(
            flow('{id: c, task: "@VarCopy", meta: {x: "message.__class__"}}'), FlowContext(variables={"message": "m"})
        )

    assert (caught.value.graph_id, caught.value.node_id, caught.value.meta) == ("g", "c", "x")
    assert str(caught.value).startswith("graph 'g', node 'c', meta 'x': expression 'message.__class__'")


async def test_var_copy_computing_with_null_names_the_meta(engine: AiFlowEngine) -> None:
    with pytest.raises(FlowComponentError) as caught:
        await engine.eval(flow('{id: c, task: "@VarCopy", meta: {y: "missing + 1"}}'))

    assert caught.value.meta == "y" and "found null" in str(caught.value)


# -- ConsoleInput ------------------------------------------------------------------------------------------------


async def test_console_input_reads_a_line_into_output() -> None:
    console = Console(["first line", "second"])
    engine = AiFlowEngine(stdin=console.stdin, stdout=console.stdout)

    context = await engine.eval(flow('{task: "@ConsoleInput", meta: {output: said}}', '{task: "@ConsoleInput"}'))

    assert context.get("said") == "first line" and context.get("message") == "second"


async def test_the_end_of_the_console_input_stops_the_flow(engine: AiFlowEngine) -> None:
    context = await engine.eval(
        flow(
            '{id: first, task: "@VarInput"}',
            '{id: read, task: "@ConsoleInput"}',
            '{id: after, task: "@VarInput", meta: {x: 1}}',
        )
    )

    assert context.is_stopped and context.get("x") is None and context.last_node_id == "read"


# -- WebInput ----------------------------------------------------------------------------------------------------


async def test_web_input_takes_the_message_from_the_context_when_not_served(engine: AiFlowEngine) -> None:
    context = await engine.eval(
        flow('{task: "@WebInput", meta: {output: question}}'), FlowContext(variables={"message": "hi"})
    )

    assert context.get("question") == "hi"


async def test_web_input_reads_the_request_parameter_and_file_when_served(engine: AiFlowEngine) -> None:
    upload = object()
    exchange = Exchange({"message": "from the request"}, {"attachment": upload})

    with serving(exchange):
        assert current_exchange() is exchange
        context = await engine.eval(flow('{task: "@WebInput"}'))

    assert current_exchange() is None
    assert context.get("message") == "from the request" and context.get("attachment") is upload


async def test_web_input_prefers_the_node_and_the_context_to_the_request(engine: AiFlowEngine) -> None:
    with serving(Exchange({"message": "request", "q": "request"})):
        context = await engine.eval(
            flow(
                '{task: "@WebInput", meta: {input: q, q: literal, output: a}}', '{task: "@WebInput", meta: {output: b}}'
            ),
            FlowContext(variables={"message": "context"}),
        )

    assert (context.get("a"), context.get("b")) == ("literal", "context")


async def test_web_input_without_a_message_is_an_error_even_without_an_attachment(engine: AiFlowEngine) -> None:
    with serving(Exchange()), pytest.raises(FlowComponentError) as caught:
        await engine.eval(flow('{id: w, task: "@WebInput"}'))

    assert caught.value.meta == "input"
    assert str(caught.value) == (
        "graph 'g', node 'w', meta 'input': expected a message named 'message' in the node, the context or the "
        "request, got none"
    )


async def test_web_input_fetches_an_attachment_url_from_an_allowed_host(static_site: str, tmp_path: Path) -> None:
    (tmp_path / "site" / "about.md").write_text("About us")
    engine = AiFlowEngine(allowed_hosts=[static_site.removeprefix("http://")])

    context = await engine.eval(
        flow('{task: "@WebInput"}'), FlowContext(variables={"message": "m", "attachment": f"{static_site}/about.md"})
    )

    attachment = context.get("attachment")
    assert isinstance(attachment, Document) and attachment.content == "About us"


async def test_web_input_refuses_an_attachment_url_on_a_host_that_is_not_allowed(engine: AiFlowEngine) -> None:
    with pytest.raises(FlowMetaError) as caught:
        await engine.eval(
            flow('{id: w, task: "@WebInput"}'),
            FlowContext(variables={"message": "m", "attachment": "http://169.254.169.254/latest/meta-data"}),
        )

    assert (caught.value.node_id, caught.value.meta) == ("w", "attachment")
    assert (
        "'http://169.254.169.254/latest/meta-data' connects to the host 169.254.169.254:80, which is not allowed"
        in str(caught.value)
    )


# -- VarOutput, ConsoleOutput, WebOutput -------------------------------------------------------------------------


async def test_output_text_drains_streams_and_reads_messages_and_images() -> None:
    assert await output_text(chunks("Hel", "", "lo")) == "Hello"
    assert await output_text(assistant("whole")) == "whole"
    assert await output_text(GeneratedImage(url="https://x/1.png")) == "https://x/1.png"
    assert await output_text(None) == "null"
    assert await output_text(False) == "false"


async def test_var_output_drains_a_stream_into_output(engine: AiFlowEngine) -> None:
    context = await engine.eval(
        flow('{task: "@VarOutput", meta: {output: text}}'), FlowContext(variables={"message": chunks("a", "b")})
    )

    assert context.get("text") == "ab"


async def test_console_output_prints_the_text(engine: AiFlowEngine, console: Console) -> None:
    await engine.eval(flow('{task: "@ConsoleOutput"}'), FlowContext(variables={"message": assistant("the answer")}))

    assert console.printed == ["the answer"]


async def test_console_output_prints_its_format_filled_from_the_variables(
    engine: AiFlowEngine, console: Console
) -> None:
    context = await engine.eval(
        flow('{task: "@ConsoleOutput", meta: {format: "Robot: #{message} (#{missing})"}}'),
        FlowContext(variables={"message": chunks("str", "eamed")}),
    )

    assert console.printed == ["Robot: streamed (null)"] and context.get("message") == "streamed"


async def test_web_output_streams_each_chunk_to_the_response(engine: AiFlowEngine, console: Console) -> None:
    exchange = Exchange()
    with serving(exchange):
        context = await engine.eval(
            flow('{task: "@WebOutput"}'), FlowContext(variables={"message": chunks("Hel", "lo")})
        )

    assert exchange.written == ['{"role": "assistant", "content": "Hel"}\n', '{"role": "assistant", "content": "lo"}\n']
    assert context.get("message") == "Hello" and console.printed == []


async def test_web_output_renders_a_generated_image_as_markdown(engine: AiFlowEngine) -> None:
    exchange = Exchange()
    with serving(exchange):
        context = await engine.eval(
            flow('{task: "@WebOutput"}'), FlowContext(variables={"message": GeneratedImage(url="https://i/1.png")})
        )

    assert exchange.written == ['{"role": "assistant", "content": "![](https://i/1.png)"}\n']
    assert context.get("message") == "https://i/1.png"


async def test_web_output_with_a_format_writes_it_once(engine: AiFlowEngine) -> None:
    exchange = Exchange()
    with serving(exchange):
        await engine.eval(
            flow('{task: "@WebOutput", meta: {format: "A: #{message}"}}'),
            FlowContext(variables={"message": chunks("x", "y")}),
        )

    assert exchange.written == ["A: xy\n"]


async def test_web_output_not_served_writes_to_the_console(engine: AiFlowEngine, console: Console) -> None:
    await engine.eval(flow('{task: "@WebOutput"}'), FlowContext(variables={"message": "plain"}))

    assert console.printed == ["plain"]

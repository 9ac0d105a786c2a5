"""The input and output components: ``VarInput``, ``VarCopy``, ``ConsoleInput``, ``WebInput``, ``VarOutput``,
``ConsoleOutput`` and ``WebOutput``.

Outputs turn what a model left in the context into text: a stream is drained (the content of its chunks
concatenated), a message gives its content, a generated image its URL, and anything else is written as Java writes
it (``null``, ``true``).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from ..graph import ExpressionError, FlowContext, Node, compile_expression, render_template
from ..schema import Message, Stream
from ._base import AiComponent, meta_text
from ._documents import load_url
from ._errors import FlowComponentError, FlowMetaError
from ._generate import GeneratedImage
from ._web import current_exchange

__all__ = [
    "ConsoleInput",
    "ConsoleOutput",
    "VarCopy",
    "VarInput",
    "VarOutput",
    "WebInput",
    "WebOutput",
    "output_text",
]

FORMAT = "format"


def _java_text(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


async def output_text(data: Any) -> str:
    """``data`` as text: a stream drained, a message's content, an image's URL, else the value written out."""
    if isinstance(data, Stream):
        parts = [chunk.content async for chunk in data if isinstance(chunk, Message) and chunk.content]
        return "".join(parts)
    if isinstance(data, Message):
        return data.content
    if isinstance(data, GeneratedImage):
        return data.value
    return _java_text(data)


class VarInput(AiComponent):
    """Puts every meta entry into the context."""

    name = "VarInput"

    async def do_run(self, context: FlowContext, node: Node) -> None:
        context.put_all(node.meta)


class VarCopy(AiComponent):
    """``newKey: <expression>``: puts the expression's value over the context's variables, in the sandbox the
    engine's conditions run in (``var2: message`` copies ``message``)."""

    name = "VarCopy"

    async def do_run(self, context: FlowContext, node: Node) -> None:
        expressions = self.cached(node, lambda: _compile_all(node))
        for key, expression in expressions.items():
            try:
                value = expression.evaluate(context.data)
            except ExpressionError as error:
                raise FlowComponentError(str(error), graph_id=node.graph.id, node_id=node.id, meta=key) from None
            context.put(key, value)


def _compile_all(node: Node) -> dict[str, Any]:
    compiled = {}
    for key, source in node.meta.items():
        text = _java_text(source) if isinstance(source, bool | int | float) else source
        try:
            compiled[key] = compile_expression(text)
        except ExpressionError as error:
            raise FlowMetaError(str(error), graph_id=node.graph.id, node_id=node.id, meta=key) from None
    return compiled


class ConsoleInput(AiComponent):
    """Reads one line from the console into ``output``. At the end of the input it stops the flow."""

    name = "ConsoleInput"

    async def do_run(self, context: FlowContext, node: Node) -> None:
        line = await asyncio.to_thread(self.settings.console_in.readline)
        if not line:
            context.stop()
            return
        self.set_output(context, node, line.rstrip("\r\n"))


class WebInput(AiComponent):
    """The message and the attachment: from the node or the context, else from the HTTP request being served. A
    missing message is an error. An attachment given as an ``http(s)`` URL is fetched as a document is (allowed hosts only, bounded)."""

    name = "WebInput"

    async def do_run(self, context: FlowContext, node: Node) -> None:
        exchange = current_exchange()
        message = self.get_input(context, node)
        if message is None and exchange is not None:
            message = exchange.param(self.input_name(node))
        attachment = self.get_attachment(context, node)
        if attachment is None and exchange is not None:
            attachment = exchange.file(self.attachment_name(node))
        if message is None:
            where = "the node, the context" + (" or the request" if exchange is not None else "")
            raise FlowComponentError(
                f"expected a message named {self.input_name(node)!r} in {where}, got none",
                graph_id=node.graph.id,
                node_id=node.id,
                meta="input",
            )
        if isinstance(attachment, str) and attachment.startswith(("http://", "https://")):
            attachment = await load_url(attachment, self.settings, node, meta="attachment")
        self.set_output(context, node, message)
        self.set_attachment(context, node, attachment)


class VarOutput(AiComponent):
    """Writes the input as text (a stream drained) to ``output``."""

    name = "VarOutput"

    async def do_run(self, context: FlowContext, node: Node) -> None:
        text = await output_text(self.get_input(context, node))
        self.set_output(context, node, text)
        self.show(context, node, text)

    def show(self, context: FlowContext, node: Node, text: str) -> None:
        """Where the text goes besides ``output``: nowhere for ``VarOutput``."""


class ConsoleOutput(VarOutput):
    """``VarOutput``, then prints the text, or the ``format`` template filled from the variables
    (``"Robot: #{message}"``)."""

    name = "ConsoleOutput"

    def show(self, context: FlowContext, node: Node, text: str) -> None:
        template = meta_text(node, FORMAT)
        out = self.settings.console_out
        out.write((render_template(template, context.data) if template else text) + "\n")
        out.flush()


class WebOutput(AiComponent):
    """Streams the input to the HTTP response being served, a line per chunk (a message as JSON, a generated image
    as ``![](url)``), or the ``format`` template once; writes the whole text to ``output``. Not served, the lines
    go to the console."""

    name = "WebOutput"

    async def do_run(self, context: FlowContext, node: Node) -> None:
        data = self.get_input(context, node)
        template = meta_text(node, FORMAT)
        if template:
            text = await output_text(data)
            self.set_output(context, node, text)
            await self._line(render_template(template, context.data))
            return
        if isinstance(data, Stream):
            parts = []
            async for chunk in data:
                if isinstance(chunk, Message) and chunk.content:
                    parts.append(chunk.content)
                    await self._line(_message_json(chunk))
            text = "".join(parts)
        elif isinstance(data, Message):
            text = data.content
            await self._line(_message_json(data))
        elif isinstance(data, GeneratedImage):
            text = data.value
            await self._line(_message_json(Message(role="assistant", content=f"![]({data.value})")))
        else:
            text = _java_text(data)
            await self._line(text)
        self.set_output(context, node, text)

    async def _line(self, text: str) -> None:
        exchange = current_exchange()
        if exchange is not None:
            await exchange.write(text + "\n")
        else:
            self.settings.console_out.write(text + "\n")
            self.settings.console_out.flush()


def _message_json(message: Message) -> str:
    return json.dumps({"role": message.role, "content": message.content}, ensure_ascii=False)

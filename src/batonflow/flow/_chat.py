"""The ``ChatModel`` component: a chat model built from ``chatConfig`` (once per node), its tools from
``toolProviders`` and ``mcpServers``, a conversation per ``chatSession`` key, and the answer (or its stream) in
``output``.

Every model call goes through the agent loop's ``ModelStep``, so that it is traced and counted as an agent's are.
A turn sends the rendered ``systemPrompt``, the session's messages and the input; while the model calls tools, the
tools run and the model is called again; the turn's messages then join the session. With ``stream: true`` the
output is a stream of the answer's chunks, and the session is updated once it has been read to the end.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..adk import RunContext
from ..adk.loop import ModelStep
from ..codec import register_type
from ..errors import ToolArgumentsError, UserError
from ..graph import FlowContext, Node, render_template
from ..models import ChatModel, load_model
from ..schema import Message, Stream, ToolCall, system, tool_message, user
from ..tools import Tool, ToolContext
from ._base import AiComponent, meta_bool, meta_text
from ._config import ModelConfig, checked_config, default_settings
from ._errors import FlowComponentError, FlowMetaError
from ._tools import NodeTools, node_tools

__all__ = ["MAX_TOOL_ROUNDS", "ChatModelComponent", "ChatSession"]

MAX_TOOL_ROUNDS = 8
"""How many times one turn lets the model call tools before it is taken for a loop."""

CHAT_CONFIG, STREAM, SYSTEM_PROMPT, CHAT_SESSION = "chatConfig", "stream", "systemPrompt", "chatSession"


@dataclass(slots=True)
class ChatSession:
    """A conversation a ``ChatModel`` node keeps in the context (under its ``chatSession`` key, default
    ``chatSession``). ``max_messages`` above 0 drops the oldest messages but system ones past that many."""

    session_id: str = ""
    messages: list[Message] = field(default_factory=list)
    max_messages: int = 0

    def add(self, messages: Sequence[Message]) -> None:
        self.messages.extend(messages)
        excess = len(self.messages) - self.max_messages
        if self.max_messages > 0 and excess > 0:
            kept: list[Message] = []
            for message in self.messages:
                if excess > 0 and message.role != "system":
                    excess -= 1
                else:
                    kept.append(message)
            self.messages = kept


register_type(ChatSession, name="FlowChatSession")


@dataclass(slots=True)
class _Built:
    model: ChatModel
    tools: NodeTools
    step: ModelStep


def prompt_of(data: Any, node: Node) -> list[Message]:
    """The input as the turn's messages: text is a user message; a message or a list of them as they are."""
    if isinstance(data, str):
        return [user(data)]
    if isinstance(data, Message):
        return [data]
    if isinstance(data, list | tuple) and data and all(isinstance(item, Message) for item in data):
        return list(data)
    raise FlowComponentError(
        f"Unsupported data type: {type(data).__name__}; expected text, a Message or a list of Messages",
        graph_id=node.graph.id,
        node_id=node.id,
        meta="input",
    )


class ChatModelComponent(AiComponent):
    """``@ChatModel``: see the module's docstring."""

    name = "ChatModel"

    async def do_run(self, context: FlowContext, node: Node) -> None:
        built = self._cache.get(node)
        if built is None:
            built = self._cache[node] = await self._build(node)
        self.set_property(context, "chatModel", built.model)
        data = self.get_input(context, node)
        if data is None:
            return
        prompt = prompt_of(data, node)
        session = self._session(context, node)
        system_prompt = meta_text(node, SYSTEM_PROMPT)
        head = [system(render_template(system_prompt, context.data))] if system_prompt else []
        messages = [*head, *session.messages, *prompt]
        if meta_bool(node, STREAM):
            self.set_output(context, node, Stream.from_async_iter(self._stream(built, messages, prompt, session, node)))
            return
        turn = await self._turn(built, messages, node)
        session.add([*prompt, *turn])
        self.set_output(context, node, turn[-1])

    def _session(self, context: FlowContext, node: Node) -> ChatSession:
        key = meta_text(node, CHAT_SESSION) or CHAT_SESSION
        session = context.compute_if_absent(key, lambda name: ChatSession(name))
        if not isinstance(session, ChatSession):
            raise FlowMetaError(
                f"expected the context variable {key!r} to hold a ChatSession, got {type(session).__name__}",
                graph_id=node.graph.id,
                node_id=node.id,
                meta=CHAT_SESSION,
            )
        return session

    async def _build(self, node: Node) -> _Built:
        meta_bool(node, STREAM)  # checked before the first call, not at the first streamed one
        meta_text(node, SYSTEM_PROMPT)
        model = self._model(node, await checked_config(node, CHAT_CONFIG, self.settings))
        step = ModelStep(model, settings=default_settings(node, CHAT_CONFIG))
        return _Built(model, await node_tools(node, self.settings), step)

    def _model(self, node: Node, config: ModelConfig) -> ChatModel:
        where = {"graph_id": node.graph.id, "node_id": node.id, "meta": CHAT_CONFIG}
        if config.registered is not None:
            found = self.settings.engine.get_component(config.registered)
            if isinstance(found, ChatModel):
                return found
            raise FlowMetaError(
                f"expected 'model' to name a chat model registered on the engine, or a 'provider' or an 'apiUrl', "
                f"got {config.registered!r} (no chat model is registered under that name)",
                **where,
            )
        shared = config.uri.startswith("local:")
        if shared and config.uri in self.settings.shared:
            model: ChatModel = self.settings.shared[config.uri]
            return model
        try:
            model = load_model(config.uri, **config.options)
        except UserError as error:
            raise FlowMetaError(str(error), **where) from error
        if shared:
            self.settings.shared[config.uri] = model
        return model

    async def _turn(self, built: _Built, messages: list[Message], node: Node) -> list[Message]:
        turn: list[Message] = []
        for _ in range(MAX_TOOL_ROUNDS + 1):
            try:
                answer = await built.step.generate([*messages, *turn], built.tools.infos or None, RunContext())
            except Exception as error:
                raise _model_failed(error, node) from error
            turn.append(answer)
            if not answer.tool_calls:
                return turn
            turn.extend([await self._call_tool(built.tools, call, node) for call in answer.tool_calls])
        raise _too_many_rounds(node)

    async def _stream(
        self, built: _Built, messages: list[Message], prompt: list[Message], session: ChatSession, node: Node
    ) -> AsyncIterator[Message]:
        turn: list[Message] = []
        for _ in range(MAX_TOOL_ROUNDS + 1):
            try:
                reply = await built.step.stream([*messages, *turn], built.tools.infos or None, RunContext())
                assert reply is not None  # only a held-back stream is None
                variant = reply.event.message_output
                assert variant is not None and variant.message_stream is not None
                async for chunk in variant.message_stream:
                    if chunk.content:
                        yield chunk
                answer = await reply.message()
            except Exception as error:
                raise _model_failed(error, node) from error
            turn.append(answer)
            if not answer.tool_calls:
                session.add([*prompt, *turn])
                return
            turn.extend([await self._call_tool(built.tools, call, node) for call in answer.tool_calls])
        raise _too_many_rounds(node)

    async def _call_tool(self, tools: NodeTools, call: ToolCall, node: Node) -> Message:
        name = call.function.name
        found: Tool | None = tools.by_name.get(name)
        if found is None:
            text = f"Unknown tool {name!r}: expected one of {sorted(tools.by_name)}"
            return tool_message(text, tool_call_id=call.id, tool_name=name)
        try:
            text = await found.invoke(call.function.arguments, ToolContext(tool_name=name, call_id=call.id))
        except ToolArgumentsError as error:
            text = str(error)
        except Exception as error:
            raise FlowComponentError(
                f"the tool {name!r} failed: {type(error).__name__}: {error}",
                graph_id=node.graph.id,
                node_id=node.id,
                meta=tools.meta_of[name],
            ) from error
        return tool_message(text, tool_call_id=call.id, tool_name=name)


def _model_failed(error: BaseException, node: Node) -> FlowComponentError:
    return FlowComponentError(
        f"the chat model failed: {type(error).__name__}: {error}",
        graph_id=node.graph.id,
        node_id=node.id,
        meta=CHAT_CONFIG,
    )


def _too_many_rounds(node: Node) -> FlowComponentError:
    return FlowComponentError(
        f"the model still called tools after {MAX_TOOL_ROUNDS} rounds of tool calls in one turn",
        graph_id=node.graph.id,
        node_id=node.id,
        meta="toolProviders",
    )

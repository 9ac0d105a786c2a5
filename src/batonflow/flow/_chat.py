"""The ``ChatModel`` component: a chat model built from ``chatConfig`` (once per node), its tools from
``toolProviders`` and ``mcpServers``, a conversation per ``chatSession`` key, and the answer (or its stream) in
``output``.

A node's chat model is an agent on the agent loop (a ``ModelAgent`` under a small policy of the node's), so that
its model calls are the model step's (traced and counted) and its tools the tool step's (concurrent, with
idempotency keys, able to interrupt). A turn sends the rendered ``systemPrompt``, the session's messages and the
input; while the model calls tools (``MAX_TOOL_ROUNDS`` rounds at most) the tools run and the model is called
again; the turn's messages then join the session. A tool that fails gives the model an observation saying so
(meta ``toolErrors: raise`` ends the turn with a ``FlowComponentError`` instead, as solon-ai-flow does).

Inside a graph agent or a team (``FlowContext.run``), the node's agent runs on the run, one step below the node,
as an agent node's does: its events stream out, and a tool's interrupt pauses the run and resumes through the
Runner's checkpoints. Outside any run (a plain ``eval``), the node makes a run of its own; with ``stream: true`` its
output is a stream of the answer's chunks, and the session is updated once it has been read to the end (in a run,
the run's streaming decides how the model is called, and the output is a stream of the answer once it is whole).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from ..adk import AgentEvent, AgentInput, FlowAgent, ResumeInfo, RunContext, agent_with_options
from ..adk.loop import (
    AgentMiddleware,
    AgentSetup,
    Answer,
    AskAgain,
    CallTools,
    Fail,
    ModelAgent,
    ModelRequest,
    ReactState,
    Routed,
    ToolCallHandler,
    ToolResult,
)
from ..codec import register_type
from ..errors import ToolArgumentsError, UserError
from ..graph import FlowContext, Node, current_host, render_template
from ..models import ChatModel, load_model
from ..schema import Message, RunStep, Stream, ToolCall, system, user
from ..tools import InterruptSignal, ToolContext
from ._base import AiComponent, meta_bool, meta_text
from ._config import ModelConfig, checked_config, default_settings
from ._errors import FlowComponentError, FlowMetaError
from ._tools import node_tools

__all__ = ["MAX_TOOL_ROUNDS", "ChatModelComponent", "ChatSession"]

MAX_TOOL_ROUNDS = 8
"""How many times one turn lets the model call tools before it is taken for a loop."""

CHAT_CONFIG, STREAM, SYSTEM_PROMPT, CHAT_SESSION = "chatConfig", "stream", "systemPrompt", "chatSession"
TOOL_ERRORS = "toolErrors"
_TOOL_ERROR_MODES = ("observe", "raise")


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


class _ToolFailed(FlowComponentError):
    """A node's tool raised: the error the turn ends with under ``toolErrors: raise``, its cause the tool's own."""


class _NodePolicy:
    """The loop policy of a ``ChatModel`` node: the turn's messages as given, tool calls run until the model
    answers, ``MAX_TOOL_ROUNDS`` rounds at most, and solon-ai-flow's texts for what goes wrong."""

    __slots__ = ("graph_id", "node_id", "raise_tool_errors")

    def __init__(self, node: Node, *, raise_tool_errors: bool) -> None:
        self.graph_id = node.graph.id
        self.node_id = node.id
        self.raise_tool_errors = raise_tool_errors

    async def model_input(self, setup: AgentSetup, input: AgentInput, ctx: RunContext) -> list[Message]:
        return list(input.messages)

    def before_turn(self, state: ReactState) -> Answer | Fail | None:
        if state.remaining > 0:
            return None
        return Fail(
            FlowComponentError(
                f"the model still called tools after {MAX_TOOL_ROUNDS} rounds of tool calls in one turn",
                graph_id=self.graph_id,
                node_id=self.node_id,
                meta="toolProviders",
            )
        )

    def request(self, state: ReactState) -> ModelRequest:
        return state.messages, state.tools or None

    def route(self, message: Message, state: ReactState, setup: AgentSetup) -> Routed:
        if not message.tool_calls:
            return Answer()
        # The calls of a turn past its last round are not run: the turn fails before the next model call.
        return CallTools(message) if state.remaining > 0 else AskAgain([])

    def direct_call(self, calls: Sequence[ToolCall], setup: AgentSetup) -> str | None:
        return None

    def round_answer(
        self, calls: Sequence[ToolCall], results: Mapping[str, ToolResult], setup: AgentSetup
    ) -> Message | None:
        return None

    def interrupt_messages(self, signals: Sequence[InterruptSignal]) -> list[Message]:
        return []

    def tool_failure(self, call: ToolCall, error: Exception, setup: AgentSetup) -> str | None:
        if isinstance(error, ToolArgumentsError):
            return str(error)
        if self.raise_tool_errors and isinstance(error, _ToolFailed):
            return None
        cause = error.__cause__ if isinstance(error, _ToolFailed) and error.__cause__ is not None else error
        return f"the tool {call.function.name!r} failed: {type(cause).__name__}: {cause}"

    def tool_not_found(self, name: str, setup: AgentSetup) -> str:
        return f"Unknown tool {name!r}: expected one of {sorted(setup.tools)}"

    def save_output(self, message: Message, ctx: RunContext) -> None:
        return None


@dataclass(slots=True)
class _Built:
    """A node's model and its agent, and the transcripts its runs ended with (by session and address, taken by
    the node once the run is over)."""

    model: ChatModel
    agent: ModelAgent
    transcripts: dict[tuple[int, tuple[Any, ...]], list[Message]] = field(default_factory=dict)


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
        if context.run is None:
            # Not in a run's flow, which is saved when the run interrupts: a model object is no data to save.
            self.set_property(context, "chatModel", built.model)
        data = self.get_input(context, node)
        if data is None:
            return
        prompt = prompt_of(data, node)
        session = self._session(context, node)
        system_prompt = meta_text(node, SYSTEM_PROMPT)
        head = [system(render_template(system_prompt, context.data))] if system_prompt else []
        messages = [*head, *session.messages, *prompt]
        streamed = meta_bool(node, STREAM)
        if context.run is None:
            ctx = RunContext(enable_streaming=streamed)
            events = FlowAgent(built.agent).run(AgentInput(messages=messages, enable_streaming=streamed), ctx)
            if streamed:
                chunks = self._chunks(events, built, ctx, len(messages), prompt, session, node)
                self.set_output(context, node, Stream.from_async_iter(chunks))
                return
            async with aclosing(events) as source:  # type: ignore[type-var]
                async for event in source:
                    _checked(event, node)
            turn = _turn(built, ctx, len(messages))
        else:
            found = await self._hosted(built, context, context.run, messages, node)
            if found is None:
                return  # interrupted: the flow waits at this node
            turn = found
        session.add([*prompt, *turn])
        answer = turn[-1]
        self.set_output(context, node, Stream.from_async_iter(_one(answer)) if streamed else answer)

    async def _hosted(
        self, built: _Built, context: FlowContext, run: RunContext, messages: list[Message], node: Node
    ) -> list[Message] | None:
        """The turn run as an agent node's agent is: on the run, its events handed over; None if it interrupted."""
        host = current_host()
        assert host is not None  # FlowContext.run is set by the host, for the host's flow
        step = host.step_of(node)
        node_ctx = run.child(step)
        flow = agent_with_options(built.agent, history_rewriter=lambda entries: messages)
        if host.resuming(step):
            events = flow.resume(ResumeInfo(enable_streaming=run.enable_streaming), node_ctx)
        else:
            events = flow.run(AgentInput(messages=messages, enable_streaming=run.enable_streaming), node_ctx)

        def failed(error: BaseException) -> Exception:
            return _failure(error, node)

        own_path = (*node_ctx.run_path, RunStep(built.agent.name))
        last, interrupted = await host.run_agent(events, context, step=step, own_path=own_path, failed=failed)
        if interrupted:
            return None
        turn = _turn(built, node_ctx, len(messages))
        if last is not None:
            host.answers.append(turn[-1].text)
        return turn

    async def _chunks(
        self,
        events: AsyncIterator[AgentEvent],
        built: _Built,
        ctx: RunContext,
        sent: int,
        prompt: list[Message],
        session: ChatSession,
        node: Node,
    ) -> AsyncIterator[Message]:
        async with aclosing(events) as source:  # type: ignore[type-var]
            async for event in source:
                _checked(event, node)
                variant = event.output.message_output if event.output is not None else None
                if variant is not None and variant.role == "assistant" and variant.message_stream is not None:
                    async for chunk in variant.message_stream:
                        if chunk.content:
                            yield chunk
        session.add([*prompt, *_turn(built, ctx, sent)])

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
        mode = meta_text(node, TOOL_ERRORS) or "observe"
        if mode not in _TOOL_ERROR_MODES:
            raise FlowMetaError(
                f"expected one of {list(_TOOL_ERROR_MODES)}, got {mode!r}",
                graph_id=node.graph.id,
                node_id=node.id,
                meta=TOOL_ERRORS,
            )
        model = self._model(node, await checked_config(node, CHAT_CONFIG, self.settings))
        tools = await node_tools(node, self.settings)
        transcripts: dict[tuple[int, tuple[Any, ...]], list[Message]] = {}

        def keep(state: ReactState, ctx: RunContext) -> None:
            transcripts[(id(ctx.session), ctx.address)] = state.messages

        def wrap(handler: ToolCallHandler) -> ToolCallHandler:
            async def call(tool_call: ToolCall, ctx: ToolContext) -> str:
                try:
                    return await handler(tool_call, ctx)
                except ToolArgumentsError:
                    raise
                except Exception as error:
                    name = tool_call.function.name
                    raise _ToolFailed(
                        f"the tool {name!r} failed: {type(error).__name__}: {error}",
                        graph_id=node.graph.id,
                        node_id=node.id,
                        meta=tools.meta_of[name],
                    ) from error

            return call

        agent = ModelAgent(
            name=node.id,
            model=model,
            policy=_NodePolicy(node, raise_tool_errors=mode == "raise"),
            tools=list(tools.by_name.values()),
            max_turns=MAX_TOOL_ROUNDS + 1,
            model_settings=default_settings(node, CHAT_CONFIG),
            middlewares=[AgentMiddleware(after_agent=keep, wrap_tool_call=wrap)],
        )
        return _Built(model, agent, transcripts)

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


def _turn(built: _Built, ctx: RunContext, sent: int) -> list[Message]:
    """The messages a finished turn added to the ``sent`` ones, as its loop's transcript ends."""
    agent_ctx = ctx.child(built.agent.name)  # where the agent ran: one step below the context it was given
    transcript = built.transcripts.pop((id(agent_ctx.session), agent_ctx.address))
    return transcript[sent:]


def _checked(event: AgentEvent, node: Node) -> None:
    """A run of the node's own: an interrupt cannot be resumed there, an error is the node's."""
    if event.action is not None and event.action.signal is not None:
        raise FlowComponentError(
            "a tool interrupted the turn; a ChatModel node can be interrupted and resumed only in a GraphAgent run "
            "under a Runner",
            graph_id=node.graph.id,
            node_id=node.id,
            meta="toolProviders",
        )
    if isinstance(event.error, FlowComponentError):
        raise event.error
    if event.error is not None:
        raise _failure(event.error, node) from event.error


def _failure(error: BaseException, node: Node) -> Exception:
    if isinstance(error, FlowComponentError):
        return error  # the policy's or a tool's: it names its meta
    return FlowComponentError(
        f"the chat model failed: {type(error).__name__}: {error}",
        graph_id=node.graph.id,
        node_id=node.id,
        meta=CHAT_CONFIG,
    )


async def _one(message: Message) -> AsyncIterator[Message]:
    yield message

"""batonflow agents as the tools of an MCP server, on the official ``mcp`` SDK's low-level ``Server``.

``create_mcp_server(agents)`` lists each agent as a tool whose ``input`` is the request's text (with an optional
``session_id``, a conversation of the session store, or ``checkpoint_id``, where an interrupted run is saved); a
call runs the agent through a ``Runner`` and answers its final text, with ``{"status", "run_id", ...}`` as the
structured content. While the run goes, each step it takes is a progress notification to a client that sent a
progress token. A run that waits for a person is answered through elicitation when the client can be asked (on
the handshake protocol, a request back to the client in the same call; on the 2026-07-28 protocol, an
``InputRequiredResult`` whose answers the client's retry brings), and the run resumes from its checkpoint in the
same call; otherwise the result says the run is waiting and names its checkpoint and interrupts, and the
``resume`` tool answers them. ``tools=True`` lists the agents' own tools too, each called directly.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict, ValidationError

from ..adk import Agent, AgentEvent, Capture, InterruptCtx, RunResult
from ..agents import ConversationRunner
from ..errors import UserError
from ..schema import Stream, user
from ..store import CheckpointStore, MemoryCheckpointStore, MemorySessionStore, SessionStore
from ..tools import Tool
from ._mcp_answers import (
    ElicitAnswer,
    elicitation_of,
    interrupt_entries,
    root_causes,
    target_of,
    waiting_text,
)

__all__ = ["create_mcp_server"]

RESUME_TOOL = "resume"
_ELICIT_TIMEOUT = 900.0  # seconds a person has to answer one elicitation before the run is left waiting
_MAX_ASKED = 1024  # InputRequiredResults whose retry is awaited at once
_MAX_ROUNDS = 10  # elicitation rounds of one call (a resumed run may ask again) before it is left waiting

_AGENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "input": {"type": "string", "description": "the request, in the words a user would say it"},
        "session_id": {"type": "string", "description": "a conversation to continue (its history is kept)"},
        "checkpoint_id": {"type": "string", "description": "where the run is saved if it waits for an answer"},
    },
    "required": ["input"],
    "additionalProperties": False,
}
_RESUME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "checkpoint_id": {"type": "string", "description": "the checkpoint_id a waiting result named"},
        "answers": {
            "type": "object",
            "description": "interrupt id to its answer: 'approve' or 'reject' for an approval, any value else",
        },
        "agent": {"type": "string", "description": "the agent, for a checkpoint this server did not make"},
    },
    "required": ["checkpoint_id", "answers"],
    "additionalProperties": False,
}


class _AgentArguments(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    input: str
    session_id: str | None = None
    checkpoint_id: str | None = None


class _ResumeArguments(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    checkpoint_id: str
    answers: dict[str, Any]
    agent: str | None = None


@dataclass(slots=True)
class _Call:
    """One ``tools/call`` request: its context, and the steps its runs reported (progress only ever grows)."""

    ctx: ServerRequestContext[Any]
    steps: int = 0


class _Refused(Exception):
    """A call the server answers with an error result (``isError``), in these words."""


@dataclass(slots=True)
class _Pending:
    """A run that waits: the agent, where it is saved (a checkpoint, or a conversation's session), its interrupts."""

    agent: str
    checkpoint_id: str | None = None
    session_id: str | None = None
    causes: list[InterruptCtx] = field(default_factory=list)

    @property
    def interrupt_ids(self) -> list[str]:
        return [cause.id for cause in self.causes]

    @property
    def key(self) -> str:
        return self.session_id if self.session_id is not None else str(self.checkpoint_id)


def create_mcp_server(
    agents: Sequence[Agent] | Mapping[str, Agent],
    *,
    tools: bool = False,
    checkpoint_store: CheckpointStore | None = None,
    session_store: SessionStore | None = None,
    name: str = "batonflow",
) -> Server[Any]:
    """An MCP server (the SDK's ``mcp.server.Server``) whose tools are ``agents`` (and, with ``tools``, the tools
    the agents were given), plus ``resume`` for runs left waiting. Interrupted runs are saved in
    ``checkpoint_store`` and conversations kept in ``session_store`` (in memory when None). Serve it with the SDK
    (``server.run`` on ``stdio_server()``, ``server.streamable_http_app()``) or ``batonflow mcp``."""
    bridge = _Bridge(_agents_of(agents), tools, checkpoint_store, session_store)
    return Server(name, on_list_tools=bridge.list_tools, on_call_tool=bridge.call_tool)


def _agents_of(agents: Sequence[Agent] | Mapping[str, Agent]) -> dict[str, Agent]:
    named = list(agents.items()) if isinstance(agents, Mapping) else [(getattr(a, "name", ""), a) for a in agents]
    if not named:
        raise UserError("create_mcp_server: expected at least one agent, got none")
    found: dict[str, Agent] = {}
    for key, agent in named:
        if not isinstance(key, str) or not key or not callable(getattr(agent, "run", None)):
            raise UserError(f"create_mcp_server: expected agents with names, got {key!r}: {agent!r}")
        if key in found or key == RESUME_TOOL:
            raise UserError(f"create_mcp_server: expected a tool name of its own for each agent, got {key!r} twice")
        found[key] = agent
    return found


class _Bridge:
    """The server's handlers: tools listed and called, runs resumed."""

    def __init__(
        self,
        agents: dict[str, Agent],
        tools: bool,
        checkpoint_store: CheckpointStore | None,
        session_store: SessionStore | None,
    ) -> None:
        checkpoints = checkpoint_store if checkpoint_store is not None else MemoryCheckpointStore()
        sessions = session_store if session_store is not None else MemorySessionStore()
        self.agents = agents
        self.runners = {
            key: ConversationRunner(agent, checkpoint_store=checkpoints, session_store=sessions)
            for key, agent in agents.items()
        }
        self.tools = _tools_of(agents) if tools else {}
        self.pending: dict[str, _Pending] = {}
        # request_state of an InputRequiredResult -> the run it asks for, and the steps the call reported so far
        self.asked: dict[str, tuple[_Pending, int]] = {}

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        listed = [
            types.Tool(
                name=key,
                description=agent.description or f"Ask the batonflow agent {key!r}.",
                input_schema=_AGENT_SCHEMA,
            )
            for key, agent in self.agents.items()
        ]
        listed.append(
            types.Tool(
                name=RESUME_TOOL,
                description="Answer the interrupts of a run that waits (a result that named its checkpoint_id).",
                input_schema=_RESUME_SCHEMA,
            )
        )
        listed += [
            types.Tool(name=key, description=tool.info.description, input_schema=tool.info.parameters)
            for key, tool in self.tools.items()
        ]
        return types.ListToolsResult(tools=listed)

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        known = [*self.agents, RESUME_TOOL, *self.tools]
        if params.name not in known:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"unknown tool {params.name!r}: expected one of {known}, got one this server does not have",
            )
        arguments, call = params.arguments or {}, _Call(ctx)
        try:
            if params.request_state is not None:
                return await self._answered(call, params.request_state, params.input_responses or {})
            if params.name in self.agents:
                return await self._ask(call, params.name, _parsed(_AgentArguments, params.name, arguments))
            if params.name == RESUME_TOOL:
                return await self._resume_tool(call, _parsed(_ResumeArguments, RESUME_TOOL, arguments))
            return await _call_tool(self.tools[params.name], arguments)
        except _Refused as refused:
            return _error(str(refused))

    # -- a run, and what it comes to -----------------------------------------------------------------------------

    async def _ask(
        self, call: _Call, agent: str, args: _AgentArguments
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Run ``agent`` on the call's input, then see its interrupts answered or left waiting."""
        if args.session_id is not None and args.checkpoint_id is not None:
            raise _Refused(
                f"{agent}: expected a session_id or a checkpoint_id (a conversation keeps its pending run itself), "
                "got both"
            )
        run_id = uuid.uuid4().hex
        if args.session_id is not None:
            where = _Pending(agent, session_id=args.session_id)
        else:
            where = _Pending(agent, checkpoint_id=args.checkpoint_id or f"mcp-{run_id}")
        start = self._starter(where, args.input, run_id)
        result = await _execute(call, where, start)
        return await self._settle(call, where, run_id, result)

    async def _continue(
        self, call: _Call, where: _Pending, targets: Mapping[str, Any]
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Resume the run ``where`` waits with ``targets``, then settle what it comes to."""
        waited = self.pending.pop(where.key, None)
        run_id = uuid.uuid4().hex
        try:
            result = await _execute(call, where, self._resumer(where, targets))
        except _Refused:
            if waited is not None:  # a resume that failed (or lost a race) leaves its run waiting
                self.pending.setdefault(where.key, waited)
            raise
        return await self._settle(call, where, run_id, result)

    async def _settle(
        self, call: _Call, where: _Pending, run_id: str, result: RunResult
    ) -> types.CallToolResult | types.InputRequiredResult:
        """A finished run's answer; an interrupted one's interrupts asked through elicitation (a request back to
        the client, rounds until it finishes or an answer is missing) or as an ``InputRequiredResult``; otherwise
        a result that says it waits."""
        for _ in range(_MAX_ROUNDS):
            if not result.interrupted:
                return _answer(where, run_id, result)
            causes = root_causes(result)
            where.causes = causes
            self.pending[where.key] = where
            if not _can_elicit(call.ctx):
                break
            if not call.ctx.session.can_send_request:
                if call.ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                    break
                return self._input_required(call, where, causes)
            targets = await _elicited(call, where.agent, causes)
            if targets is None:
                break
            self.pending.pop(where.key, None)
            run_id = uuid.uuid4().hex
            result = await _execute(call, where, self._resumer(where, targets))
        return _waiting(where, run_id, root_causes(result))

    def _starter(self, where: _Pending, text: str, run_id: str) -> Callable[[Capture], Stream[AgentEvent]]:
        runner = self.runners[where.agent]
        if where.session_id is not None:
            session_id = where.session_id
            return lambda capture: runner.run([user(text)], session_id=session_id, capture=capture)
        checkpoint_id = where.checkpoint_id
        return lambda capture: runner.run([user(text)], checkpoint_id=checkpoint_id, run_id=run_id, capture=capture)

    def _resumer(self, where: _Pending, targets: Mapping[str, Any]) -> Callable[[Capture], Stream[AgentEvent]]:
        runner = self.runners[where.agent]
        if where.session_id is not None:
            session_id = where.session_id
            return lambda capture: runner.run([], session_id=session_id, targets=targets, capture=capture)
        checkpoint_id = str(where.checkpoint_id)
        return lambda capture: runner.resume(checkpoint_id, targets, capture=capture)

    # -- answers: elicitation's, the 2026-07-28 protocol's retry, the resume tool --------------------------------

    def _input_required(self, call: _Call, where: _Pending, causes: list[InterruptCtx]) -> types.InputRequiredResult:
        """The interrupts as the elicitations of an ``InputRequiredResult``; the client's retry brings the answers
        with the request state, which names the run here (never the checkpoint itself)."""
        state = uuid.uuid4().hex
        while len(self.asked) >= _MAX_ASKED:  # retries never made: the oldest are forgotten (the resume tool remains)
            del self.asked[next(iter(self.asked))]
        self.asked[state] = (where, call.steps)
        requests: dict[str, Any] = {}
        for cause in causes:
            message, schema = elicitation_of(where.agent, cause)
            form = types.ElicitRequestFormParams(message=message, requested_schema=schema)
            requests[cause.id] = types.ElicitRequest(params=form)
        return types.InputRequiredResult(input_requests=requests, request_state=state)

    async def _answered(
        self, call: _Call, state: str, responses: Mapping[str, Any]
    ) -> types.CallToolResult | types.InputRequiredResult:
        """The retry of a call whose run asked: resume it with the answers, or leave it waiting without them."""
        asked = self.asked.pop(state, None)
        if asked is None:
            raise _Refused(
                f"requestState: expected the state of a call whose run asked for answers, got {state!r}, which "
                "this server does not know (answered already, or from another server)"
            )
        where, call.steps = asked  # the retry's progress goes on from the first call's
        targets: dict[str, Any] = {}
        for cause in where.causes:
            response = responses.get(cause.id)
            answer: ElicitAnswer = ("cancel", None)
            if isinstance(response, types.ElicitResult):
                answer = (response.action, response.content)
            answered, target = target_of(cause, answer)
            if not answered:
                return _waiting(where, uuid.uuid4().hex, where.causes)
            targets[cause.id] = target
        return await self._continue(call, where, targets)

    async def _resume_tool(
        self, call: _Call, args: _ResumeArguments
    ) -> types.CallToolResult | types.InputRequiredResult:
        """The ``resume`` tool: the answers given to the run ``checkpoint_id`` names."""
        where = self.pending.get(args.checkpoint_id)
        if where is None and args.agent is None:
            waiting = sorted(self.pending)
            raise _Refused(
                f"resume: expected the checkpoint_id of a waiting run (waiting: {waiting}), got "
                f"{args.checkpoint_id!r}, which this server does not know (give agent for one another process made)"
            )
        if where is None:
            if args.agent not in self.agents:
                raise _Refused(f"resume: expected agent to be one of {list(self.agents)}, got {args.agent!r}")
            where = _Pending(str(args.agent), checkpoint_id=args.checkpoint_id)
        elif where.interrupt_ids and not set(args.answers) & set(where.interrupt_ids):
            raise _Refused(
                f"resume: expected answers to interrupts of {args.checkpoint_id!r} ({where.interrupt_ids}), got "
                f"answers to {sorted(args.answers)}"
            )
        return await self._continue(call, where, args.answers)


# -- the pieces -----------------------------------------------------------------------------------------------------


def _tools_of(agents: Mapping[str, Agent]) -> dict[str, Tool]:
    """The agents' own tools by name; one name for two different tools, or an agent's name, is refused."""
    found: dict[str, Tool] = {}
    for agent in agents.values():
        for tool in getattr(agent, "tools", None) or ():
            key = tool.info.name
            if key in agents or key == RESUME_TOOL or (key in found and found[key] is not tool):
                raise UserError(
                    f"create_mcp_server(tools=True): expected tool names of their own, got {key!r} for two tools "
                    "(or for a tool and an agent)"
                )
            found[key] = tool
    return found


def _parsed(model: type[BaseModel], tool: str, arguments: Mapping[str, Any]) -> Any:
    """``arguments`` as ``model``, or the call refused naming each field that is off the schema."""
    try:
        return model.model_validate(dict(arguments))
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in e['loc']) or '(arguments)'}: {e['msg']}" for e in error.errors()
        )
        fields = ", ".join(f"{key}{'' if info.is_required() else '?'}" for key, info in model.model_fields.items())
        raise _Refused(
            f"arguments of {tool!r}: expected an object of {{{fields}}} (the tool's input schema), got "
            f"{dict(arguments)!r}: {problems}"
        ) from None


async def _call_tool(tool: Tool, arguments: Mapping[str, Any]) -> types.CallToolResult:
    """One of the agents' own tools, called directly: its observation, or its failure as an error result."""
    try:
        text = await tool.invoke(json.dumps(dict(arguments)))
    except Exception as error:  # a tool's failure is its call's answer, as it is a model's observation
        return _error(f"{tool.info.name}: {type(error).__name__}: {error}")
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def _execute(call: _Call, where: _Pending, start: Callable[[Capture], Stream[AgentEvent]]) -> RunResult:
    """Run what ``start`` starts to its end, each step a progress notification; a failed run is refused."""
    capture = Capture(metrics=False)
    try:
        events = start(capture)
        reported = Stream.from_async_iter(_reporting(call, events))
        return await capture.result(reported, checkpoint_id=where.checkpoint_id, session_id=where.session_id)
    except Exception as error:  # what ended the run (a model's, a tool's, a store's error) is the call's answer
        raise _Refused(f"{where.agent}: the run failed: {type(error).__name__}: {error}") from None


async def _reporting(call: _Call, events: Stream[AgentEvent]) -> Any:
    """``events`` as they come, each step of the run said as progress (a no-op without a progress token)."""
    async with aclosing(events):
        async for event in events:
            note = _step(event)
            if note:
                call.steps += 1
                await call.ctx.session.report_progress(call.steps, None, note)
            yield event


def _step(event: AgentEvent) -> str:
    """A step of a run in a few words: an agent's text, the tools it calls, a tool's answer."""
    variant = event.message_output
    message = variant.message if variant is not None else None
    if message is None:
        return ""
    calls = ", ".join(call.function.name for call in message.tool_calls or ())
    if calls:
        return f"{event.agent_name}: calls {calls}"
    if message.role == "tool":
        return f"{event.agent_name}: {variant.tool_name if variant else 'tool'} answered: {message.content[:200]}"
    return f"{event.agent_name}: {message.content}" if message.content else ""


def _can_elicit(ctx: ServerRequestContext[Any]) -> bool:
    capabilities = ctx.session.client_capabilities
    return capabilities is not None and capabilities.elicitation is not None


async def _elicited(call: _Call, agent: str, causes: list[InterruptCtx]) -> dict[str, Any] | None:
    """Each interrupt asked of the client in turn (a request back to it in this call); the targets its answers
    make, or None when one was cancelled, not answered in time, or refused by the client."""
    targets: dict[str, Any] = {}
    for cause in causes:
        message, schema = elicitation_of(agent, cause)
        try:
            with anyio.fail_after(_ELICIT_TIMEOUT):
                asked = await call.ctx.session.elicit_form(message, schema, related_request_id=call.ctx.request_id)
        except (MCPError, TimeoutError):
            return None
        answered, target = target_of(cause, (asked.action, asked.content))
        if not answered:
            return None
        targets[cause.id] = target
    return targets


def _answer(where: _Pending, run_id: str, result: RunResult) -> types.CallToolResult:
    structured: dict[str, Any] = {"status": "completed", "agent": where.agent, "run_id": run_id, "text": result.text}
    if where.session_id is not None:
        structured["session_id"] = where.session_id
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=result.text)], structured_content=structured
    )


def _waiting(where: _Pending, run_id: str, causes: list[InterruptCtx]) -> types.CallToolResult:
    reference = {"checkpoint_id": where.key}
    structured: dict[str, Any] = {
        "status": "interrupted",
        "agent": where.agent,
        "run_id": run_id,
        "checkpoint_id": where.key,
        "interrupt_ids": [cause.id for cause in causes],
        "interrupts": interrupt_entries(causes),
    }
    if where.session_id is not None:
        structured["session_id"] = where.session_id
    text = waiting_text(where.agent, reference, causes)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=structured)


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)

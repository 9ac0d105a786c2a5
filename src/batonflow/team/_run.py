"""One run of a team as its graph's tasks see it (``TeamRun``, found through ``current_run``), and the task of a
member's node (``MemberTask``): the member runs one step below the team, on the prompt its protocol prepares, its
events handed over to the team's reader as they come; an interrupt stops the flow at its node."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar

from ..adk import AgentEvent, AgentInput, ResumeInfo, agent_with_options, event_from_message, get_language
from ..adk.loop import ModelStep
from ..agents import member_instruction
from ..codec import register_type
from ..errors import RunError
from ..graph import FlowContext, HostRun, Node
from ..schema import Message, RunStep, ToolInfo
from ..trace import SupervisorDelta
from ._config import TeamConfig
from ._current import current_run
from ._interceptor import TeamInterceptor, interceptor_name
from ._member import Member
from ._protocol import SUPERVISOR, TeamProtocol
from ._trace import TeamTrace

__all__ = ["MemberTask", "TeamMemberError", "TeamRun", "TeamState"]


class TeamMemberError(RunError):
    """A member of a team failed; the message names the team and the member and carries the member's own."""


@dataclass(slots=True, kw_only=True)
class TeamState:
    """What a team saves when a member interrupts: the flow's position, and the members to resume."""

    flow: str
    nodes: list[str] = field(default_factory=list)


register_type(TeamState, name="team.TeamState")


@dataclass(slots=True, kw_only=True)
class TeamRun(HostRun):
    """One run of a team, as its graph's tasks see it (through ``current_run``): the graph-as-agent host's run,
    with the team's settings, protocol, interceptors, trace and supervisor step."""

    config: TeamConfig
    protocol: TeamProtocol
    interceptors: tuple[TeamInterceptor, ...]
    trace: TeamTrace
    step: ModelStep | None
    is_team: ClassVar[bool] = True

    async def supervisor_step(self, messages: Sequence[Message], tools: Sequence[ToolInfo]) -> Message:
        if self.step is None:
            raise RunError(f"team '{self.config.name}' has no model: a supervisor node needs one")
        return await self.step.generate(messages, list(tools) or None, self.ctx.child(SUPERVISOR))

    async def emit_decision(self, message: Message, decision: str) -> None:
        """The supervisor's decision, as an event under ``[team, supervisor]`` and a ``SupervisorDelta`` trace
        event."""
        if self.ctx.trace is not None:
            await self.ctx.trace.event(SupervisorDelta, content=decision)
        event = event_from_message(replace(message, content=decision, tool_calls=[]))
        event.agent_name = SUPERVISOR
        event.run_path = (*self.ctx.run_path, RunStep(SUPERVISOR))
        await self.hand_over(event)

    async def run_member(self, member: Member, messages: list[Message], context: FlowContext) -> str | None:
        """Run ``member`` on ``messages``; its answer, or None when it interrupted (the flow then stops)."""

        def rewrite(entries: object) -> list[Message]:
            return messages

        flow = agent_with_options(member.agent, history_rewriter=rewrite)
        if self.resuming(member.name):
            events = flow.resume(ResumeInfo(enable_streaming=self.ctx.enable_streaming), self.ctx)
        else:
            events = flow.run(AgentInput(messages=messages, enable_streaming=self.ctx.enable_streaming), self.ctx)

        def failed(error: BaseException) -> Exception:
            return TeamMemberError(f"team '{self.config.name}': member '{member.name}' failed: {error}")

        # A team counts its own calls, and adds them at its end.
        seen = None if _is_team(member) else self._count
        own_path = (*self.ctx.run_path, RunStep(member.name))
        last, interrupted = await self.run_agent(
            events, context, step=member.name, own_path=own_path, failed=failed, seen=seen
        )
        if interrupted:
            return None
        return "" if last is None else await self.answer_text(last)

    def _count(self, event: AgentEvent) -> None:
        """A member's model answer in the team's metrics (a nested team counts its own and adds them at its end)."""
        variant = event.output.message_output if event.output is not None else None
        message = variant.message if variant is not None else None
        if message is None or message.role != "assistant" or message.response_meta is None:
            return
        metrics = self.trace.metrics
        metrics.model_calls += 1
        usage = message.response_meta.usage
        if usage is not None:
            metrics.prompt_tokens += usage.prompt_tokens
            metrics.completion_tokens += usage.completion_tokens


def _is_team(member: Member) -> bool:
    return isinstance(getattr(member.agent, "protocol", None), TeamProtocol)


class MemberTask:
    """A member's node: Solon's ``Agent.run(context, node)`` inside a team."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"MemberTask({self.name!r})"

    async def run(self, context: FlowContext, node: Node) -> None:
        run = current_run()
        trace = run.trace
        member = run.config.members.get(self.name)
        assert member is not None
        trace.last_agent_name = member.name
        for interceptor in run.interceptors:
            if not interceptor.should_agent_continue(trace, member):
                trace.add_record("assistant", member.name, f"[Skipped] Cancelled by {interceptor_name(interceptor)}")
                return
        language = get_language()
        prompt = run.protocol.prepare_agent_prompt(trace, member, trace.working_memory, language)
        # A team member reads its prompt only, as in Solon: a team has no system prompt of its own to extend.
        instruction = "" if _is_team(member) else run.protocol.agent_instruction(trace, member, language)
        messages = [member_instruction(instruction), *prompt] if instruction else list(prompt)
        started = time.perf_counter()
        content = await run.run_member(member, messages, context)
        if content is None:
            return
        duration_ms = int((time.perf_counter() - started) * 1000)
        result = run.protocol.resolve_agent_output(trace, member, content.strip())
        if not result:
            result = f"Agent [{member.name}] processed but returned no textual content."
        trace.add_record("assistant", member.name, result, duration_ms)
        run.protocol.on_agent_end(trace, member)
        for interceptor in run.interceptors:
            interceptor.on_agent_end(trace, member)

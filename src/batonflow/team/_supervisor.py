"""The supervisor: Solon's ``SupervisorTask``, the node that asks the team's model who goes next.

Its prompt is Solon's (English, or Chinese after ``set_language("zh")``), and its ``commit_route`` state machine
turns the model's text into a route: the protocol's own route first; a finish (the finish marker), if the protocol
allows it, else a member named in it or the fallback; a member name (the whole text, an assignment such as
``next: coder``, or the last name mentioned); else the fallback member while turns are left.
"""

from __future__ import annotations

import re

from ..adk import Language, get_language
from ..errors import ModelJSONError
from ..graph import FlowContext, Node
from ..schema import Message, ToolInfo, system, user
from ..tools import parse_model_json
from ._current import current_run
from ._interceptor import interceptor_name
from ._member import compact_json
from ._protocol import END, SUPERVISOR, SYSTEM
from ._texts import phrase
from ._tools import call_tool, string_params
from ._trace import TeamTrace

__all__ = ["SupervisorTask", "supervisor_system_prompt"]

_ASSIGN = r"(?:指派(?:专家)?|派发|先派|再派|派|next(?:\s+agent)?|route(?:\s+to)?)\s*[:：]?\s*"
_MARKDOWN = re.compile(r"[*`]")
_NAME_END = r"(?=[^a-zA-Z0-9_]|$)"


FEEDBACK = "__ask_for_feedback"


def feedback_tool_info(language: Language) -> ToolInfo:
    """The tool the supervisor asks the user with in feedback mode (Solon's ``FeedbackTool``)."""
    description = phrase("supervisor.feedback_description", language)
    reason = phrase("supervisor.feedback_reason", language)
    return ToolInfo(name=FEEDBACK, description=description, parameters=string_params(reason=reason))


def _reason(arguments: str) -> str:
    try:
        parsed = parse_model_json(arguments or "{}")
    except ModelJSONError:
        return ""
    value = parsed.get("reason") if isinstance(parsed, dict) else None
    return "" if value is None else str(value)


def answer_text(content: str) -> str:
    """The answer in a model's text: what follows its reasoning (``<think>…</think>``), if it wrote any."""
    end = content.find("</think>")
    return content[end + len("</think>") :] if end >= 0 else content


def supervisor_system_prompt(trace: TeamTrace) -> str:
    """The supervisor's system prompt before the protocol's dashboard."""
    run = current_run()
    config, protocol = run.config, run.protocol
    language = get_language()
    members = compact_json([member.metadata() for member in config.members])
    prompt = phrase(
        "supervisor.system",
        language,
        role=config.role or phrase("supervisor.role", language),
        members=members,
        task=trace.user_content,
        protocol=protocol.supervisor_instruction(language),
        marker=config.finish_marker,
    )
    if config.instruction is not None:
        prompt += phrase("supervisor.instruction", language, instruction=config.instruction)
    return prompt


def supervisor_user_content(trace: TeamTrace) -> str:
    """The supervisor's per-turn message: the protocol's context, the progress, the turn, who has not spoken."""
    run = current_run()
    config = run.config
    language = get_language()
    window = config.record_window
    parts = [run.protocol.prepare_supervisor_context(trace, language)]
    history = trace.formatted_history(window)
    spoken = {record.source.lower() for record in trace.records if record.is_agent}
    pending = [name for name in config.members.names() if name.lower() not in spoken]
    parts.append(phrase("supervisor.progress", language, window=window, history=history))
    parts.append(phrase("supervisor.turn", language, turn=trace.next_turn(), marker=config.finish_marker))
    if pending:
        parts.append(phrase("supervisor.pending", language, names=", ".join(pending)))
    return "".join(parts)


class SupervisorTask:
    """The ``supervisor`` node's task; see the module doc."""

    def __repr__(self) -> str:
        return "SupervisorTask()"

    async def run(self, context: FlowContext, node: Node) -> None:
        run = current_run()
        trace = run.trace
        try:
            for interceptor in run.interceptors:
                if not interceptor.should_supervisor_continue(trace):
                    trace.add_record("system", SUPERVISOR, f"[Skipped] Intercepted by {interceptor_name(interceptor)}")
                    self.route_to(trace, END)
                    return
            if trace.route == END or trace.turn_count >= run.config.max_turns:
                trace.add_record("system", SYSTEM, "[Terminated] Max turns reached")
                self.route_to(trace, END)
                return
            if not run.protocol.should_supervisor_execute(trace):
                if trace.route == SUPERVISOR:
                    self.route_to(trace, END)
                return
            await self.dispatch(trace)
        except Exception as error:
            # As in Solon, a supervisor that fails ends the team with what its members said so far.
            trace.route = END
            trace.add_record("system", SUPERVISOR, f"Runtime Error: {error}")

    async def dispatch(self, trace: TeamTrace) -> None:
        run = current_run()
        language = get_language()
        extra = run.protocol.prepare_supervisor_instruction(trace, language)
        base = supervisor_system_prompt(trace)
        prompt = f"{base}\n\n{extra}" if extra else base
        messages: list[Message] = [system(prompt), *trace.working_memory, user(supervisor_user_content(trace))]
        for interceptor in run.interceptors:
            interceptor.on_model_start(trace, messages)
        tools = {tool.info.name: tool for tool in run.protocol.supervisor_tools(trace)}
        infos = [tool.info for tool in tools.values()]
        if run.config.feedback:
            infos.insert(0, feedback_tool_info(language))
        message = await run.supervisor_step(messages, infos)
        trace.metrics.model_calls += 1
        if message.response_meta is not None and message.response_meta.usage is not None:
            trace.metrics.prompt_tokens += message.response_meta.usage.prompt_tokens
            trace.metrics.completion_tokens += message.response_meta.usage.completion_tokens
        for interceptor in run.interceptors:
            interceptor.on_model_end(trace, message)
        decision = answer_text(message.text).strip()
        # The supervisor runs its protocol's tools itself; a call's result is the decision if it wrote none.
        for call in message.tool_calls:
            if call.function.name == FEEDBACK and run.config.feedback:
                reason = _reason(call.function.arguments)
                assigned = self.assigned_agent(decision) or self.assigned_agent(reason)
                if assigned is None:
                    self.suspend(trace, reason)
                    return
                decision = assigned
                break
            tool = tools.get(call.function.name)
            if tool is not None:
                result, valid = call_tool(tool, call.function.arguments)
                if valid and not decision:
                    decision = result
        trace.last_decision = decision
        for interceptor in run.interceptors:
            interceptor.on_supervisor_decision(trace, decision)
        await run.emit_decision(message, decision)
        self.commit_route(trace, decision)

    @staticmethod
    def suspend(trace: TeamTrace, reason: str) -> None:
        """The supervisor asks the user: the team ends with the question as its answer, its conversation pending."""
        trace.final_answer = reason
        trace.pending = True
        trace.pending_reason = reason
        SupervisorTask.route_to(trace, END)

    # -- commit_route ------------------------------------------------------------------------------------------

    def commit_route(self, trace: TeamTrace, decision: str) -> None:
        run = current_run()
        config, protocol = run.config, run.protocol
        if not decision:
            self.unresolvable(trace, decision, "empty supervisor decision")
            return
        routed = protocol.resolve_supervisor_route(trace, decision)
        if routed:
            self.route_to(trace, routed)
            return
        marker = config.finish_marker
        if marker in decision:
            if protocol.should_supervisor_route(trace, decision):
                found = re.search(r"(?is).*?" + re.escape(marker) + r"[:\s]*(.*)", decision)
                answer = found.group(1).strip() if found is not None else ""
                trace.final_answer = answer or trace.last_agent_content
                self.route_to(trace, END)
                return
            if self.match_agent_route(trace, decision):
                return
            fallback = self.fallback(trace)
            if fallback is not None:
                trace.add_record("system", SYSTEM, f"[Routing] FINISH rejected by protocol; re-assign to [{fallback}]")
                self.route_to(trace, fallback)
                return
            if not trace.final_answer:
                trace.final_answer = trace.last_agent_content
            trace.add_record("system", SYSTEM, "[Terminated] FINISH rejected and no agent available to continue")
            self.route_to(trace, END)
            return
        if self.match_agent_route(trace, decision):
            return
        self.unresolvable(trace, decision, "unable to extract agent name")

    def unresolvable(self, trace: TeamTrace, decision: str, reason: str) -> None:
        run = current_run()
        fallback = self.fallback(trace)
        if fallback is not None and trace.turn_count < run.config.max_turns:
            trace.add_record("system", SYSTEM, f"[Routing] {reason}; retry via [{fallback}]")
            self.route_to(trace, fallback)
            return
        shown = decision.strip()
        shown = shown if len(shown) <= 200 else shown[:200] + "..."
        trace.add_record("system", SYSTEM, f"[Terminated] {reason}: {shown}")
        if not trace.final_answer:
            last = trace.last_agent_content
            trace.final_answer = last or f"Supervisor decision unresolved: {reason}"
        self.route_to(trace, END)

    @staticmethod
    def fallback(trace: TeamTrace) -> str | None:
        """The member to go on with: the last one that ran, else the first."""
        members = current_run().config.members
        last = members.canonical(trace.last_agent_name)
        return last if last is not None else members.first()

    def match_agent_route(self, trace: TeamTrace, text: str) -> bool:
        members = current_run().config.members
        clean = _MARKDOWN.sub("", text).strip()
        if not clean:
            return False
        target = members.canonical(clean) or self.assigned_agent(clean) or self.last_agent_named(clean)
        if target is None:
            return False
        self.route_to(trace, target)
        return True

    @staticmethod
    def assigned_agent(text: str) -> str | None:
        """The member an assignment names (``next: coder``, ``route to coder``, ``指派 coder``), by name, else by
        role; the last such assignment wins."""
        members = list(current_run().config.members)
        clean = _MARKDOWN.sub("", text).strip()
        best: tuple[int, str] | None = None
        for member in members:
            pattern = re.compile("(?is)" + _ASSIGN + re.escape(member.name) + _NAME_END)
            for found in pattern.finditer(clean):
                if best is None or found.start() > best[0]:
                    best = (found.start(), member.name)
        if best is not None:
            return best[1]
        for member in members:
            if len(member.role) < 2:
                continue
            pattern = re.compile("(?is)" + _ASSIGN + re.escape(member.role))
            for found in pattern.finditer(clean):
                if best is None or found.start() > best[0]:
                    best = (found.start(), member.name)
        return best[1] if best is not None else None

    @staticmethod
    def last_agent_named(text: str) -> str | None:
        best: tuple[int, str] | None = None
        for name in current_run().config.members.names():
            pattern = re.compile(r"(?i)(?<![a-zA-Z0-9_])" + re.escape(name) + _NAME_END)
            for found in pattern.finditer(text):
                if best is None or found.start() > best[0]:
                    best = (found.start(), name)
        return best[1] if best is not None else None

    @staticmethod
    def route_to(trace: TeamTrace, target: str) -> None:
        trace.route = target
        current_run().protocol.on_supervisor_routing(trace, target)

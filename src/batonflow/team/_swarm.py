"""``swarm``: the first member starts; the members add sub-tasks to a shared pool with ``__emerge_tasks__`` (or a
``{"sub_tasks": [{"task", "agent"}]}`` JSON in their answer), and the supervisor, guided by the pool and by
pheromones, picks who goes next (Solon's ``SwarmProtocol``).

After each member, every pheromone decays by 1 and that member's grows by 5; the recommended member is the one
with the lowest score among those the pool names (the last member counts 5 more, a cool-down), or, for untagged
tasks, among all members. Routing to a member takes its first task off the pool. The team cannot finish while the
pool has tasks and turns are left: the supervisor is sent to the recommended member instead.
"""

from __future__ import annotations

import re
from typing import Any

from ..adk import Language, get_language
from ..errors import UserError
from ..graph import GraphSpec
from ..schema import Message, ToolInfo, user
from ._member import Member, compact_json
from ._protocol import END, START, SUPERVISOR, SYSTEM, TeamProtocolBase, sniff_json
from ._supervisor import SupervisorTask
from ._texts import phrase
from ._tools import ProtocolTool, string_params
from ._trace import TeamTrace

__all__ = ["SwarmProtocol"]

EMERGE = "__emerge_tasks__"
_STATE = "swarm_state_obj"
_DECAY = 1
_REINFORCE = 5
_MAX_POOL = 32
_SPLIT = re.compile(r"[,;，；\n]+")


class SwarmProtocol(TeamProtocolBase):
    """See the module doc."""

    name = "SWARM"
    agent_tool_names = frozenset({EMERGE})

    def build_graph(self, spec: GraphSpec) -> None:
        names = self.config.members.names()
        if not names:
            raise UserError("SwarmProtocol requires at least one agent")
        spec.add_start(START).link_add(names[0])
        for name in names:
            spec.add_activity(name).link_add(SUPERVISOR)
        supervisor = spec.add_exclusive(SUPERVISOR, task=SupervisorTask())
        self.link_agents(supervisor)
        supervisor.link_add(END)
        spec.add_end(END)

    # -- the pool ----------------------------------------------------------------------------------------------

    @staticmethod
    def state(trace: TeamTrace) -> dict[str, Any]:
        found: dict[str, Any] = trace.protocol_context.setdefault(_STATE, {"pheromones": {}, "taskPool": []})
        return found

    def emerge(self, state: dict[str, Any], tasks: str | None, agents: str | None) -> None:
        if not tasks:
            return
        pool: list[dict[str, str]] = state["taskPool"]
        named = _SPLIT.split(agents) if agents else []
        for index, raw in enumerate(_SPLIT.split(tasks)):
            if len(pool) >= _MAX_POOL:
                break
            task = raw.strip()
            if not task:
                continue
            agent = named[index].strip() if index < len(named) else ""
            canonical = self.config.members.canonical(agent) if agent else None
            if any(t["task"] == task and (t.get("agent") or "").lower() == (canonical or "").lower() for t in pool):
                continue
            pool.append({"task": task, "agent": canonical} if canonical else {"task": task})

    def pick_next(self, state: dict[str, Any], last: str | None) -> str | None:
        pool: list[dict[str, str]] = state["taskPool"]
        names = self.config.members.names()
        if not pool or not names:
            return None

        def score(name: str) -> int:
            value = int(state["pheromones"].get(name, 0))
            return value + _REINFORCE if last and name.lower() == last.lower() else value

        best: tuple[int, str] | None = None
        for task in pool:
            canonical = self.config.members.canonical(task.get("agent"))
            if canonical is not None and (best is None or score(canonical) < best[0]):
                best = (score(canonical), canonical)
        if best is not None:
            return best[1]
        if not any(not task.get("agent") for task in pool):
            return None
        return min(names, key=score)

    # -- members -----------------------------------------------------------------------------------------------

    def agent_tools(self, trace: TeamTrace, member: Member) -> list[ProtocolTool]:
        state = self.state(trace)
        language = get_language()

        def emerge(args: dict[str, Any]) -> str:
            self.emerge(state, _text(args.get("tasks")), _text(args.get("agents")))
            return phrase("swarm.tasks_added", language)

        info = ToolInfo(
            name=EMERGE,
            description=phrase("swarm.emerge_description", language),
            parameters=string_params(
                tasks=phrase("swarm.emerge_tasks", language), agents=phrase("swarm.emerge_agents", language)
            ),
        )
        return [ProtocolTool(info=info, handle=emerge, meta={"_agent_": member.name})]

    def agent_instruction(self, trace: TeamTrace, member: Member, language: Language) -> str:
        text = super().agent_instruction(trace, member, language)
        return text + phrase("swarm.agent_guidelines", language, tool=EMERGE)

    def prepare_agent_prompt(
        self, trace: TeamTrace, member: Member, prompt: list[Message], language: Language
    ) -> list[Message]:
        messages = super().prepare_agent_prompt(trace, member, prompt, language)
        state = trace.protocol_context.get(_STATE)
        if not state or not state["taskPool"]:
            return messages
        title = phrase("swarm.snapshot", language)
        messages.append(user(f"{title}\n```json\n{compact_json(state)}\n```"))
        return messages

    def resolve_agent_output(self, trace: TeamTrace, member: Member, content: str) -> str:
        subtasks = sniff_json(content).get("sub_tasks")
        if not isinstance(subtasks, list):
            return content
        tasks: list[str] = []
        agents: list[str] = []
        for item in subtasks:
            if isinstance(item, dict) and item.get("task"):
                tasks.append(str(item["task"]).strip())
                agents.append(str(item.get("agent") or "").strip())
        if tasks:
            self.emerge(self.state(trace), ";".join(tasks), ";".join(agents))
        return content

    def on_agent_end(self, trace: TeamTrace, member: Member) -> None:
        pheromones: dict[str, int] = self.state(trace)["pheromones"]
        for name in pheromones:
            pheromones[name] = max(0, pheromones[name] - _DECAY)
        pheromones[member.name] = pheromones.get(member.name, 0) + _REINFORCE

    # -- the supervisor ----------------------------------------------------------------------------------------

    def resolve_supervisor_route(self, trace: TeamTrace, decision: str) -> str | None:
        if self.config.finish_marker in decision:
            state = self.state(trace)
            if state["taskPool"] and trace.turn_count < self.config.max_turns:
                return self.pick_next(state, trace.last_agent_name)
            return None
        return super().resolve_supervisor_route(trace, decision)

    def should_supervisor_route(self, trace: TeamTrace, decision: str) -> bool:
        pool = self.state(trace)["taskPool"]
        if self.config.finish_marker in decision and pool and trace.turn_count < self.config.max_turns:
            return False
        return super().should_supervisor_route(trace, decision)

    def on_supervisor_routing(self, trace: TeamTrace, next_route: str) -> None:
        if next_route and next_route not in (END, START, SUPERVISOR, SYSTEM):
            pool: list[dict[str, str]] = self.state(trace)["taskPool"]
            for index, task in enumerate(pool):
                if (task.get("agent") or "").lower() == next_route.lower():
                    del pool[index]
                    return

    def supervisor_instruction(self, language: Language) -> str:
        marker = self.config.finish_marker
        text = super().supervisor_instruction(language)
        return text + phrase("swarm.supervisor_rules", language, marker=marker)

    def prepare_supervisor_instruction(self, trace: TeamTrace, language: Language) -> str:
        state = self.state(trace)
        recommended = self.pick_next(state, trace.last_agent_name)
        text = phrase("swarm.dashboard", language)
        text += f"```json\n{compact_json(state)}\n```\n"
        text += phrase("swarm.instruction", language)
        if recommended and state["taskPool"]:
            text += phrase("swarm.recommended", language, name=recommended)
        return text


def _text(value: Any) -> str | None:
    return None if value is None else str(value)

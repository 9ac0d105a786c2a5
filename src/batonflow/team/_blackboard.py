"""``blackboard``: the hierarchical protocol with a shared board that members write with
``__sync_to_blackboard__`` (Solon's ``BlackboardProtocol``).

The board holds data and a list of todos. A sync adds todos (``todo``, split at commas, semicolons and new lines,
list markers dropped), completes them (``completed_todo``, or a ``result`` that contains a todo's text) and merges
a JSON ``state`` into the data. Members see the board in their prompt, the supervisor in its dashboard; the team
cannot finish while todos remain or the board's ``status`` is ``FAILED`` (then the last member that wrote it goes
again), while turns are left.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..adk import Language, get_language
from ..schema import Message, ToolInfo, user
from ._hierarchical import HierarchicalProtocol
from ._member import Member, compact_json
from ._texts import phrase
from ._tools import ProtocolTool
from ._trace import TeamTrace

__all__ = ["BlackboardProtocol"]

SYNC = "__sync_to_blackboard__"
_STATE = "blackboard_state_obj"
_SEPARATORS = re.compile(r"[,;，；\n\r]+")
_LIST_MARK = re.compile(r"^(?:\d+[.)、]\s*|[-*•]\s+)")
_COMPLETING = ("completed_todo", "done_todo", "complete_todo")


class Board:
    """The board's state, kept as plain data in the trace: ``data``, ``todos`` and ``last_updater``."""

    __slots__ = ("state",)

    def __init__(self, state: dict[str, Any]) -> None:
        self.state = state
        state.setdefault("data", {})
        state.setdefault("todos", [])
        state.setdefault("last_updater", None)

    @property
    def todos(self) -> list[str]:
        found: list[str] = self.state["todos"]
        return found

    @property
    def data(self) -> dict[str, Any]:
        found: dict[str, Any] = self.state["data"]
        return found

    def add_todos(self, raw: str) -> None:
        for item in _SEPARATORS.sub(";", raw).split(";"):
            todo = _LIST_MARK.sub("", item.strip(), count=1).strip()
            if todo and todo not in self.todos:
                self.todos.append(todo)

    def complete_todos(self, raw: str) -> None:
        for item in _SEPARATORS.sub(";", raw).split(";"):
            item = item.strip()
            if not item:
                continue
            if item in self.todos:
                self.todos.remove(item)
                continue
            lower = item.lower()
            self.state["todos"] = [t for t in self.todos if t and not (lower in t.lower() or t.lower() in lower)]

    def complete_matching(self, text: str) -> None:
        if not text or not self.todos:
            return
        lower = text.lower()
        self.state["todos"] = [t for t in self.todos if t and t.lower() not in lower]

    def add_direct(self, agent: str, result: str | None, todo: str | None) -> None:
        self.state["last_updater"] = agent
        if result:
            self.data[f"output_{agent}"] = result
            self.complete_matching(result)
        if todo:
            self.add_todos(todo)

    def merge(self, agent: str, raw: Any) -> None:
        self.state["last_updater"] = agent
        if isinstance(raw, str):
            if not raw.startswith("{"):
                self.data[f"result_{agent}"] = raw
                self.complete_matching(raw)
                return
            try:
                raw = json.loads(raw)
            except ValueError:
                return
        if not isinstance(raw, dict):
            return
        for key in _COMPLETING:
            self._complete_value(raw.get(key))
        for key, value in raw.items():
            lowered = key.lower()
            if lowered == "todo":
                for item in value if isinstance(value, list) else [value]:
                    if isinstance(item, (str, int, float)):
                        self.add_todos(str(item))
            elif lowered in _COMPLETING:
                continue
            else:
                self.data[key] = value
                if lowered == "status" and str(value).upper() == "COMPLETED":
                    result = raw.get("result")
                    if isinstance(result, (str, int, float)):
                        self.complete_matching(str(result))
                elif lowered == "result" and isinstance(value, (str, int, float)):
                    self.complete_matching(str(value))

    def _complete_value(self, value: Any) -> None:
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, (str, int, float)):
                self.complete_todos(str(item))

    @property
    def failed(self) -> bool:
        return str(self.data.get("status", "")).upper() == "FAILED"

    def view(self) -> str:
        """The board as members and the supervisor read it."""
        root = dict(self.data)
        if self.todos:
            root["todo"] = list(self.todos)
        meta = root.get("_meta")
        root["_meta"] = {**(meta if isinstance(meta, dict) else {}), "last_updater": self.state["last_updater"]}
        return compact_json(root)


class BlackboardProtocol(HierarchicalProtocol):
    """See the module doc."""

    name = "BLACKBOARD"
    agent_tool_names = frozenset({SYNC})

    @staticmethod
    def board(trace: TeamTrace, *, create: bool = False) -> Board | None:
        state = trace.protocol_context.get(_STATE)
        if state is None:
            if not create:
                return None
            state = trace.protocol_context[_STATE] = {}
        return Board(state)

    def agent_tools(self, trace: TeamTrace, member: Member) -> list[ProtocolTool]:
        language = get_language()

        def sync(args: dict[str, Any]) -> str:
            board = self.board(trace, create=True)
            assert board is not None
            result, todo, completed = (_text(args.get(key)) for key in ("result", "todo", "completed_todo"))
            if completed:
                board.complete_todos(completed)
            if result or todo:
                board.add_direct(member.name, result, todo)
            if args.get("state") is not None:
                board.merge(member.name, args["state"])
            return phrase("blackboard.updated", language)

        names = ("result", "todo", "completed_todo", "state")
        parameters = {
            "type": "object",
            "properties": {
                n: {"type": "string", "description": phrase(f"blackboard.sync_{n}", language)} for n in names
            },
        }
        info = ToolInfo(name=SYNC, description=phrase("blackboard.sync_description", language), parameters=parameters)
        return [ProtocolTool(info=info, handle=sync, meta={"_agent_": member.name})]

    def agent_instruction(self, trace: TeamTrace, member: Member, language: Language) -> str:
        text = super().agent_instruction(trace, member, language)
        return text + phrase("blackboard.agent_guidelines", language, tool=SYNC)

    def prepare_agent_prompt(
        self, trace: TeamTrace, member: Member, prompt: list[Message], language: Language
    ) -> list[Message]:
        messages = super().prepare_agent_prompt(trace, member, prompt, language)
        board = self.board(trace)
        if board is None:
            return messages
        title = phrase("blackboard.snapshot", language)
        messages.append(user(f"{title}\n```json\n{board.view()}\n```"))
        return messages

    def resolve_supervisor_route(self, trace: TeamTrace, decision: str) -> str | None:
        board = self.board(trace)
        if board is not None and self.config.finish_marker in decision:
            if board.todos:
                return None
            if board.failed:
                last = board.state["last_updater"]
                return self.config.members.canonical(last) if last else None
        return super().resolve_supervisor_route(trace, decision)

    def should_supervisor_route(self, trace: TeamTrace, decision: str) -> bool:
        if self.config.finish_marker in decision:
            board = self.board(trace)
            pending = board is not None and (bool(board.todos) or board.failed)
            if pending and trace.turn_count < self.config.max_turns:
                return False
        return super().should_supervisor_route(trace, decision)

    def prepare_supervisor_instruction(self, trace: TeamTrace, language: Language) -> str:
        board = self.board(trace)
        text = phrase("blackboard.dashboard", language)
        text += f"```json\n{board.view()}\n```\n" if board is not None else "- Empty\n"
        return text + super().prepare_supervisor_instruction(trace, language)

    def supervisor_instruction(self, language: Language) -> str:
        text = super().supervisor_instruction(language)
        return text + phrase("blackboard.supervisor_rules", language)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
